CREATE TYPE "public"."moderation_action" AS ENUM('ban', 'unban', 'kick');--> statement-breakpoint
CREATE TABLE "moderation_events" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"team_id" uuid NOT NULL,
	"server_id" uuid,
	"server_name" text NOT NULL,
	"uuid" uuid NOT NULL,
	"name" text,
	"action" "moderation_action" NOT NULL,
	"origin" "ban_origin" NOT NULL,
	"actor_kind" "audit_actor_kind" NOT NULL,
	"actor_id" uuid,
	"actor_name" text NOT NULL,
	"reason" text,
	"source" text,
	"expires_at" timestamp with time zone,
	"at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "player_names" (
	"team_id" uuid NOT NULL,
	"uuid" uuid NOT NULL,
	"name" text NOT NULL,
	"first_used" timestamp with time zone NOT NULL,
	"last_used" timestamp with time zone NOT NULL,
	CONSTRAINT "player_names_team_id_uuid_name_pk" PRIMARY KEY("team_id","uuid","name")
);
--> statement-breakpoint
CREATE TABLE "player_notes" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"team_id" uuid NOT NULL,
	"uuid" uuid NOT NULL,
	"author_kind" "audit_actor_kind" NOT NULL,
	"author_id" uuid,
	"author_name" text NOT NULL,
	"text" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "team_players" (
	"team_id" uuid NOT NULL,
	"uuid" uuid NOT NULL,
	"name" text NOT NULL,
	"first_seen" timestamp with time zone NOT NULL,
	"last_seen" timestamp with time zone NOT NULL,
	"play_seconds" bigint DEFAULT 0 NOT NULL,
	"sessions" integer DEFAULT 0 NOT NULL,
	CONSTRAINT "team_players_team_id_uuid_pk" PRIMARY KEY("team_id","uuid")
);
--> statement-breakpoint
ALTER TABLE "moderation_events" ADD CONSTRAINT "moderation_events_team_id_teams_id_fk" FOREIGN KEY ("team_id") REFERENCES "public"."teams"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "moderation_events" ADD CONSTRAINT "moderation_events_server_id_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."servers"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "player_names" ADD CONSTRAINT "player_names_team_id_teams_id_fk" FOREIGN KEY ("team_id") REFERENCES "public"."teams"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "player_notes" ADD CONSTRAINT "player_notes_team_id_teams_id_fk" FOREIGN KEY ("team_id") REFERENCES "public"."teams"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "team_players" ADD CONSTRAINT "team_players_team_id_teams_id_fk" FOREIGN KEY ("team_id") REFERENCES "public"."teams"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "moderation_events_player_idx" ON "moderation_events" USING btree ("team_id","uuid","at");--> statement-breakpoint
CREATE INDEX "player_names_name_idx" ON "player_names" USING btree ("team_id",lower("name") collate "C");--> statement-breakpoint
CREATE INDEX "player_notes_player_idx" ON "player_notes" USING btree ("team_id","uuid","created_at");--> statement-breakpoint
CREATE INDEX "team_players_last_seen_idx" ON "team_players" USING btree ("team_id","last_seen","uuid");--> statement-breakpoint
CREATE INDEX "team_players_playtime_idx" ON "team_players" USING btree ("team_id","play_seconds","uuid");--> statement-breakpoint
CREATE INDEX "team_players_sessions_idx" ON "team_players" USING btree ("team_id","sessions","uuid");--> statement-breakpoint
CREATE INDEX "team_players_name_idx" ON "team_players" USING btree ("team_id",lower("name") collate "C","uuid");--> statement-breakpoint
CREATE INDEX "players_name_idx" ON "players" USING btree ("server_id",lower("name") collate "C","uuid");--> statement-breakpoint
-- Backfill: the directory, name history and moderation history from what is already held.
WITH ses AS (SELECT server_id, uuid, count(*) AS n FROM player_sessions GROUP BY server_id, uuid)
INSERT INTO "team_players" ("team_id", "uuid", "name", "first_seen", "last_seen", "play_seconds", "sessions")
SELECT s.team_id, p.uuid, (array_agg(p.name ORDER BY p.last_seen DESC, p.name))[1], min(p.first_seen), max(p.last_seen),
       sum(p.play_seconds)::bigint, coalesce(sum(ses.n), 0)::int
  FROM players p JOIN servers s ON s.id = p.server_id
  LEFT JOIN ses ON ses.server_id = p.server_id AND ses.uuid = p.uuid
 GROUP BY s.team_id, p.uuid;--> statement-breakpoint
INSERT INTO "player_names" ("team_id", "uuid", "name", "first_used", "last_used")
SELECT s.team_id, p.uuid, p.name, min(p.first_seen), max(p.last_seen)
  FROM players p JOIN servers s ON s.id = p.server_id
 GROUP BY s.team_id, p.uuid, p.name;--> statement-breakpoint
INSERT INTO "moderation_events" ("team_id", "server_id", "server_name", "uuid", "name", "action", "origin", "actor_kind", "actor_id", "actor_name", "reason", "source", "expires_at", "at")
SELECT s.team_id, s.id, s.name, b.uuid, b.name, 'ban', b.origin,
       CASE WHEN b.origin = 'game' THEN 'agent' WHEN u.id IS NOT NULL THEN 'user' ELSE 'system' END::audit_actor_kind,
       CASE WHEN b.origin = 'game' THEN s.id ELSE u.id END,
       CASE WHEN b.origin = 'game' THEN 'game' ELSE coalesce(u.email, '(recorded before history)') END,
       b.reason, b.source, b.expires_at, b.created_at
  FROM bans b JOIN servers s ON s.id = b.server_id LEFT JOIN users u ON u.id = b.created_by;--> statement-breakpoint
INSERT INTO "moderation_events" ("team_id", "server_id", "server_name", "uuid", "name", "action", "origin", "actor_kind", "actor_id", "actor_name", "at")
SELECT s.team_id, s.id, s.name, b.uuid, b.name, 'unban', b.lift_origin,
       CASE WHEN b.lift_origin = 'game' THEN 'agent' ELSE 'system' END::audit_actor_kind,
       CASE WHEN b.lift_origin = 'game' THEN s.id END,
       CASE WHEN b.lift_origin = 'game' THEN 'game' ELSE '(recorded before history)' END,
       b.lifted_at
  FROM bans b JOIN servers s ON s.id = b.server_id
 WHERE b.lifted_at IS NOT NULL AND b.lift_origin IS NOT NULL;--> statement-breakpoint
INSERT INTO "moderation_events" ("team_id", "server_id", "server_name", "uuid", "name", "action", "origin", "actor_kind", "actor_id", "actor_name", "reason", "at")
SELECT s.team_id, s.id, s.name, k.uuid, k.name, 'kick', 'dashboard',
       CASE WHEN u.id IS NOT NULL THEN 'user' ELSE 'system' END::audit_actor_kind, u.id,
       coalesce(u.email, '(recorded before history)'), k.reason, k.created_at
  FROM kicks k JOIN servers s ON s.id = k.server_id LEFT JOIN users u ON u.id = k.created_by;
