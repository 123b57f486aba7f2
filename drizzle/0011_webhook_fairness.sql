CREATE TABLE "webhook_team_budgets" (
	"team_id" uuid PRIMARY KEY NOT NULL,
	"event_tokens" double precision NOT NULL,
	"delivery_tokens" double precision NOT NULL,
	"refilled_at" timestamp with time zone DEFAULT now() NOT NULL,
	"dropped_events" bigint DEFAULT 0 NOT NULL,
	"dropped_deliveries" bigint DEFAULT 0 NOT NULL,
	"last_dropped_at" timestamp with time zone
);
--> statement-breakpoint
DROP INDEX "webhook_deliveries_due_idx";--> statement-breakpoint
ALTER TABLE "webhook_endpoints" ADD COLUMN "paused_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "webhook_endpoints" ADD COLUMN "paused_until" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "webhook_team_budgets" ADD CONSTRAINT "webhook_team_budgets_team_id_teams_id_fk" FOREIGN KEY ("team_id") REFERENCES "public"."teams"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "webhook_deliveries_endpoint_due_idx" ON "webhook_deliveries" USING btree ("endpoint_id","next_attempt_at") WHERE status in ('pending', 'delivering');