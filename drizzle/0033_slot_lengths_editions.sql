ALTER TABLE "analytics_slots" ADD COLUMN "bedrock_ms" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "analytics_slots" ADD COLUMN "len0" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "analytics_slots" ADD COLUMN "len1" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "analytics_slots" ADD COLUMN "len2" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "analytics_slots" ADD COLUMN "len3" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "analytics_slots" ADD COLUMN "len4" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "analytics_slots" ADD COLUMN "len5" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "analytics_slots" ADD COLUMN "len6" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
-- Session lengths move from per-server rows to the scope's slots (the server's and its network's),
-- so a network's read is one row per slot instead of one per server, slot and bucket.
INSERT INTO "analytics_slots" ("team_id", "scope", "slot", "peak_at", "len0", "len1", "len2", "len3", "len4", "len5", "len6")
SELECT sv.team_id, sc.scope, l.slot, l.slot,
       coalesce(sum(l.sessions) FILTER (WHERE l.bucket = 0), 0), coalesce(sum(l.sessions) FILTER (WHERE l.bucket = 1), 0),
       coalesce(sum(l.sessions) FILTER (WHERE l.bucket = 2), 0), coalesce(sum(l.sessions) FILTER (WHERE l.bucket = 3), 0),
       coalesce(sum(l.sessions) FILTER (WHERE l.bucket = 4), 0), coalesce(sum(l.sessions) FILTER (WHERE l.bucket = 5), 0),
       coalesce(sum(l.sessions) FILTER (WHERE l.bucket = 6), 0)
  FROM "analytics_session_lengths" l
  JOIN "servers" sv ON sv.id = l.server_id
  CROSS JOIN LATERAL (
    SELECT l.server_id::text AS scope
    UNION ALL
    SELECT 'n:' || sv.team_id || ':' || sv.network_name WHERE sv.network_name IS NOT NULL) sc
 GROUP BY sv.team_id, sc.scope, l.slot
ON CONFLICT ("scope", "slot") DO UPDATE SET
  "len0" = excluded."len0", "len1" = excluded."len1", "len2" = excluded."len2", "len3" = excluded."len3",
  "len4" = excluded."len4", "len5" = excluded."len5", "len6" = excluded."len6";--> statement-breakpoint
-- The Bedrock (Floodgate) players' part of each slot's player time, from the player-hour rows.
UPDATE "analytics_slots" a SET "bedrock_ms" = x.ms
  FROM (
    SELECT sc.scope, h.hour + i * interval '15 minutes' AS slot, sum((array[h.q0, h.q1, h.q2, h.q3])[i + 1])::bigint AS ms
      FROM "analytics_player_hours" h
      JOIN "servers" sv ON sv.id = h.server_id
      CROSS JOIN LATERAL (
        SELECT h.server_id::text AS scope
        UNION ALL
        SELECT 'n:' || sv.team_id || ':' || sv.network_name WHERE sv.network_name IS NOT NULL) sc
      CROSS JOIN generate_series(0, 3) AS i
     WHERE h.uuid BETWEEN '00000000-0000-0000-0009-000000000000' AND '00000000-0000-0000-0009-ffffffffffff'
     GROUP BY 1, 2) x
 WHERE a.scope = x.scope AND a.slot = x.slot AND x.ms <> 0;--> statement-breakpoint
DROP TABLE "analytics_session_lengths" CASCADE;
