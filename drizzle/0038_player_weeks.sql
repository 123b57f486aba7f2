CREATE TABLE "analytics_player_weeks" (
	"team_id" uuid NOT NULL,
	"scope" text NOT NULL,
	"week" timestamp with time zone NOT NULL,
	"uuid" uuid NOT NULL,
	"ms" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "analytics_player_weeks_scope_week_uuid_pk" PRIMARY KEY("scope","week","uuid")
);
--> statement-breakpoint
ALTER TABLE "analytics_player_weeks" ADD CONSTRAINT "analytics_player_weeks_team_id_teams_id_fk" FOREIGN KEY ("team_id") REFERENCES "public"."teams"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "analytics_player_weeks_top_idx" ON "analytics_player_weeks" USING btree ("scope","week","ms" DESC NULLS LAST,"uuid");--> statement-breakpoint
CREATE INDEX "analytics_player_weeks_uuid_idx" ON "analytics_player_weeks" USING btree ("uuid","team_id");--> statement-breakpoint
-- Backfill from the player-hour rows, as rebuildAggregates does (src/analytics/aggregates.ts weekRows).
INSERT INTO "analytics_player_weeks" ("team_id", "scope", "week", "uuid", "ms")
SELECT sv.team_id, sc.scope, date_bin('7 days', h.hour, timestamptz '2000-01-03 00:00:00+00') AS week, h.uuid,
       sum(h.q0 + h.q1 + h.q2 + h.q3)::bigint AS ms
  FROM "analytics_player_hours" h
  JOIN "servers" sv ON sv.id = h.server_id
  CROSS JOIN LATERAL (
    SELECT h.server_id::text AS scope
    UNION ALL
    SELECT 'n:' || sv.team_id || ':' || sv.network_name WHERE sv.network_name IS NOT NULL) sc
 GROUP BY 1, 2, 3, 4;
