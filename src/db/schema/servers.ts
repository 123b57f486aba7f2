import { sql } from "drizzle-orm";
import {
  bigint,
  boolean,
  check,
  doublePrecision,
  index,
  integer,
  jsonb,
  pgEnum,
  pgTable,
  primaryKey,
  real,
  text,
  timestamp,
  unique,
  uniqueIndex,
  uuid,
} from "drizzle-orm/pg-core";
import { users } from "./accounts";
import { teams } from "./teams";

const tz = (name: string) => timestamp(name, { withTimezone: true });

export const serverKind = pgEnum("server_kind", ["single", "network"]);
/** Where a ban or a lift came from: the dashboard (to be applied by the agent) or the game itself. */
export const banOrigin = pgEnum("ban_origin", ["dashboard", "game"]);
export const sessionSource = pgEnum("session_source", ["agent", "ping"]);
export const sessionEnd = pgEnum("session_end", ["leave", "rejoin", "agent_silent", "not_seen", "server_offline"]);

export const servers = pgTable(
  "servers",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    teamId: uuid("team_id")
      .notNull()
      .references(() => teams.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    host: text("host").notNull(),
    port: integer("port").notNull(),
    kind: serverKind("kind").notNull(),
    networkName: text("network_name"),
    agentTokenHash: text("agent_token_hash").notNull().unique(),
    agentTokenPrefix: text("agent_token_prefix").notNull(),
    /**
     * When the pinger should next check this server. Instances claim due rows with
     * FOR UPDATE SKIP LOCKED and push this forward in the same statement, so two instances
     * never ping one server in the same interval.
     */
    nextCheckAt: tz("next_check_at").notNull().defaultNow(),
    createdAt: tz("created_at").notNull().defaultNow(),
    updatedAt: tz("updated_at").notNull().defaultNow(),
  },
  (t) => [index("servers_team_idx").on(t.teamId), index("servers_next_check_idx").on(t.nextCheckAt)],
);

/** The latest known state of a server: the last ping, and the last agent heartbeat. One row a server. */
export const serverStatus = pgTable("server_status", {
  serverId: uuid("server_id")
    .primaryKey()
    .references(() => servers.id, { onDelete: "cascade" }),
  online: boolean("online"),
  latencyMs: integer("latency_ms"),
  playersOnline: integer("players_online"),
  playersMax: integer("players_max"),
  version: text("version"),
  motd: text("motd"),
  /** The MOTD with its `§` formatting codes (the status pages render its colours); `motd` is it without. */
  motdRaw: text("motd_raw"),
  error: text("error"),
  /** The error as one of a fixed set (src/monitoring/down-reason.ts); null when the last check found it up. */
  downReason: text("down_reason"),
  checkedAt: tz("checked_at"),
  /** When `online` last flipped (or was first learned). */
  changedAt: tz("changed_at"),
  tps: real("tps"),
  mspt: real("mspt"),
  agentPlayersOnline: integer("agent_players_online"),
  memoryUsedMb: integer("memory_used_mb"),
  memoryMaxMb: integer("memory_max_mb"),
  heartbeatAt: tz("heartbeat_at"),
});

/**
 * Incidents. The pinger's down periods are rows here (kind `down`, or `crash` when the server's
 * agent was reporting and no planned stop was announced): opened by the check that finds a server
 * down after it was up (or at its first check), closed by the next check that finds it up;
 * `ended_at` is null while it lasts. Written with the status, so every uptime window lists the same
 * down periods whatever resolution its buckets have. A crash report the agent sends opens (or is
 * attached to) a `crash` row; a team posts `manual` rows by hand, for a server or a network, which
 * are not down periods. Kept as long as the hourly tier (SAMPLE_RETENTION_DAYS). docs/incidents.md.
 */
export const serverIncidents = pgTable(
  "server_incidents",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    teamId: uuid("team_id")
      .notNull()
      .references(() => teams.id, { onDelete: "cascade" }),
    /** Null for an incident of a whole network (`network_name`). */
    serverId: uuid("server_id").references(() => servers.id, { onDelete: "cascade" }),
    networkName: text("network_name"),
    /** `down` (the pinger), `crash` (down with the agent reporting, or a crash report), `manual` (posted by the team). */
    kind: text("kind").notNull().default("down"),
    startedAt: tz("started_at").notNull(),
    endedAt: tz("ended_at"),
    /** The first failed check's reason (src/monitoring/down-reason.ts); null when not known. */
    reason: text("reason"),
    /** Null for an automatic incident: one is made from the server's name at read time. */
    title: text("title"),
    /** The latest update's status while open: investigating, identified, monitoring. */
    status: text("status").notNull().default("investigating"),
    /** The crash report's file, description and first exception lines: for the team only, never public. */
    crash: jsonb("crash"),
    /** When `incident.opened` went out (once an incident; never while a maintenance window holds it). */
    announcedAt: tz("announced_at"),
    updatedAt: tz("updated_at").notNull().defaultNow(),
  },
  (t) => [
    index("server_incidents_time_idx").on(t.serverId, t.startedAt),
    index("server_incidents_team_idx").on(t.teamId, t.startedAt),
    // At most one open down period a server (an incident posted by hand is not one).
    uniqueIndex("server_incidents_open_uq").on(t.serverId).where(sql`${t.endedAt} is null and ${t.kind} <> 'manual'`),
    check("server_incidents_subject", sql`${t.serverId} is not null or ${t.networkName} is not null`),
  ],
);

/** An incident's timeline: each update a team posts (and the agent's crash report). */
export const incidentUpdates = pgTable(
  "incident_updates",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    incidentId: uuid("incident_id")
      .notNull()
      .references(() => serverIncidents.id, { onDelete: "cascade" }),
    at: tz("at").notNull().defaultNow(),
    /** investigating, identified, monitoring, resolved */
    status: text("status").notNull(),
    message: text("message").notNull(),
    /** Who posted it: `user`, `api_key` or `system`, and the name shown. */
    authorKind: text("author_kind").notNull(),
    authorName: text("author_name").notNull(),
  },
  (t) => [index("incident_updates_incident_idx").on(t.incidentId, t.at)],
);

/**
 * Maintenance windows, per server or per network (the team's servers sharing `network_name`):
 * one-off (`starts_at` to `ends_at`) or recurring (`schedule`, a five-field cron expression read
 * in the team's time zone, each occurrence lasting `duration_minutes`). Alerts are held while one
 * runs (src/maintenance/service.ts).
 */
export const maintenanceWindows = pgTable(
  "maintenance_windows",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    teamId: uuid("team_id")
      .notNull()
      .references(() => teams.id, { onDelete: "cascade" }),
    serverId: uuid("server_id").references(() => servers.id, { onDelete: "cascade" }),
    networkName: text("network_name"),
    title: text("title").notNull(),
    message: text("message"),
    startsAt: tz("starts_at"),
    endsAt: tz("ends_at"),
    schedule: text("schedule"),
    durationMinutes: integer("duration_minutes"),
    createdAt: tz("created_at").notNull().defaultNow(),
    updatedAt: tz("updated_at").notNull().defaultNow(),
  },
  (t) => [
    index("maintenance_windows_team_idx").on(t.teamId, t.networkName),
    index("maintenance_windows_server_idx").on(t.serverId),
    check("maintenance_windows_subject", sql`(${t.serverId} is null) <> (${t.networkName} is null)`),
    check(
      "maintenance_windows_when",
      sql`(${t.schedule} is null and ${t.startsAt} is not null and ${t.endsAt} > ${t.startsAt} and ${t.durationMinutes} is null) or (${t.schedule} is not null and ${t.durationMinutes} > 0)`,
    ),
  ],
);

/** Raw ping results, kept as long as the one-minute tier; the metric buckets are what reads use. */
export const serverSamples = pgTable(
  "server_samples",
  {
    serverId: uuid("server_id")
      .notNull()
      .references(() => servers.id, { onDelete: "cascade" }),
    ts: tz("ts").notNull().defaultNow(),
    online: boolean("online").notNull(),
    latencyMs: integer("latency_ms"),
    playersOnline: integer("players_online"),
    playersMax: integer("players_max"),
  },
  (t) => [primaryKey({ columns: [t.serverId, t.ts] })],
);

/** One measured quantity in a bucket: how many values, their sum, the least and the greatest. */
const series = (name: string, column: string) => ({
  [`${name}N`]: integer(`${column}_n`).notNull().default(0),
  [`${name}Sum`]: doublePrecision(`${column}_sum`).notNull().default(0),
  [`${name}Min`]: doublePrecision(`${column}_min`),
  [`${name}Max`]: doublePrecision(`${column}_max`),
});

/**
 * The columns of a metric bucket. Every column is a sum, a count or an extreme, so a sample
 * is added with one `insert ... on conflict do update` and buckets merge by adding again.
 */
const metricBucket = () => ({
  serverId: uuid("server_id")
    .notNull()
    .references(() => servers.id, { onDelete: "cascade" }),
  bucket: tz("bucket").notNull(),
  /** Pings that found the server up / down. */
  upN: integer("up_n").notNull().default(0),
  downN: integer("down_n").notNull().default(0),
  ...(series("latency", "latency") as MetricSeries<"latency">),
  ...(series("players", "players") as MetricSeries<"players">),
  ...(series("tps", "tps") as MetricSeries<"tps">),
  ...(series("mspt", "mspt") as MetricSeries<"mspt">),
  ...(series("memUsed", "mem_used") as MetricSeries<"memUsed">),
  ...(series("memMax", "mem_max") as MetricSeries<"memMax">),
});
type MetricSeries<N extends string> = {
  [K in `${N}N`]: ReturnType<typeof integer>;
} & { [K in `${N}Sum` | `${N}Min` | `${N}Max`]: ReturnType<typeof doublePrecision> };

/** Metric history at one-minute resolution, kept METRICS_MINUTE_RETENTION_HOURS (48 h). */
export const serverMetricsMinute = pgTable("server_metrics_minute", metricBucket(), (t) => [
  primaryKey({ columns: [t.serverId, t.bucket] }),
]);

/** Metric history at one-hour resolution, kept SAMPLE_RETENTION_DAYS (90 days). */
export const serverMetricsHour = pgTable("server_metrics_hour", metricBucket(), (t) => [
  primaryKey({ columns: [t.serverId, t.bucket] }),
]);

export const players = pgTable(
  "players",
  {
    serverId: uuid("server_id")
      .notNull()
      .references(() => servers.id, { onDelete: "cascade" }),
    uuid: uuid("uuid").notNull(),
    name: text("name").notNull(),
    online: boolean("online").notNull().default(false),
    firstSeen: tz("first_seen").notNull(),
    lastSeen: tz("last_seen").notNull(),
    /** Seconds of closed sessions; an open session adds its running time when read. */
    playSeconds: bigint("play_seconds", { mode: "number" }).notNull().default(0),
  },
  (t) => [
    primaryKey({ columns: [t.serverId, t.uuid] }),
    index("players_last_seen_idx").on(t.serverId, t.lastSeen),
    // New players of a window (the player summary; analytics, index-only with the uuid).
    index("players_first_seen_idx").on(t.serverId, t.firstSeen, t.uuid),
    // Whether a player was seen on another server of a network before a window (analytics: new
    // players and retention cohorts), one probe a player.
    index("players_uuid_first_seen_idx").on(t.uuid, t.firstSeen, t.serverId),
    // Search by name prefix and sort by name (GET /server/players?q=): the byte order, as team_players.
    index("players_name_idx").on(t.serverId, sql`lower(${t.name}) collate "C"`, t.uuid),
  ],
);

export const playerSessions = pgTable(
  "player_sessions",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    serverId: uuid("server_id")
      .notNull()
      .references(() => servers.id, { onDelete: "cascade" }),
    uuid: uuid("uuid").notNull(),
    joinedAt: tz("joined_at").notNull(),
    leftAt: tz("left_at"),
    /** What opened it: the agent's join, or a ping whose sample listed the player (no agent running). */
    source: sessionSource("source").notNull().default("agent"),
    /** The last time the player was known online: the join, a later heartbeat, or a sample that listed them. */
    seenAt: tz("seen_at"),
    /** Why it ended; docs/history.md, "Player sessions", gives the rule for each. */
    endReason: sessionEnd("end_reason"),
  },
  (t) => [
    index("player_sessions_player_idx").on(t.serverId, t.uuid, t.joinedAt),
    // Newest first, with the id as tie-breaker: the sessions page and its cursor.
    index("player_sessions_server_time_idx").on(t.serverId, t.joinedAt, t.id),
    // At most one open session a player: a join while one is open closes it first.
    uniqueIndex("player_sessions_open_uq").on(t.serverId, t.uuid).where(sql`${t.leftAt} is null`),
    // Sessions ending in a 15-minute slot: the analytics peak of that slot (src/analytics/aggregates.ts).
    index("player_sessions_left_idx").on(t.serverId, t.leftAt),
  ],
);

/**
 * Closed sessions rolled up per server, UTC day and player, added to in the statement that closes
 * a session (`closeSessions`, src/servers/players.ts); a session spanning midnight adds to each
 * day it touches. The player summary reads these for the whole days of its window
 * (docs/history.md, "Player summary").
 */
export const playerDays = pgTable(
  "player_days",
  {
    serverId: uuid("server_id")
      .notNull()
      .references(() => servers.id, { onDelete: "cascade" }),
    /** The UTC midnight the day starts at. */
    day: tz("day").notNull(),
    uuid: uuid("uuid").notNull(),
    /** Time played inside the day, in microseconds (exact, so days add up to the whole). */
    playtimeUs: bigint("playtime_us", { mode: "number" }).notNull().default(0),
    /** Sessions that started this day. */
    joins: integer("joins").notNull().default(0),
    /** The earliest start of a session running into this day from an earlier one: where to look for it. */
    carriedFrom: tz("carried_from"),
  },
  (t) => [
    primaryKey({ columns: [t.serverId, t.day, t.uuid] }),
    // One player's days: export and erasure (src/privacy/holders.ts).
    index("player_days_player_idx").on(t.serverId, t.uuid),
  ],
);

/** Per server and UTC day, over its closed sessions: players (rows of `player_days`), time played, peak. */
export const serverDays = pgTable(
  "server_days",
  {
    serverId: uuid("server_id")
      .notNull()
      .references(() => servers.id, { onDelete: "cascade" }),
    day: tz("day").notNull(),
    players: integer("players").notNull().default(0),
    playtimeUs: bigint("playtime_us", { mode: "number" }).notNull().default(0),
    /** The most closed sessions open at one instant of the day. */
    peak: integer("peak").notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.serverId, t.day] })],
);

/** Bans in the shape of vanilla banned-players.json; a lift keeps the row so the agent learns of it. */
export const bans = pgTable(
  "bans",
  {
    serverId: uuid("server_id")
      .notNull()
      .references(() => servers.id, { onDelete: "cascade" }),
    uuid: uuid("uuid").notNull(),
    name: text("name").notNull(),
    reason: text("reason").notNull(),
    source: text("source").notNull(),
    origin: banOrigin("origin").notNull(),
    createdAt: tz("created_at").notNull().defaultNow(),
    /** Null: permanent ("forever" in banned-players.json). */
    expiresAt: tz("expires_at"),
    createdBy: uuid("created_by").references(() => users.id, { onDelete: "set null" }),
    liftedAt: tz("lifted_at"),
    liftOrigin: banOrigin("lift_origin"),
  },
  (t) => [primaryKey({ columns: [t.serverId, t.uuid] })],
);

/**
 * Kicks asked for from the dashboard or the API. A kick is one act, not a state: the agent's
 * config carries the ones younger than KICK_WINDOW_SECONDS (src/agent/service.ts) and the agent
 * runs each once; older rows are pruned when the next kick for the server is made.
 */
export const kicks = pgTable(
  "kicks",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    serverId: uuid("server_id")
      .notNull()
      .references(() => servers.id, { onDelete: "cascade" }),
    uuid: uuid("uuid").notNull(),
    name: text("name").notNull(),
    reason: text("reason").notNull(),
    createdAt: tz("created_at").notNull().defaultNow(),
    createdBy: uuid("created_by").references(() => users.id, { onDelete: "set null" }),
  },
  (t) => [index("kicks_server_created_idx").on(t.serverId, t.createdAt)],
);

export const ranks = pgTable(
  "ranks",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    serverId: uuid("server_id")
      .notNull()
      .references(() => servers.id, { onDelete: "cascade" }),
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
  (t) => [unique("ranks_server_name_uq").on(t.serverId, t.name)],
);

export const announcements = pgTable(
  "announcements",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    serverId: uuid("server_id")
      .notNull()
      .references(() => servers.id, { onDelete: "cascade" }),
    message: text("message").notNull(),
    intervalSeconds: integer("interval_seconds"),
    /** A five-field cron expression (UTC); exactly one of interval and schedule is set. */
    schedule: text("schedule"),
    active: boolean("active").notNull().default(true),
    startsAt: tz("starts_at"),
    endsAt: tz("ends_at"),
    createdAt: tz("created_at").notNull().defaultNow(),
    updatedAt: tz("updated_at").notNull().defaultNow(),
  },
  (t) => [index("announcements_server_idx").on(t.serverId)],
);

/** Event ids an agent has delivered, so a retried batch is applied once. Pruned after a week. */
export const agentEvents = pgTable(
  "agent_events",
  {
    serverId: uuid("server_id")
      .notNull()
      .references(() => servers.id, { onDelete: "cascade" }),
    eventId: text("event_id").notNull(),
    receivedAt: tz("received_at").notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.serverId, t.eventId] }), index("agent_events_received_idx").on(t.receivedAt)],
);
