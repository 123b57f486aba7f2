DROP INDEX "analytics_player_months_uuid_idx";--> statement-breakpoint
CREATE INDEX "analytics_player_months_uuid_idx" ON "analytics_player_months" USING btree ("uuid","scope","month","ms");