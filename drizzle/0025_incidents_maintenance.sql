CREATE TABLE "incident_updates" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"incident_id" uuid NOT NULL,
	"at" timestamp with time zone DEFAULT now() NOT NULL,
	"status" text NOT NULL,
	"message" text NOT NULL,
	"author_kind" text NOT NULL,
	"author_name" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "maintenance_windows" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"team_id" uuid NOT NULL,
	"server_id" uuid,
	"network_name" text,
	"title" text NOT NULL,
	"message" text,
	"starts_at" timestamp with time zone,
	"ends_at" timestamp with time zone,
	"schedule" text,
	"duration_minutes" integer,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "maintenance_windows_subject" CHECK (("maintenance_windows"."server_id" is null) <> ("maintenance_windows"."network_name" is null)),
	CONSTRAINT "maintenance_windows_when" CHECK (("maintenance_windows"."schedule" is null and "maintenance_windows"."starts_at" is not null and "maintenance_windows"."ends_at" > "maintenance_windows"."starts_at" and "maintenance_windows"."duration_minutes" is null) or ("maintenance_windows"."schedule" is not null and "maintenance_windows"."duration_minutes" > 0))
);
--> statement-breakpoint
DROP INDEX "server_incidents_open_uq";--> statement-breakpoint
ALTER TABLE "server_incidents" ALTER COLUMN "server_id" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "server_incidents" ADD COLUMN "team_id" uuid;--> statement-breakpoint
-- Every incident so far is a server's down period: its team is the server's.
UPDATE "server_incidents" i SET "team_id" = s."team_id" FROM "servers" s WHERE s."id" = i."server_id";--> statement-breakpoint
ALTER TABLE "server_incidents" ALTER COLUMN "team_id" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "server_incidents" ADD COLUMN "network_name" text;--> statement-breakpoint
ALTER TABLE "server_incidents" ADD COLUMN "kind" text DEFAULT 'down' NOT NULL;--> statement-breakpoint
ALTER TABLE "server_incidents" ADD COLUMN "title" text;--> statement-breakpoint
ALTER TABLE "server_incidents" ADD COLUMN "status" text DEFAULT 'investigating' NOT NULL;--> statement-breakpoint
ALTER TABLE "server_incidents" ADD COLUMN "crash" jsonb;--> statement-breakpoint
ALTER TABLE "server_incidents" ADD COLUMN "announced_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "server_incidents" ADD COLUMN "updated_at" timestamp with time zone DEFAULT now() NOT NULL;--> statement-breakpoint
ALTER TABLE "server_alert_state" ADD COLUMN "planned_stop_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "server_alert_state" ADD COLUMN "held_for" text;--> statement-breakpoint
ALTER TABLE "incident_updates" ADD CONSTRAINT "incident_updates_incident_id_server_incidents_id_fk" FOREIGN KEY ("incident_id") REFERENCES "public"."server_incidents"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "maintenance_windows" ADD CONSTRAINT "maintenance_windows_team_id_teams_id_fk" FOREIGN KEY ("team_id") REFERENCES "public"."teams"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "maintenance_windows" ADD CONSTRAINT "maintenance_windows_server_id_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."servers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "incident_updates_incident_idx" ON "incident_updates" USING btree ("incident_id","at");--> statement-breakpoint
CREATE INDEX "maintenance_windows_team_idx" ON "maintenance_windows" USING btree ("team_id","network_name");--> statement-breakpoint
CREATE INDEX "maintenance_windows_server_idx" ON "maintenance_windows" USING btree ("server_id");--> statement-breakpoint
ALTER TABLE "server_incidents" ADD CONSTRAINT "server_incidents_team_id_teams_id_fk" FOREIGN KEY ("team_id") REFERENCES "public"."teams"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "server_incidents_team_idx" ON "server_incidents" USING btree ("team_id","started_at");--> statement-breakpoint
CREATE UNIQUE INDEX "server_incidents_open_uq" ON "server_incidents" USING btree ("server_id") WHERE "server_incidents"."ended_at" is null and "server_incidents"."kind" <> 'manual';--> statement-breakpoint
ALTER TABLE "server_incidents" ADD CONSTRAINT "server_incidents_subject" CHECK ("server_incidents"."server_id" is not null or "server_incidents"."network_name" is not null);