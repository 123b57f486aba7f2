CREATE TABLE "analytics_month_counts" (
	"team_id" uuid NOT NULL,
	"scope" text NOT NULL,
	"month" timestamp with time zone NOT NULL,
	"bedrock" boolean NOT NULL,
	"players" integer DEFAULT 0 NOT NULL,
	"firsts" integer DEFAULT 0 NOT NULL,
	"ms" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "analytics_month_counts_scope_month_bedrock_pk" PRIMARY KEY("scope","month","bedrock")
);
--> statement-breakpoint
-- Backfill: the month rows' counts per scope, month and edition, and the slots' milliseconds
-- (src/analytics/aggregates.ts, `countsFrom`).
insert into analytics_month_counts (team_id, scope, month, bedrock, players, firsts, ms)
  select team_id, scope, month, bedrock, sum(players), sum(firsts), sum(ms) from (
    select team_id, scope, month, bedrock, count(*) as players, count(*) filter (where prev_at is null) as firsts, 0::bigint as ms
      from analytics_player_months group by 1, 2, 3, 4
    union all
    select s.team_id, s.scope, date_trunc('month', s.slot, 'UTC'), e.bedrock, 0, 0,
           sum(case when e.bedrock then s.bedrock_ms else s.online_ms - s.bedrock_ms end)::bigint
      from analytics_slots s cross join (values (false), (true)) e(bedrock) group by 1, 2, 3, 4) x
   group by 1, 2, 3, 4;--> statement-breakpoint
ALTER TABLE "analytics_month_counts" ADD CONSTRAINT "analytics_month_counts_team_id_teams_id_fk" FOREIGN KEY ("team_id") REFERENCES "public"."teams"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "analytics_month_counts_team_idx" ON "analytics_month_counts" USING btree ("team_id");