CREATE TABLE "dev_idp_grants" (
	"key" text PRIMARY KEY NOT NULL,
	"expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE INDEX "dev_idp_grants_expires_idx" ON "dev_idp_grants" USING btree ("expires_at");