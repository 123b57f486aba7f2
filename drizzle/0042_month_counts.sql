CREATE TABLE "analytics_month_counts" (
	"team_id" uuid NOT NULL,
	"scope" text NOT NULL,
	"month" timestamp with time zone NOT NULL,
	"bedrock" boolean NOT NULL,
	"players" integer DEFAULT 0 NOT NULL,
	"firsts" integer DEFAULT 0 NOT NULL,
	CONSTRAINT "analytics_month_counts_scope_month_bedrock_pk" PRIMARY KEY("scope","month","bedrock")
);
--> statement-breakpoint
-- Backfill: the month rows' counts per scope, month and edition (src/analytics/aggregates.ts,
-- `countsFromMonths`).
insert into analytics_month_counts (team_id, scope, month, bedrock, players, firsts)
  select m.team_id, m.scope, m.month, m.bedrock, count(*), count(*) filter (where m.prev_at is null)
    from analytics_player_months m group by 1, 2, 3, 4;--> statement-breakpoint
ALTER TABLE "analytics_month_counts" ADD CONSTRAINT "analytics_month_counts_team_id_teams_id_fk" FOREIGN KEY ("team_id") REFERENCES "public"."teams"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "analytics_month_counts_team_idx" ON "analytics_month_counts" USING btree ("team_id");