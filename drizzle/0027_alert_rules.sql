CREATE TABLE "alert_rule_state" (
	"rule_id" uuid NOT NULL,
	"server_id" uuid NOT NULL,
	"last_at" timestamp with time zone NOT NULL,
	"last_value" double precision,
	"breaching_since" timestamp with time zone,
	"recovering_since" timestamp with time zone,
	"firing" boolean DEFAULT false NOT NULL,
	"flipped_at" timestamp with time zone,
	"notified" boolean DEFAULT false NOT NULL,
	CONSTRAINT "alert_rule_state_rule_id_server_id_pk" PRIMARY KEY("rule_id","server_id")
);
--> statement-breakpoint
CREATE TABLE "alert_rules" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"team_id" uuid NOT NULL,
	"server_id" uuid,
	"network_name" text,
	"name" text NOT NULL,
	"metric" text NOT NULL,
	"op" text NOT NULL,
	"threshold" double precision NOT NULL,
	"margin" double precision NOT NULL,
	"duration_seconds" integer NOT NULL,
	"enabled" boolean DEFAULT true NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "alert_rules_target" CHECK (("alert_rules"."server_id" is null) <> ("alert_rules"."network_name" is null))
);
--> statement-breakpoint
ALTER TABLE "alert_rule_state" ADD CONSTRAINT "alert_rule_state_rule_id_alert_rules_id_fk" FOREIGN KEY ("rule_id") REFERENCES "public"."alert_rules"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "alert_rule_state" ADD CONSTRAINT "alert_rule_state_server_id_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."servers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "alert_rules" ADD CONSTRAINT "alert_rules_team_id_teams_id_fk" FOREIGN KEY ("team_id") REFERENCES "public"."teams"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "alert_rules" ADD CONSTRAINT "alert_rules_server_id_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."servers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "alert_rule_state_server_idx" ON "alert_rule_state" USING btree ("server_id");--> statement-breakpoint
CREATE INDEX "alert_rules_team_idx" ON "alert_rules" USING btree ("team_id");--> statement-breakpoint
CREATE INDEX "alert_rules_server_idx" ON "alert_rules" USING btree ("server_id");--> statement-breakpoint
CREATE INDEX "alert_rules_network_idx" ON "alert_rules" USING btree ("team_id","network_name");