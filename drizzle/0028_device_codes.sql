CREATE TABLE "device_codes" (
	"code_hash" text PRIMARY KEY NOT NULL,
	"login_request_id" uuid NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	CONSTRAINT "device_codes_login_request_id_unique" UNIQUE("login_request_id")
);
--> statement-breakpoint
ALTER TABLE "login_requests" ADD COLUMN "flow" text DEFAULT 'browser' NOT NULL;--> statement-breakpoint
ALTER TABLE "device_codes" ADD CONSTRAINT "device_codes_login_request_id_login_requests_id_fk" FOREIGN KEY ("login_request_id") REFERENCES "public"."login_requests"("id") ON DELETE cascade ON UPDATE no action;