CREATE TABLE "server_metrics_hour" (
	"server_id" uuid NOT NULL,
	"bucket" timestamp with time zone NOT NULL,
	"up_n" integer DEFAULT 0 NOT NULL,
	"down_n" integer DEFAULT 0 NOT NULL,
	"latency_n" integer DEFAULT 0 NOT NULL,
	"latency_sum" double precision DEFAULT 0 NOT NULL,
	"latency_min" double precision,
	"latency_max" double precision,
	"players_n" integer DEFAULT 0 NOT NULL,
	"players_sum" double precision DEFAULT 0 NOT NULL,
	"players_min" double precision,
	"players_max" double precision,
	"tps_n" integer DEFAULT 0 NOT NULL,
	"tps_sum" double precision DEFAULT 0 NOT NULL,
	"tps_min" double precision,
	"tps_max" double precision,
	"mspt_n" integer DEFAULT 0 NOT NULL,
	"mspt_sum" double precision DEFAULT 0 NOT NULL,
	"mspt_min" double precision,
	"mspt_max" double precision,
	"mem_used_n" integer DEFAULT 0 NOT NULL,
	"mem_used_sum" double precision DEFAULT 0 NOT NULL,
	"mem_used_min" double precision,
	"mem_used_max" double precision,
	"mem_max_n" integer DEFAULT 0 NOT NULL,
	"mem_max_sum" double precision DEFAULT 0 NOT NULL,
	"mem_max_min" double precision,
	"mem_max_max" double precision,
	CONSTRAINT "server_metrics_hour_server_id_bucket_pk" PRIMARY KEY("server_id","bucket")
);
--> statement-breakpoint
CREATE TABLE "server_metrics_minute" (
	"server_id" uuid NOT NULL,
	"bucket" timestamp with time zone NOT NULL,
	"up_n" integer DEFAULT 0 NOT NULL,
	"down_n" integer DEFAULT 0 NOT NULL,
	"latency_n" integer DEFAULT 0 NOT NULL,
	"latency_sum" double precision DEFAULT 0 NOT NULL,
	"latency_min" double precision,
	"latency_max" double precision,
	"players_n" integer DEFAULT 0 NOT NULL,
	"players_sum" double precision DEFAULT 0 NOT NULL,
	"players_min" double precision,
	"players_max" double precision,
	"tps_n" integer DEFAULT 0 NOT NULL,
	"tps_sum" double precision DEFAULT 0 NOT NULL,
	"tps_min" double precision,
	"tps_max" double precision,
	"mspt_n" integer DEFAULT 0 NOT NULL,
	"mspt_sum" double precision DEFAULT 0 NOT NULL,
	"mspt_min" double precision,
	"mspt_max" double precision,
	"mem_used_n" integer DEFAULT 0 NOT NULL,
	"mem_used_sum" double precision DEFAULT 0 NOT NULL,
	"mem_used_min" double precision,
	"mem_used_max" double precision,
	"mem_max_n" integer DEFAULT 0 NOT NULL,
	"mem_max_sum" double precision DEFAULT 0 NOT NULL,
	"mem_max_min" double precision,
	"mem_max_max" double precision,
	CONSTRAINT "server_metrics_minute_server_id_bucket_pk" PRIMARY KEY("server_id","bucket")
);
--> statement-breakpoint
-- Buckets are rewritten many times a minute: room on each page keeps those updates HOT (no index churn).
ALTER TABLE "server_metrics_minute" SET (fillfactor = 70);--> statement-breakpoint
ALTER TABLE "server_metrics_hour" SET (fillfactor = 70);--> statement-breakpoint
-- Existing history carries over: raw samples (the last 48 h) into both tiers, the old hourly roll-ups into the hourly tier.
INSERT INTO "server_metrics_minute" ("server_id", "bucket", "up_n", "down_n", "latency_n", "latency_sum", "latency_min", "latency_max", "players_n", "players_sum", "players_min", "players_max")
SELECT "server_id", date_bin(interval '1 minute', "ts", timestamptz '2000-01-01 00:00:00+00'),
       count(*) FILTER (WHERE "online"), count(*) FILTER (WHERE NOT "online"),
       count("latency_ms"), coalesce(sum("latency_ms"), 0), min("latency_ms"), max("latency_ms"),
       count("players_online"), coalesce(sum("players_online"), 0), min("players_online"), max("players_online")
  FROM "server_samples" GROUP BY 1, 2;--> statement-breakpoint
INSERT INTO "server_metrics_hour" ("server_id", "bucket", "up_n", "down_n", "latency_n", "latency_sum", "latency_min", "latency_max", "players_n", "players_sum", "players_min", "players_max")
SELECT "server_id", "bucket", sum("up_n"), sum("down_n"), sum("latency_n"), sum("latency_sum"), min("latency_min"), max("latency_max"),
       sum("players_n"), sum("players_sum"), min("players_min"), max("players_max")
  FROM (
    SELECT "server_id", date_bin(interval '1 hour', "ts", timestamptz '2000-01-01 00:00:00+00') AS "bucket",
           count(*) FILTER (WHERE "online") AS "up_n", count(*) FILTER (WHERE NOT "online") AS "down_n",
           count("latency_ms") AS "latency_n", coalesce(sum("latency_ms"), 0)::float8 AS "latency_sum",
           min("latency_ms")::float8 AS "latency_min", max("latency_ms")::float8 AS "latency_max",
           count("players_online") AS "players_n", coalesce(sum("players_online"), 0)::float8 AS "players_sum",
           min("players_online")::float8 AS "players_min", max("players_online")::float8 AS "players_max"
      FROM "server_samples" GROUP BY 1, 2
    UNION ALL
    -- The old roll-ups summed players over the pings that found the server up.
    SELECT "server_id", "hour", "up_count", "down_count", "latency_count", "latency_sum", "latency_min", "latency_max",
           "up_count", "players_sum", NULL, NULL
      FROM "server_sample_hours"
  ) AS "u"
 GROUP BY 1, 2;--> statement-breakpoint
DROP TABLE "server_sample_hours" CASCADE;--> statement-breakpoint
ALTER TABLE "server_metrics_hour" ADD CONSTRAINT "server_metrics_hour_server_id_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."servers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "server_metrics_minute" ADD CONSTRAINT "server_metrics_minute_server_id_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."servers"("id") ON DELETE cascade ON UPDATE no action;