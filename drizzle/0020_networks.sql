CREATE TABLE "network_bans" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"team_id" uuid NOT NULL,
	"network_name" text NOT NULL,
	"uuid" uuid NOT NULL,
	"name" text NOT NULL,
	"reason" text NOT NULL,
	"source" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone,
	"created_by" uuid,
	"created_by_key" uuid,
	"lifted_at" timestamp with time zone,
	"lifted_by" uuid,
	"lifted_by_key" uuid,
	"end_reason" text
);
--> statement-breakpoint
CREATE TABLE "network_ranks" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"team_id" uuid NOT NULL,
	"network_name" text NOT NULL,
	"name" text NOT NULL,
	"display_name" text,
	"weight" integer DEFAULT 0 NOT NULL,
	"prefix" text,
	"suffix" text,
	"permissions" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"parents" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "network_ranks_name_uq" UNIQUE("team_id","network_name","name")
);
--> statement-breakpoint
CREATE TABLE "network_session_hops" (
	"session_id" uuid PRIMARY KEY NOT NULL,
	"network_session_id" uuid NOT NULL
);
--> statement-breakpoint
CREATE TABLE "network_sessions" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"team_id" uuid NOT NULL,
	"network_name" text NOT NULL,
	"uuid" uuid NOT NULL,
	"joined_at" timestamp with time zone NOT NULL,
	"left_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "network_bans" ADD CONSTRAINT "network_bans_team_id_teams_id_fk" FOREIGN KEY ("team_id") REFERENCES "public"."teams"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "network_bans" ADD CONSTRAINT "network_bans_created_by_users_id_fk" FOREIGN KEY ("created_by") REFERENCES "public"."users"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "network_bans" ADD CONSTRAINT "network_bans_lifted_by_users_id_fk" FOREIGN KEY ("lifted_by") REFERENCES "public"."users"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "network_ranks" ADD CONSTRAINT "network_ranks_team_id_teams_id_fk" FOREIGN KEY ("team_id") REFERENCES "public"."teams"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "network_session_hops" ADD CONSTRAINT "network_session_hops_session_id_player_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."player_sessions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "network_session_hops" ADD CONSTRAINT "network_session_hops_network_session_id_network_sessions_id_fk" FOREIGN KEY ("network_session_id") REFERENCES "public"."network_sessions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "network_sessions" ADD CONSTRAINT "network_sessions_team_id_teams_id_fk" FOREIGN KEY ("team_id") REFERENCES "public"."teams"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "network_bans_time_idx" ON "network_bans" USING btree ("team_id","network_name","created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "network_bans_open_uq" ON "network_bans" USING btree ("team_id","network_name","uuid") WHERE "network_bans"."lifted_at" is null;--> statement-breakpoint
CREATE INDEX "network_session_hops_ns_idx" ON "network_session_hops" USING btree ("network_session_id");--> statement-breakpoint
CREATE INDEX "network_sessions_time_idx" ON "network_sessions" USING btree ("team_id","network_name","joined_at","id");--> statement-breakpoint
CREATE INDEX "network_sessions_player_idx" ON "network_sessions" USING btree ("team_id","network_name","uuid","joined_at");