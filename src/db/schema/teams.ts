import { sql } from "drizzle-orm";
import {
  boolean,
  check,
  index,
  pgEnum,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
  uuid,
} from "drizzle-orm/pg-core";
import { users } from "./accounts";

/** owner > admin > moderator > viewer; the order of the ranks lives in src/auth/principal.ts, not here. */
export const teamRole = pgEnum("team_role", ["owner", "admin", "moderator", "viewer"]);

export const teams = pgTable("teams", {
  id: uuid("id").primaryKey().defaultRandom(),
  name: text("name").notNull(),
  /** Members without a second factor are refused the team's routes (403 two_factor_required). */
  requireTwoFactor: boolean("require_two_factor").notNull().default(false),
  /** IANA time zone the analytics reads use unless a read names another (docs/analytics.md). */
  timeZone: text("time_zone").notNull().default("UTC"),
  /**
   * The zone retention's kept counts are in: the time zone until it changes, then the old one
   * until the counts are made again in the new one, outside the request (src/analytics/zones.ts).
   */
  cohortZone: text("cohort_zone").notNull().default("UTC"),
  createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
});

export const teamMembers = pgTable(
  "team_members",
  {
    teamId: uuid("team_id")
      .notNull()
      .references(() => teams.id, { onDelete: "cascade" }),
    userId: uuid("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    role: teamRole("role").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.teamId, t.userId] }), index("team_members_user_idx").on(t.userId)],
);

export const apiKeys = pgTable(
  "api_keys",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    teamId: uuid("team_id")
      .notNull()
      .references(() => teams.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    /** Either a role or a set of scopes (src/auth/scopes.ts), never both. */
    role: teamRole("role"),
    scopes: text("scopes").array(),
    /** When set, the key reaches only these servers of its team (and only server routes). */
    serverIds: uuid("server_ids").array(),
    expiresAt: timestamp("expires_at", { withTimezone: true }),
    keyHash: text("key_hash").notNull().unique(),
    prefix: text("prefix").notNull(),
    createdBy: uuid("created_by").references(() => users.id, { onDelete: "set null" }),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    lastUsedAt: timestamp("last_used_at", { withTimezone: true }),
    revokedAt: timestamp("revoked_at", { withTimezone: true }),
  },
  (t) => [
    index("api_keys_team_idx").on(t.teamId),
    check("api_keys_role_or_scopes", sql`(${t.role} is null) <> (${t.scopes} is null)`),
  ],
);

/**
 * A membership offered and not yet taken: matched to an account by email (lower-cased, as
 * accounts store it), so an invitation to an email with no account yet is seen by whoever signs
 * up with it. Accepting makes the membership and deletes the row; declining or revoking deletes
 * it. One row per team and email: an expired one is replaced by the next invitation.
 */
export const teamInvitations = pgTable(
  "team_invitations",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    teamId: uuid("team_id")
      .notNull()
      .references(() => teams.id, { onDelete: "cascade" }),
    email: text("email").notNull(),
    role: teamRole("role").notNull(),
    invitedBy: uuid("invited_by").references(() => users.id, { onDelete: "set null" }),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
  },
  (t) => [
    uniqueIndex("team_invitations_team_email_idx").on(t.teamId, t.email),
    index("team_invitations_email_idx").on(t.email),
  ],
);
