import { sql } from "drizzle-orm";
import { index, integer, jsonb, pgTable, text, timestamp, unique, uniqueIndex, uuid } from "drizzle-orm/pg-core";
import { users } from "./accounts";
import { playerSessions } from "./servers";
import { teams } from "./teams";

const tz = (name: string) => timestamp(name, { withTimezone: true });

/**
 * A player's stay on a network, counted once however many of its servers they pass through: the
 * hops (`network_session_hops`) are the per-server sessions it is made of. Kept at ingest, in the
 * transaction that writes `player_sessions` (src/networks/ingest.ts; docs/networks.md gives the
 * rule). A network is the team's servers of kind `network` sharing one `network_name`.
 */
export const networkSessions = pgTable(
  "network_sessions",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    teamId: uuid("team_id")
      .notNull()
      .references(() => teams.id, { onDelete: "cascade" }),
    networkName: text("network_name").notNull(),
    uuid: uuid("uuid").notNull(),
    joinedAt: tz("joined_at").notNull(),
    /** The latest leave among its closed hops; the session is online while any hop is open. */
    leftAt: tz("left_at"),
  },
  (t) => [
    // The network's sessions newest first (the sessions page and its cursor), and a player's in the same
    // order (its latest at a join: with the id, the index alone answers `order by joined_at desc,
    // id desc limit 1`; without it the planner took the time index and read the network's sessions).
    index("network_sessions_time_idx").on(t.teamId, t.networkName, t.joinedAt, t.id),
    index("network_sessions_player_idx").on(t.teamId, t.networkName, t.uuid, t.joinedAt, t.id),
  ],
);

export const networkSessionHops = pgTable(
  "network_session_hops",
  {
    sessionId: uuid("session_id")
      .primaryKey()
      .references(() => playerSessions.id, { onDelete: "cascade" }),
    networkSessionId: uuid("network_session_id")
      .notNull()
      .references(() => networkSessions.id, { onDelete: "cascade" }),
  },
  (t) => [index("network_session_hops_ns_idx").on(t.networkSessionId)],
);

/**
 * Bans on a whole network: every server of it carries them in its agent's configuration. A ban is
 * never overwritten: a lift (or a new ban replacing one) closes the row, a new ban is a new row.
 */
export const networkBans = pgTable(
  "network_bans",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    teamId: uuid("team_id")
      .notNull()
      .references(() => teams.id, { onDelete: "cascade" }),
    networkName: text("network_name").notNull(),
    uuid: uuid("uuid").notNull(),
    name: text("name").notNull(),
    reason: text("reason").notNull(),
    source: text("source").notNull(),
    createdAt: tz("created_at").notNull().defaultNow(),
    /** Null: permanent. */
    expiresAt: tz("expires_at"),
    createdBy: uuid("created_by").references(() => users.id, { onDelete: "set null" }),
    /** The API key that made it, when no person did. */
    createdByKey: uuid("created_by_key"),
    liftedAt: tz("lifted_at"),
    liftedBy: uuid("lifted_by").references(() => users.id, { onDelete: "set null" }),
    liftedByKey: uuid("lifted_by_key"),
    /** Why it ended: lifted, or replaced by a newer ban of the same player. */
    endReason: text("end_reason"),
  },
  (t) => [
    index("network_bans_time_idx").on(t.teamId, t.networkName, t.createdAt),
    // At most one open ban a player and network.
    uniqueIndex("network_bans_open_uq").on(t.teamId, t.networkName, t.uuid).where(sql`${t.liftedAt} is null`),
  ],
);

/** Ranks set on a network: each of its servers' agents carries them; a server rank of the same name wins. */
export const networkRanks = pgTable(
  "network_ranks",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    teamId: uuid("team_id")
      .notNull()
      .references(() => teams.id, { onDelete: "cascade" }),
    networkName: text("network_name").notNull(),
    name: text("name").notNull(),
    displayName: text("display_name"),
    weight: integer("weight").notNull().default(0),
    prefix: text("prefix"),
    suffix: text("suffix"),
    permissions: jsonb("permissions").$type<string[]>().notNull().default([]),
    parents: jsonb("parents").$type<string[]>().notNull().default([]),
    createdAt: tz("created_at").notNull().defaultNow(),
    updatedAt: tz("updated_at").notNull().defaultNow(),
  },
  (t) => [unique("network_ranks_name_uq").on(t.teamId, t.networkName, t.name)],
);
