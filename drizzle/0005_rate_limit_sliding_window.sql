-- The counters change shape (fixed windows to sliding-window slots) and live a minute: dropping
-- the old ones lets the new key be the primary key and the new columns be NOT NULL. The table
-- stays UNLOGGED (0003).
DELETE FROM "rate_limits";--> statement-breakpoint
ALTER TABLE "rate_limits" DROP CONSTRAINT "rate_limits_key_window_start_pk";--> statement-breakpoint
ALTER TABLE "rate_limits" ADD PRIMARY KEY ("key");--> statement-breakpoint
ALTER TABLE "rate_limits" ADD COLUMN "slot_ms" bigint NOT NULL;--> statement-breakpoint
ALTER TABLE "rate_limits" ADD COLUMN "counts" integer[] NOT NULL;--> statement-breakpoint
ALTER TABLE "rate_limits" ADD COLUMN "allowed" boolean NOT NULL;--> statement-breakpoint
ALTER TABLE "rate_limits" DROP COLUMN "window_start";--> statement-breakpoint
ALTER TABLE "rate_limits" DROP COLUMN "count";
