CREATE TABLE "player_days" (
	"server_id" uuid NOT NULL,
	"day" timestamp with time zone NOT NULL,
	"uuid" uuid NOT NULL,
	"playtime_us" bigint DEFAULT 0 NOT NULL,
	"joins" integer DEFAULT 0 NOT NULL,
	"carried_from" timestamp with time zone,
	CONSTRAINT "player_days_server_id_day_uuid_pk" PRIMARY KEY("server_id","day","uuid")
);
--> statement-breakpoint
CREATE TABLE "server_days" (
	"server_id" uuid NOT NULL,
	"day" timestamp with time zone NOT NULL,
	"players" integer DEFAULT 0 NOT NULL,
	"playtime_us" bigint DEFAULT 0 NOT NULL,
	"peak" integer DEFAULT 0 NOT NULL,
	CONSTRAINT "server_days_server_id_day_pk" PRIMARY KEY("server_id","day")
);
--> statement-breakpoint
ALTER TABLE "player_days" ADD CONSTRAINT "player_days_server_id_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."servers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "server_days" ADD CONSTRAINT "server_days_server_id_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."servers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "players_first_seen_idx" ON "players" USING btree ("server_id","first_seen");--> statement-breakpoint
-- Backfill: every closed session cut into the UTC days it touches (the day it starts in, and
-- each later day it runs into), as closeSessions adds a session when it closes it.
CREATE TEMPORARY TABLE "rollup_pieces" AS
SELECT s.server_id, d.day, s.uuid, s.joined_at,
       greatest(s.joined_at, d.day) AS a, least(s.left_at, d.day + interval '1 day') AS b
  FROM player_sessions s,
       generate_series(date_bin('1 day', s.joined_at, timestamptz '2000-01-01 00:00:00+00'), s.left_at, interval '1 day') AS d(day)
 WHERE s.left_at IS NOT NULL AND (d.day < s.left_at OR d.day <= s.joined_at);
--> statement-breakpoint
INSERT INTO "player_days" ("server_id", "day", "uuid", "playtime_us", "joins", "carried_from")
SELECT server_id, day, uuid, sum((extract(epoch FROM b - a) * 1000000)::bigint),
       count(*) FILTER (WHERE joined_at >= day), min(joined_at) FILTER (WHERE joined_at < day)
  FROM rollup_pieces GROUP BY server_id, day, uuid;
--> statement-breakpoint
INSERT INTO "server_days" ("server_id", "day", "players", "playtime_us", "peak")
SELECT pd.server_id, pd.day, count(*), sum(pd.playtime_us), coalesce(max(pk.peak), 0)
  FROM player_days pd
  LEFT JOIN (
    SELECT server_id, day, max(level) AS peak
      FROM (SELECT server_id, day, delta,
                   sum(delta) OVER (PARTITION BY server_id, day ORDER BY t, delta ROWS UNBOUNDED PRECEDING) AS level
              FROM (SELECT server_id, day, a AS t, 1 AS delta FROM rollup_pieces WHERE a < b
                    UNION ALL SELECT server_id, day, b, -1 FROM rollup_pieces WHERE a < b) pts) run
     WHERE delta = 1 GROUP BY server_id, day) pk
    ON pk.server_id = pd.server_id AND pk.day = pd.day
 GROUP BY pd.server_id, pd.day;
--> statement-breakpoint
DROP TABLE "rollup_pieces";
