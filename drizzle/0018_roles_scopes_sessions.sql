ALTER TYPE "public"."team_role" ADD VALUE 'moderator' BEFORE 'viewer';--> statement-breakpoint
CREATE TABLE "login_sessions" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_used_at" timestamp with time zone DEFAULT now() NOT NULL,
	"address" text,
	"user_agent" text,
	"revoked_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "kicks" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"server_id" uuid NOT NULL,
	"uuid" uuid NOT NULL,
	"name" text NOT NULL,
	"reason" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"created_by" uuid
);
--> statement-breakpoint
ALTER TABLE "api_keys" ALTER COLUMN "role" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "scopes" text[];--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "server_ids" uuid[];--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "expires_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "login_sessions" ADD CONSTRAINT "login_sessions_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "kicks" ADD CONSTRAINT "kicks_server_id_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."servers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "kicks" ADD CONSTRAINT "kicks_created_by_users_id_fk" FOREIGN KEY ("created_by") REFERENCES "public"."users"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "login_sessions_user_idx" ON "login_sessions" USING btree ("user_id");--> statement-breakpoint
CREATE INDEX "kicks_server_created_idx" ON "kicks" USING btree ("server_id","created_at");--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_role_or_scopes" CHECK (("api_keys"."role" is null) <> ("api_keys"."scopes" is null));--> statement-breakpoint
INSERT INTO "login_sessions" ("id", "user_id", "created_at", "last_used_at", "revoked_at")
SELECT "family_id", "user_id", min("created_at"), max("created_at"), max("revoked_at")
FROM "refresh_tokens"
GROUP BY "family_id", "user_id"
ON CONFLICT ("id") DO NOTHING;
