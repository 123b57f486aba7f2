ALTER TABLE "sessions" ADD COLUMN "textures" jsonb;--> statement-breakpoint
ALTER TABLE "sessions" ADD COLUMN "last_used_at" timestamp with time zone;--> statement-breakpoint
CREATE INDEX "sessions_mc_uuid_idx" ON "sessions" USING btree ("mc_uuid");