import { type SQL, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { executeNamed } from "../db/prepared";
import { rowsOf, uuidArray } from "../db/rows";
import { lockNetworkPlayers } from "../networks/ingest";
import { ACTIVITY_FLOORS, weekTerm } from "../lib/activity-index";
import { COHORT_COLUMNS } from "../db/schema/analytics";

export { ACTIVITY_FLOORS };

/** A database handle or a transaction (the aggregates are kept inside the transaction that closes sessions). */
export type Tx = Parameters<Parameters<Db["transaction"]>[0]>[0] | Db;

/** Quarter and hour boundaries are drawn by `date_bin` from this origin (a UTC midnight). */
export const ORIGIN = sql.raw(`timestamptz '2000-01-01 00:00:00+00'`);
export const QUARTER_MS = 15 * 60 * 1000;

/**
 * Session length buckets, upper bounds in seconds (the last is open-ended). Documented in
 * docs/analytics.md; changing them needs new `analytics_slots` columns and a rebuild.
 */
export const LENGTH_BUCKETS = [
  { label: "under 5 min", below: 300 },
  { label: "5-15 min", below: 900 },
  { label: "15-30 min", below: 1800 },
  { label: "30-60 min", below: 3600 },
  { label: "1-2 h", below: 7200 },
  { label: "2-4 h", below: 14400 },
  { label: "4 h or more", below: null },
] as const;
const bucketOf = (len: string) =>
  `(case ${LENGTH_BUCKETS.filter((b) => b.below !== null)
    .map((b, i) => `when ${len} < ${b.below} then ${i}`)
    .join(" ")} else ${LENGTH_BUCKETS.length - 1} end)`;

/** The slot columns counting sessions by length bucket (LENGTH_BUCKETS' order). */
export const LENGTH_COLUMNS = LENGTH_BUCKETS.map((_, i) => `len${i}`);
/** The slot columns `slotRows` adds up beside `online_ms` and `start_level`. */
const SLOT_SUMS = sql.raw(["bedrock_ms", ...LENGTH_COLUMNS].join(", "));

/** Floodgate (Bedrock) UUIDs are `00000000-0000-0000-0009-…`: a range, compared without casting to text. */
export const BEDROCK = (col: string) =>
  sql.raw(`(${col} between '00000000-0000-0000-0009-000000000000' and '00000000-0000-0000-0009-ffffffffffff')`);

/** A session as the aggregates see it: [a, b) on one server. */
export interface Span {
  server_id: string;
  uuid: string;
  a: string;
  b: string;
}

const ms = (t: string) => `round(extract(epoch from ${t}) * 1000)`;

/**
 * The quarters of sessions `src` (columns server_id, uuid, a, b) with the milliseconds played in
 * each (telescoping differences of rounded instants, so the pieces add up to the session's
 * length), and whether the session started there. A session that lasts no time has one piece.
 */
const pieces = (src: SQL) => sql`
  select s.server_id, s.uuid, s.a, s.b, q.q,
         (${sql.raw(ms("least(s.b, q.q + interval '15 minutes')"))} - ${sql.raw(ms("greatest(s.a, q.q)"))})::int as ms,
         (s.a >= q.q) as started
    from (${src}) s,
         generate_series(date_bin('15 minutes', s.a, ${ORIGIN}), s.b, interval '15 minutes') as q(q)
   where q.q < s.b or q.q <= s.a`;

/** Per (server, hour, player) rows of `src`, in the shape of `analytics_player_hours`. */
export const hourRows = (src: SQL) => sql`
  select server_id, date_bin('1 hour', q, ${ORIGIN}) as hour, uuid,
         coalesce(sum(ms) filter (where qi = 0), 0)::int as q0, coalesce(sum(ms) filter (where qi = 1), 0)::int as q1,
         coalesce(sum(ms) filter (where qi = 2), 0)::int as q2, coalesce(sum(ms) filter (where qi = 3), 0)::int as q3,
         bit_or(1 << qi)::smallint as seen, count(*) filter (where started)::int as joins
    from (select p.*, (extract(epoch from p.q - date_bin('1 hour', p.q, ${ORIGIN})) / 900)::int as qi
            from (${pieces(src)}) p) x
   group by server_id, date_bin('1 hour', q, ${ORIGIN}), uuid`;

/**
 * Per (team, scope, slot) rows of `src`: player time in it (and the Bedrock players' part), sessions
 * open at the slot's first instant, and the sessions starting in it by length bucket.
 */
export const slotRows = (src: SQL) => sql`
  select sv.team_id, sc.scope, p.q as slot, sum(p.ms)::bigint as online_ms, (count(*) filter (where p.a < p.q))::int as start_level,
         coalesce(sum(p.ms) filter (where ${BEDROCK("p.uuid")}), 0)::bigint as bedrock_ms,
         ${sql.raw(
           LENGTH_COLUMNS.map(
             (c, i) =>
               `(count(*) filter (where p.started and ${bucketOf("extract(epoch from p.b - p.a)")} = ${i}))::int as ${c}`,
           ).join(", "),
         )}
    from (${pieces(src)}) p
    join servers sv on sv.id = p.server_id
    cross join lateral (
      select p.server_id::text as scope
      union all
      select 'n:' || sv.team_id || ':' || sv.network_name where sv.network_name is not null) sc
   where p.ms > 0 or p.a < p.q or p.started
   group by sv.team_id, sc.scope, p.q`;

/**
 * Adds closed sessions to the analytics aggregates, in the caller's transaction (the one that
 * closed them, so a session is counted exactly when it is closed). The caller holds the server's
 * row (closes on one server are serial) and, on a network, the (network, player) locks of the
 * players whose sessions close (`lockNetworkPlayers`): each player's rows change under those
 * alone, so closers of one network write different players' rows side by side and wait for the
 * network's lock only for the rows they share. Whoever else changes a player's rows (erasure)
 * takes the same locks first.
 */
export async function addSessions(tx: Tx, spans: Span[]) {
  if (spans.length === 0) return;
  // The limit tells the planner about how many rows the JSON holds (it assumes 100 of a
  // set-returning function, times 556 quarters each): with that guess the statement's cost passed
  // PostgreSQL's JIT threshold, and compiling it took 70 ms of every batch. Rounded up to a power
  // of two, so the statements that read `src` have a few texts to keep prepared (`executeNamed`).
  const src = sql`select x.server_id, x.uuid, x.a, x.b from json_to_recordset(${JSON.stringify(spans)}::json)
    as x(server_id uuid, uuid uuid, a timestamptz, b timestamptz) limit ${sql.raw(String(2 ** Math.ceil(Math.log2(spans.length))))}`;
  // First the players' own rows, under the locks the caller holds on them (a server's row for its
  // scope, the (network, player) locks for the network's): only these players' closes write them.
  // The activity counts' changes are read here, from the hours before and after, and added below.
  const [moves] = rowsOf<{ activity: string; cohorts: string; counts: string }>(
    await executeNamed(
      tx,
      sql`
      with hr as materialized (${hourRows(src)}),
      ${activityMoves(sql`select * from hr`, 1)},
      ${cohortMoves(sql`select * from hr`, 1)},
      ph as (
        insert into analytics_player_hours (server_id, hour, uuid, q0, q1, q2, q3, seen, joins)
        select server_id, hour, uuid, q0, q1, q2, q3, seen, joins from hr
        on conflict (server_id, hour, uuid) do update set
          q0 = analytics_player_hours.q0 + excluded.q0, q1 = analytics_player_hours.q1 + excluded.q1,
          q2 = analytics_player_hours.q2 + excluded.q2, q3 = analytics_player_hours.q3 + excluded.q3,
          seen = analytics_player_hours.seen | excluded.seen, joins = analytics_player_hours.joins + excluded.joins
        returning 1),
      mr as materialized (${monthRows(sql`select * from hr`)}),
      pm as (
        insert into analytics_player_months (team_id, scope, month, uuid, ms, first_at, last_at)
        select team_id, scope, month, uuid, ms, first_at, last_at from mr
        on conflict (scope, month, uuid) do update set
          ms = analytics_player_months.ms + excluded.ms,
          first_at = least(analytics_player_months.first_at, excluded.first_at),
          last_at = greatest(analytics_player_months.last_at, excluded.last_at)
        -- A row inserted (not updated) is a player new to the month, with no prev_at yet.
        returning team_id, scope, month, bedrock, (xmax = 0) as fresh),
      wk as (
        insert into analytics_player_weeks as w (team_id, scope, week, uuid, ms, first_at, last_at)
        select team_id, scope, week, uuid, ms, first_at, last_at from (${weekRows(sql`select * from hr`)}) r
        on conflict (scope, uuid, week) do update set
          ms = w.ms + excluded.ms, first_at = least(w.first_at, excluded.first_at), last_at = greatest(w.last_at, excluded.last_at)
        returning 1),
      pt as (
        insert into analytics_player_totals as t (team_id, scope, uuid, ms)
        select team_id, scope, uuid, sum(ms) from mr group by 1, 2, 3
        on conflict (scope, uuid) do update set ms = t.ms + excluded.ms
        returning 1)
      select coalesce((select json_agg(m)::text from (
               select team_id::text as team_id, scope, e::text as e, ${GROUP_COLUMNS} from mv) m), '[]') as activity,
             coalesce((select json_agg(cm)::text from cm), '[]') as cohorts,
             coalesce((select json_agg(c) from (
               select team_id, scope, month, bedrock, count(*)::int as players, count(*)::int as firsts, 0 as ms
                 from pm where fresh group by 1, 2, 3, 4) c), '[]')::text as counts`,
    ),
  );
  const counts = [
    ...(JSON.parse(moves!.counts) as MonthCount[]),
    ...(await setPrevMonths(tx, [...new Set(spans.map((x) => x.uuid.toLowerCase()))])),
  ];
  await setWeekLinks(
    tx,
    sql`select sc.scope, x.uuid, date_bin('7 days', x.a, ${MONDAY}) as lo from (${src}) x ${sql.raw(scopesOf("x"))}`,
  );
  // Then the rows every closer of a network shares (its slots and activity counts), under the
  // network's lock, held to the commit: the slots' peaks are recomputed after every earlier
  // close's sessions are in, and two closers never take those rows in different orders.
  await lockNetworks(tx, [...new Set(spans.map((x) => x.server_id))]);
  const touched = rowsOf<{ scope: string; slot: string }>(
    await executeNamed(
      tx,
      sql`
      with mv as (
        select * from json_to_recordset(${moves!.activity}::json)
          as x(team_id uuid, scope text, e timestamptz, ${sql.raw(ACTIVITY_FLOORS.map((f) => `${f.group} int`).join(", "))})),
      aw as (${applyMoves(sql`select * from mv`)} returning 1),
      ca as (${applyCohorts(sql`select * from json_to_recordset(${moves!.cohorts}::json)
          as x(team_id uuid, scope text, cohort date, week date, ${sql.raw(COHORT_COLUMNS.map((c) => `${c} int`).join(", "))})`)} returning 1),
      sr as materialized (${slotRows(src)}),
      mc as (${applyMonthCounts(sql`
        select * from json_to_recordset(${JSON.stringify(counts)}::json)
          as x(team_id uuid, scope text, month timestamptz, bedrock boolean, players int, firsts int, ms bigint)
        union all
        ${slotMonths(sql`select * from sr`, 1)}`)} returning 1)
      insert into analytics_slots (team_id, scope, slot, online_ms, start_level, peak, peak_at, ${SLOT_SUMS})
      select team_id, scope, slot, online_ms, start_level, 0, slot, ${SLOT_SUMS} from sr r
      on conflict (scope, slot) do update set
        online_ms = analytics_slots.online_ms + excluded.online_ms,
        start_level = analytics_slots.start_level + excluded.start_level,
        ${sql.raw(["bedrock_ms", ...LENGTH_COLUMNS].map((c) => `${c} = analytics_slots.${c} + excluded.${c}`).join(", "))}
      returning scope, slot::text as slot`,
    ),
  );
  await recomputePeaks(tx, touched, { days: true });
}

/**
 * Per (team, scope, period, player) rows of player-hour rows `src` (columns server_id, hour, uuid,
 * q0..q3, seen): milliseconds, the first and last quarter seen; for the server's scope and, on a
 * network, the network's. `period` names the column and how an hour `h.hour` falls in one.
 */
const playerRows = (src: SQL, column: "month" | "week", period: SQL) => sql`
  select sv.team_id, sc.scope, ${period} as ${sql.raw(column)}, h.uuid,
         sum(h.q0 + h.q1 + h.q2 + h.q3)::bigint as ms,
         min(h.hour + (case when h.seen & 1 <> 0 then 0 when h.seen & 2 <> 0 then 1 when h.seen & 4 <> 0 then 2 else 3 end)
                      * interval '15 minutes') as first_at,
         max(h.hour + (case when h.seen & 8 <> 0 then 3 when h.seen & 4 <> 0 then 2 when h.seen & 2 <> 0 then 1 else 0 end)
                      * interval '15 minutes') as last_at
    from (${src}) h
    join servers sv on sv.id = h.server_id
    cross join lateral (
      select h.server_id::text as scope
      union all
      select 'n:' || sv.team_id || ':' || sv.network_name where sv.network_name is not null) sc
   where h.seen <> 0
   group by 1, 2, 3, 4`;

/**
 * Per (team, scope, UTC month, player) rows of player-hour rows `src`, in the shape of
 * `analytics_player_months` without `prev_at`. The ingest adds the rows of the hours it adds; a
 * rebuild makes them from the whole hour table.
 */
export const monthRows = (src: SQL) => playerRows(src, "month", sql`date_trunc('month', h.hour, 'UTC')`);

/** Per (team, scope, UTC week, player) rows of player-hour rows `src`, as `analytics_player_weeks` without its links. */
export const weekRows = (src: SQL) => playerRows(src, "week", sql`date_bin('7 days', h.hour, ${MONDAY})`);

/**
 * Over one scope's and player's week rows in week order: the first quarter seen in a later week
 * (`next_at`), and the milliseconds of each of the three weeks before (0 where a week has no row).
 */
const before = (k: number) =>
  `(case ${[1, 2, 3]
    .filter((lag) => lag <= k)
    .map((lag) => `when lag(r.week, ${lag}) over w = r.week - interval '${7 * k} days' then lag(r.ms, ${lag}) over w`)
    .join(" ")} else 0 end)::bigint as ms${k}`;
const LINKS = sql.raw(`lead(r.first_at) over w as next_at, ${[1, 2, 3].map(before).join(", ")}`);
const LINK_WINDOW = sql.raw(`window w as (partition by r.scope, r.uuid order by r.week)`);

/** Week rows (`weekRows`) of whole players' histories, with their links. */
export const withLinks = (rows: SQL) => sql`
  insert into analytics_player_weeks (team_id, scope, week, uuid, ms, first_at, last_at, next_at, ms1, ms2, ms3)
  select r.team_id, r.scope, r.week, r.uuid, r.ms, r.first_at, r.last_at, ${LINKS}
    from (${rows}) r ${LINK_WINDOW}`;

/**
 * Sets the links of the week rows after some changed: `touched` (columns scope, uuid, lo) gives
 * each player's earliest week changed in a scope. From it on every row's copies of the weeks
 * before may change, and `next_at` from the player's last row before it; the rows read start
 * three weeks earlier (or at that last row), so each player's probe is a short range of the
 * primary key.
 */
export async function setWeekLinks(tx: Tx, touched: SQL) {
  await executeNamed(
    tx,
    sql`
    with t as (select scope, uuid, min(lo) as lo from (${touched}) x group by 1, 2),
    -- The weeks' bounds as row comparisons (uuid, week): only the primary key (scope, uuid, week)
    -- takes them as a range. Given as plain ranges, a prepared plan made while the table was
    -- nearly empty took the read index (scope, week, ...) and walked every row of the scope from
    -- that week on for each player (6 of a batch's 38 ms, growing with the table).
    b as (
      select t.scope, t.uuid, t.lo, coalesce((
        select max(p.week) from analytics_player_weeks p
         where p.scope = t.scope and p.uuid = t.uuid and (p.uuid, p.week) < (t.uuid, t.lo)), t.lo) as prev
        from t),
    x as (
      select r.scope, r.uuid, r.week, r.lo, r.prev, ${LINKS}
        from b cross join lateral (
          select p.scope, p.uuid, p.week, p.ms, p.first_at, b.lo, b.prev from analytics_player_weeks p
           where p.scope = b.scope and p.uuid = b.uuid
             and (p.uuid, p.week) >= (b.uuid, least(b.prev, b.lo - interval '21 days')) offset 0) r
      ${LINK_WINDOW})
    update analytics_player_weeks m
       set next_at = x.next_at,
           ms1 = case when x.week >= x.lo then x.ms1 else m.ms1 end,
           ms2 = case when x.week >= x.lo then x.ms2 else m.ms2 end,
           ms3 = case when x.week >= x.lo then x.ms3 else m.ms3 end
      from x
     where m.scope = x.scope and m.uuid = x.uuid and m.week = x.week and x.week >= x.prev
       and (m.next_at is distinct from x.next_at or (x.week >= x.lo and (m.ms1, m.ms2, m.ms3) <> (x.ms1, x.ms2, x.ms3)))`,
  );
}

/**
 * Makes the month rows of the players of `pairs` (columns server_id, uuid) in those servers' teams
 * again from their hour rows left (after retention deleted some of them), with the totals made
 * from them and the week rows.
 */
export async function rebuildPlayerMonths(tx: Tx, pairs: SQL) {
  const who = sql`select distinct sv.team_id, g.uuid from (${pairs}) g join servers sv on sv.id = g.server_id`;
  // The rows' counts are moved once, by the rows gone and those made again together: the locks on
  // them taken in one order, as the ingest takes them.
  const gone = rowsOf<MonthCount>(await tx.execute(monthRowsGone(sql`(m.team_id, m.uuid) in (${who})`)));
  await tx.execute(sql`
    with i as (
      insert into analytics_player_months (${MONTH_COLUMNS})
      ${withPrev(
        monthRows(sql`select h.* from analytics_player_hours h join servers sv on sv.id = h.server_id
        join (${who}) t on t.team_id = sv.team_id and t.uuid = h.uuid`),
      )}
      returning team_id, scope, month, bedrock, 1 as players, (prev_at is null)::int as firsts, 0::bigint as ms)
    ${applyMonthCounts(sql`
      select * from i
      union all
      select * from json_to_recordset(${JSON.stringify(gone)}::json)
        as x(team_id uuid, scope text, month timestamptz, bedrock boolean, players int, firsts int, ms bigint)`)}`);
  await tx.execute(
    sql`delete from analytics_player_totals p using (${who}) t where p.team_id = t.team_id and p.uuid = t.uuid`,
  );
  await tx.execute(totalsFromMonths(sql`join (${who}) t on t.team_id = m.team_id and t.uuid = m.uuid`));
  await tx.execute(
    sql`delete from analytics_player_weeks w using (${who}) t where w.team_id = t.team_id and w.uuid = t.uuid`,
  );
  await tx.execute(
    withLinks(
      weekRows(sql`select h.* from analytics_player_hours h join servers sv on sv.id = h.server_id
      join (${who}) t on t.team_id = sv.team_id and t.uuid = h.uuid`),
    ),
  );
}

/** `analytics_player_totals` rows made again from the month rows `filter` (a join or a where on `m`) keeps. */
const totalsFromMonths = (filter: SQL) => sql`
  insert into analytics_player_totals (team_id, scope, uuid, ms)
  select m.team_id, m.scope, m.uuid, sum(m.ms) from analytics_player_months m ${filter} group by 1, 2, 3`;

/**
 * Over one scope's and player's month rows in month order: the last quarter seen in an earlier
 * month (`prev_at`), and the milliseconds of the month just before (`prev_ms`; 0 when that month
 * has no row), and of the two to five months before (`prev2_ms` ... `prev5_ms`: the rows there).
 */
const monthsBefore = (months: number) =>
  `coalesce(sum(r.ms) over (wu range between interval '${months} months' preceding and interval '1 month' preceding), 0)::bigint`;
/** How far back the milliseconds before go, past the month just before (`prev2_ms` ... `prev5_ms`). */
const LONGER = [2, 3, 4, 5];
/** The columns `PREV` computes and `setPrevMonths` keeps. */
const PREV_COLUMNS = ["prev_at", "prev_ms", ...LONGER.map((k) => `prev${k}_ms`)];
/** The month rows' columns a rebuild inserts (`withPrev`'s). */
const MONTH_COLUMNS = sql.raw(`team_id, scope, month, uuid, ms, first_at, last_at, ${PREV_COLUMNS.join(", ")}`);
const PREV = sql.raw(`max(r.last_at) over (w rows between unbounded preceding and 1 preceding) as prev_at,
  (case when lag(r.month) over w = r.month - interval '1 month' then lag(r.ms) over w else 0 end)::bigint as prev_ms,
  ${LONGER.map((k) => `${monthsBefore(k)} as prev${k}_ms`).join(", ")}`);
// `wu` orders by the month as a UTC timestamp, so the ranges of months above are UTC months
// whatever the session's zone.
const PREV_WINDOW = sql.raw(
  `window w as (partition by r.scope, r.uuid order by r.month), wu as (partition by r.scope, r.uuid order by r.month at time zone 'UTC')`,
);

/** Month rows (`monthRows`) of whole players' histories, with each row's `prev_at` and milliseconds before. */
const withPrev = (rows: SQL) => sql`
  select r.team_id, r.scope, r.month, r.uuid, r.ms, r.first_at, r.last_at, ${PREV}
    from (${rows}) r ${PREV_WINDOW}`;

/**
 * Sets `prev_at` and the milliseconds before (`prev_ms`, `prev2_ms` ... `prev5_ms`) on the month rows
 * of players `uuids`, after their rows changed: a session closed across a month's end adds to both
 * months, and the later month's `prev_ms` (with it `pair_ms`, the leaderboard's bound) follows.
 */
export async function setPrevMonths(tx: Tx, uuids: string[]): Promise<MonthCount[]> {
  if (uuids.length === 0) return [];
  // Each player's rows by a lateral probe of the uuid index, and the rows updated found by their
  // key: as one `uuid = any(...)` over the table, a plan prepared while the table was small read
  // every row of it (a sequential scan kept on that connection until the table was analysed).
  return rowsOf<MonthCount>(
    await executeNamed(
      tx,
      sql`
      with x as materialized (
        select r.scope, r.month, r.uuid, r.prev_at is null as was_first, ${PREV}
          from unnest(${uuidArray(uuids)}) p(uuid)
          cross join lateral (
            select r.* from analytics_player_months r where r.uuid = p.uuid offset 0) r
        ${PREV_WINDOW}),
      u as (
        update analytics_player_months m
           set ${sql.raw(PREV_COLUMNS.map((c) => `${c} = x.${c}`).join(", "))}
          from x
         where (m.scope, m.month, m.uuid) = (x.scope, x.month, x.uuid)
           and m.uuid = any(${uuidArray(uuids)})
           and (${sql.raw(PREV_COLUMNS.map((c) => `m.${c} is distinct from x.${c}`).join(" or "))})
        returning m.team_id, m.scope, m.month, m.bedrock, (m.prev_at is null)::int - x.was_first::int as d)
      -- How many rows gained or lost their place among the month's first rows.
      select team_id, scope, month, bedrock, 0 as players, sum(d)::int as firsts, 0 as ms from u
       where d <> 0 group by 1, 2, 3, 4`,
    ),
  );
}

/** A change of `analytics_month_counts`' row (team_id, scope, month, bedrock): rows, first rows and milliseconds added. */
export interface MonthCount {
  team_id: string;
  scope: string;
  /** As the driver answers a timestamptz: a Date from PostgreSQL and PGlite, a string once through JSON. */
  month: Date | string;
  bedrock: boolean;
  players: number;
  firsts: number;
  ms: number;
}

/**
 * Adds changes (`src`: team_id, scope, month, bedrock, players, firsts, ms) to
 * `analytics_month_counts`, in one order for the rows' locks (as `applyMoves`).
 */
const applyMonthCounts = (src: SQL) => sql`
    insert into analytics_month_counts as c (team_id, scope, month, bedrock, players, firsts, ms)
    select team_id, scope, month, bedrock, sum(players), sum(firsts), sum(ms) from (${src}) d
     group by 1, 2, 3, 4 having sum(players) <> 0 or sum(firsts) <> 0 or sum(ms) <> 0
     order by 2, 3, 4
    on conflict (scope, month, bedrock) do update set
      players = c.players + excluded.players, firsts = c.firsts + excluded.firsts, ms = c.ms + excluded.ms`;

/**
 * Deletes the month rows `where` selects (a condition on the table, as `m`), taking them out of
 * `analytics_month_counts` in the same statement; answers how many went.
 */
export async function deleteMonthRows(tx: Tx, where: SQL): Promise<number> {
  const [r] = rowsOf<{ n: number }>(
    await tx.execute(sql`
      with d as (${monthRowsGone(where)}),
      mc as (${applyMonthCounts(sql`select * from d`)} returning 1)
      select count(*)::int as n from d`),
  );
  return Number(r!.n);
}

/** Deletes the month rows `where` selects (on `m`), returning what that takes from their counts. */
const monthRowsGone = (where: SQL) => sql`
  delete from analytics_player_months m where ${where}
  returning m.team_id, m.scope, m.month, m.bedrock, -1 as players, -(m.prev_at is null)::int as firsts, 0::bigint as ms`;

/**
 * Per (team, scope, UTC month, edition) the milliseconds of slot-shaped rows `src` (team_id, scope,
 * slot, online_ms, bedrock_ms), times `sign`, as `analytics_month_counts` changes.
 */
const slotMonths = (src: SQL, sign: 1 | -1) => sql`
  select s.team_id, s.scope, date_trunc('month', s.slot, 'UTC') as month, e.bedrock, 0 as players, 0 as firsts,
         (${sql.raw(String(sign))} * sum(case when e.bedrock then s.bedrock_ms else s.online_ms - s.bedrock_ms end))::bigint as ms
    from (${src}) s cross join (values (false), (true)) e(bedrock)
   group by 1, 2, 3, 4`;

/**
 * `analytics_month_counts` rows made from the month rows and the slots `teamId`'s (or every
 * team's) scopes keep.
 */
export const countsFrom = (teamId?: string) => {
  const mine = teamId ? sql`where team_id = ${teamId}` : sql``;
  return sql`
  insert into analytics_month_counts (team_id, scope, month, bedrock, players, firsts, ms)
  select team_id, scope, month, bedrock, sum(players), sum(firsts), sum(ms) from (
    select team_id, scope, month, bedrock, count(*) as players, count(*) filter (where prev_at is null) as firsts, 0::bigint as ms
      from analytics_player_months ${mine} group by 1, 2, 3, 4
    union all
    ${slotMonths(sql`select * from analytics_slots ${mine}`, 1)}) x
   group by 1, 2, 3, 4`;
};

/**
 * Takes the networks of these servers, in one order, for the rest of the transaction: closers on
 * two servers of one network would otherwise update its slot rows in different orders (a
 * deadlock), and each slot's peak must be recomputed after every other close's rows are in.
 */
async function lockNetworks(tx: Tx, serverIds: string[]) {
  if (serverIds.length === 0) return;
  await tx.execute(sql`
    select pg_advisory_xact_lock(hashtextextended(n.scope, 26)) from (
      select distinct 'n:' || team_id || ':' || network_name as scope from servers
       where network_name is not null and id in (${sql.join(
         serverIds.map((i) => sql`${i}::uuid`),
         sql`, `,
       )})
       order by 1) n`);
}

/**
 * Sets each given slot's peak from its first-instant level and the closed sessions starting or
 * ending inside it (leaves before joins at one instant; a session that lasts no time is never
 * open). `except` leaves one player's sessions out (forgetPlayer, before they are deleted).
 *
 * With `days` (the ingest: the slots given are every quarter its sessions touch), the servers'
 * day peaks (`server_days.peak`, which only grow) are raised to their new slots' peaks in the
 * same statement. A day's peak is the most of its quarters', and only the quarters the new
 * sessions touch can have changed; before, the ingest recomputed each touched day from all its
 * sessions (4,000 rows a batch on a busy server's day).
 */
export async function recomputePeaks(
  tx: Tx,
  touched: { scope: string; slot: string }[],
  opts: { except?: string; days?: boolean } = {},
) {
  const { except, days = false } = opts;
  if (touched.length === 0) return;
  const skip = except ? sql`and s.uuid <> ${except}::uuid` : sql``;
  // A network's slots (scope `n:<team id>:<network name>`) are made from the sessions of each of
  // its servers: they are found here rather than by a statement of their own (one round trip less
  // while the ingest holds the network's lock).
  await executeNamed(
    tx,
    sql`
    with t0 as (select * from json_to_recordset(${JSON.stringify(touched)}::json) as x(scope text, slot timestamptz)),
    t as (
      select t0.scope, t0.slot, (case when t0.scope not like 'n:%' then t0.scope::uuid end) as server_id
        from t0 where t0.scope not like 'n:%'
      union all
      select t0.scope, t0.slot, sv.id from t0
        join servers sv on sv.team_id = (case when t0.scope like 'n:%' then substr(t0.scope, 3, 36)::uuid end)
                       and sv.network_name = substr(t0.scope, 40)
       where t0.scope like 'n:%'),
    ev as (
      select t.scope, t.slot, s.at, 1 as d from t cross join lateral (
        select s.joined_at as at from player_sessions s
         where s.server_id = t.server_id and s.joined_at >= t.slot and s.joined_at < t.slot + interval '15 minutes'
           and s.left_at > s.joined_at ${skip} offset 0) s
      union all
      select t.scope, t.slot, s.at, -1 from t cross join lateral (
        select s.left_at as at from player_sessions s
         where s.server_id = t.server_id and s.left_at > t.slot and s.left_at < t.slot + interval '15 minutes'
           and s.left_at > s.joined_at ${skip} offset 0) s),
    run as (
      select scope, slot, at, d, sum(d) over (partition by scope, slot order by at, d rows unbounded preceding) as lvl from ev),
    best as (
      select distinct on (scope, slot) scope, slot, lvl, at from run where d = 1 order by scope, slot, lvl desc, at),
    u as (select distinct t.scope, t.slot, b.lvl, b.at from t left join best b on b.scope = t.scope and b.slot = t.slot),
    up as (
      update analytics_slots a
         set peak = a.start_level + greatest(0, coalesce(u.lvl, 0))::int,
             peak_at = case when coalesce(u.lvl, 0) > 0 then u.at else a.slot end
        from u
       where a.scope = u.scope and a.slot = u.slot
      returning a.scope, a.slot, a.peak)
    ${
      days
        ? sql`, dp as (
      update server_days sd set peak = greatest(sd.peak, x.peak)
        from (select up.scope::uuid as server_id, date_bin('1 day', up.slot, ${ORIGIN}) as day, max(up.peak) as peak
                from up where up.scope not like 'n:%' group by 1, 2) x
       where sd.server_id = x.server_id and sd.day = x.day and sd.peak < x.peak
      returning 1)
    select (select count(*) from up) + (select count(*) from dp) as n`
        : sql`select count(*) as n from up`
    }`,
  );
}

/**
 * Removes one player's closed sessions from every analytics aggregate of a team, exactly the
 * inverse of `addSessions`. Call it in the erasure's transaction before the sessions are deleted
 * (it reads them to know what they added).
 */
export async function forgetPlayer(tx: Tx, teamId: string, uuid: string) {
  const mine = rowsOf<{ id: string; network_name: string | null }>(
    await tx.execute(sql`select id::text as id, network_name from servers where team_id = ${teamId}`),
  );
  // The player's own rows first, as the ingest takes them (`addSessions`): its (network, player)
  // locks, then the networks'.
  await lockNetworkPlayers(
    tx,
    [...new Set(mine.flatMap((r) => (r.network_name === null ? [] : [r.network_name])))].map((networkName) => ({
      teamId,
      networkName,
      uuid,
    })),
  );
  await lockNetworks(
    tx,
    mine.map((r) => r.id),
  );
  const src = sql`select s.server_id, s.uuid, s.joined_at as a, s.left_at as b from player_sessions s
     join servers sv on sv.id = s.server_id
    where sv.team_id = ${teamId} and s.uuid = ${uuid}::uuid and s.left_at is not null`;
  const touched = rowsOf<{ scope: string; slot: string }>(
    await tx.execute(sql`
      with x as materialized (${slotRows(src)}),
      mc as (${applyMonthCounts(slotMonths(sql`select * from x`, -1))} returning 1)
      update analytics_slots a set online_ms = a.online_ms - x.online_ms, start_level = a.start_level - x.start_level,
        ${sql.raw(["bedrock_ms", ...LENGTH_COLUMNS].map((c) => `${c} = a.${c} - x.${c}`).join(", "))}
        from x
       where a.scope = x.scope and a.slot = x.slot
      returning a.scope, a.slot::text as slot`),
  );
  const rows = sql`select h.* from analytics_player_hours h join servers sv on sv.id = h.server_id
     where sv.team_id = ${teamId} and h.uuid = ${uuid}::uuid`;
  await moveActivity(tx, rows, -1);
  await moveCohorts(tx, rows);
  await tx.execute(sql`
    delete from analytics_player_hours h using servers sv
     where sv.id = h.server_id and sv.team_id = ${teamId} and h.uuid = ${uuid}::uuid`);
  await deleteMonthRows(tx, sql`m.team_id = ${teamId} and m.uuid = ${uuid}::uuid`);
  await tx.execute(sql`delete from analytics_player_totals where team_id = ${teamId} and uuid = ${uuid}::uuid`);
  await tx.execute(sql`delete from analytics_player_weeks where team_id = ${teamId} and uuid = ${uuid}::uuid`);
  await recomputePeaks(tx, touched, { except: uuid });
  await tx.execute(
    sql`delete from analytics_slots where team_id = ${teamId} and online_ms <= 0 and start_level <= 0 and peak <= 0
      and ${sql.raw(LENGTH_COLUMNS.join(" + "))} <= 0`,
  );
}

/**
 * Builds the aggregates again from the closed sessions, for one team or for all (the migration's
 * backfill does the same for all); the month rows from the hour rows just built, with `monthRows`
 * as the ingest does. Used after bulk loads (bench/analytics.ts) and by repairs.
 */
export async function rebuildAggregates(tx: Tx, teamId?: string) {
  const mine = teamId ? sql`and sv.team_id = ${teamId}` : sql``;
  const src = sql`select s.server_id, s.uuid, s.joined_at as a, s.left_at as b from player_sessions s
     join servers sv on sv.id = s.server_id where s.left_at is not null ${mine}`;
  const teamOnly = teamId ? sql`where team_id = ${teamId}` : sql``;
  await tx.execute(sql`delete from analytics_player_hours h using servers sv where sv.id = h.server_id ${mine}`);
  await tx.execute(sql`delete from analytics_slots ${teamOnly}`);
  await tx.execute(sql`delete from analytics_player_months ${teamOnly}`);
  await tx.execute(sql`delete from analytics_month_counts ${teamOnly}`);
  await tx.execute(sql`delete from analytics_player_totals ${teamOnly}`);
  await tx.execute(sql`delete from analytics_activity_weeks ${teamOnly}`);
  await tx.execute(sql`delete from analytics_player_weeks ${teamOnly}`);
  await tx.execute(sql`delete from analytics_cohort_weeks ${teamOnly}`);
  await tx.execute(
    sql`insert into analytics_player_hours (server_id, hour, uuid, q0, q1, q2, q3, seen, joins) ${hourRows(src)}`,
  );
  await tx.execute(
    sql`insert into analytics_player_months (${MONTH_COLUMNS})
    ${withPrev(monthRows(sql`select h.* from analytics_player_hours h join servers sv on sv.id = h.server_id where true ${mine}`))}`,
  );
  await tx.execute(totalsFromMonths(teamId ? sql`where m.team_id = ${teamId}` : sql``));
  await tx.execute(
    withLinks(
      weekRows(sql`select h.* from analytics_player_hours h join servers sv on sv.id = h.server_id where true ${mine}`),
    ),
  );
  await tx.execute(sql`insert into analytics_activity_weeks (team_id, scope, week, ${sql.raw(ACTIVITY_FLOORS.map((f) => f.group).join(", "))})
    ${activityRows(sql`select h.* from analytics_player_hours h join servers sv on sv.id = h.server_id where true ${mine}`)}`);
  await tx.execute(sql`insert into analytics_cohort_weeks (team_id, scope, cohort, week, ${COHORT_LIST})
    ${cohortRowsOf(sql`select h.* from analytics_player_hours h join servers sv on sv.id = h.server_id where true ${mine}`)}`);
  await tx.execute(sql`insert into analytics_slots (team_id, scope, slot, online_ms, start_level, peak, peak_at, ${SLOT_SUMS})
    select team_id, scope, slot, online_ms, start_level, start_level, slot, ${SLOT_SUMS} from (${slotRows(src)}) r`);
  await tx.execute(countsFrom(teamId));
  await tx.execute(allPeaks(teamId));
}

/**
 * Every slot's peak from all closed sessions at once (the bulk form of `recomputePeaks`), of one
 * team's servers or of all: only those servers' sessions are read.
 */
const allPeaks = (teamId?: string) => {
  const mine = teamId ? sql`and team_id = ${teamId}` : sql``;
  return sql`
  with sv as (
    select id, id::text as scope from servers where true ${mine}
    union all select id, 'n:' || team_id || ':' || network_name from servers where network_name is not null ${mine}),
  ev as (
    select sv.scope, date_bin('15 minutes', s.joined_at, ${ORIGIN}) as slot, s.joined_at as at, 1 as d
      from player_sessions s join sv on sv.id = s.server_id where s.left_at > s.joined_at
    union all
    select sv.scope, date_bin('15 minutes', s.left_at, ${ORIGIN}), s.left_at, -1
      from player_sessions s join sv on sv.id = s.server_id
     where s.left_at > s.joined_at and s.left_at > date_bin('15 minutes', s.left_at, ${ORIGIN})),
  run as (select scope, slot, at, d, sum(d) over (partition by scope, slot order by at, d rows unbounded preceding) as lvl from ev),
  best as materialized (select distinct on (scope, slot) scope, slot, lvl, at from run where d = 1 order by scope, slot, lvl desc, at)
  update analytics_slots a
     set peak = a.start_level + greatest(0, b.lvl)::int, peak_at = case when b.lvl > 0 then b.at else a.slot end
    from best b
   where a.scope = b.scope and a.slot = b.slot`;
};

/**
 * The activity index's weeks: Monday 00:00 UTC to Monday 00:00 UTC. `analytics_activity_weeks`
 * holds, per scope and such a Monday (`week`, the index's end), how many players had the index in
 * each group over the three weeks before it (docs/analytics.md, "Activity index").
 */
const MONDAY_MS = Date.UTC(2000, 0, 3);
export const MONDAY = sql.raw(`timestamptz '${new Date(MONDAY_MS).toISOString()}'`);
/** The activity index's end for a window ending at `to`: the last Monday 00:00 UTC at or before it. */
export const indexEnd = (to: Date) => {
  const week = 7 * 86_400_000;
  return new Date(to.getTime() - ((((to.getTime() - MONDAY_MS) % week) + week) % week));
};
/** The group (ACTIVITY_FLOORS' place) of an index, or null below the last floor (inactive). */
const groupOf = (index: string) =>
  sql.raw(
    `(case ${ACTIVITY_FLOORS.map((f, i) => `when ${index} >= ${f.min} - 1e-9 then ${i}`).join(" ")} else null end)`,
  );
/**
 * The index from a player's weekly sums `ms`, aggregated over one row per week with play (a week
 * without scores 1): the one formula of the ingest, the rebuild and the reads.
 */
export const indexOf = (ms: string) => `(5 - 5 * (coalesce(sum(${weekTerm(ms)}), 0) + (3 - count(${ms}))) / 3)`;

/** Per-scope rows of player-hour rows (`src`: server_id, hour, uuid, ms): the server's and its network's. */
const scopesOf = (h: string) => `
    join servers sv on sv.id = ${h}.server_id
    cross join lateral (
      select ${h}.server_id::text as scope
      union all
      select 'n:' || sv.team_id || ':' || sv.network_name where sv.network_name is not null) sc`;

/**
 * Moves `analytics_activity_weeks` by player-hour rows about to be added (sign 1) or removed
 * (sign -1): for each player, scope and index end those rows touch (the three Mondays after each
 * of their weeks), the group before from the hour rows as they are, the group after with the
 * change; a player leaving a group is one less there, entering one is one more. Call it before
 * the hour rows change, in their transaction (the networks' locks keep two closers apart).
 */
export async function moveActivity(tx: Tx, rows: SQL, sign: 1 | -1) {
  await tx.execute(
    sql`with ${activityMoves(rows, sign)}, aw as (${applyMoves(sql`select * from mv`)} returning 1) select count(*) from aw`,
  );
}

const GROUP_COLUMNS = sql.raw(ACTIVITY_FLOORS.map((f) => f.group).join(", "));

/**
 * `moveActivity`'s reading as common table expressions ending in `mv` (team_id, scope, e, and per
 * group how many players it gains or loses there), for a statement of the caller's.
 */
const activityMoves = (rows: SQL, sign: 1 | -1) => sql`
    d0 as materialized (
      select d.server_id, d.hour, d.uuid, ${sql.raw(String(sign))} * (d.q0 + d.q1 + d.q2 + d.q3)::bigint as ms from (${rows}) d),
    dw as materialized (
      select sv.team_id, sc.scope, d0.uuid, date_bin('7 days', d0.hour, ${MONDAY}) as week, sum(d0.ms) as ms
        from d0 ${sql.raw(scopesOf("d0"))}
       group by 1, 2, 3, 4),
    ends as (select distinct dw.team_id, dw.scope, dw.uuid, dw.week + k * interval '7 days' as e from dw, generate_series(1, 3) k),
    span as (select min(week) - interval '14 days' as lo, max(week) + interval '21 days' as hi from dw),
    old as (
      select sc.scope, h.uuid, date_bin('7 days', h.hour, ${MONDAY}) as week, sum(h.q0 + h.q1 + h.q2 + h.q3)::bigint as ms
        from (select distinct uuid from dw) p cross join span
        -- Each player's own hour rows (a lateral probe of the uuid index, whatever the statistics say).
        cross join lateral (
          select h.server_id, h.uuid, h.hour, h.q0, h.q1, h.q2, h.q3 from analytics_player_hours h
           where h.uuid = p.uuid and h.hour >= span.lo and h.hour < span.hi offset 0) h ${sql.raw(scopesOf("h"))}
       where exists (select 1 from dw where dw.scope = sc.scope and dw.uuid = h.uuid)
       group by 1, 2, 3),
    xw as (
      select scope, uuid, week, sum(before)::float8 as before, sum(before + change)::float8 as after from (
        select scope, uuid, week, ms as before, 0 as change from old
        union all
        select scope, uuid, week, 0, ms from dw) x
       group by 1, 2, 3),
    g as (
      select e.team_id, e.scope, e.e, ${groupOf(indexOf("xw.before"))} as g0, ${groupOf(indexOf("xw.after"))} as g1
        from ends e
        left join xw on xw.scope = e.scope and xw.uuid = e.uuid and xw.week >= e.e - interval '21 days' and xw.week < e.e
       group by e.team_id, e.scope, e.uuid, e.e),
    moves as (
      select team_id, scope, e, g0 as g, -1 as n from g where g0 is distinct from g1 and g0 is not null
      union all
      select team_id, scope, e, g1, 1 from g where g0 is distinct from g1 and g1 is not null),
    mv as (
      select team_id, scope, e, ${sql.raw(ACTIVITY_FLOORS.map((f, i) => `coalesce(sum(n) filter (where g = ${i}), 0)::int as ${f.group}`).join(", "))}
        from moves group by 1, 2, 3)`;

/** The counts' changes `src` gives (columns team_id, scope, e and one per group) added to `analytics_activity_weeks`. */
const applyMoves = (src: SQL) => sql`
    insert into analytics_activity_weeks as a (team_id, scope, week, ${GROUP_COLUMNS})
    select team_id, scope, e, ${GROUP_COLUMNS} from (${src}) m
     -- One order for the rows' locks, whoever adds to them.
     order by scope, e
    on conflict (scope, week) do update set
      ${sql.raw(ACTIVITY_FLOORS.map((f) => `${f.group} = a.${f.group} + excluded.${f.group}`).join(", "))}`;

/** `analytics_activity_weeks` rows from whole histories of player-hour rows `src` (a rebuild, the migration). */
export const activityRows = (src: SQL) => sql`
  select team_id, scope, e, ${sql.raw(ACTIVITY_FLOORS.map((_, i) => `count(*) filter (where g = ${i})`).join(", "))}
    from (
      select pw.team_id, pw.scope, pw.week + k * interval '7 days' as e,
             ${groupOf(indexOf("pw.ms"))} as g
        from (
          select sv.team_id, sc.scope, h.uuid, date_bin('7 days', h.hour, ${MONDAY}) as week, sum(h.q0 + h.q1 + h.q2 + h.q3)::bigint as ms
            from (${src}) h ${sql.raw(scopesOf("h"))}
           group by 1, 2, 3, 4) pw
        cross join generate_series(1, 3) k
       group by pw.team_id, pw.scope, pw.uuid, pw.week + k * interval '7 days') x
   where g is not null
   group by 1, 2, 3`;

/**
 * Retention's kept counts (`analytics_cohort_weeks`, docs/analytics.md, "Retention, kept"): per
 * player of player-hour rows `src` (columns server_id, hour, uuid, seen) and scope, each local
 * week of the team's `cohort_zone` they were seen in (`aw`, a local Monday) with the first quarter
 * seen in it (`fq`). Quarter by quarter, so a zone whose weeks start inside a UTC hour is exact.
 */
const cohortWeeksOf = (src: SQL) => sql`
  select sv.team_id, sc.scope, h.uuid, tm.cohort_zone as z,
         date_trunc('week', (h.hour + i * interval '15 minutes') at time zone tm.cohort_zone) as aw,
         min(h.hour + i * interval '15 minutes') as fq
    from (${src}) h cross join generate_series(0, 3) as i ${sql.raw(scopesOf("h"))}
    join teams tm on tm.id = sv.team_id
   where (h.seen >> i) & 1 = 1
   group by 1, 2, 3, 4, 5`;

/** A local Monday's date, and a weekday (0 Monday) in zone `z`, of an instant. */
const monday = (t: string, z: string) => `date_trunc('week', ${t} at time zone ${z})::date`;
const weekday = (t: string, z: string) => `(extract(isodow from ${t} at time zone ${z})::int - 1)`;

/**
 * Cohort cells (team_id, scope, cohort, d, week, fd, n) of whole players' hour rows `src`, each
 * counted `n` times: the cohort is the local week and weekday of a player's first quarter in the
 * scope, and each week they were seen in adds one at the weekday of their first quarter there.
 */
const cohortCells = (src: SQL, n: number, only = sql`true`) => sql`
  select w.team_id, w.scope, ${sql.raw(monday("w.f", "w.z"))} as cohort, ${sql.raw(weekday("w.f", "w.z"))} as d,
         w.aw::date as week, ${sql.raw(weekday("w.fq", "w.z"))} as fd, ${sql.raw(String(n))} as n
    from (select x.*, min(x.fq) over (partition by x.scope, x.uuid) as f from (${cohortWeeksOf(src)}) x where ${only}) w`;

const COHORT_LIST = sql.raw(COHORT_COLUMNS.join(", "));

/** Cells (`cohortCells`' columns) summed into `analytics_cohort_weeks` rows, all-zero rows left out. */
const cohortRows = (cells: SQL) => sql`
  select team_id, scope, cohort, week, ${sql.raw(
    COHORT_COLUMNS.map(
      (c, i) => `coalesce(sum(n) filter (where d = ${Math.floor(i / 7)} and fd = ${i % 7}), 0)::int as ${c}`,
    ).join(", "),
  )}
    from (${cells}) x group by 1, 2, 3, 4
  having ${sql.raw(COHORT_COLUMNS.map((_, i) => `sum(n) filter (where d = ${Math.floor(i / 7)} and fd = ${i % 7}) <> 0`).join(" or "))}`;

/**
 * The changes to `analytics_cohort_weeks` of player-hour rows `rows` about to be added (sign 1) or
 * removed (sign -1), as common table expressions ending in `cm` (rows to add). Read before the hour
 * rows change, in their transaction. Added rows: for the weeks they touch, each player's first
 * quarter there before (from the hour rows as they are) and after (the earlier of it and theirs);
 * a player whose first day in the scope moves earlier (a late session) has every week recounted.
 * Removed rows: every week of their players recounted without them.
 */
const cohortMoves = (rows: SQL, sign: 1 | -1) => sql`
    cd0 as materialized (select d.server_id, d.hour, d.uuid, d.seen from (${rows}) d),
    cdw as materialized (${cohortWeeksOf(sql`select * from cd0`)}),
    cdf as (
      select d.team_id, d.scope, d.uuid, d.z, min(d.fq) as f, (
        select w.first_at from analytics_player_weeks w where w.scope = d.scope and w.uuid = d.uuid order by w.week limit 1) as was
        from cdw d group by 1, 2, 3, 4),
    cls as materialized (
      select c.*, least(c.f, coalesce(c.was, c.f)) as nf,
             ${sign < 0 ? sql`true` : sql`(c.was is not null and (c.f at time zone c.z)::date < (c.was at time zone c.z)::date)`} as whole
        from cdf c),
    cold as (
      select k.team_id, k.scope, k.uuid, k.z, k.aw, k.fq, c.nf, (
        select min(h.hour + i * interval '15 minutes') from (
          -- The player's own rows of the week (a probe of the uuid index, whatever the statistics say).
          select h.server_id, h.hour, h.seen from analytics_player_hours h
           where h.uuid = k.uuid and h.hour > (k.aw at time zone k.z) - interval '1 hour'
             and h.hour < ((k.aw + interval '7 days') at time zone k.z) offset 0) h
          join servers sv on sv.id = h.server_id cross join generate_series(0, 3) as i
         where sv.team_id = k.team_id and (sv.id::text = k.scope or 'n:' || sv.team_id || ':' || sv.network_name = k.scope)
           and (h.seen >> i) & 1 = 1 and h.hour + i * interval '15 minutes' >= (k.aw at time zone k.z)
           and h.hour + i * interval '15 minutes' < ((k.aw + interval '7 days') at time zone k.z)) as was
        from cdw k join cls c on c.scope = k.scope and c.uuid = k.uuid where not c.whole),
    -- Every hour row of those players in the team; only the scopes whose first day moved are recounted.
    cfp as (select distinct team_id, uuid from cls where whole),
    -- Each UUID's rows read once, whatever number of teams it is in.
    cfh as materialized (
      select h.server_id, h.hour, h.uuid, h.seen from (select distinct uuid from cfp) u
       cross join lateral (
         select h.server_id, h.hour, h.uuid, h.seen from analytics_player_hours h where h.uuid = u.uuid offset 0) h
       join servers sv on sv.id = h.server_id
       where (sv.team_id, h.uuid) in (select team_id, uuid from cfp)),
    cfn as (
      ${
        sign > 0
          ? sql`select * from cfh union all select d.server_id, d.hour, d.uuid, d.seen from cd0 d where d.uuid in (select uuid from cfp)`
          : sql`select * from cfh where not exists (
              select 1 from cd0 d where d.server_id = cfh.server_id and d.hour = cfh.hour and d.uuid = cfh.uuid)`
      }),
    cm as (${cohortRows(sql`
      select team_id, scope, ${sql.raw(monday("nf", "z"))} as cohort, ${sql.raw(weekday("nf", "z"))} as d, aw::date as week,
             ${sql.raw(weekday("was", "z"))} as fd, -1 as n
        from cold where was is not null
      union all
      select team_id, scope, ${sql.raw(monday("nf", "z"))}, ${sql.raw(weekday("nf", "z"))}, aw::date, ${sql.raw(weekday("least(was, fq)", "z"))}, 1
        from cold
      union all ${cohortCells(sql`select * from cfh`, -1, sql`(x.scope, x.uuid) in (select scope, uuid from cls where whole)`)}
      union all ${cohortCells(sql`select * from cfn`, 1, sql`(x.scope, x.uuid) in (select scope, uuid from cls where whole)`)}`)})`;

/** Cohort count changes `src` (`analytics_cohort_weeks`' columns) added to the kept rows, in one lock order. */
const applyCohorts = (src: SQL) => sql`
    insert into analytics_cohort_weeks as k (team_id, scope, cohort, week, ${COHORT_LIST})
    select team_id, scope, cohort, week, ${COHORT_LIST} from (${src}) m order by scope, cohort, week
    on conflict (scope, cohort, week) do update set
      ${sql.raw(COHORT_COLUMNS.map((c) => `${c} = k.${c} + excluded.${c}`).join(", "))}`;

/** `analytics_cohort_weeks` changed for hour rows `rows` about to be removed (erasure, retention); as `moveActivity`. */
export async function moveCohorts(tx: Tx, rows: SQL) {
  await tx.execute(sql`with ${cohortMoves(rows, -1)}, ca as (${applyCohorts(sql`select * from cm`)} returning 1)
    select count(*) from ca`);
}

/** `analytics_cohort_weeks` rows from whole histories of player-hour rows `src` (a rebuild, the migration). */
export const cohortRowsOf = (src: SQL) => cohortRows(cohortCells(src, 1));

/**
 * A team's kept cohort counts made again from its hour rows, in its `cohort_zone` (set to its
 * time zone by the caller, src/analytics/zones.ts). The caller holds the team's server rows, so
 * no close adds to them meanwhile.
 */
export async function rebuildCohorts(tx: Tx, teamId: string) {
  await tx.execute(sql`delete from analytics_cohort_weeks where team_id = ${teamId}`);
  await tx.execute(sql`insert into analytics_cohort_weeks (team_id, scope, cohort, week, ${COHORT_LIST})
    ${cohortRowsOf(sql`select h.* from analytics_player_hours h join servers sv on sv.id = h.server_id where sv.team_id = ${teamId}`)}`);
}
