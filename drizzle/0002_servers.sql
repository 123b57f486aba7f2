CREATE TYPE "public"."ban_origin" AS ENUM('dashboard', 'game');--> statement-breakpoint
CREATE TYPE "public"."server_kind" AS ENUM('single', 'network');--> statement-breakpoint
CREATE TABLE "agent_events" (
	"server_id" uuid NOT NULL,
	"event_id" text NOT NULL,
	"received_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "agent_events_server_id_event_id_pk" PRIMARY KEY("server_id","event_id")
);
--> statement-breakpoint
CREATE TABLE "announcements" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"server_id" uuid NOT NULL,
	"message" text NOT NULL,
	"interval_seconds" integer,
	"schedule" text,
	"active" boolean DEFAULT true NOT NULL,
	"starts_at" timestamp with time zone,
	"ends_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "bans" (
	"server_id" uuid NOT NULL,
	"uuid" uuid NOT NULL,
	"name" text NOT NULL,
	"reason" text NOT NULL,
	"source" text NOT NULL,
	"origin" "ban_origin" NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone,
	"created_by" uuid,
	"lifted_at" timestamp with time zone,
	"lift_origin" "ban_origin",
	CONSTRAINT "bans_server_id_uuid_pk" PRIMARY KEY("server_id","uuid")
);
--> statement-breakpoint
CREATE TABLE "player_sessions" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"server_id" uuid NOT NULL,
	"uuid" uuid NOT NULL,
	"joined_at" timestamp with time zone NOT NULL,
	"left_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "players" (
	"server_id" uuid NOT NULL,
	"uuid" uuid NOT NULL,
	"name" text NOT NULL,
	"online" boolean DEFAULT false NOT NULL,
	"first_seen" timestamp with time zone NOT NULL,
	"last_seen" timestamp with time zone NOT NULL,
	"play_seconds" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "players_server_id_uuid_pk" PRIMARY KEY("server_id","uuid")
);
--> statement-breakpoint
CREATE TABLE "ranks" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"server_id" uuid NOT NULL,
	"name" text NOT NULL,
	"display_name" text,
	"weight" integer DEFAULT 0 NOT NULL,
	"prefix" text,
	"suffix" text,
	"permissions" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"parents" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "ranks_server_name_uq" UNIQUE("server_id","name")
);
--> statement-breakpoint
CREATE TABLE "server_sample_hours" (
	"server_id" uuid NOT NULL,
	"hour" timestamp with time zone NOT NULL,
	"up_count" integer NOT NULL,
	"down_count" integer NOT NULL,
	"latency_count" integer NOT NULL,
	"latency_sum" double precision NOT NULL,
	"latency_min" integer,
	"latency_max" integer,
	"latency_p95" double precision,
	"players_sum" bigint NOT NULL,
	CONSTRAINT "server_sample_hours_server_id_hour_pk" PRIMARY KEY("server_id","hour")
);
--> statement-breakpoint
CREATE TABLE "server_samples" (
	"server_id" uuid NOT NULL,
	"ts" timestamp with time zone DEFAULT now() NOT NULL,
	"online" boolean NOT NULL,
	"latency_ms" integer,
	"players_online" integer,
	"players_max" integer,
	CONSTRAINT "server_samples_server_id_ts_pk" PRIMARY KEY("server_id","ts")
);
--> statement-breakpoint
CREATE TABLE "server_status" (
	"server_id" uuid PRIMARY KEY NOT NULL,
	"online" boolean,
	"latency_ms" integer,
	"players_online" integer,
	"players_max" integer,
	"version" text,
	"motd" text,
	"error" text,
	"checked_at" timestamp with time zone,
	"changed_at" timestamp with time zone,
	"tps" real,
	"mspt" real,
	"agent_players_online" integer,
	"memory_used_mb" integer,
	"memory_max_mb" integer,
	"heartbeat_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "servers" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"team_id" uuid NOT NULL,
	"name" text NOT NULL,
	"host" text NOT NULL,
	"port" integer NOT NULL,
	"kind" "server_kind" NOT NULL,
	"network_name" text,
	"agent_token_hash" text NOT NULL,
	"agent_token_prefix" text NOT NULL,
	"next_check_at" timestamp with time zone DEFAULT now() NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "servers_agent_token_hash_unique" UNIQUE("agent_token_hash")
);
--> statement-breakpoint
ALTER TABLE "agent_events" ADD CONSTRAINT "agent_events_server_id_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."servers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "announcements" ADD CONSTRAINT "announcements_server_id_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."servers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "bans" ADD CONSTRAINT "bans_server_id_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."servers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "bans" ADD CONSTRAINT "bans_created_by_users_id_fk" FOREIGN KEY ("created_by") REFERENCES "public"."users"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "player_sessions" ADD CONSTRAINT "player_sessions_server_id_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."servers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "players" ADD CONSTRAINT "players_server_id_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."servers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "ranks" ADD CONSTRAINT "ranks_server_id_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."servers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "server_sample_hours" ADD CONSTRAINT "server_sample_hours_server_id_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."servers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "server_samples" ADD CONSTRAINT "server_samples_server_id_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."servers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "server_status" ADD CONSTRAINT "server_status_server_id_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."servers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "servers" ADD CONSTRAINT "servers_team_id_teams_id_fk" FOREIGN KEY ("team_id") REFERENCES "public"."teams"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "agent_events_received_idx" ON "agent_events" USING btree ("received_at");--> statement-breakpoint
CREATE INDEX "announcements_server_idx" ON "announcements" USING btree ("server_id");--> statement-breakpoint
CREATE INDEX "player_sessions_player_idx" ON "player_sessions" USING btree ("server_id","uuid","joined_at");--> statement-breakpoint
CREATE UNIQUE INDEX "player_sessions_open_uq" ON "player_sessions" USING btree ("server_id","uuid") WHERE "player_sessions"."left_at" is null;--> statement-breakpoint
CREATE INDEX "players_last_seen_idx" ON "players" USING btree ("server_id","last_seen");--> statement-breakpoint
CREATE INDEX "servers_team_idx" ON "servers" USING btree ("team_id");--> statement-breakpoint
CREATE INDEX "servers_next_check_idx" ON "servers" USING btree ("next_check_at");