CREATE TABLE "status_pages" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"team_id" uuid NOT NULL,
	"slug" text NOT NULL,
	"title" text NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"host_name" text,
	"published" boolean DEFAULT false NOT NULL,
	"server_ids" uuid[] DEFAULT '{}'::uuid[] NOT NULL,
	"network_names" text[] DEFAULT '{}'::text[] NOT NULL,
	"show" jsonb NOT NULL,
	"logo_url" text,
	"accent_color" text DEFAULT '#2f6fde' NOT NULL,
	"theme" text DEFAULT 'auto' NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "server_status" ADD COLUMN "motd_raw" text;--> statement-breakpoint
ALTER TABLE "status_pages" ADD CONSTRAINT "status_pages_team_id_teams_id_fk" FOREIGN KEY ("team_id") REFERENCES "public"."teams"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "status_pages_slug_uq" ON "status_pages" USING btree ("slug");--> statement-breakpoint
CREATE UNIQUE INDEX "status_pages_host_uq" ON "status_pages" USING btree ("host_name");--> statement-breakpoint
CREATE INDEX "status_pages_team_idx" ON "status_pages" USING btree ("team_id");