DROP INDEX "network_sessions_player_idx";--> statement-breakpoint
CREATE INDEX "network_sessions_player_idx" ON "network_sessions" USING btree ("team_id","network_name","uuid","joined_at","id");