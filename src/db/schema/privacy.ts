import { index, integer, pgTable, primaryKey, text, timestamp, uuid } from "drizzle-orm/pg-core";
import { users } from "./accounts";
import { teams } from "./teams";

const tz = (name: string) => timestamp(name, { withTimezone: true });

/**
 * Players of a team who asked not to be tracked (docs/privacy.md, "Opting out"). The ingest drops
 * their joins and leaves and the pings' lists of them; the agent is told, so it stops sending
 * them. Bans still apply. The UUID stays here after an erasure: it is the player's own request,
 * and dropping it would start collecting again.
 */
export const playerOptOuts = pgTable(
  "player_opt_outs",
  {
    teamId: uuid("team_id")
      .notNull()
      .references(() => teams.id, { onDelete: "cascade" }),
    uuid: uuid("uuid").notNull(),
    /** For the people reading the list; dropped by an erasure. */
    name: text("name"),
    createdAt: tz("created_at").notNull().defaultNow(),
    createdBy: uuid("created_by").references(() => users.id, { onDelete: "set null" }),
  },
  (t) => [primaryKey({ columns: [t.teamId, t.uuid] }), index("player_opt_outs_uuid_idx").on(t.uuid)],
);

/**
 * A team's retention of player data, in days; null keeps the platform's default (the ceiling
 * PLAYER_DATA_MAX_RETENTION_DAYS). One row a team that set one.
 */
export const teamPrivacy = pgTable("team_privacy", {
  teamId: uuid("team_id")
    .primaryKey()
    .references(() => teams.id, { onDelete: "cascade" }),
  /** Closed sessions (and the daily rollups made from them) older than this are deleted. */
  sessionRetentionDays: integer("session_retention_days"),
  /** A player not seen for this long is forgotten (as an erasure, without a tombstone). */
  playerRetentionDays: integer("player_retention_days"),
  updatedAt: tz("updated_at").notNull().defaultNow(),
});
