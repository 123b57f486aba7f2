CREATE TABLE "player_opt_outs" (
	"team_id" uuid NOT NULL,
	"uuid" uuid NOT NULL,
	"name" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"created_by" uuid,
	CONSTRAINT "player_opt_outs_team_id_uuid_pk" PRIMARY KEY("team_id","uuid")
);
--> statement-breakpoint
CREATE TABLE "team_privacy" (
	"team_id" uuid PRIMARY KEY NOT NULL,
	"session_retention_days" integer,
	"player_retention_days" integer,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "player_opt_outs" ADD CONSTRAINT "player_opt_outs_team_id_teams_id_fk" FOREIGN KEY ("team_id") REFERENCES "public"."teams"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "player_opt_outs" ADD CONSTRAINT "player_opt_outs_created_by_users_id_fk" FOREIGN KEY ("created_by") REFERENCES "public"."users"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "team_privacy" ADD CONSTRAINT "team_privacy_team_id_teams_id_fk" FOREIGN KEY ("team_id") REFERENCES "public"."teams"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "player_opt_outs_uuid_idx" ON "player_opt_outs" USING btree ("uuid");--> statement-breakpoint
CREATE INDEX "player_days_player_idx" ON "player_days" USING btree ("server_id","uuid");