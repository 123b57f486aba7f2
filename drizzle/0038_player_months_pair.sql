ALTER TABLE "analytics_player_months" ADD COLUMN "prev_ms" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
-- Backfill: each row's previous month's milliseconds, where the player has a row in that month.
UPDATE "analytics_player_months" m SET "prev_ms" = p."ms"
  FROM "analytics_player_months" p
 WHERE p."scope" = m."scope" AND p."uuid" = m."uuid" AND p."month" = m."month" - interval '1 month';--> statement-breakpoint
ALTER TABLE "analytics_player_months" ADD COLUMN "pair_ms" bigint GENERATED ALWAYS AS (ms + prev_ms) STORED NOT NULL;--> statement-breakpoint
CREATE INDEX "analytics_player_months_pair_idx" ON "analytics_player_months" USING btree ("scope","month","pair_ms" DESC NULLS LAST,"uuid");
