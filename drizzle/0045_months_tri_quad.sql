ALTER TABLE "analytics_player_months" ADD COLUMN "prev2_ms" bigint DEFAULT 0 NOT NULL,
  ADD COLUMN "prev3_ms" bigint DEFAULT 0 NOT NULL,
  ADD COLUMN "tri_ms" bigint GENERATED ALWAYS AS (ms + prev2_ms) STORED NOT NULL,
  ADD COLUMN "quad_ms" bigint GENERATED ALWAYS AS (ms + prev3_ms) STORED NOT NULL;--> statement-breakpoint
-- The milliseconds of the two and three UTC months before each row, from the rows there.
UPDATE "analytics_player_months" m SET "prev2_ms" = x.p2, "prev3_ms" = x.p3
  FROM (SELECT r.scope, r.month, r.uuid,
               coalesce(sum(r.ms) OVER (wu RANGE BETWEEN interval '2 months' PRECEDING AND interval '1 month' PRECEDING), 0) AS p2,
               coalesce(sum(r.ms) OVER (wu RANGE BETWEEN interval '3 months' PRECEDING AND interval '1 month' PRECEDING), 0) AS p3
          FROM "analytics_player_months" r
        WINDOW wu AS (PARTITION BY r.scope, r.uuid ORDER BY r.month AT TIME ZONE 'UTC')) x
 WHERE m.scope = x.scope AND m.month = x.month AND m.uuid = x.uuid AND (x.p2 <> 0 OR x.p3 <> 0);--> statement-breakpoint
CREATE INDEX "analytics_player_months_tri_idx" ON "analytics_player_months" USING btree ("scope","month","tri_ms" DESC NULLS LAST,"uuid");--> statement-breakpoint
CREATE INDEX "analytics_player_months_quad_idx" ON "analytics_player_months" USING btree ("scope","month","quad_ms" DESC NULLS LAST,"uuid");
