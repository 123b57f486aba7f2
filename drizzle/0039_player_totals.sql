CREATE TABLE "analytics_player_totals" (
	"team_id" uuid NOT NULL,
	"scope" text NOT NULL,
	"uuid" uuid NOT NULL,
	"ms" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "analytics_player_totals_scope_uuid_pk" PRIMARY KEY("scope","uuid")
);
--> statement-breakpoint
-- Backfill: each scope's and player's month rows summed.
INSERT INTO "analytics_player_totals" ("team_id", "scope", "uuid", "ms")
  SELECT "team_id", "scope", "uuid", sum("ms") FROM "analytics_player_months" GROUP BY 1, 2, 3;--> statement-breakpoint
ALTER TABLE "analytics_player_totals" ADD CONSTRAINT "analytics_player_totals_team_id_teams_id_fk" FOREIGN KEY ("team_id") REFERENCES "public"."teams"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "analytics_player_totals_top_idx" ON "analytics_player_totals" USING btree ("scope","ms" DESC NULLS LAST,"uuid");--> statement-breakpoint
CREATE INDEX "analytics_player_totals_uuid_idx" ON "analytics_player_totals" USING btree ("uuid","scope");