DROP INDEX "analytics_player_months_window_idx";--> statement-breakpoint
ALTER TABLE "analytics_player_months" ADD COLUMN "bedrock" boolean GENERATED ALWAYS AS (uuid between '00000000-0000-0000-0009-000000000000' and '00000000-0000-0000-0009-ffffffffffff') STORED NOT NULL;--> statement-breakpoint
CREATE INDEX "analytics_player_months_last_idx" ON "analytics_player_months" USING btree ("scope","month","bedrock","last_at");--> statement-breakpoint
CREATE INDEX "analytics_player_months_first_at_idx" ON "analytics_player_months" USING btree ("scope","month","bedrock","first_at");--> statement-breakpoint
CREATE INDEX "analytics_player_months_prev_idx" ON "analytics_player_months" USING btree ("scope","month","bedrock","prev_at","first_at");