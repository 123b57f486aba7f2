CREATE TABLE "analytics_activity_weeks" (
	"team_id" uuid NOT NULL,
	"scope" text NOT NULL,
	"week" timestamp with time zone NOT NULL,
	"very_active" integer DEFAULT 0 NOT NULL,
	"active" integer DEFAULT 0 NOT NULL,
	"regular" integer DEFAULT 0 NOT NULL,
	"irregular" integer DEFAULT 0 NOT NULL,
	CONSTRAINT "analytics_activity_weeks_scope_week_pk" PRIMARY KEY("scope","week")
);
--> statement-breakpoint
ALTER TABLE "analytics_activity_weeks" ADD CONSTRAINT "analytics_activity_weeks_team_id_teams_id_fk" FOREIGN KEY ("team_id") REFERENCES "public"."teams"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "analytics_activity_weeks_team_idx" ON "analytics_activity_weeks" USING btree ("team_id");--> statement-breakpoint
-- Backfill from the player-hour rows, as rebuildAggregates does (src/analytics/aggregates.ts activityRows).
INSERT INTO "analytics_activity_weeks" ("team_id", "scope", "week", "very_active", "active", "regular", "irregular")
SELECT team_id, scope, e, count(*) FILTER (WHERE g = 0), count(*) FILTER (WHERE g = 1), count(*) FILTER (WHERE g = 2), count(*) FILTER (WHERE g = 3)
  FROM (
    SELECT y.team_id, y.scope, y.e,
           (CASE WHEN y.idx >= 3.75 - 1e-9 THEN 0 WHEN y.idx >= 3 - 1e-9 THEN 1 WHEN y.idx >= 2 - 1e-9 THEN 2
                 WHEN y.idx >= 1 - 1e-9 THEN 3 ELSE NULL END) AS g
      FROM (
        SELECT pw.team_id, pw.scope, pw.week + k * interval '7 days' AS e,
               5 - 5 * (sum(1 / (pi() / 2 * pw.ms::float8 / 3600000 + 1)) + (3 - count(*))) / 3 AS idx
          FROM (
            SELECT sv.team_id, sc.scope, h.uuid, date_bin('7 days', h.hour, timestamptz '2000-01-03 00:00:00+00') AS week,
                   sum(h.q0 + h.q1 + h.q2 + h.q3)::bigint AS ms
              FROM "analytics_player_hours" h
              JOIN "servers" sv ON sv.id = h.server_id
              CROSS JOIN LATERAL (
                SELECT h.server_id::text AS scope
                UNION ALL
                SELECT 'n:' || sv.team_id || ':' || sv.network_name WHERE sv.network_name IS NOT NULL) sc
             GROUP BY 1, 2, 3, 4) pw
          CROSS JOIN generate_series(1, 3) k
         GROUP BY pw.team_id, pw.scope, pw.uuid, pw.week + k * interval '7 days') y) x
 WHERE g IS NOT NULL
 GROUP BY 1, 2, 3;
