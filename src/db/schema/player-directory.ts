import { sql } from "drizzle-orm";
import { bigint, index, integer, pgEnum, pgTable, primaryKey, text, timestamp, uuid } from "drizzle-orm/pg-core";
import { auditActorKind } from "./audit";
import { banOrigin, servers } from "./servers";
import { teams } from "./teams";

const tz = (name: string) => timestamp(name, { withTimezone: true });

/**
 * The team's player directory: one row a player the team's servers have seen, kept in the
 * transaction that changes `players` and `player_sessions` (src/player-directory/ingest.ts).
 * Each sort of `GET /players` has its index, the UUID the tie-breaker, so a page is an index
 * range scan whatever the team's size. Names sort and search lower-cased in the "C" collation:
 * the byte order, in which a prefix is a range of the same index.
 */
export const teamPlayers = pgTable(
  "team_players",
  {
    teamId: uuid("team_id")
      .notNull()
      .references(() => teams.id, { onDelete: "cascade" }),
    uuid: uuid("uuid").notNull(),
    /** The name of the latest join. */
    name: text("name").notNull(),
    firstSeen: tz("first_seen").notNull(),
    lastSeen: tz("last_seen").notNull(),
    /** Seconds of closed sessions on every server of the team; an open session adds its running time when read. */
    playSeconds: bigint("play_seconds", { mode: "number" }).notNull().default(0),
    /** Sessions started on the team's servers. */
    sessions: integer("sessions").notNull().default(0),
  },
  (t) => [
    primaryKey({ columns: [t.teamId, t.uuid] }),
    index("team_players_last_seen_idx").on(t.teamId, t.lastSeen, t.uuid),
    index("team_players_playtime_idx").on(t.teamId, t.playSeconds, t.uuid),
    index("team_players_sessions_idx").on(t.teamId, t.sessions, t.uuid),
    index("team_players_name_idx").on(t.teamId, sql`lower(${t.name}) collate "C"`, t.uuid),
  ],
);

/** Every name a player has joined the team's servers with, and when it was first and last used. */
export const playerNames = pgTable(
  "player_names",
  {
    teamId: uuid("team_id")
      .notNull()
      .references(() => teams.id, { onDelete: "cascade" }),
    uuid: uuid("uuid").notNull(),
    name: text("name").notNull(),
    firstUsed: tz("first_used").notNull(),
    lastUsed: tz("last_used").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.teamId, t.uuid, t.name] }),
    // Resolving a name to players: past names too.
    index("player_names_name_idx").on(t.teamId, sql`lower(${t.name}) collate "C"`),
  ],
);

export const moderationAction = pgEnum("moderation_action", ["ban", "unban", "kick"]);

/**
 * Every ban, lift and kick on the team's servers, as history: `bans` keeps one row a server and
 * player (the state the agent applies), this keeps each act, who made it and why. Written in the
 * same transaction as the act, by the dashboard's and the API's paths and by the agent's reports
 * of bans and pardons made in game.
 */
export const moderationEvents = pgTable(
  "moderation_events",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    teamId: uuid("team_id")
      .notNull()
      .references(() => teams.id, { onDelete: "cascade" }),
    /** Null once the server is deleted; its name stays in `server_name`. */
    serverId: uuid("server_id").references(() => servers.id, { onDelete: "set null" }),
    serverName: text("server_name").notNull(),
    uuid: uuid("uuid").notNull(),
    name: text("name"),
    action: moderationAction("action").notNull(),
    origin: banOrigin("origin").notNull(),
    actorKind: auditActorKind("actor_kind").notNull(),
    /** The user or API key; the server (its agent) for what was done in game. */
    actorId: uuid("actor_id"),
    /** An email, a key's name, or `game`, as it was when the act was recorded. */
    actorName: text("actor_name").notNull(),
    reason: text("reason"),
    /** A ban's source as banned-players.json has it (the operator in game, `Dashboard`). */
    source: text("source"),
    expiresAt: tz("expires_at"),
    at: tz("at").notNull().defaultNow(),
  },
  (t) => [index("moderation_events_player_idx").on(t.teamId, t.uuid, t.at)],
);

/** Notes moderators leave about a player, team-wide. */
export const playerNotes = pgTable(
  "player_notes",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    teamId: uuid("team_id")
      .notNull()
      .references(() => teams.id, { onDelete: "cascade" }),
    uuid: uuid("uuid").notNull(),
    authorKind: auditActorKind("author_kind").notNull(),
    /** The user or API key that wrote it: the author may delete it. */
    authorId: uuid("author_id"),
    authorName: text("author_name").notNull(),
    text: text("text").notNull(),
    createdAt: tz("created_at").notNull().defaultNow(),
  },
  (t) => [index("player_notes_player_idx").on(t.teamId, t.uuid, t.createdAt)],
);
