import { sql } from "drizzle-orm";
import {
  bigint,
  boolean,
  date,
  index,
  integer,
  pgTable,
  primaryKey,
  smallint,
  text,
  timestamp,
  uuid,
} from "drizzle-orm/pg-core";
import { groupOfWeeks } from "../../lib/activity-index";
import { servers } from "./servers";
import { teams } from "./teams";

const tz = (name: string) => timestamp(name, { withTimezone: true });

/**
 * Closed sessions per server, UTC hour and player, cut into the hour's four quarters (milliseconds
 * played in each, and a bit per quarter the player was seen in), added to in the transaction that
 * closes a session. Quarters because every time zone in use is a whole number of quarter hours
 * from UTC: a day, week or window in any zone is a whole number of quarters, so the reads need no
 * raw session. docs/analytics.md, "Aggregates".
 */
export const analyticsPlayerHours = pgTable(
  "analytics_player_hours",
  {
    serverId: uuid("server_id")
      .notNull()
      .references(() => servers.id, { onDelete: "cascade" }),
    hour: tz("hour").notNull(),
    uuid: uuid("uuid").notNull(),
    q0: integer("q0").notNull().default(0),
    q1: integer("q1").notNull().default(0),
    q2: integer("q2").notNull().default(0),
    q3: integer("q3").notNull().default(0),
    /** Bit i: a session was in quarter i (a session that lasted no time included). */
    seen: smallint("seen").notNull().default(0),
    /** Sessions that started in this hour. */
    joins: integer("joins").notNull().default(0),
  },
  (t) => [
    primaryKey({ columns: [t.serverId, t.hour, t.uuid] }),
    // One player's rows over a time range, index-only (the per-player reads' candidates, the
    // activity weeks' sums at ingest, erasure, retention).
    index("analytics_player_hours_player_idx").on(t.uuid, t.hour, t.serverId, t.q0, t.q1, t.q2, t.q3, t.seen),
    // The per-player reads scan a window of hours: this covers them (an index-only scan in key
    // order rather than a heap page per row).
    index("analytics_player_hours_window_idx").on(t.serverId, t.hour, t.uuid, t.q0, t.q1, t.q2, t.q3, t.seen),
  ],
);

/**
 * Per scope (a server id, or `n:<team id>:<network name>`) and 15-minute slot, over closed
 * sessions: player time in it (for the heatmap; the Bedrock players' part for editions), how many
 * sessions were open at its first instant, the most open at once inside it with the first instant
 * that level was reached (for peaks), and the sessions that started in it per length bucket
 * (`len0`..`len6`, LENGTH_BUCKETS' order, for session lengths).
 */
export const analyticsSlots = pgTable(
  "analytics_slots",
  {
    teamId: uuid("team_id")
      .notNull()
      .references(() => teams.id, { onDelete: "cascade" }),
    scope: text("scope").notNull(),
    slot: tz("slot").notNull(),
    onlineMs: bigint("online_ms", { mode: "number" }).notNull().default(0),
    startLevel: integer("start_level").notNull().default(0),
    peak: integer("peak").notNull().default(0),
    peakAt: tz("peak_at").notNull(),
    bedrockMs: bigint("bedrock_ms", { mode: "number" }).notNull().default(0),
    len0: integer("len0").notNull().default(0),
    len1: integer("len1").notNull().default(0),
    len2: integer("len2").notNull().default(0),
    len3: integer("len3").notNull().default(0),
    len4: integer("len4").notNull().default(0),
    len5: integer("len5").notNull().default(0),
    len6: integer("len6").notNull().default(0),
  },
  (t) => [
    primaryKey({ columns: [t.scope, t.slot] }),
    // "Most online ever": the first row of the scope in this order.
    index("analytics_slots_peak_idx").on(t.scope, t.peak.desc(), t.peakAt),
    index("analytics_slots_team_idx").on(t.teamId),
    // Peaks' window of slots, index-only (a scope's slots lie among every other scope's in the
    // heap, a page per row). Not online_ms: its updates at ingest stay free of this index.
    index("analytics_slots_window_idx").on(t.scope, t.slot, t.peak, t.peakAt),
  ],
);

/**
 * Per scope (a server id, or `n:<team id>:<network name>`), UTC month and player, over closed
 * sessions: milliseconds played, the first and the last quarter hour seen in the month, the
 * last quarter seen in the scope in any earlier month (`prev_at`) and the milliseconds of the
 * one to five months before (`prev_ms`, `prev2_ms` ... `prev5_ms`). Made from the player-hour rows
 * (`monthRows`, src/analytics/aggregates.ts), kept beside them at ingest. The per-player reads
 * answer whole months from it and only the cut months' edges from the hours; `prev_at` lets a
 * window spanning months count each player once without grouping (docs/analytics.md).
 */
export const analyticsPlayerMonths = pgTable(
  "analytics_player_months",
  {
    teamId: uuid("team_id")
      .notNull()
      .references(() => teams.id, { onDelete: "cascade" }),
    scope: text("scope").notNull(),
    month: tz("month").notNull(),
    uuid: uuid("uuid").notNull(),
    ms: bigint("ms", { mode: "number" }).notNull().default(0),
    firstAt: tz("first_at").notNull(),
    lastAt: tz("last_at").notNull(),
    prevAt: tz("prev_at"),
    /** Milliseconds in the scope in the month before (0 without a row there), kept by `setPrevMonths`. */
    prevMs: bigint("prev_ms", { mode: "number" }).notNull().default(0),
    /** Playtime over this month and the one before: a bound a window across the two cannot exceed. */
    pairMs: bigint("pair_ms", { mode: "number" }).notNull().generatedAlwaysAs(sql`ms + prev_ms`),
    /** Milliseconds in the scope in the two months before together (the rows there), kept by `setPrevMonths`. */
    prev2Ms: bigint("prev2_ms", { mode: "number" }).notNull().default(0),
    /** ... and in the three months before. */
    prev3Ms: bigint("prev3_ms", { mode: "number" }).notNull().default(0),
    /** Playtime over this month and the two before: the leaderboard's key for a window over three months. */
    triMs: bigint("tri_ms", { mode: "number" }).notNull().generatedAlwaysAs(sql`ms + prev2_ms`),
    /** ... and the three before: for a window over four months. */
    quadMs: bigint("quad_ms", { mode: "number" }).notNull().generatedAlwaysAs(sql`ms + prev3_ms`),
    /** Milliseconds in the scope in the four and the five months before (the rows there), kept by `setPrevMonths`. */
    prev4Ms: bigint("prev4_ms", { mode: "number" }).notNull().default(0),
    prev5Ms: bigint("prev5_ms", { mode: "number" }).notNull().default(0),
    /** Playtime over this month and the four before: for a window over five months. */
    quintMs: bigint("quint_ms", { mode: "number" }).notNull().generatedAlwaysAs(sql`ms + prev4_ms`),
    /** ... and the five before: for a window over six months (or each six of a longer one). */
    sextMs: bigint("sext_ms", { mode: "number" }).notNull().generatedAlwaysAs(sql`ms + prev5_ms`),
    /** A Floodgate UUID (a Bedrock player), kept beside it so the counts per edition read one index. */
    bedrock: boolean("bedrock")
      .notNull()
      .generatedAlwaysAs(
        sql`uuid between '00000000-0000-0000-0009-000000000000' and '00000000-0000-0000-0009-ffffffffffff'`,
      ),
  },
  (t) => [
    primaryKey({ columns: [t.scope, t.month, t.uuid] }),
    // Counting a month's players seen in a window, per edition, index-only: from a day (the window
    // starts inside the month), up to a day (it ends inside), and not seen earlier in the window
    // (a later month of it). Narrow keys, so equal values share an entry (about 15 times smaller
    // than one index of every column, and as many times quicker to count).
    index("analytics_player_months_last_idx").on(t.scope, t.month, t.bedrock, t.lastAt),
    index("analytics_player_months_first_at_idx").on(t.scope, t.month, t.bedrock, t.firstAt),
    index("analytics_player_months_prev_idx").on(t.scope, t.month, t.bedrock, t.prevAt, t.firstAt),
    // The leaderboard's candidates: a month's top players by playtime.
    index("analytics_player_months_top_idx").on(t.scope, t.month, t.ms.desc(), t.uuid),
    // ... and, for a window across two months, the later month's players by the two months' playtime.
    index("analytics_player_months_pair_idx").on(t.scope, t.month, t.pairMs.desc(), t.uuid),
    // ... three to six months (a window over up to six months is one list of them).
    index("analytics_player_months_tri_idx").on(t.scope, t.month, t.triMs.desc(), t.uuid),
    index("analytics_player_months_quad_idx").on(t.scope, t.month, t.quadMs.desc(), t.uuid),
    // ... five and six months.
    index("analytics_player_months_quint_idx").on(t.scope, t.month, t.quintMs.desc(), t.uuid),
    index("analytics_player_months_sext_idx").on(t.scope, t.month, t.sextMs.desc(), t.uuid),
    // One player's months (prev_at, erasure, retention), with their playtime: the leaderboard
    // bounds a candidate by its months in the window, index-only.
    index("analytics_player_months_uuid_idx").on(t.uuid, t.scope, t.month, t.ms),
    // Who can be new in a window: the rows of a player's first month in the scope (few beside a
    // month's players, so the read needs not walk the whole month).
    index("analytics_player_months_first_idx").on(t.scope, t.month, t.uuid).where(sql`prev_at is null`),
  ],
);

/**
 * Per scope, UTC month and edition (`bedrock`, as the month rows'): how many month rows there are
 * (`players`), how many of them have no `prev_at` (`firsts`: the players first seen in the scope
 * that month), and their milliseconds. Kept wherever month rows are added, deleted or get their `prev_at` (the
 * ingest under the networks' locks, erasure, the player retention job, a rebuild), so counting a
 * whole month's players, its new ones or its playtime reads one row instead of an index range of a
 * row per player or slot (docs/analytics.md, "Activity" and "Editions").
 */
export const analyticsMonthCounts = pgTable(
  "analytics_month_counts",
  {
    teamId: uuid("team_id")
      .notNull()
      .references(() => teams.id, { onDelete: "cascade" }),
    scope: text("scope").notNull(),
    month: tz("month").notNull(),
    bedrock: boolean("bedrock").notNull(),
    players: integer("players").notNull().default(0),
    firsts: integer("firsts").notNull().default(0),
    /** The month rows' milliseconds: the players of this edition's playtime in the scope that month. */
    ms: bigint("ms", { mode: "number" }).notNull().default(0),
  },
  (t) => [
    primaryKey({ columns: [t.scope, t.month, t.bedrock] }),
    index("analytics_month_counts_team_idx").on(t.teamId),
  ],
);

/**
 * Per scope and player, all the playtime the month rows hold: the leaderboard's bound for a long
 * window (no one played more in it than in all their time). Kept with the month rows: added to at
 * ingest, made again with them by a rebuild or the retention job, deleted by erasure.
 */
export const analyticsPlayerTotals = pgTable(
  "analytics_player_totals",
  {
    teamId: uuid("team_id")
      .notNull()
      .references(() => teams.id, { onDelete: "cascade" }),
    scope: text("scope").notNull(),
    uuid: uuid("uuid").notNull(),
    ms: bigint("ms", { mode: "number" }).notNull().default(0),
  },
  (t) => [
    primaryKey({ columns: [t.scope, t.uuid] }),
    // The scope's players by all their playtime: the leaderboard's list for long windows.
    index("analytics_player_totals_top_idx").on(t.scope, t.ms.desc(), t.uuid),
    // One player's rows (erasure, retention).
    index("analytics_player_totals_uuid_idx").on(t.uuid, t.scope),
  ],
);

/**
 * Per scope and Monday 00:00 UTC (`week`, the activity index's end): the players whose index over
 * the three weeks before it is in each group from irregular up (the inactive are the players seen
 * less these). Kept at ingest from the player-hour rows (`moveActivity`), so the activity read
 * counts groups without scoring every player (docs/analytics.md, "Activity index").
 */
export const analyticsActivityWeeks = pgTable(
  "analytics_activity_weeks",
  {
    teamId: uuid("team_id")
      .notNull()
      .references(() => teams.id, { onDelete: "cascade" }),
    scope: text("scope").notNull(),
    week: tz("week").notNull(),
    veryActive: integer("very_active").notNull().default(0),
    active: integer("active").notNull().default(0),
    regular: integer("regular").notNull().default(0),
    irregular: integer("irregular").notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.scope, t.week] }), index("analytics_activity_weeks_team_idx").on(t.teamId)],
);

/**
 * Per scope, UTC week (Monday 00:00, the activity index's weeks) and player: milliseconds played,
 * the first and last quarter seen (as the month rows), the first quarter seen in any later week
 * (`next_at`), and the milliseconds of the three weeks before (`ms1`..`ms3`, 0 without play).
 * With them a window shorter than the index's three weeks counts each player seen in it once, at
 * the latest week it saw them (`next_at` at or after its end), and takes their group at the
 * index's end from that one row: `g0` when the end is this week's Monday, `g1` a week later, and
 * so on (a player not seen after this week played nothing in the weeks between). Kept at ingest
 * with the month rows; docs/analytics.md, "Activity".
 */
export const analyticsPlayerWeeks = pgTable(
  "analytics_player_weeks",
  {
    teamId: uuid("team_id")
      .notNull()
      .references(() => teams.id, { onDelete: "cascade" }),
    scope: text("scope").notNull(),
    week: tz("week").notNull(),
    uuid: uuid("uuid").notNull(),
    ms: bigint("ms", { mode: "number" }).notNull().default(0),
    firstAt: tz("first_at").notNull(),
    lastAt: tz("last_at").notNull(),
    nextAt: tz("next_at"),
    ms1: bigint("ms1", { mode: "number" }).notNull().default(0),
    ms2: bigint("ms2", { mode: "number" }).notNull().default(0),
    ms3: bigint("ms3", { mode: "number" }).notNull().default(0),
    g0: smallint("g0")
      .notNull()
      .generatedAlwaysAs(sql.raw(groupOfWeeks("ms1", "ms2", "ms3"))),
    g1: smallint("g1")
      .notNull()
      .generatedAlwaysAs(sql.raw(groupOfWeeks("ms", "ms1", "ms2"))),
    g2: smallint("g2")
      .notNull()
      .generatedAlwaysAs(sql.raw(groupOfWeeks("0", "ms", "ms1"))),
    g3: smallint("g3")
      .notNull()
      .generatedAlwaysAs(sql.raw(groupOfWeeks("0", "0", "ms"))),
  },
  (t) => [
    // One player's weeks in a scope: the links kept at ingest, erasure, retention.
    primaryKey({ columns: [t.scope, t.uuid, t.week] }),
    // The reads: a week's players, every column they test in the key (an index-only scan), by
    // player too (a window inside one week probes the players it saw).
    index("analytics_player_weeks_read_idx").on(
      t.scope,
      t.week,
      t.uuid,
      t.nextAt,
      t.lastAt,
      t.firstAt,
      t.g0,
      t.g1,
      t.g2,
      t.g3,
    ),
    index("analytics_player_weeks_team_idx").on(t.teamId, t.uuid),
  ],
);

/** The cohort-count columns: `c<d><f>`, d the cohort's local weekday (0 Monday), f the week's first. */
export const COHORT_COLUMNS = Array.from({ length: 49 }, (_, i) => `c${Math.floor(i / 7)}${i % 7}`);

/**
 * Retention kept in the team's time zone: per scope, cohort (the local Monday of the week a player
 * was first seen in the scope) and later local week (its Monday) they were seen in, how many
 * players, by the cohort's weekday (d) and the weekday of their first quarter in that week (f),
 * column `c<d><f>`. The weekdays let a window that starts or ends inside a week be answered from
 * these rows plus the few players of the cut days. Kept at ingest, erasure and retention from the
 * player-hour rows; rebuilt when the team's time zone changes. docs/analytics.md, "Retention".
 */
export const analyticsCohortWeeks = pgTable(
  "analytics_cohort_weeks",
  {
    teamId: uuid("team_id")
      .notNull()
      .references(() => teams.id, { onDelete: "cascade" }),
    scope: text("scope").notNull(),
    cohort: date("cohort").notNull(),
    week: date("week").notNull(),
    ...Object.fromEntries(COHORT_COLUMNS.map((c) => [c, integer(c).notNull().default(0)])),
  },
  (t) => [primaryKey({ columns: [t.scope, t.cohort, t.week] }), index("analytics_cohort_weeks_team_idx").on(t.teamId)],
);
