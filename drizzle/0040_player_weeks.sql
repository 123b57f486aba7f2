CREATE TABLE "analytics_player_weeks" (
	"team_id" uuid NOT NULL,
	"scope" text NOT NULL,
	"week" timestamp with time zone NOT NULL,
	"uuid" uuid NOT NULL,
	"ms" bigint DEFAULT 0 NOT NULL,
	"first_at" timestamp with time zone NOT NULL,
	"last_at" timestamp with time zone NOT NULL,
	"next_at" timestamp with time zone,
	"ms1" bigint DEFAULT 0 NOT NULL,
	"ms2" bigint DEFAULT 0 NOT NULL,
	"ms3" bigint DEFAULT 0 NOT NULL,
	"g0" smallint GENERATED ALWAYS AS ((4 - width_bucket((5 - 5 * (1 / (pi() / 2 * (ms1)::float8 / 3600000 + 1) + 1 / (pi() / 2 * (ms2)::float8 / 3600000 + 1) + 1 / (pi() / 2 * (ms3)::float8 / 3600000 + 1)) / 3) + 1e-9, array[1, 2, 3, 3.75]::float8[]))) STORED NOT NULL,
	"g1" smallint GENERATED ALWAYS AS ((4 - width_bucket((5 - 5 * (1 / (pi() / 2 * (ms)::float8 / 3600000 + 1) + 1 / (pi() / 2 * (ms1)::float8 / 3600000 + 1) + 1 / (pi() / 2 * (ms2)::float8 / 3600000 + 1)) / 3) + 1e-9, array[1, 2, 3, 3.75]::float8[]))) STORED NOT NULL,
	"g2" smallint GENERATED ALWAYS AS ((4 - width_bucket((5 - 5 * (1 + 1 / (pi() / 2 * (ms)::float8 / 3600000 + 1) + 1 / (pi() / 2 * (ms1)::float8 / 3600000 + 1)) / 3) + 1e-9, array[1, 2, 3, 3.75]::float8[]))) STORED NOT NULL,
	"g3" smallint GENERATED ALWAYS AS ((4 - width_bucket((5 - 5 * (1 + 1 + 1 / (pi() / 2 * (ms)::float8 / 3600000 + 1)) / 3) + 1e-9, array[1, 2, 3, 3.75]::float8[]))) STORED NOT NULL,
	CONSTRAINT "analytics_player_weeks_scope_uuid_week_pk" PRIMARY KEY("scope","uuid","week")
);
--> statement-breakpoint
-- Backfill: the week rows of every player-hour row, with their links (src/analytics/aggregates.ts,
-- `withLinks(weekRows(...))`).
insert into analytics_player_weeks (team_id, scope, week, uuid, ms, first_at, last_at, next_at, ms1, ms2, ms3)
  select r.team_id, r.scope, r.week, r.uuid, r.ms, r.first_at, r.last_at, lead(r.first_at) over w as next_at, (case when lag(r.week, 1) over w = r.week - interval '7 days' then lag(r.ms, 1) over w else 0 end)::bigint as ms1, (case when lag(r.week, 1) over w = r.week - interval '14 days' then lag(r.ms, 1) over w when lag(r.week, 2) over w = r.week - interval '14 days' then lag(r.ms, 2) over w else 0 end)::bigint as ms2, (case when lag(r.week, 1) over w = r.week - interval '21 days' then lag(r.ms, 1) over w when lag(r.week, 2) over w = r.week - interval '21 days' then lag(r.ms, 2) over w when lag(r.week, 3) over w = r.week - interval '21 days' then lag(r.ms, 3) over w else 0 end)::bigint as ms3
    from (
  select sv.team_id, sc.scope, date_bin('7 days', h.hour, timestamptz '2000-01-03T00:00:00.000Z') as week, h.uuid,
         sum(h.q0 + h.q1 + h.q2 + h.q3)::bigint as ms,
         min(h.hour + (case when h.seen & 1 <> 0 then 0 when h.seen & 2 <> 0 then 1 when h.seen & 4 <> 0 then 2 else 3 end)
                      * interval '15 minutes') as first_at,
         max(h.hour + (case when h.seen & 8 <> 0 then 3 when h.seen & 4 <> 0 then 2 when h.seen & 2 <> 0 then 1 else 0 end)
                      * interval '15 minutes') as last_at
    from (select h.* from analytics_player_hours h) h
    join servers sv on sv.id = h.server_id
    cross join lateral (
      select h.server_id::text as scope
      union all
      select 'n:' || sv.team_id || ':' || sv.network_name where sv.network_name is not null) sc
   where h.seen <> 0
   group by 1, 2, 3, 4) r window w as (partition by r.scope, r.uuid order by r.week);--> statement-breakpoint
ALTER TABLE "analytics_player_weeks" ADD CONSTRAINT "analytics_player_weeks_team_id_teams_id_fk" FOREIGN KEY ("team_id") REFERENCES "public"."teams"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "analytics_player_weeks_read_idx" ON "analytics_player_weeks" USING btree ("scope","week","uuid","next_at","last_at","first_at","g0","g1","g2","g3");--> statement-breakpoint
CREATE INDEX "analytics_player_weeks_team_idx" ON "analytics_player_weeks" USING btree ("team_id","uuid");