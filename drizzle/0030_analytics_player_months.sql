CREATE TABLE "analytics_player_months" (
	"team_id" uuid NOT NULL,
	"scope" text NOT NULL,
	"month" timestamp with time zone NOT NULL,
	"uuid" uuid NOT NULL,
	"ms" bigint DEFAULT 0 NOT NULL,
	"first_at" timestamp with time zone NOT NULL,
	"last_at" timestamp with time zone NOT NULL,
	"prev_at" timestamp with time zone,
	CONSTRAINT "analytics_player_months_scope_month_uuid_pk" PRIMARY KEY("scope","month","uuid")
);
--> statement-breakpoint
ALTER TABLE "analytics_player_months" ADD CONSTRAINT "analytics_player_months_team_id_teams_id_fk" FOREIGN KEY ("team_id") REFERENCES "public"."teams"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "analytics_player_months_window_idx" ON "analytics_player_months" USING btree ("scope","month","uuid","ms","first_at","last_at","prev_at");--> statement-breakpoint
CREATE INDEX "analytics_player_months_top_idx" ON "analytics_player_months" USING btree ("scope","month","ms" DESC NULLS LAST,"uuid");--> statement-breakpoint
CREATE INDEX "analytics_player_months_uuid_idx" ON "analytics_player_months" USING btree ("uuid","scope","month");--> statement-breakpoint
-- Backfill from the player-hour rows, as rebuildAggregates does (src/analytics/aggregates.ts monthRows).
INSERT INTO "analytics_player_months" ("team_id", "scope", "month", "uuid", "ms", "first_at", "last_at", "prev_at")
SELECT r.*, max(r.last_at) OVER (PARTITION BY r.scope, r.uuid ORDER BY r.month ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
  FROM (
    SELECT sv.team_id, sc.scope, date_trunc('month', h.hour, 'UTC') AS month, h.uuid,
           sum(h.q0 + h.q1 + h.q2 + h.q3)::bigint AS ms,
           min(h.hour + (CASE WHEN h.seen & 1 <> 0 THEN 0 WHEN h.seen & 2 <> 0 THEN 1 WHEN h.seen & 4 <> 0 THEN 2 ELSE 3 END) * interval '15 minutes') AS first_at,
           max(h.hour + (CASE WHEN h.seen & 8 <> 0 THEN 3 WHEN h.seen & 4 <> 0 THEN 2 WHEN h.seen & 2 <> 0 THEN 1 ELSE 0 END) * interval '15 minutes') AS last_at
      FROM "analytics_player_hours" h
      JOIN "servers" sv ON sv.id = h.server_id
      CROSS JOIN LATERAL (
        SELECT h.server_id::text AS scope
        UNION ALL
        SELECT 'n:' || sv.team_id || ':' || sv.network_name WHERE sv.network_name IS NOT NULL) sc
     WHERE h.seen <> 0
     GROUP BY sv.team_id, sc.scope, date_trunc('month', h.hour, 'UTC'), h.uuid) r;
