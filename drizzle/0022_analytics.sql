CREATE TABLE "analytics_player_hours" (
	"server_id" uuid NOT NULL,
	"hour" timestamp with time zone NOT NULL,
	"uuid" uuid NOT NULL,
	"q0" integer DEFAULT 0 NOT NULL,
	"q1" integer DEFAULT 0 NOT NULL,
	"q2" integer DEFAULT 0 NOT NULL,
	"q3" integer DEFAULT 0 NOT NULL,
	"seen" smallint DEFAULT 0 NOT NULL,
	"joins" integer DEFAULT 0 NOT NULL,
	CONSTRAINT "analytics_player_hours_server_id_hour_uuid_pk" PRIMARY KEY("server_id","hour","uuid")
);
--> statement-breakpoint
CREATE TABLE "analytics_session_lengths" (
	"server_id" uuid NOT NULL,
	"slot" timestamp with time zone NOT NULL,
	"bucket" smallint NOT NULL,
	"sessions" integer DEFAULT 0 NOT NULL,
	CONSTRAINT "analytics_session_lengths_server_id_slot_bucket_pk" PRIMARY KEY("server_id","slot","bucket")
);
--> statement-breakpoint
CREATE TABLE "analytics_slots" (
	"team_id" uuid NOT NULL,
	"scope" text NOT NULL,
	"slot" timestamp with time zone NOT NULL,
	"online_ms" bigint DEFAULT 0 NOT NULL,
	"start_level" integer DEFAULT 0 NOT NULL,
	"peak" integer DEFAULT 0 NOT NULL,
	"peak_at" timestamp with time zone NOT NULL,
	CONSTRAINT "analytics_slots_scope_slot_pk" PRIMARY KEY("scope","slot")
);
--> statement-breakpoint
ALTER TABLE "teams" ADD COLUMN "time_zone" text DEFAULT 'UTC' NOT NULL;--> statement-breakpoint
ALTER TABLE "analytics_player_hours" ADD CONSTRAINT "analytics_player_hours_server_id_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."servers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "analytics_session_lengths" ADD CONSTRAINT "analytics_session_lengths_server_id_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."servers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "analytics_slots" ADD CONSTRAINT "analytics_slots_team_id_teams_id_fk" FOREIGN KEY ("team_id") REFERENCES "public"."teams"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "analytics_player_hours_uuid_idx" ON "analytics_player_hours" USING btree ("uuid");--> statement-breakpoint
CREATE INDEX "analytics_slots_peak_idx" ON "analytics_slots" USING btree ("scope","peak" DESC NULLS LAST,"peak_at");--> statement-breakpoint
CREATE INDEX "analytics_slots_team_idx" ON "analytics_slots" USING btree ("team_id");--> statement-breakpoint
CREATE INDEX "player_sessions_left_idx" ON "player_sessions" USING btree ("server_id","left_at");--> statement-breakpoint
-- Backfill from the closed sessions (the same statements as rebuildAggregates in src/analytics/aggregates.ts).
insert into analytics_player_hours (server_id, hour, uuid, q0, q1, q2, q3, seen, joins) select server_id, date_bin('1 hour', q, timestamptz '2000-01-01 00:00:00+00') as hour, uuid, coalesce(sum(ms) filter (where qi = 0), 0)::int as q0, coalesce(sum(ms) filter (where qi = 1), 0)::int as q1, coalesce(sum(ms) filter (where qi = 2), 0)::int as q2, coalesce(sum(ms) filter (where qi = 3), 0)::int as q3, bit_or(1 << qi)::smallint as seen, count(*) filter (where started)::int as joins from (select p.*, (extract(epoch from p.q - date_bin('1 hour', p.q, timestamptz '2000-01-01 00:00:00+00')) / 900)::int as qi from ( select s.server_id, s.uuid, s.a, q.q, (round(extract(epoch from least(s.b, q.q + interval '15 minutes')) * 1000) - round(extract(epoch from greatest(s.a, q.q)) * 1000))::int as ms, (s.a >= q.q) as started from (select s.server_id, s.uuid, s.joined_at as a, s.left_at as b from player_sessions s where s.left_at is not null) s, generate_series(date_bin('15 minutes', s.a, timestamptz '2000-01-01 00:00:00+00'), s.b, interval '15 minutes') as q(q) where q.q < s.b or q.q <= s.a) p) x group by server_id, date_bin('1 hour', q, timestamptz '2000-01-01 00:00:00+00'), uuid;--> statement-breakpoint
insert into analytics_session_lengths (server_id, slot, bucket, sessions) select server_id, date_bin('15 minutes', a, timestamptz '2000-01-01 00:00:00+00') as slot, (case when extract(epoch from b - a) < 300 then 0 when extract(epoch from b - a) < 900 then 1 when extract(epoch from b - a) < 1800 then 2 when extract(epoch from b - a) < 3600 then 3 when extract(epoch from b - a) < 7200 then 4 when extract(epoch from b - a) < 14400 then 5 else 6 end)::smallint as bucket, count(*)::int as sessions from (select s.server_id, s.uuid, s.joined_at as a, s.left_at as b from player_sessions s where s.left_at is not null) s group by 1, 2, 3;--> statement-breakpoint
insert into analytics_slots (team_id, scope, slot, online_ms, start_level, peak, peak_at) select team_id, scope, slot, online_ms, start_level, start_level, slot from ( select sv.team_id, sc.scope, p.q as slot, sum(p.ms)::bigint as online_ms, (count(*) filter (where p.a < p.q))::int as start_level from ( select s.server_id, s.uuid, s.a, q.q, (round(extract(epoch from least(s.b, q.q + interval '15 minutes')) * 1000) - round(extract(epoch from greatest(s.a, q.q)) * 1000))::int as ms, (s.a >= q.q) as started from (select s.server_id, s.uuid, s.joined_at as a, s.left_at as b from player_sessions s where s.left_at is not null) s, generate_series(date_bin('15 minutes', s.a, timestamptz '2000-01-01 00:00:00+00'), s.b, interval '15 minutes') as q(q) where q.q < s.b or q.q <= s.a) p join servers sv on sv.id = p.server_id cross join lateral ( select p.server_id::text as scope union all select 'n:' || sv.team_id || ':' || sv.network_name where sv.network_name is not null) sc where p.ms > 0 or p.a < p.q group by sv.team_id, sc.scope, p.q) r;--> statement-breakpoint
with sv as ( select id, id::text as scope from servers union all select id, 'n:' || team_id || ':' || network_name from servers where network_name is not null), ev as ( select sv.scope, date_bin('15 minutes', s.joined_at, timestamptz '2000-01-01 00:00:00+00') as slot, s.joined_at as at, 1 as d from player_sessions s join sv on sv.id = s.server_id where s.left_at > s.joined_at union all select sv.scope, date_bin('15 minutes', s.left_at, timestamptz '2000-01-01 00:00:00+00'), s.left_at, -1 from player_sessions s join sv on sv.id = s.server_id where s.left_at > s.joined_at and s.left_at > date_bin('15 minutes', s.left_at, timestamptz '2000-01-01 00:00:00+00')), run as (select scope, slot, at, d, sum(d) over (partition by scope, slot order by at, d rows unbounded preceding) as lvl from ev), best as (select distinct on (scope, slot) scope, slot, lvl, at from run where d = 1 order by scope, slot, lvl desc, at) update analytics_slots a set peak = a.start_level + greatest(0, b.lvl)::int, peak_at = case when b.lvl > 0 then b.at else a.slot end from best b where a.scope = b.scope and a.slot = b.slot;
