import { sql } from "drizzle-orm";
import {
  boolean,
  check,
  doublePrecision,
  index,
  integer,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uuid,
} from "drizzle-orm/pg-core";
import { servers } from "./servers";
import { teams } from "./teams";

const tz = (name: string) => timestamp(name, { withTimezone: true });

/**
 * A performance alert rule (docs/alerts.md): a metric of one server, or of each server of a
 * network (the team's servers of kind `network` sharing `network_name`), below or above a value
 * for a duration. Exactly one of `server_id` and `network_name` is set.
 */
export const alertRules = pgTable(
  "alert_rules",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    teamId: uuid("team_id")
      .notNull()
      .references(() => teams.id, { onDelete: "cascade" }),
    serverId: uuid("server_id").references(() => servers.id, { onDelete: "cascade" }),
    networkName: text("network_name"),
    name: text("name").notNull(),
    /** tps, mspt, memory_share (used / max, 0-1) or players_online. */
    metric: text("metric").notNull(),
    /** below or above. */
    op: text("op").notNull(),
    threshold: doublePrecision("threshold").notNull(),
    /** How far back past the threshold a value must be to count towards recovery (the hysteresis). */
    margin: doublePrecision("margin").notNull(),
    durationSeconds: integer("duration_seconds").notNull(),
    enabled: boolean("enabled").notNull().default(true),
    createdAt: tz("created_at").notNull().defaultNow(),
    updatedAt: tz("updated_at").notNull().defaultNow(),
  },
  (t) => [
    index("alert_rules_team_idx").on(t.teamId),
    index("alert_rules_server_idx").on(t.serverId),
    index("alert_rules_network_idx").on(t.teamId, t.networkName),
    check("alert_rules_target", sql`(${t.serverId} is null) <> (${t.networkName} is null)`),
  ],
);

/**
 * Where each rule stands for each server it covers, updated in the statement that decides (so
 * instances sharing a database report each change once): since when the value has been past
 * the threshold, since when it has been back past threshold and margin while firing, whether it
 * fires and whether its firing notice went out (a notice held by a maintenance window is not).
 */
export const alertRuleState = pgTable(
  "alert_rule_state",
  {
    ruleId: uuid("rule_id")
      .notNull()
      .references(() => alertRules.id, { onDelete: "cascade" }),
    serverId: uuid("server_id")
      .notNull()
      .references(() => servers.id, { onDelete: "cascade" }),
    /** The reading time of the last value taken: older or repeated readings are ignored. */
    lastAt: tz("last_at").notNull(),
    lastValue: doublePrecision("last_value"),
    breachingSince: tz("breaching_since"),
    recoveringSince: tz("recovering_since"),
    firing: boolean("firing").notNull().default(false),
    /** When `firing` last flipped: a row whose `flipped_at` is this reading's time flipped with it. */
    flippedAt: tz("flipped_at"),
    notified: boolean("notified").notNull().default(false),
  },
  (t) => [primaryKey({ columns: [t.ruleId, t.serverId] }), index("alert_rule_state_server_idx").on(t.serverId)],
);
