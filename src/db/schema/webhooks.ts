import { sql } from "drizzle-orm";
import {
  bigint,
  boolean,
  doublePrecision,
  index,
  integer,
  jsonb,
  pgEnum,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uuid,
} from "drizzle-orm/pg-core";
import { servers } from "./servers";
import { teams } from "./teams";

const tz = (name: string) => timestamp(name, { withTimezone: true });

/** `standard` sends the signed event itself; `discord` and `slack` send a chat message made from it. */
export const webhookKind = pgEnum("webhook_kind", ["standard", "discord", "slack"]);
export const webhookDeliveryStatus = pgEnum("webhook_delivery_status", [
  "pending",
  "delivering",
  "succeeded",
  "failed",
]);

export const webhookEndpoints = pgTable(
  "webhook_endpoints",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    teamId: uuid("team_id")
      .notNull()
      .references(() => teams.id, { onDelete: "cascade" }),
    url: text("url").notNull(),
    description: text("description").notNull().default(""),
    kind: webhookKind("kind").notNull().default("standard"),
    /** Event types sent to this endpoint; empty means every type. */
    eventTypes: text("event_types").array().notNull().default(sql`'{}'::text[]`),
    enabled: boolean("enabled").notNull().default(true),
    /** Why the service turned it off (`failing`); null when enabled or turned off by a person. */
    disabledReason: text("disabled_reason"),
    disabledAt: tz("disabled_at"),
    /**
     * The signing secret, AES-256-GCM sealed with a key derived from the service's signing key
     * (src/lib/keyring.ts). It must be usable to sign, so it cannot be hashed like other secrets.
     */
    secretSealed: text("secret_sealed").notNull(),
    secretPrefix: text("secret_prefix").notNull(),
    /** The secret before the last rotation, still used to sign (beside the new one) until it expires. */
    previousSecretSealed: text("previous_secret_sealed"),
    previousSecretExpiresAt: tz("previous_secret_expires_at"),
    /** When the current run of failed attempts began; null after any success. */
    failingSince: tz("failing_since"),
    consecutiveFailures: integer("consecutive_failures").notNull().default(0),
    /**
     * Set when the circuit opened (WEBHOOK_CIRCUIT_FAILURES failures in a row): nothing is sent
     * until `paused_until`, then one delivery probes it; cleared by a success or a person.
     */
    pausedAt: tz("paused_at"),
    /** When the probe may go; null while paused means until a person resumes it. */
    pausedUntil: tz("paused_until"),
    createdAt: tz("created_at").notNull().defaultNow(),
    updatedAt: tz("updated_at").notNull().defaultNow(),
  },
  (t) => [index("webhook_endpoints_team_idx").on(t.teamId)],
);

/** One event (`msg_...`): what every endpoint that gets it is sent, with the same id. */
export const webhookMessages = pgTable(
  "webhook_messages",
  {
    id: text("id").primaryKey(),
    teamId: uuid("team_id")
      .notNull()
      .references(() => teams.id, { onDelete: "cascade" }),
    type: text("type").notNull(),
    /** The whole event body: `{type, timestamp, data}`. */
    payload: jsonb("payload").notNull(),
    createdAt: tz("created_at").notNull().defaultNow(),
  },
  (t) => [index("webhook_messages_team_idx").on(t.teamId, t.createdAt)],
);

/**
 * The queue: one row per event and endpoint. Instances claim due rows with FOR UPDATE SKIP
 * LOCKED and push `next_attempt_at` forward by a lease in the same statement, so a row being
 * sent is not due for anyone else, and a row whose sender died becomes due again when the
 * lease runs out.
 */
export const webhookDeliveries = pgTable(
  "webhook_deliveries",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    messageId: text("message_id")
      .notNull()
      .references(() => webhookMessages.id, { onDelete: "cascade" }),
    endpointId: uuid("endpoint_id")
      .notNull()
      .references(() => webhookEndpoints.id, { onDelete: "cascade" }),
    status: webhookDeliveryStatus("status").notNull().default("pending"),
    attempts: integer("attempts").notNull().default(0),
    nextAttemptAt: tz("next_attempt_at").notNull().defaultNow(),
    lastStatusCode: integer("last_status_code"),
    lastError: text("last_error"),
    lastLatencyMs: integer("last_latency_ms"),
    /** The start of the last response body, capped (4 KiB). */
    lastResponse: text("last_response"),
    lastAttemptAt: tz("last_attempt_at"),
    createdAt: tz("created_at").notNull().defaultNow(),
  },
  (t) => [
    // The claim walks the endpoints with waiting work and takes each one's due share from here.
    index("webhook_deliveries_endpoint_due_idx")
      .on(t.endpointId, t.nextAttemptAt)
      .where(sql`status in ('pending', 'delivering')`),
    index("webhook_deliveries_endpoint_idx").on(t.endpointId, t.createdAt),
    index("webhook_deliveries_message_idx").on(t.messageId),
  ],
);

/**
 * A team's per-minute budget as two token buckets (events, deliveries), refilled continuously
 * up to WEBHOOK_TEAM_*_PER_MIN, and what did not fit in them.
 */
export const webhookTeamBudgets = pgTable("webhook_team_budgets", {
  teamId: uuid("team_id")
    .primaryKey()
    .references(() => teams.id, { onDelete: "cascade" }),
  eventTokens: doublePrecision("event_tokens").notNull(),
  deliveryTokens: doublePrecision("delivery_tokens").notNull(),
  refilledAt: tz("refilled_at").notNull().defaultNow(),
  droppedEvents: bigint("dropped_events", { mode: "number" }).notNull().default(0),
  droppedDeliveries: bigint("dropped_deliveries", { mode: "number" }).notNull().default(0),
  lastDroppedAt: tz("last_dropped_at"),
});

/**
 * What the alerts remember per server to report changes, not states: consecutive failed pings
 * (`server.down` after a threshold, `server.up` after a down) and whether the agent is silent.
 */
export const serverAlertState = pgTable(
  "server_alert_state",
  {
    serverId: uuid("server_id")
      .notNull()
      .references(() => servers.id, { onDelete: "cascade" }),
    failedPings: integer("failed_pings").notNull().default(0),
    down: boolean("down").notNull().default(false),
    agentOffline: boolean("agent_offline").notNull().default(false),
    /** When the agent last read a stop the server announced ("Stopping the server"): the next down is planned. */
    plannedStopAt: tz("planned_stop_at"),
    /**
     * Why the current down's `server.down` was held: `planned` (a stop the server announced; never
     * sent) or `maintenance` (sent when the window ends, if still down); null when not held.
     */
    heldFor: text("held_for"),
  },
  (t) => [primaryKey({ columns: [t.serverId] })],
);
