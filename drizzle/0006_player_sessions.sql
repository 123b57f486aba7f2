CREATE TYPE "public"."session_end" AS ENUM('leave', 'rejoin', 'agent_silent', 'not_seen', 'server_offline');--> statement-breakpoint
CREATE TYPE "public"."session_source" AS ENUM('agent', 'ping');--> statement-breakpoint
ALTER TABLE "player_sessions" ADD COLUMN "source" "session_source" DEFAULT 'agent' NOT NULL;--> statement-breakpoint
ALTER TABLE "player_sessions" ADD COLUMN "seen_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "player_sessions" ADD COLUMN "end_reason" "session_end";--> statement-breakpoint
CREATE INDEX "player_sessions_server_time_idx" ON "player_sessions" USING btree ("server_id","joined_at","id");--> statement-breakpoint
UPDATE "player_sessions" SET "seen_at" = coalesce("left_at", "joined_at") WHERE "seen_at" IS NULL;
