CREATE TABLE "oidc_clients" (
	"client_id" uuid PRIMARY KEY NOT NULL,
	"redirect_uris" text[] NOT NULL,
	"public" boolean DEFAULT false NOT NULL,
	"id_token_alg" text DEFAULT 'RS256' NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "oidc_grants" (
	"id" uuid PRIMARY KEY NOT NULL,
	"client_id" uuid NOT NULL,
	"mc_uuid" text NOT NULL,
	"mc_username" text NOT NULL,
	"code_hash" text NOT NULL,
	"code_expires_at" timestamp with time zone NOT NULL,
	"code_used_at" timestamp with time zone,
	"access_token_hash" text NOT NULL,
	"access_expires_at" timestamp with time zone,
	"redirect_uri" text NOT NULL,
	"code_challenge" text,
	"nonce" text,
	"scope" text NOT NULL,
	"identity_provider" text DEFAULT 'microsoft' NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"revoked_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "oidc_keys" (
	"kid" text PRIMARY KEY NOT NULL,
	"alg" text NOT NULL,
	"public_jwk" jsonb NOT NULL,
	"private_key" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "login_requests" ADD COLUMN "oidc" jsonb;--> statement-breakpoint
ALTER TABLE "oidc_clients" ADD CONSTRAINT "oidc_clients_client_id_client_apps_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."client_apps"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "oidc_grants" ADD CONSTRAINT "oidc_grants_id_login_requests_id_fk" FOREIGN KEY ("id") REFERENCES "public"."login_requests"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "oidc_grants" ADD CONSTRAINT "oidc_grants_client_id_client_apps_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."client_apps"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "oidc_grants_code_hash_idx" ON "oidc_grants" USING btree ("code_hash");--> statement-breakpoint
CREATE UNIQUE INDEX "oidc_grants_access_token_hash_idx" ON "oidc_grants" USING btree ("access_token_hash");--> statement-breakpoint
CREATE INDEX "oidc_grants_player_idx" ON "oidc_grants" USING btree ("mc_uuid");--> statement-breakpoint
CREATE INDEX "oidc_grants_client_idx" ON "oidc_grants" USING btree ("client_id");