ALTER TABLE "login_requests" ADD COLUMN "identity_provider" text;--> statement-breakpoint
ALTER TABLE "sessions" ADD COLUMN "identity_provider" text DEFAULT 'microsoft' NOT NULL;--> statement-breakpoint
-- Rows from before the provider was recorded: the development provider gives every player an offline-mode (version 3) UUID, Microsoft accounts have version 4 ones.
UPDATE "sessions" SET "identity_provider" = 'development' WHERE substr("mc_uuid", 15, 1) = '3';--> statement-breakpoint
UPDATE "login_requests" SET "identity_provider" = CASE WHEN substr("context"->>'mcUuid', 15, 1) = '3' THEN 'development' ELSE 'microsoft' END WHERE "context"->>'mcUuid' IS NOT NULL;
