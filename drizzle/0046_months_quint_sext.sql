ALTER TABLE "analytics_player_months" ADD COLUMN "prev4_ms" bigint DEFAULT 0 NOT NULL,
  ADD COLUMN "prev5_ms" bigint DEFAULT 0 NOT NULL,
  ADD COLUMN "quint_ms" bigint GENERATED ALWAYS AS (ms + prev4_ms) STORED NOT NULL,
  ADD COLUMN "sext_ms" bigint GENERATED ALWAYS AS (ms + prev5_ms) STORED NOT NULL;--> statement-breakpoint
-- The milliseconds of the four and five UTC months before each row, from the rows there.
UPDATE "analytics_player_months" m SET "prev4_ms" = x.p4, "prev5_ms" = x.p5
  FROM (SELECT r.scope, r.month, r.uuid,
               coalesce(sum(r.ms) OVER (wu RANGE BETWEEN interval '4 months' PRECEDING AND interval '1 month' PRECEDING), 0) AS p4,
               coalesce(sum(r.ms) OVER (wu RANGE BETWEEN interval '5 months' PRECEDING AND interval '1 month' PRECEDING), 0) AS p5
          FROM "analytics_player_months" r
        WINDOW wu AS (PARTITION BY r.scope, r.uuid ORDER BY r.month AT TIME ZONE 'UTC')) x
 WHERE m.scope = x.scope AND m.month = x.month AND m.uuid = x.uuid AND (x.p4 <> 0 OR x.p5 <> 0);--> statement-breakpoint
CREATE INDEX "analytics_player_months_quint_idx" ON "analytics_player_months" USING btree ("scope","month","quint_ms" DESC NULLS LAST,"uuid");--> statement-breakpoint
CREATE INDEX "analytics_player_months_sext_idx" ON "analytics_player_months" USING btree ("scope","month","sext_ms" DESC NULLS LAST,"uuid");
