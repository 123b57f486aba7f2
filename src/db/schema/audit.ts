import { bigint, index, jsonb, pgEnum, pgTable, text, timestamp, uuid } from "drizzle-orm/pg-core";

/** Who made a change: a person, a team API key, a server's agent, or the platform itself (the pinger). */
export const auditActorKind = pgEnum("audit_actor_kind", ["user", "api_key", "agent", "system"]);

/**
 * The audit log: one row for every change of state (docs/audit.md). Append-only to the service:
 * nothing updates a row, and only the retention job deletes them, by age. No foreign keys: an
 * entry outlives what it names (a deleted server, a deleted team) until the retention removes it.
 */
export const auditLog = pgTable(
  "audit_log",
  {
    /** Increasing: the order entries are listed in, and the cursor. */
    id: bigint("id", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
    teamId: uuid("team_id").notNull(),
    at: timestamp("at", { withTimezone: true }).notNull().defaultNow(),
    actorKind: auditActorKind("actor_kind").notNull(),
    /** The user, key or server (for its agent); null for the system. */
    actorId: uuid("actor_id"),
    /** The actor's name when the entry was written: an email, a key's name, a server's name, `pinger`. */
    actorName: text("actor_name").notNull(),
    action: text("action").notNull(),
    targetType: text("target_type").notNull(),
    targetId: text("target_id").notNull(),
    targetName: text("target_name"),
    /** The server the change concerns, when there is one (a ban, a rank, the server itself). */
    serverId: uuid("server_id"),
    /** Changed fields: `{field: {before, after}}`; never a secret. */
    changes: jsonb("changes").notNull().default({}),
    /** The client address as the edge saw it (after the trusted proxy hops). */
    ip: text("ip"),
    userAgent: text("user_agent"),
    requestId: text("request_id"),
  },
  (t) => [index("audit_log_team_idx").on(t.teamId, t.id), index("audit_log_at_idx").on(t.at)],
);
