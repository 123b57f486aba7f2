CREATE TABLE "server_incidents" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"server_id" uuid NOT NULL,
	"started_at" timestamp with time zone NOT NULL,
	"ended_at" timestamp with time zone,
	"reason" text
);
--> statement-breakpoint
ALTER TABLE "server_incidents" ADD CONSTRAINT "server_incidents_server_id_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."servers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "server_incidents_time_idx" ON "server_incidents" USING btree ("server_id","started_at");--> statement-breakpoint
CREATE UNIQUE INDEX "server_incidents_open_uq" ON "server_incidents" USING btree ("server_id") WHERE "server_incidents"."ended_at" is null;--> statement-breakpoint
-- Servers down now: their incident began when their status last flipped.
INSERT INTO "server_incidents" ("server_id", "started_at", "reason")
SELECT "server_id", coalesce("changed_at", "checked_at"), "down_reason" FROM "server_status"
 WHERE "online" = false AND coalesce("changed_at", "checked_at") IS NOT NULL;--> statement-breakpoint
-- Down periods that ended within the raw samples still kept (METRICS_MINUTE_RETENTION_HOURS): each
-- run of failed checks, ended by the next check that found the server up. Older ones cannot be
-- told apart in the hourly buckets.
INSERT INTO "server_incidents" ("server_id", "started_at", "ended_at")
SELECT e."server_id", e."started_at", e."ended_at"
  FROM (
    SELECT d."server_id", d."ts" AS "started_at",
           (SELECT min(u."ts") FROM "server_samples" u
             WHERE u."server_id" = d."server_id" AND u."online" AND u."ts" > d."ts") AS "ended_at"
      FROM (
        SELECT "server_id", "ts", "online", lag("online") OVER (PARTITION BY "server_id" ORDER BY "ts") AS "before"
          FROM "server_samples") d
     WHERE NOT d."online" AND d."before" IS DISTINCT FROM false) e
 WHERE e."ended_at" IS NOT NULL;
