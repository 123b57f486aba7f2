DROP INDEX "players_first_seen_idx";--> statement-breakpoint
CREATE INDEX "players_uuid_first_seen_idx" ON "players" USING btree ("uuid","first_seen","server_id");--> statement-breakpoint
CREATE INDEX "analytics_player_hours_window_idx" ON "analytics_player_hours" USING btree ("server_id","hour","uuid","q0","q1","q2","q3","seen");--> statement-breakpoint
CREATE INDEX "analytics_slots_window_idx" ON "analytics_slots" USING btree ("scope","slot","peak","peak_at");--> statement-breakpoint
CREATE INDEX "players_first_seen_idx" ON "players" USING btree ("server_id","first_seen","uuid");