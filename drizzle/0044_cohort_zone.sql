ALTER TABLE "teams" ADD COLUMN "cohort_zone" text DEFAULT 'UTC' NOT NULL;--> statement-breakpoint
-- The kept counts were made in the team's zone until now.
UPDATE "teams" SET "cohort_zone" = "time_zone";
