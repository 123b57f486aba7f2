import { and, eq, sql, type SQL } from "drizzle-orm";
import type { Db } from "../db/client";
import { rowsOf, uuidArray } from "../db/rows";
import { servers, teams } from "../db/schema";
import { COHORT_COLUMNS } from "../db/schema/analytics";
import { AppError } from "../lib/errors";
import type { Clock } from "../lib/clock";
import type { InFlightLimit } from "../lib/in-flight";
import { iso } from "../lib/schemas";
import { offsetSpans, sameClock, validTimeZone } from "../lib/time-zone";
import { type Principal, principalKey, reachesServer } from "../auth/principal";
import { requireTeamRole } from "../teams/access";
import {
  ACTIVITY_FLOORS,
  hourRows,
  indexEnd,
  indexOf,
  LENGTH_BUCKETS,
  LENGTH_COLUMNS,
  ORIGIN,
  QUARTER_MS,
} from "./aggregates";

const DAY_MS = 86_400_000;
const WEEK_MS = 7 * DAY_MS;
/** The longest window a read may ask for. */
export const MAX_WINDOW_DAYS = 400;
/** Activity windows up to this long list their new players beside counting them (`newPlayers`). */
const LISTED_WINDOW_MS = 62 * DAY_MS;
/** Leaderboard windows shorter than this sum every player's hours in them (`topPlayers`). */
const SUMMED_WINDOW_MS = 4 * DAY_MS;
export const DEFAULT_WINDOW_DAYS = 30;
/** Activity index groups, highest first (the floors but the last are kept per week, aggregates.ts). */
export const ACTIVITY_GROUPS = [...ACTIVITY_FLOORS, { group: "inactive", min: 0 }] as const;
/** The group of an index: its place in ACTIVITY_GROUPS. */
const groupIndex = (index: number) => ACTIVITY_GROUPS.findIndex((g) => index >= g.min - 1e-9);
/** The last group counted regular: "regular players" are those in it or above. */
const REGULAR = ACTIVITY_GROUPS.findIndex((g) => g.group === "regular");
const regularOrMore = (index: number) => groupIndex(index) <= REGULAR;
/** Players per group (ACTIVITY_GROUPS' order) in the regular group or above. */
const regularCount = (counts: number[]) => counts.slice(0, REGULAR + 1).reduce((a, b) => a + b, 0);
const FLOODGATE = /^00000000-0000-0000-0009-/;

export interface WindowQuery {
  server_id?: string;
  network?: string;
  from?: string;
  to?: string;
  tz?: string;
}

interface Scope {
  scope: string;
  ids: string[];
  zone: string;
  /** The zone retention's kept counts are in: the team's, or its old one until they are made again (zones.ts). */
  cohortZone: string;
  from: Date;
  to: Date;
  now: Date;
}

/**
 * A signed part of a count: a number kept in `analytics_month_counts` (a scope's month and
 * edition, one column), or a scalar subquery (`count`).
 */
interface Term {
  key: string;
  sign: 1 | -1;
  kept?: { month: Date; bedrock: boolean; column: "players" | "firsts" | "ms" };
  count?: SQL;
}

const at = (d: Date) => sql`${d.toISOString()}::timestamptz`;
const idList = (ids: string[]) =>
  sql.join(
    ids.map((i) => sql`${i}::uuid`),
    sql`, `,
  );

const HOUR_MS = 3_600_000;
/** The UTC hour holding instant `t` (ms), as its start. */
const hourOf = (t: number) => Math.floor(t / HOUR_MS) * HOUR_MS;
/** The month rows' leaderboard keys: a month's playtime, and with the one to five months before. */
const SPANS = ["ms", "pair_ms", "tri_ms", "quad_ms", "quint_ms", "sext_ms"] as const;
/** A leaderboard over more than six months takes this many times its `limit` from each list of its first floor. */
const SEEDS = 5;

/** A player's first quarter seen in a scope (closed sessions): their first week row's. */
const firstSeen = (scope: string, uuid: SQL) =>
  sql`(select w.first_at from analytics_player_weeks w where w.scope = ${scope} and w.uuid = ${uuid} order by w.week limit 1)`;
/**
 * The quarter bits of an hour row that lie in [from, to): a mask for `seen`, and the row's
 * milliseconds in them. Only the hour holding `from` and the hour holding the window's last
 * quarter can be cut; every other hour of the window is whole, so the masks are constants worked
 * out here rather than four comparisons a row.
 */
const inWindow = (s: { from: Date; to: Date }) => {
  const from = s.from.getTime();
  const to = s.to.getTime();
  const maskOf = (hour: number) => {
    let m = 0;
    for (let i = 0; i < 4; i++) {
      const q = hour + i * QUARTER_MS;
      if (q >= from && q < to) m |= 1 << i;
    }
    return m;
  };
  const cut = [...new Set([hourOf(from), hourOf(to - 1)])]
    .map((hour) => ({ hour, mask: maskOf(hour) }))
    .filter((c) => c.mask !== 15);
  const part = (m: number) =>
    sql.raw(
      [0, 1, 2, 3]
        .filter((i) => m & (1 << i))
        .map((i) => `h.q${i}`)
        .join(" + ") || "0",
    );
  const whole = sql`h.q0 + h.q1 + h.q2 + h.q3`;
  if (cut.length === 0) return { mask: sql`15`, ms: whole };
  return {
    mask: sql`(case h.hour ${sql.join(
      cut.map((c) => sql`when ${at(new Date(c.hour))} then ${sql.raw(String(c.mask))}`),
      sql` `,
    )} else 15 end)`,
    ms: sql`(case h.hour ${sql.join(
      cut.map((c) => sql`when ${at(new Date(c.hour))} then ${part(c.mask)}`),
      sql` `,
    )} else ${whole} end)`,
  };
};

/** How an `AnalyticsService` reads; the defaults are the service's, the others the tests'. */
export interface AnalyticsOptions {
  /** Read every window from the player-hour rows, as before the month rows (the tests compare both). */
  hoursOnly?: boolean;
  /**
   * Up to this many new players are listed and their week rows probed (retention: ten times as
   * many); more are counted by a join against the week rows (the tests set 0 to check that path
   * on small fixtures). Default 2,000.
   */
  newListed?: number;
  /** The leaderboard sums its candidates' hours this many at a time (the tests set 2 to read many parts). Default 500. */
  summedPart?: number;
  /**
   * Up to this many new players (and fewer than those seen before) have their latest week rows
   * probed one by one for the activity's new regulars; more are joined with every regular row.
   * Default 5,000.
   */
  probedNew?: number;
  /**
   * A cut month's players counted on the shorter side of the cut (`auto`, the default), or always
   * directly or always as the kept count less the rest (the tests read both on small fixtures).
   */
  cutSide?: "auto" | "direct" | "rest";
  /**
   * Retention in a zone whose clock is not the team's (counted from the week rows or the hours:
   * seconds for a year at 5,000,000 sessions) runs at most this many at once per caller
   * (EXPENSIVE_READS_PER_CREDENTIAL); one more answers 429 with Retry-After. None: not limited.
   */
  expensive?: InFlightLimit;
}

export class AnalyticsService {
  private readonly hoursOnly: boolean;
  private readonly newListed: number;
  private readonly summedPart: number;
  private readonly probedNew: number;
  private readonly cutSide: "auto" | "direct" | "rest";
  private readonly expensive?: InFlightLimit;

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    options: AnalyticsOptions = {},
  ) {
    this.hoursOnly = options.hoursOnly ?? false;
    this.newListed = options.newListed ?? 2000;
    this.summedPart = options.summedPart ?? 500;
    this.probedNew = options.probedNew ?? 5000;
    this.cutSide = options.cutSide ?? "auto";
    this.expensive = options.expensive;
  }

  /** Checks the caller, resolves the server or network and the window (quarter hours) and zone. */
  private async resolve(principal: Principal, teamId: string, q: WindowQuery): Promise<Scope> {
    // The caller's role, the scope's servers and the team's zone read at once (each on its own
    // connection on PostgreSQL); their errors in that order.
    const oneScope = (q.server_id === undefined) !== (q.network === undefined);
    const [role, found, teamZone] = await Promise.allSettled([
      requireTeamRole(this.db, principal, teamId, "viewer"),
      !oneScope
        ? Promise.resolve([])
        : this.db
            .select({ id: servers.id })
            .from(servers)
            .where(
              q.server_id
                ? and(eq(servers.id, q.server_id), eq(servers.teamId, teamId))
                : and(eq(servers.teamId, teamId), eq(servers.networkName, q.network!)),
            ),
      this.teamZone(teamId),
    ]);
    if (role.status === "rejected") throw role.reason;
    if (!oneScope) throw new AppError("bad_request", "Give exactly one of server_id and network.");
    if (found.status === "rejected") throw found.reason;
    if (teamZone.status === "rejected") throw teamZone.reason;
    const rows = found.value;
    let ids: string[];
    let scope: string;
    if (q.server_id) {
      const [row] = rows;
      if (!row || !reachesServer(principal, row.id)) throw new AppError("not_found", "Server not found.");
      ids = [row.id];
      scope = row.id;
    } else {
      if (rows.length === 0) throw new AppError("not_found", "Network not found.");
      if (rows.some((r) => !reachesServer(principal, r.id)))
        throw new AppError("forbidden", "This key does not reach every server of the network.");
      ids = rows.map((r) => r.id);
      scope = `n:${teamId}:${q.network}`;
    }
    const zone = q.tz ?? teamZone.value.zone;
    if (q.tz !== undefined && !validTimeZone(zone)) throw new AppError("bad_request", `Unknown time zone: ${zone}.`);
    const nowMs = this.clock.now();
    const toMs = q.to ? Date.parse(q.to) : nowMs;
    const fromMs = q.from ? Date.parse(q.from) : toMs - DEFAULT_WINDOW_DAYS * DAY_MS;
    const from = Math.floor(fromMs / QUARTER_MS) * QUARTER_MS;
    const to = Math.ceil(toMs / QUARTER_MS) * QUARTER_MS;
    if (!(to > from)) throw new AppError("bad_request", "to must be after from.");
    if (to - from > MAX_WINDOW_DAYS * DAY_MS)
      throw new AppError("bad_request", `The window is at most ${MAX_WINDOW_DAYS} days.`);
    return {
      scope,
      ids,
      zone,
      cohortZone: teamZone.value.cohortZone,
      from: new Date(from),
      to: new Date(to),
      now: new Date(nowMs),
    };
  }

  /** Open sessions of the scope as spans ending now (or at the window's end). */
  private openSrc(s: Scope, uuids?: string[]) {
    const end = new Date(Math.min(s.now.getTime(), s.to.getTime()));
    const only = uuids ? sql`and s.uuid = any(${uuidArray(uuids)})` : sql``;
    return sql`select s.server_id, s.uuid, s.joined_at as a, ${at(end)} as b from player_sessions s
      where s.server_id in (${idList(s.ids)}) and s.left_at is null and s.joined_at <= ${at(end)} ${only}`;
  }

  /** Hour rows of the scope touching the window: the aggregate, plus the open sessions cut the same way. */
  private hours(s: Scope, from = s.from, uuids?: string[], to = s.to) {
    const lo = new Date(hourOf(from.getTime()));
    return sql`
      ${this.closedHours(s, lo, to, uuids && uuidArray(uuids))}
      union all
      select hour, uuid, q0, q1, q2, q3, seen, true from (${hourRows(this.openSrc(s, uuids))}) o
       where hour >= ${at(lo)} and hour < ${at(to)}`;
  }

  /** The scope's player-hour rows from hour `lo` to `to` (closed sessions), of the given players or all. */
  private closedHours(s: Scope, lo: Date, to: Date, uuids?: SQL) {
    // Given players: each one's rows by `analytics_player_hours_player_idx` (an index-only range per
    // player), not the scope's whole window filtered by a list. The servers are checked outside
    // the probe: given them inside, PGlite's planner walked the primary key's window per player.
    return uuids
      ? sql`select h.hour, h.uuid, h.q0, h.q1, h.q2, h.q3, h.seen, false as open
          from unnest(${uuids}) as c(uuid)
          cross join lateral (
            select server_id, hour, uuid, q0, q1, q2, q3, seen from analytics_player_hours
             where uuid = c.uuid and hour >= ${at(lo)} and hour < ${at(to)} offset 0) h
         where h.server_id in (${idList(s.ids)})`
      : sql`select hour, uuid, q0, q1, q2, q3, seen, false as open from analytics_player_hours
          where server_id in (${idList(s.ids)}) and hour >= ${at(lo)} and hour < ${at(to)}`;
  }

  /** Players of the scope with a session open (up to now or the window's end). */
  private async openPlayers(s: Scope): Promise<string[]> {
    const rows = await this.rows<{ uuid: string }>(
      sql`select distinct o.uuid::text as uuid from (${this.openSrc(s)}) o`,
    );
    return rows.map((r) => r.uuid);
  }

  /**
   * The UTC months the window touches, each with the part of it inside the window [a, b): whole,
   * its head or tail cut, or (a window inside one month) both ends cut.
   */
  private months(s: Scope) {
    const out: { month: Date; end: Date; a: Date; b: Date; cut: "none" | "head" | "tail" | "both" }[] = [];
    const f = s.from;
    let m = new Date(Date.UTC(f.getUTCFullYear(), f.getUTCMonth(), 1));
    while (m.getTime() < s.to.getTime()) {
      const end = new Date(Date.UTC(m.getUTCFullYear(), m.getUTCMonth() + 1, 1));
      const a = new Date(Math.max(m.getTime(), f.getTime()));
      const b = new Date(Math.min(end.getTime(), s.to.getTime()));
      const headCut = a.getTime() > m.getTime();
      const tailCut = b.getTime() < end.getTime();
      out.push({
        month: m,
        end,
        a,
        b,
        cut: headCut && tailCut ? "both" : headCut ? "tail" : tailCut ? "head" : "none",
      });
      m = end;
    }
    return out;
  }

  /** Whether `closedTotals` answers the window: the month rows, and no month cut at both ends. */
  private totalsKept(s: Scope) {
    return !this.hoursOnly && !this.months(s).some((m) => m.cut === "both");
  }

  /**
   * Per edition: players seen in the window and milliseconds played there, over closed sessions
   * (`withMs` false: the players only). Players from the month rows (a player counted in the first
   * month of the window they were seen in: `prev_at` before the window's start), a count per month:
   * a whole month's rows and first rows from `analytics_month_counts`, a cut month's on the shorter
   * side of the cut; playtime a whole month's from the same rows (its slots' milliseconds), a cut
   * month's part from its slots. Null when the window lies inside one month with both ends cut (the
   * caller reads the hours then).
   */
  private async closedTotals(s: Scope, withMs = true) {
    if (!this.totalsKept(s)) return null;
    const months = this.months(s);
    // Per edition, signed terms summed: whole months kept, cut ones an index-only range of a
    // narrow index (the month rows' `last_at`, `first_at` and `prev_at` indexes) or of slots on
    // the shorter side of the cut. No grouping by player.
    const terms: Term[] = [];
    const later = months.slice(1).filter((m) => m.cut === "none");
    for (const bedrock of [false, true]) {
      const edition = bedrock ? "bedrock" : "java";
      months.forEach((m, i) => {
        const k = this.monthPart(s, m, bedrock, edition);
        if (withMs) {
          // Slots' milliseconds of the edition: a slot row holds all (`online_ms`) and the Bedrock part.
          const ms = (a: Date, b: Date) => ({
            key: `${edition}_ms`,
            sign: 1 as const,
            count: sql`(select coalesce(sum(${sql.raw(bedrock ? "bedrock_ms" : "online_ms - bedrock_ms")}), 0) from analytics_slots
              where scope = ${s.scope} and slot >= ${at(a)} and slot < ${at(b)})`,
          });
          if (m.cut === "none") terms.push({ ...k.kept("ms"), key: `${edition}_ms` });
          else if (this.restShorter(m.b.getTime() - m.a.getTime() > (m.end.getTime() - m.month.getTime()) / 2))
            terms.push(
              { ...k.kept("ms"), key: `${edition}_ms` },
              // The month's slots outside the window: before its start, after its end.
              ...[
                [m.month, m.a],
                [m.b, m.end],
              ]
                .filter(([a, b]) => a!.getTime() < b!.getTime())
                .map(([a, b]) => ({ ...ms(a!, b!), sign: -1 as const })),
            );
          else terms.push(ms(m.a, m.b));
        }
        // In the first month, the players seen in its part: every row of a whole month; where the
        // window starts inside it, those last seen at or after its start; where it ends inside,
        // those first seen before its end.
        if (i === 0) {
          terms.push(
            ...(m.cut === "none"
              ? [k.kept("players")]
              : m.cut === "tail"
                ? k.side("players", sql`m.last_at >= ${at(m.a)}`, { before: m.a, rest: sql`m.last_at < ${at(m.a)}` })
                : k.side("players", sql`m.first_at < ${at(m.b)}`, { after: m.b, rest: sql`m.first_at >= ${at(m.b)}` })),
          );
          return;
        }
        // In a later month (whole, or the last, cut at the window's end), only players not seen
        // earlier in the window: its first rows (no earlier month in the scope), and those last
        // seen before the window (a range of the `prev_at` index; the whole months' together).
        if (m.cut === "none") terms.push(k.kept("firsts"));
        else
          terms.push(
            ...k.side("firsts", sql`m.prev_at is null and m.first_at < ${at(m.b)}`, {
              after: m.b,
              rest: sql`m.prev_at is null and m.first_at >= ${at(m.b)}`,
            }),
            k.count(sql`m.prev_at < ${at(s.from)} and m.first_at < ${at(m.b)}`),
          );
      });
      if (later.length > 0)
        terms.push({
          key: edition,
          sign: 1,
          count: sql`(select count(*) from analytics_player_months m where m.scope = ${s.scope} and m.month in (${sql.join(
            later.map((m) => at(m.month)),
            sql`, `,
          )}) and m.bedrock = ${sql.raw(String(bedrock))} and m.prev_at < ${at(s.from)})`,
        });
    }
    const t = await this.tally(s, terms);
    const n = (key: string) => t.get(key) ?? 0;
    return {
      java: { players: n("java"), ms: n("java_ms") },
      bedrock: { players: n("bedrock"), ms: n("bedrock_ms") },
    };
  }

  /**
   * Sums signed terms per key: the kept numbers (`analytics_month_counts`, the scope's rows of the
   * months named) read in one statement, the rest (index ranges, slot sums) in another, at once
   * (each on its own connection on PostgreSQL).
   */
  private async tally(s: Scope, terms: Term[]): Promise<Map<string, number>> {
    const kept = terms.filter((t) => t.kept);
    const counted = terms.filter((t) => t.count);
    const months = [...new Set(kept.map((t) => t.kept!.month.toISOString()))];
    const [rows, [values]] = await Promise.all([
      months.length === 0
        ? Promise.resolve([])
        : this.rows<{ month: Date | string; bedrock: boolean; players: number; firsts: number; ms: number }>(sql`
            select month, bedrock, players, firsts, ms::float8 as ms from analytics_month_counts
             where scope = ${s.scope} and month in (${sql.join(
               months.map((m) => sql`${m}::timestamptz`),
               sql`, `,
             )})`),
      counted.length === 0
        ? Promise.resolve([{} as Record<string, number>])
        : this.rows<Record<string, number>>(
            sql`select ${sql.join(
              counted.map((t, i) => sql`${t.count}::float8 as ${sql.raw(`t${i}`)}`),
              sql`, `,
            )}`,
          ),
    ]);
    const keptOf = new Map(rows.map((r) => [`${new Date(r.month).toISOString()}/${r.bedrock}`, r]));
    const out = new Map<string, number>();
    const add = (key: string, v: number) => out.set(key, (out.get(key) ?? 0) + v);
    for (const t of kept) {
      const r = keptOf.get(`${t.kept!.month.toISOString()}/${t.kept!.bedrock}`);
      add(t.key, t.sign * Number(r?.[t.kept!.column] ?? 0));
    }
    counted.forEach((t, i) => {
      add(t.key, t.sign * Number(values![`t${i}`] ?? 0));
    });
    return out;
  }

  /**
   * Whether a cut month's part is counted as the month's kept number less the rest (`shorter`: the
   * rest is the shorter side), or directly (the tests can set either, `cutSide`).
   */
  private restShorter(shorter: boolean) {
    return this.cutSide === "auto" ? shorter : this.cutSide === "rest";
  }

  /**
   * Terms (under `key`) of one month's rows of one edition in the scope: all of them, its first
   * rows (no `prev_at`) or its slots' milliseconds, kept; those matching a condition (on `m`),
   * counted; and a cut month's part (`direct`) either counted or as the kept number less the rest
   * (`rest`), whichever side of the cut is shorter: the rows before a point early in the month, or
   * after one late in it, are few.
   */
  private monthPart(
    s: Scope,
    m: { month: Date; end: Date },
    bedrock: boolean,
    key: string,
  ): {
    kept: (column: "players" | "firsts" | "ms") => Term;
    count: (cond: SQL) => Term;
    side: (column: "players" | "firsts", direct: SQL, cut: { rest: SQL; before?: Date; after?: Date }) => Term[];
  } {
    const span = m.end.getTime() - m.month.getTime();
    const count = (cond: SQL, sign: 1 | -1 = 1): Term => ({
      key,
      sign,
      count: sql`(select count(*) from analytics_player_months m where m.scope = ${s.scope} and m.month = ${at(m.month)}
        and m.bedrock = ${sql.raw(String(bedrock))} and ${cond})`,
    });
    const kept = (column: "players" | "firsts" | "ms"): Term => ({
      key,
      sign: 1,
      kept: { month: m.month, bedrock, column },
    });
    return {
      kept,
      count: (cond) => count(cond),
      side: (column, direct, cut) =>
        this.restShorter(
          cut.before
            ? cut.before.getTime() - m.month.getTime() < span / 2
            : cut.after!.getTime() - m.month.getTime() > span / 2,
        )
          ? [kept(column), count(cut.rest, -1)]
          : [count(direct)],
    };
  }

  /**
   * Per edition, players seen in the window and milliseconds played there, closed and open
   * sessions together: `closedTotals`, then the players with a session open added (their open
   * time, and themselves when the closed sessions did not count them). Null as `closedTotals`.
   */
  private async editionTotals(s: Scope, opens: Promise<string[]> = this.openPlayers(s), withMs = true) {
    // The closed totals and the players online at once (each on its own connection on PostgreSQL).
    const [closed, open] = await Promise.all([this.closedTotals(s, withMs), opens]);
    if (!closed) return null;
    for (const r of await this.openInWindow(s, open)) {
      const e = FLOODGATE.test(r.uuid) ? closed.bedrock : closed.java;
      e.ms += Number(r.open_ms);
      if (r.open_seen && !r.closed_seen) e.players++;
    }
    return closed;
  }

  /**
   * Per player with a session open (`open`): their open time in the window, and whether their
   * closed sessions and their open one were seen in it.
   */
  private async openInWindow(s: Scope, open: string[]) {
    if (open.length === 0) return [];
    const w = inWindow(s);
    return this.rows<{ uuid: string; open_ms: number; closed_seen: boolean; open_seen: boolean }>(sql`
      select h.uuid::text as uuid, coalesce(sum(${w.ms}) filter (where h.open), 0)::float8 as open_ms,
             coalesce(bool_or((h.seen & (${w.mask})) <> 0) filter (where not h.open), false) as closed_seen,
             coalesce(bool_or((h.seen & (${w.mask})) <> 0) filter (where h.open), false) as open_seen
        from (${this.hours(s, s.from, open)}) h group by h.uuid`);
  }

  /** Per player of the scope: milliseconds played and whether seen inside the window. */
  private perPlayer(s: Scope) {
    const w = inWindow(s);
    return sql`
      select h.uuid, sum(${w.ms})::float8 as ms, bool_or((h.seen & (${w.mask})) <> 0) as seen
        from (${this.hours(s)}) h group by h.uuid`;
  }

  private window(s: Scope) {
    return { from: iso(s.from), to: iso(s.to), time_zone: s.zone };
  }

  private async rows<T>(q: SQL): Promise<T[]> {
    return rowsOf<T>(await this.db.execute(q));
  }

  async activity(principal: Principal, teamId: string, q: WindowQuery) {
    const s = await this.resolve(principal, teamId, q);
    const end = indexEnd(s.to);
    const since = new Date(end.getTime() - 3 * WEEK_MS);
    const long = s.from.getTime() <= since.getTime();
    if (this.hoursOnly || (long && !this.totalsKept(s))) return this.activityFromHours(s, end);
    // The players online, read once for the totals, the new-player candidates and the scores;
    // the statements that do not need them run beside (each on its own connection on PostgreSQL).
    const opens = this.openPlayers(s);
    if (long) {
      // A window holding the index's three weeks: every player with time in them was seen in it,
      // so the groups come from the week's counts kept at ingest and the players seen from the
      // month rows; only the players online and the new ones are scored here.
      const [open, [kept]] = await Promise.all([
        opens,
        this.rows<Record<string, number>>(sql`
          select ${sql.raw(ACTIVITY_FLOORS.map((f) => f.group).join(", "))} from analytics_activity_weeks
           where scope = ${s.scope} and week = ${at(end)}`),
      ]);
      const counts = ACTIVITY_GROUPS.map((g) => Number(kept?.[g.group] ?? 0));
      // The players seen, counted beside the new players.
      const players = this.editionTotals(s, opens, false).then((t) => t!.java.players + t!.bedrock.players);
      // Every open player with closed time in the three weeks is in the counts (at its closed index).
      return this.activityScored(s, end, counts, players, open, null);
    }
    // A shorter window: each player seen in it counted once from the week rows, at their group.
    const [open, counted] = await Promise.all([opens, this.weekCounts(s, end)]);
    // The counts hold closed sessions: which open players they saw in the window, and which only
    // their open session did.
    const seen = new Map<string, { closed: boolean; open: boolean }>();
    for (const r of await this.openInWindow(s, open)) seen.set(r.uuid, { closed: r.closed_seen, open: r.open_seen });
    const players = counted.reduce((a, b) => a + b, 0);
    return this.activityScored(s, end, counted, players, open, seen);
  }

  /**
   * The activity answer from counts per group of closed sessions (the last, inactive, made up from
   * `players`): the open players and the new ones scored from their hours, an open player moved to
   * the group their open time gives. `seen` (week rows): which open players the counts saw in the
   * window; one seen by their open session alone is added. Null (the week's kept counts): the
   * counts hold every open player with closed time in the index's weeks, and `players` all.
   */
  private async activityScored(
    s: Scope,
    end: Date,
    counts: number[],
    seenPlayers: number | Promise<number>,
    open: string[],
    seen: Map<string, { closed: boolean; open: boolean }> | null,
  ) {
    // Only the players online are scored from their hours (beside the new players' first
    // statements); the new ones are counted from the kept rows.
    const scored =
      open.length === 0
        ? Promise.resolve([])
        : this.rows<{ uuid: string; index: number; closed_index: number }>(
            sql`select uuid::text as uuid, index, closed_index from (${this.scores(s, end, open)}) x`,
          );
    // The kept counts (a window holding the index's weeks) hold every player regular or more at the end.
    const keptRegular = seen === null ? regularCount(counts) : null;
    const [{ index, ...fresh }, seenCount] = await Promise.all([
      this.newPlayers(s, end, open, scored, keptRegular),
      seenPlayers,
    ]);
    let players = seenCount;
    for (const u of open) {
      // A player with no time in the three weeks scores 0 (inactive).
      const x = index.get(u) ?? { all: 0, closed: 0 };
      const [g0, g1] = [groupIndex(x.closed), groupIndex(x.all)];
      const was = seen ? seen.get(u) : { closed: true, open: true };
      if (!was) continue;
      if (was.closed) {
        counts[g0]!--;
        counts[g1]!++;
      } else if (was.open) {
        counts[g1]!++;
        players++;
      }
    }
    counts[counts.length - 1] = players - counts.slice(0, -1).reduce((a, b) => a + b, 0);
    const regular = regularCount(counts) - fresh.regular;
    return {
      ...this.window(s),
      players,
      new_players: fresh.players,
      returning_players: players - fresh.players - regular,
      regular_players: regular,
      activity_groups: ACTIVITY_GROUPS.map((g, i) => ({ group: g.group, min_index: g.min, players: counts[i]! })),
      index_at: iso(end),
    };
  }

  /**
   * Players seen in a window shorter than the index's three weeks, per group (ACTIVITY_GROUPS'
   * order), closed sessions only, from `analytics_player_weeks`: each player at the latest UTC week
   * of the window that saw them (`next_at`, their first quarter in a later week, at or after the
   * window's end), in the group their index has at `end` as that week's row gives it (`g0`..`g3`:
   * `end` 0..3 weeks after the row's week). Per week "seen in its part": any row of a whole week,
   * `last_at >= from` when the window starts inside it, `first_at < to` when it ends inside it.
   * A window inside one week with both ends cut takes the week's rows whose first or last quarter
   * lies in it, and checks the hours only of those seen before and after it.
   */
  private async weekCounts(s: Scope, end: Date): Promise<number[]> {
    const terms: SQL[] = [];
    const from = s.from.getTime();
    const to = s.to.getTime();
    for (let w = indexEnd(s.from).getTime(); w < to; w += WEEK_MS) {
      const head = from > w;
      const tail = to < w + WEEK_MS;
      const p = Math.round((end.getTime() - w) / WEEK_MS);
      if (head && tail) {
        // Inside one week (a day, say): a row whose first or last quarter of the week lies in the
        // window was seen in it; one seen before and after it may have been, which its hours in
        // the window tell (a probe per such player). The rest were not.
        const lo = new Date(hourOf(from));
        const row = sql`scope = ${s.scope} and week = ${at(new Date(w))}`;
        const g = sql.raw(`g${p}`);
        terms.push(sql`
          select ${g} as g from analytics_player_weeks
           where ${row} and first_at < ${at(s.to)} and last_at >= ${at(s.from)}
             and (first_at >= ${at(s.from)} or last_at < ${at(s.to)})`);
        terms.push(sql`
          select pw.${g} from analytics_player_weeks pw
           where ${row} and pw.first_at < ${at(s.from)} and pw.last_at >= ${at(s.to)}
             and exists (
               select 1 from analytics_player_hours h
                where h.uuid = pw.uuid and h.hour >= ${at(lo)} and h.hour < ${at(s.to)}
                  and h.server_id in (${idList(s.ids)}) and (h.seen & (${inWindow(s).mask})) <> 0)`);
        continue;
      }
      const conds = [sql`scope = ${s.scope}`, sql`week = ${at(new Date(w))}`];
      if (head) conds.push(sql`last_at >= ${at(s.from)}`);
      if (tail) conds.push(sql`first_at < ${at(s.to)}`);
      if (w + WEEK_MS < to) conds.push(sql`(next_at >= ${at(s.to)} or next_at is null)`);
      terms.push(
        sql`select g${sql.raw(String(p))} as g from analytics_player_weeks where ${sql.join(conds, sql` and `)}`,
      );
    }
    const rows = await this.rows<{ g: number; n: number }>(
      sql`select g, count(*)::int as n from (${sql.join(terms, sql` union all `)}) t group by g`,
    );
    const counts = ACTIVITY_GROUPS.map(() => 0);
    for (const r of rows) counts[Number(r.g)] = Number(r.n);
    return counts;
  }

  /**
   * The players new in the window (first seen in the scope at or after its start), and how many of
   * them are regular or more at `end` (index 2 or more), without listing them: a year's window
   * can hold every player of the scope.
   *
   * A player's closed sessions are all in the month rows, so one first seen in the window by a
   * closed session has their first row there (`prev_at` null) with `first_at` in it (the window's
   * ends are whole quarters, as `first_at` is); their group at `end` is their latest week row's
   * before it (`next_at` at or after `end`), as `weekCounts` reads it. The players online are
   * checked against `players` (a first session still open is in no month row) and their group
   * is `index`'s, scored from their hours with the open time.
   */
  private async newPlayers(
    s: Scope,
    end: Date,
    open: string[],
    scored: Promise<{ uuid: string; index: number; closed_index: number }[]>,
    keptRegular: number | null,
  ): Promise<{ players: number; regular: number; index: Map<string, { all: number; closed: number }> }> {
    // Per month, the first rows; the window's cut months (at most its first and last) also by `first_at`.
    const months = this.months(s);
    const firsts = this.firstRows(s, months, false);
    const openList = uuidArray(open);
    const first = months[0]!;
    const earlier = [
      sql`select uuid from analytics_player_months where scope = ${s.scope} and month < ${at(first.month)} and prev_at is null`,
    ];
    if (first.cut === "tail" || first.cut === "both")
      earlier.push(sql`
        select uuid from analytics_player_months where scope = ${s.scope} and month = ${at(first.month)} and prev_at is null
           and bedrock in (false, true) and first_at < ${at(s.from)}`);
    // The new players and the earlier ones counted (which side is smaller), per month and edition
    // as closedTotals counts: whole months from the kept counts, cut ones on the shorter side.
    const terms: Term[] = [
      {
        key: "earlier",
        sign: 1,
        count: sql`(select coalesce(sum(c.firsts), 0) from analytics_month_counts c where c.scope = ${s.scope} and c.month < ${at(first.month)})`,
      },
    ];
    if (open.length > 0)
      terms.push({
        key: "fresh_open",
        sign: 1,
        count: sql`(select count(*) from (${sql.join(firsts, sql` union all `)}) f where f.uuid = any(${openList}))`,
      });
    for (const m of months)
      for (const bedrock of [false, true]) {
        const part = this.monthPart(s, m, bedrock, "fresh");
        const [from, to] = [sql`m.first_at >= ${at(s.from)}`, sql`m.first_at < ${at(s.to)}`];
        terms.push(
          ...(m.cut === "none"
            ? [part.kept("firsts")]
            : m.cut === "tail"
              ? part.side("firsts", sql`m.prev_at is null and ${from}`, {
                  before: s.from,
                  rest: sql`m.prev_at is null and m.first_at < ${at(s.from)}`,
                })
              : m.cut === "head"
                ? part.side("firsts", sql`m.prev_at is null and ${to}`, {
                    after: s.to,
                    rest: sql`m.prev_at is null and m.first_at >= ${at(s.to)}`,
                  })
                : [part.count(sql`m.prev_at is null and ${from} and ${to}`)]),
        );
        if (m === first && (m.cut === "tail" || m.cut === "both"))
          terms.push(
            ...this.monthPart(s, m, bedrock, "earlier").side(
              "firsts",
              sql`m.prev_at is null and m.first_at < ${at(s.from)}`,
              { after: s.from, rest: sql`m.prev_at is null and ${from}` },
            ),
          );
      }
    // The players online scored, those of them new, and the new players at once (each on its own
    // connection on PostgreSQL): a window of two months or less lists them (they are usually few)
    // and counts them only when there are many; a longer one counts them, and lists them only when
    // the count says they are few.
    const list = () =>
      this.rows<{ uuid: string }>(sql`
        select f.uuid::text as uuid from (${sql.join(firsts, sql` union all `)}) f limit ${this.newListed + 1}`);
    const short = s.to.getTime() - s.from.getTime() <= LISTED_WINDOW_MS;
    const [scores, freshOpen, listedFirst, countedFirst] = await Promise.all([
      scored,
      open.length === 0
        ? Promise.resolve([])
        : this.rows<{ uuid: string }>(sql`
            select f.uuid::text as uuid from (${this.fresh(s, open)}) f where f.first_seen < ${at(s.to)}`),
      short ? list() : null,
      short ? null : this.tally(s, terms),
    ]);
    const counted = async () => {
      const t = countedFirst ?? (await this.tally(s, terms));
      return { fresh: t.get("fresh") ?? 0, fresh_open: t.get("fresh_open") ?? 0, earlier: t.get("earlier") ?? 0 };
    };
    const listed = listedFirst ?? ((await counted()).fresh <= this.newListed ? await list() : null);
    const index = new Map(scores.map((r) => [r.uuid, { all: Number(r.index), closed: Number(r.closed_index) }]));
    const weeks = [1, 2, 3].map(
      (p) => sql`when ${at(new Date(end.getTime() - p * WEEK_MS))} then g${sql.raw(String(p))}`,
    );
    const regularAtEnd = sql`scope = ${s.scope} and week >= ${at(new Date(end.getTime() - 3 * WEEK_MS))} and week < ${at(end)}
      and (next_at >= ${at(end)} or next_at is null) and (case week ${sql.join(weeks, sql` `)} end) <= ${sql.raw(String(REGULAR))}`;
    const openSet = new Set(open);
    const openOk = (regular: number) =>
      regular + freshOpen.filter((f) => regularOrMore(index.get(f.uuid)?.all ?? 0)).length;
    // A short window's few new players: listed, and their latest week rows probed by player.
    if (listed && listed.length <= this.newListed) {
      const closed = listed.map((r) => r.uuid).filter((u) => !openSet.has(u));
      const [c] =
        closed.length === 0
          ? [{ n: 0 }]
          : await this.rows<{ n: number }>(sql`
              select count(*)::int as n from analytics_player_weeks where uuid = any(${uuidArray(closed)}) and ${regularAtEnd}`);
      return { players: closed.length + freshOpen.length, regular: openOk(Number(c!.n)), index };
    }
    // A long window's (a year's can hold every player of the scope): counted. Each player regular
    // at the end has their first row either in the window (new) or before it (the end is inside
    // the window), so the regulars are split through whichever of the two sets is smaller.
    const k = await counted();
    const fresh = Number(k.fresh);
    const earlierCount = Number(k.earlier);
    if (earlierCount === 0 && keptRegular !== null) {
      // Nobody was seen before the window (it holds the scope's whole history): every player
      // regular at the end is new. The kept counts hold them, the open ones at their closed index.
      const openRegular = open.filter((u) => regularOrMore(index.get(u)?.closed ?? 0)).length;
      return {
        players: fresh - Number(k.fresh_open) + freshOpen.length,
        regular: openOk(keptRegular - openRegular),
        index,
      };
    }
    const viaEarlier = earlierCount <= fresh;
    let freshRegular: number;
    if (viaEarlier || fresh > this.probedNew) {
      // Joined with every player regular at the end; through the earlier players, the new regulars
      // are the rest of them.
      const [j] = await this.rows<{ regular: number; joined: number }>(sql`
        with r as materialized (select uuid from analytics_player_weeks where ${regularAtEnd} and not (uuid = any(${openList}))),
        x as materialized (${sql.join(viaEarlier ? earlier : firsts, sql` union all `)})
        select ${viaEarlier ? sql`(select count(*) from r)` : sql`0`}::int as regular,
               (select count(*) from r join x on x.uuid = r.uuid)::int as joined`);
      freshRegular = viaEarlier ? Number(j!.regular) - Number(j!.joined) : Number(j!.joined);
    } else {
      // The new players are the fewer, and few: each one's latest week row before the end probed
      // by key (a lateral read, so the planner does not hash every player regular at the end: it
      // guesses the new players by the month rows' sizes, hundreds of thousands).
      const [j] = await this.rows<{ joined: number }>(sql`
        with x as materialized (${sql.join(firsts, sql` union all `)})
        select count(*)::int as joined from x
         cross join lateral (select 1 from analytics_player_weeks where uuid = x.uuid and ${regularAtEnd} limit 1) w
         where not (x.uuid = any(${openList}))`);
      freshRegular = Number(j!.joined);
    }
    return {
      players: fresh - Number(k.fresh_open) + freshOpen.length,
      regular: openOk(freshRegular),
      index,
    };
  }

  /**
   * The first month rows (uuid, first_at) of the players first seen in the scope inside the
   * window, one select per month: no `prev_at`, and `first_at` in the window where the month is cut.
   * `uuid` alone when `first_at` is not wanted (an index-only read of the whole months).
   */
  private firstRows(s: Scope, months: ReturnType<AnalyticsService["months"]>, withFirst = true) {
    return months.map((m) => {
      const conds = [sql`scope = ${s.scope}`, sql`month = ${at(m.month)}`, sql`prev_at is null`];
      // A cut month through `prev_at`'s index, both editions named so `prev_at` and `first_at`
      // bound its ranges (else the planner took `first_at`'s and read every row's `prev_at`).
      if (m.cut !== "none") conds.push(sql`bedrock in (false, true)`);
      if (m.cut === "tail" || m.cut === "both") conds.push(sql`first_at >= ${at(s.from)}`);
      if (m.cut === "head" || m.cut === "both") conds.push(sql`first_at < ${at(s.to)}`);
      return sql`select uuid${withFirst ? sql`, first_at` : sql``} from analytics_player_months where ${sql.join(conds, sql` and `)}`;
    });
  }

  /**
   * Who can be new in the window, from the month rows: a player first seen in the scope at or
   * after its start has no month row before it, so their first row in the window's months has no
   * `prev_at`; and the players with a session open (not in the month rows yet). A superset, which
   * `fresh` then checks against `players` as before: a few probes instead of one per player first
   * met on some server of a network since the window's start. Null (check everyone): the hours
   * path, or too many to list.
   */
  private async freshCandidates(s: Scope): Promise<string[] | null> {
    if (this.hoursOnly) return null;
    const months = this.months(s);
    const rows = await this.rows<{ uuid: string }>(sql`
      select m.uuid::text as uuid from analytics_player_months m
       where m.scope = ${s.scope} and m.month in (${sql.join(
         months.map((m) => at(m.month)),
         sql`, `,
       )}) and m.prev_at is null
       limit 20001`);
    if (rows.length > 20000) return null;
    return [...new Set([...rows.map((r) => r.uuid), ...(await this.openPlayers(s))])];
  }

  /** Players first seen in the scope at or after the window's start (uuid, first_seen). */
  private fresh(s: Scope, only?: string[] | null) {
    if (only && only.length === 0) return sql`select null::uuid as uuid, null::timestamptz as first_seen where false`;
    const among = only ? sql`and p.uuid = any(${uuidArray(only)})` : sql``;
    // The players first seen on some server since then (an index range) who were not seen on
    // another of its servers before.
    return sql`
      select c.uuid, c.first_seen from (
        select p.uuid, min(p.first_seen) as first_seen from players p
         where p.server_id in (${idList(s.ids)}) and p.first_seen >= ${at(s.from)} ${among} group by p.uuid) c
       where not exists (
         select 1 from players o where o.server_id in (${idList(s.ids)}) and o.uuid = c.uuid and o.first_seen < ${at(s.from)})`;
  }

  /**
   * The activity index at `end` (uuid, index, and closed_index: without the sessions still open)
   * of the players with time in the three weeks before it (of `uuids` only, when given). Hours
   * whose four quarters are all in [since, end) and in one week (counted back from `end`) add up
   * as one row; the few others (at the week boundaries and the edges) go quarter by quarter.
   * With `end` a Monday 00:00 UTC every hour is whole.
   */
  private scores(s: Scope, end: Date, uuids?: string[]) {
    const since = new Date(end.getTime() - 3 * WEEK_MS);
    // Week k holds the quarters starting in [end - 7(k+1) days, end - 7k days).
    const weekOf = (t: SQL) =>
      sql`((${sql.raw(String(end.getTime() / 1000 - 1))} - extract(epoch from ${t})::bigint) / ${sql.raw(String(WEEK_MS / 1000))})::int`;
    const toMs = end.getTime();
    const sinceMs = since.getTime();
    const week = (t: number) => Math.floor((toMs - 1 - t) / WEEK_MS);
    const split: Date[] = [];
    const candidates = new Set<number>();
    for (let k = 0; k <= 3; k++)
      for (const t of [toMs - k * WEEK_MS - QUARTER_MS, toMs - k * WEEK_MS, toMs - k * WEEK_MS + QUARTER_MS])
        candidates.add(hourOf(t));
    for (const h of candidates) {
      const qs = [0, 1, 2, 3].map((i) => h + i * QUARTER_MS);
      const whole = qs.every((q) => q >= sinceMs && q < toMs) && qs.every((q) => week(q) === week(h));
      if (!whole && h + HOUR_MS > sinceMs && h < toMs) split.push(new Date(h));
    }
    const splitList = sql.join(split.map(at), sql`, `);
    const isSplit = split.length > 0 ? sql`h.hour in (${splitList})` : sql`false`;
    const notSplit = split.length > 0 ? sql`h.hour not in (${splitList})` : sql`true`;
    const quarter = sql`(h.hour + i * interval '15 minutes')`;
    return sql`
      with h3 as materialized (${this.hours({ ...s, from: since }, since, uuids, end)}),
      weeks as (
        select uuid, w, sum(ms)::float8 as ms, coalesce(sum(ms) filter (where not open), 0)::float8 as closed from (
          select h.uuid, ${weekOf(sql`h.hour`)} as w, (h.q0 + h.q1 + h.q2 + h.q3) as ms, h.open
            from h3 h where ${notSplit}
          union all
          select h.uuid, ${weekOf(quarter)}, (array[h.q0, h.q1, h.q2, h.q3])[i + 1], h.open
            from h3 h cross join generate_series(0, 3) as i
           where ${isSplit} and ${quarter} >= ${at(since)} and ${quarter} < ${at(end)}) x
         group by 1, 2)
      select uuid, ${sql.raw(indexOf("ms"))}::float8 as index, ${sql.raw(indexOf("closed"))}::float8 as closed_index
        from weeks group by uuid`;
  }

  private async activityFromHours(s: Scope, end: Date) {
    const rows = await this.rows<{ uuid: string; first_seen: string | null; index: number }>(sql`
      with seen as (select uuid from (${this.perPlayer(s)}) p where p.seen),
      scored as (${this.scores(s, end)}),
      -- First seen in the scope at or after the window's start: the players first seen on some
      -- server since then (an index range) who were not seen on another of its servers before.
      fresh as (
        select c.uuid, c.first_seen from (
          select p.uuid, min(p.first_seen) as first_seen from players p
           where p.server_id in (${idList(s.ids)}) and p.first_seen >= ${at(s.from)} group by p.uuid) c
         where not exists (
           select 1 from players o where o.server_id in (${idList(s.ids)}) and o.uuid = c.uuid and o.first_seen < ${at(s.from)}))
      -- A player with no time in the three weeks scores 0 (5 - 5 * 3 / 3).
      select seen.uuid::text as uuid, f.first_seen::text as first_seen, coalesce(sc.index, 0)::float8 as index
        from seen left join scored sc on sc.uuid = seen.uuid left join fresh f on f.uuid = seen.uuid`);
    let fresh = 0;
    let regular = 0;
    const groups = new Map<string, number>(ACTIVITY_GROUPS.map((g) => [g.group, 0]));
    for (const r of rows) {
      const index = Number(r.index);
      const g = ACTIVITY_GROUPS.find((x) => index >= x.min - 1e-9)!;
      groups.set(g.group, groups.get(g.group)! + 1);
      const first = r.first_seen ? pgTime(r.first_seen) : 0;
      if (first >= s.from.getTime()) fresh++;
      else if (regularOrMore(index)) regular++;
    }
    return {
      ...this.window(s),
      players: rows.length,
      new_players: fresh,
      returning_players: rows.length - fresh - regular,
      regular_players: regular,
      activity_groups: ACTIVITY_GROUPS.map((g) => ({
        group: g.group,
        min_index: g.min,
        players: groups.get(g.group)!,
      })),
      index_at: iso(end),
    };
  }

  async retention(principal: Principal, teamId: string, q: WindowQuery) {
    const s = await this.resolve(principal, teamId, q);
    // The kept counts when the window is in their zone (the team's), or one whose clock agrees
    // with it over the window and the week before (a cohort's first week), and the window holds
    // more new players than the week rows answer quickly (their cost is the players, the kept
    // rows' the window's cut days).
    const kept =
      !this.hoursOnly && sameClock(s.zone, s.cohortZone, s.from.getTime() - 8 * DAY_MS, s.to.getTime() + DAY_MS);
    const many = kept ? await this.manyNew(s, this.newListed) : undefined;
    const counted = async () =>
      (!this.hoursOnly && (await this.cohortsFromWeeks(s, many === false))) || (await this.cohortsFromHours(s));
    const rows = many
      ? await this.cohortsFromKept(s)
      : kept || !this.expensive
        ? await counted()
        : await this.expensive.run(principalKey(principal), counted);
    rows.sort((x, y) => (x.cohort < y.cohort ? -1 : x.cohort > y.cohort ? 1 : x.k - y.k));
    // The last local week that starts before the window's end.
    const endWeek = this.localMonday(new Date(s.to.getTime() - 1), s.zone);
    const cohorts = new Map<string, { size: number; back: Map<number, number> }>();
    // Rows of one cohort and week can come from several parts (the hours' batches, the players online).
    for (const r of rows) {
      const c = cohorts.get(r.cohort) ?? { size: 0, back: new Map() };
      if (Number(r.k) === 0) c.size += Number(r.n);
      else c.back.set(Number(r.k), (c.back.get(Number(r.k)) ?? 0) + Number(r.n));
      cohorts.set(r.cohort, c);
    }
    return {
      ...this.window(s),
      cohorts: [...cohorts].map(([week, c]) => {
        const weeks = Math.round((Date.parse(`${endWeek}T00:00:00Z`) - Date.parse(`${week}T00:00:00Z`)) / WEEK_MS);
        return {
          week_start: week,
          players: c.size,
          retained: Array.from({ length: Math.max(0, weeks) }, (_, i) => {
            const n = c.back.get(i + 1) ?? 0;
            return { week: i + 1, players: n, share: c.size === 0 ? 0 : Math.round((n / c.size) * 10000) / 10000 };
          }),
        };
      }),
    };
  }

  /** Whether more than `n` players were first seen in the scope in the window (closed sessions). */
  private async manyNew(s: Scope, n: number): Promise<boolean> {
    const [c] = await this.rows<{ n: number }>(sql`
      select count(*)::int as n from (${sql.join(this.firstRows(s, this.months(s), false), sql` union all `)} limit ${n + 1}) f`);
    return Number(c!.n) > n;
  }

  private async teamZone(teamId: string): Promise<{ zone: string; cohortZone: string }> {
    const [t] = await this.db
      .select({ zone: teams.timeZone, cohortZone: teams.cohortZone })
      .from(teams)
      .where(eq(teams.id, teamId));
    return t ?? { zone: "UTC", cohortZone: "UTC" };
  }

  /**
   * Retention's rows (as `cohortsFromHours`) from the counts kept in the team's time zone
   * (`analytics_cohort_weeks`; docs/analytics.md, "Retention, kept"). The kept rows give every
   * cohort day from the window's first local day to its last and every week up to its last; the
   * players they count wrongly are few and read one by one:
   * - those first seen on the first day before the window's start, and the players with a session
   *   open (read from their hours instead, as before), are taken out;
   * - when the window ends inside its last day, the players whose first quarter of the last week
   *   falls on that day are counted from the shorter side of the cut: those seen in the day before
   *   the end and not earlier in the week are added (the kept rows' count of that day left out),
   *   or those seen after it and not before are taken out.
   */
  private async cohortsFromKept(s: Scope): Promise<{ cohort: string; k: number; n: number }[]> {
    const z = sql`${s.zone}`;
    const [e] = await this.rows<{
      d0: string;
      dn: string;
      w0: string;
      wn: string;
      dow: number;
      d0s: string;
      dns: string;
      dne: string;
      wns: string;
    }>(sql`
      with x as (select (${at(s.from)} at time zone ${z})::date as d0, ((${at(s.to)} - interval '15 minutes') at time zone ${z})::date as dn)
      select d0::text as d0, dn::text as dn, date_trunc('week', d0::timestamp)::date::text as w0,
             date_trunc('week', dn::timestamp)::date::text as wn,
             (extract(isodow from dn)::int - 1) as dow, (d0::timestamp at time zone ${z})::text as d0s,
             (dn::timestamp at time zone ${z})::text as dns, ((dn + 1)::timestamp at time zone ${z})::text as dne,
             (date_trunc('week', dn::timestamp) at time zone ${z})::text as wns
        from x`);
    const { d0, dn, w0, wn } = e!;
    const dow = Number(e!.dow);
    const [d0s, dns, dne, wns] = [e!.d0s, e!.dns, e!.dne, e!.wns].map((t) => new Date(pgTime(t)));
    const toCut = s.to.getTime() < dne!.getTime();
    // The side of the last day's cut with fewer hours: before the end (added) or after it (taken out).
    const direct = s.to.getTime() - dns!.getTime() <= dne!.getTime() - s.to.getTime();
    const day = (d: string, n: number) =>
      new Date(Date.parse(`${d}T00:00:00Z`) + n * DAY_MS).toISOString().slice(0, 10);
    const weeksBetween = (a: string, b: string) =>
      Math.round((Date.parse(`${b}T00:00:00Z`) - Date.parse(`${a}T00:00:00Z`)) / WEEK_MS);
    /** In the last week, whether the kept sum counts a player whose first weekday there is `f`. */
    const lastWeekDay = (f: number) => f < dow || (f === dow && !(toCut && direct));
    /** Whether the kept sum counts a cell: cohort day `cd`, week `aw`, first weekday there `f`. */
    const counted = (cd: string, aw: string, f: number) =>
      cd >= d0 && cd <= dn && (aw < wn || (aw === wn && lastWeekDay(f)));
    const out = new Map<string, number>();
    const add = (cw: string, k: number, n: number) => {
      const key = `${cw}|${k}`;
      out.set(key, (out.get(key) ?? 0) + n);
    };
    // The kept rows summed in the statement, `counted`'s rule written per column (`c<d><f>`).
    const dayIn = (d: number) => sql.raw(`(cohort + ${d} between '${d0}'::date and '${dn}'::date)`);
    const sumOf = (cols: string[]) => (cols.length === 0 ? "0" : cols.join(" + "));
    const perDay = (pick: (c: string) => boolean) =>
      sql.join(
        [0, 1, 2, 3, 4, 5, 6].map(
          (d) =>
            sql`(case when ${dayIn(d)} then ${sql.raw(sumOf(COHORT_COLUMNS.filter((c) => Number(c[1]) === d && pick(c))))} else 0 end)`,
        ),
        sql` + `,
      );
    const kept = this.rows<{ cohort: string; k: number; n: number }>(sql`
      select cohort::text as cohort, ((week - cohort) / 7)::int as k,
             (case when week < ${wn}::date then ${perDay(() => true)} else ${perDay((c) => lastWeekDay(Number(c[2])))} end)::int as n
        from analytics_cohort_weeks
       where scope = ${s.scope} and cohort >= ${w0}::date and cohort <= ${wn}::date and week <= ${wn}::date`);
    // Taken out: the players first seen on the first day before the window's start, and the
    // players online (their closed sessions' share; `cohortsFromHours` counts them whole below).
    const opens = this.openPlayers(s);
    const early =
      s.from.getTime() > d0s!.getTime()
        ? this.rows<{ uuid: string }>(sql`
            select uuid::text as uuid from analytics_player_months
             where scope = ${s.scope} and month >= date_trunc('month', ${at(d0s!)}, 'UTC') and month <= date_trunc('month', ${at(s.from)}, 'UTC')
               and prev_at is null and first_at >= ${at(d0s!)} and first_at < ${at(s.from)}`)
        : Promise.resolve([]);
    // The last day's cut: players seen on the chosen side, not earlier in the last week, each with
    // the local week they were first seen in (those of `early` and `opens` are left out below).
    const cut = toCut ? this.lastDayCut(s, direct ? [dns!, s.to] : [s.to, dne!], wns!, d0, dn) : Promise.resolve([]);
    // The statements do not depend on each other: on PostgreSQL each runs on its own connection.
    const [keptRows, open, earlyRows, cutRows] = await Promise.all([kept, opens, early, cut]);
    for (const r of keptRows) if (Number(r.n) !== 0) add(String(r.cohort), Number(r.k), Number(r.n));
    const out1 = [...new Set([...earlyRows.map((r) => r.uuid), ...open])];
    const skip = new Set(out1);
    for (const r of cutRows) if (!skip.has(r.uuid)) add(String(r.cw), weeksBetween(String(r.cw), wn), direct ? 1 : -1);
    const lo = new Date(Date.parse(`${w0}T00:00:00Z`) - 2 * DAY_MS);
    const fixes =
      out1.length === 0
        ? Promise.resolve([])
        : this.rows<{ cw: string; d: number; aw: string; f: number }>(sql`
        with p as (
          select c.uuid, ${firstSeen(s.scope, sql`c.uuid`)} as first
            from unnest(${uuidArray(out1)}) as c(uuid)),
        q as (
          select h.uuid, date_trunc('week', (h.hour + i * interval '15 minutes') at time zone ${z}) as aw, min(h.hour + i * interval '15 minutes') as fq
            from p cross join lateral (
              select server_id, hour, uuid, seen from analytics_player_hours
               where uuid = p.uuid and hour >= ${at(lo)} and hour < ${at(dne!)} offset 0) h
            cross join generate_series(0, 3) as i
           where h.server_id in (${idList(s.ids)}) and (h.seen >> i) & 1 = 1
           group by 1, 2)
        select date_trunc('week', p.first at time zone ${z})::date::text as cw, (extract(isodow from p.first at time zone ${z})::int - 1) as d,
               q.aw::date::text as aw, (extract(isodow from q.fq at time zone ${z})::int - 1) as f
          from p join q on q.uuid = p.uuid where p.first is not null`);
    const fresh = open.length === 0 ? Promise.resolve([]) : this.firstWeeks(s, open);
    const [fixRows, freshOpen] = await Promise.all([fixes, fresh]);
    for (const r of fixRows) {
      const cw = String(r.cw);
      if (counted(day(cw, Number(r.d)), String(r.aw), Number(r.f))) add(cw, weeksBetween(cw, String(r.aw)), -1);
    }
    const rows = [...out]
      .filter(([, n]) => n !== 0)
      .map(([key, n]) => {
        const [cohort, k] = key.split("|");
        return { cohort: cohort!, k: Number(k), n };
      });
    return freshOpen.length === 0 ? rows : [...rows, ...(await this.cohortsFromHours(s, freshOpen))];
  }

  /**
   * Retention's last-day cut (`cohortsFromKept`): the players seen in [a, b) on the last day and
   * not earlier in its local week (from `weekStart`), each with the local week they were first
   * seen in the scope, when that first day is in [d0, dn].
   */
  private lastDayCut(s: Scope, [a, b]: [Date, Date], weekStart: Date, d0: string, dn: string) {
    const z = sql`${s.zone}`;
    // Seen in [from, to): whole hours when both ends are (a zone a whole number of hours from
    // UTC), else quarter by quarter.
    const seen = (from: Date, to: Date) =>
      from.getTime() % HOUR_MS === 0 && to.getTime() % HOUR_MS === 0
        ? sql`h.server_id in (${idList(s.ids)}) and h.hour >= ${at(from)} and h.hour < ${at(to)}`
        : sql`h.server_id in (${idList(s.ids)}) and h.hour > ${at(from)} - interval '1 hour' and h.hour < ${at(to)}
            and exists (select 1 from generate_series(0, 3) as i where (h.seen >> i) & 1 = 1
              and h.hour + i * interval '15 minutes' >= ${at(from)} and h.hour + i * interval '15 minutes' < ${at(to)})`;
    return this.rows<{ uuid: string; cw: string }>(sql`
      with c as (select distinct h.uuid from analytics_player_hours h where ${seen(a, b)}),
      n as materialized (
        select c.uuid from c
         where not exists (select 1 from analytics_player_hours h where h.uuid = c.uuid and ${seen(weekStart, a)})),
      -- Each one's first quarter in the scope, looked up once.
      p as materialized (
        select n.uuid, ${firstSeen(s.scope, sql`n.uuid`)} as first from n)
      select uuid::text as uuid, date_trunc('week', first at time zone ${z})::date::text as cw from p
       where (first at time zone ${z})::date between ${d0}::date and ${dn}::date`);
  }

  /** The players new in the window (of `only`, when given), each with the local week first seen in (YYYY-MM-DD). */
  private firstWeeks(s: Scope, only: string[] | null) {
    return this.rows<{ uuid: string; wk: string }>(sql`
      select f.uuid::text as uuid, to_char(date_trunc('week', f.first_seen at time zone ${s.zone}), 'YYYY-MM-DD') as wk
        from (${this.fresh(s, only)}) f where f.first_seen < ${at(s.to)}`);
  }

  /**
   * Retention's rows from the hours: per cohort (local week of first sight, YYYY-MM-DD) its size
   * (`k` 0) and the players seen again in each later local week `k`. Of `firsts` (uuid and cohort)
   * when given, else of every player new in the window (checked against `players`).
   */
  private async cohortsFromHours(s: Scope, firsts?: { uuid: string; wk: string }[]) {
    const z = sql`${s.zone}`;
    firsts ??= await this.firstWeeks(s, await this.freshCandidates(s));
    const rows: { cohort: string; k: number; n: number }[] = [];
    const size = new Map<string, number>();
    for (const f of firsts) size.set(f.wk, (size.get(f.wk) ?? 0) + 1);
    for (const [wk, n] of size) rows.push({ cohort: wk, k: 0, n });
    for (let i = 0; i < firsts.length; i += 5000) {
      const part = firsts.slice(i, i + 5000);
      rows.push(
        ...(await this.rows<{ cohort: string; k: number; n: number }>(sql`
        with cohort as (
          select x.uuid, date_trunc('week', x.wk::timestamp) as wk
            from json_to_recordset(${JSON.stringify(part)}::json) as x(uuid uuid, wk text)),
        active as (
          select distinct h.uuid, date_trunc('week', (h.hour + i * interval '15 minutes') at time zone ${z}) as wk
            from (${this.hours(
              s,
              s.from,
              part.map((f) => f.uuid),
            )}) h cross join generate_series(0, 3) as i
           where (h.seen >> i) & 1 = 1
             and h.hour + i * interval '15 minutes' >= ${at(s.from)} and h.hour + i * interval '15 minutes' < ${at(s.to)})
        select to_char(c.wk, 'YYYY-MM-DD') as cohort, (extract(epoch from a.wk - c.wk) / 604800)::int as k, count(*)::int as n
          from cohort c join active a on a.uuid = c.uuid and a.wk > c.wk group by c.wk, a.wk`)),
      );
    }
    return rows;
  }

  /**
   * Retention's rows (as `cohortsFromHours`) from the week rows, counted in one statement: a year's
   * window can hold every player of the scope (a year at 5,000,000 sessions: 25-30 s from the hours,
   * 8-9 s from the week rows; in the team's zone `cohortsFromKept` answers it).
   *
   * The cohorts are the new players' first month rows (`prev_at` null, `first_at` in the window:
   * a player's closed sessions are all in the month rows). A UTC week row's first and last quarter
   * give the local weeks it saw: a local week is a week long give or take a DST hour, so in every
   * zone in use a UTC week meets at most two (three would need a 167-hour week starting 15 to 45
   * minutes into the UTC one), and every quarter between its first and last lies in the local week
   * of one or the other. A player's local weeks are then those of their rows' first and last
   * quarters taken in time order, counted once each: +1 for a row's first quarter's week, +1 for
   * its last's when it differs, -1 where the next row (`next_at`, its first quarter) starts in the
   * week this row ended in. A row running past the window's end gives its first quarter's week,
   * and the end's local week when its hours saw it there. The players online (a first session
   * still open is in no month row) are read from their hours. Null when some row spans more than
   * two local weeks (no zone in use does): the caller reads the hours then.
   */
  private async cohortsFromWeeks(
    s: Scope,
    /** Already known to hold at most `newListed` new players (`manyNew`): probed without counting them again. */
    fewNew = false,
  ): Promise<{ cohort: string; k: number; n: number }[] | null> {
    const z = sql`${s.zone}`;
    const lw = (t: SQL) => sql`date_trunc('week', ${t} at time zone ${z})`;
    const to = at(s.to);
    const open = await this.openPlayers(s);
    const freshOpen = open.length === 0 ? [] : await this.firstWeeks(s, open);
    const firsts = this.firstRows(s, this.months(s));
    // A few thousand new players: each one's rows by the primary key. More: the window's rows of
    // the scope joined with them (probing 200,000 players' rows one by one took longer than that).
    const probe = fewNew || !(await this.manyNew(s, 10 * this.newListed));
    // The UTC week holding the window's start: no cohort player has a row before it.
    const fromWeek = indexEnd(s.from);
    const rows = await this.rows<{ cohort: string; k: number | null; n: number }>(sql`
      with c as materialized (
        select f.uuid, ${lw(sql`f.first_at`)} as cw from (${sql.join(firsts, sql` union all `)}) f
         where not (f.uuid = any(${uuidArray(open)}))),
      r as materialized (
        select c.uuid, c.cw, ${lw(sql`w.first_at`)} as a,
               case when w.last_at < ${to} then ${lw(sql`w.last_at`)} end as b,
               case when w.next_at < ${to} then ${lw(sql`w.next_at`)} end as nx, w.last_at >= ${to} as past
          from c ${
            probe
              ? sql`cross join lateral (
                  select first_at, last_at, next_at from analytics_player_weeks
                   where scope = ${s.scope} and uuid = c.uuid and week >= ${at(fromWeek)} and week < ${to} and first_at < ${to} offset 0) w`
              : sql`join analytics_player_weeks w
                  on w.scope = ${s.scope} and w.uuid = c.uuid and w.week >= ${at(fromWeek)} and w.week < ${to} and w.first_at < ${to}`
          }),
      e as (select ${lw(sql`(${to} - interval '15 minutes')`)} as lw)
      select to_char(x.cw, 'YYYY-MM-DD') as cohort, (extract(epoch from x.wk - x.cw) / 604800)::int as k, sum(x.n)::int as n from (
        select cw, cw as wk, 1 as n from c
        union all select cw, a, 1 from r where a > cw
        union all select cw, b, 1 from r where b <> a and b > cw
        union all select cw, b, -1 from r where nx = b and b > cw
        union all
        select r.cw, e.lw, 1 from r, e
         where r.past and r.a < e.lw and e.lw > r.cw and exists (
           select 1 from analytics_player_hours h cross join generate_series(0, 3) as i
            where h.uuid = r.uuid and h.server_id in (${idList(s.ids)})
              and h.hour >= date_trunc('hour', e.lw at time zone ${z}) and h.hour < ${to} and (h.seen >> i) & 1 = 1
              and h.hour + i * interval '15 minutes' >= (e.lw at time zone ${z}) and h.hour + i * interval '15 minutes' < ${to})
      ) x group by x.cw, x.wk
      union all
      select 'wide', null, count(*)::int from r, e
       where r.b > r.a + interval '7 days' or (r.past and e.lw > r.a + interval '7 days')`);
    const wide = rows.find((r) => r.cohort === "wide");
    if (!wide || Number(wide.n) > 0) return null;
    const out = rows.filter((r) => r !== wide).map((r) => ({ cohort: r.cohort, k: Number(r.k), n: Number(r.n) }));
    return freshOpen.length === 0 ? out : [...out, ...(await this.cohortsFromHours(s, freshOpen))];
  }

  /** The local calendar date (YYYY-MM-DD) of the Monday starting the week of `d` in `zone`. */
  private localMonday(d: Date, zone: string): string {
    const parts = new Intl.DateTimeFormat("en-CA", {
      timeZone: zone,
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
    })
      .format(d)
      .slice(0, 10);
    const day = new Date(`${parts}T00:00:00Z`);
    const dow = (day.getUTCDay() + 6) % 7;
    return new Date(day.getTime() - dow * DAY_MS).toISOString().slice(0, 10);
  }

  async heatmap(principal: Principal, teamId: string, q: WindowQuery) {
    const s = await this.resolve(principal, teamId, q);
    // The window cut where the zone's offset changes (a DST day): inside each part a UTC quarter
    // of the week is one local weekday and hour, so the rows are summed per part and quarter of
    // the week (at most 672 a part) with no time zone arithmetic per slot, and placed here.
    const spans = offsetSpans(s.zone, s.from.getTime(), s.to.getTime(), QUARTER_MS);
    const part =
      spans.length === 1
        ? sql`0`
        : sql`case ${sql.join(
            spans.slice(0, -1).map((p, i) => sql`when u.slot < ${at(new Date(p.to))} then ${sql.raw(String(i))}`),
            sql` `,
          )} else ${sql.raw(String(spans.length - 1))} end`;
    const rows = await this.rows<{ part: number; qw: number; ms: number }>(sql`
      select ${part} as part, ((extract(epoch from u.slot)::bigint / 900) % 672)::int as qw, sum(u.ms)::float8 as ms from (
        select slot, online_ms as ms from analytics_slots where scope = ${s.scope} and slot >= ${at(s.from)} and slot < ${at(s.to)}
        union all
        select q.q, (round(extract(epoch from least(o.b, q.q + interval '15 minutes')) * 1000)
                     - round(extract(epoch from greatest(o.a, q.q)) * 1000))::float8
          from (${this.openSrc(s)}) o,
               generate_series(date_bin('15 minutes', o.a, ${ORIGIN}), o.b, interval '15 minutes') as q(q)
         where q.q < o.b and q.q >= ${at(s.from)} and q.q < ${at(s.to)}) u
       group by 1, 2`);
    // Cell (ISO weekday 1..7, hour) of a local time in ms since the epoch (a Thursday).
    const cell = (local: number) => {
      const day = Math.floor(local / DAY_MS);
      return ((((day + 3) % 7) + 7) % 7) * 24 + Math.floor((local - day * DAY_MS) / HOUR_MS);
    };
    const ms = new Float64Array(7 * 24);
    const quarters = new Uint32Array(7 * 24);
    for (const r of rows) ms[cell(Number(r.qw) * QUARTER_MS + spans[Number(r.part)]!.offset)]! += Number(r.ms);
    for (const p of spans) for (let t = p.from; t < p.to; t += QUARTER_MS) quarters[cell(t + p.offset)]!++;
    const days = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"];
    return {
      ...this.window(s),
      days: days.map((day, d) => ({
        weekday: day,
        hours: Array.from({ length: 24 }, (_, h) => {
          const n = quarters[d * 24 + h]!;
          const avg = n > 0 ? ms[d * 24 + h]! / (n * QUARTER_MS) : null;
          return { hour: h, average_online: avg === null ? null : Math.round(avg * 1000) / 1000 };
        }),
      })),
    };
  }

  async sessionLengths(principal: Principal, teamId: string, q: WindowQuery) {
    const s = await this.resolve(principal, teamId, q);
    const [r] = await this.rows<Record<string, number | null>>(sql`
      select ${sql.raw(LENGTH_COLUMNS.map((c) => `sum(${c})::int as ${c}`).join(", "))} from analytics_slots
       where scope = ${s.scope} and slot >= ${at(s.from)} and slot < ${at(s.to)}`);
    const by = new Map(LENGTH_COLUMNS.map((c, i) => [i, Number(r?.[c] ?? 0)]));
    const total = [...by.values()].reduce((a, b) => a + b, 0);
    let lower = 0;
    return {
      ...this.window(s),
      sessions: total,
      buckets: LENGTH_BUCKETS.map((b, i) => {
        const n = by.get(i) ?? 0;
        const out = {
          bucket: b.label,
          min_seconds: lower,
          max_seconds: b.below,
          sessions: n,
          share: total === 0 ? 0 : Math.round((n / total) * 10000) / 10000,
        };
        lower = b.below ?? lower;
        return out;
      }),
    };
  }

  async leaderboard(principal: Principal, teamId: string, q: WindowQuery & { limit?: number }) {
    const s = await this.resolve(principal, teamId, q);
    const limit = q.limit ?? 10;
    const top = await this.topPlayers(s, limit);
    const names =
      top.length === 0
        ? []
        : await this.rows<{ uuid: string; name: string | null }>(sql`
            select distinct on (p.uuid) p.uuid::text as uuid, p.name from players p
             where p.server_id in (${idList(s.ids)}) and p.uuid in (${idList(top.map((t) => t.uuid))})
             order by p.uuid, p.last_seen desc`);
    const nameOf = new Map(names.map((n) => [n.uuid, n.name]));
    return {
      ...this.window(s),
      players: top.map((r, i) => ({
        rank: i + 1,
        uuid: r.uuid,
        name: nameOf.get(r.uuid) ?? null,
        edition: FLOODGATE.test(r.uuid) ? ("bedrock" as const) : ("java" as const),
        playtime_seconds: Math.round(r.ms / 1000),
      })),
    };
  }

  /** Given players' playtime in the window, summed from their hours (with their open time). */
  private playtimes(s: Scope, uuids: string[]) {
    return this.rows<{ uuid: string; ms: number }>(sql`
      select h.uuid::text as uuid, sum(${inWindow(s).ms})::float8 as ms from (${this.hours(s, s.from, uuids)}) h group by h.uuid`);
  }

  /**
   * Given players' playtime in the window over closed sessions (`uuids` a `uuid[]` expression):
   * the whole months' from their month rows (index-only) and only the cut months' parts summed
   * from their hours. A 180-day window's hours are about six times its two cut months'.
   */
  private closedPlaytimes(s: Scope, uuids: SQL) {
    const months = this.months(s);
    const whole = months.filter((m) => m.cut === "none");
    const w = inWindow(s);
    const parts = [
      ...(whole.length === 0
        ? []
        : [
            sql`select uuid, ms::float8 as ms from analytics_player_months
                 where uuid = any(${uuids}) and scope = ${s.scope}
                   and month >= ${at(whole[0]!.month)} and month <= ${at(whole[whole.length - 1]!.month)}`,
          ]),
      ...months
        .filter((m) => m.cut !== "none")
        .map(
          (m) => sql`select h.uuid, (${w.ms})::float8 as ms
            from (${this.closedHours(s, new Date(hourOf(m.a.getTime())), m.b, uuids)}) h`,
        ),
    ];
    return this.rows<{ uuid: string; ms: number }>(sql`
      select x.uuid::text as uuid, sum(x.ms)::float8 as ms from (${sql.join(parts, sql` union all `)}) x group by x.uuid`);
  }

  /**
   * The `limit` players with the most playtime in the window (ties by UUID), exactly, without
   * summing every player. The window's months are taken in groups of up to six consecutive
   * months, as near equal in size as they can be. A month row keeps its player's playtime over
   * it and the one to five months before (`ms`, `pair_ms` ... `sext_ms`, SPANS): a
   * group's playtime in the window is at most the value of the player's last month row in it,
   * the key of its place in the group. Candidates are each group month's top players by that
   * key, and the players with a session open. A player outside them played at most the sum over
   * groups of the largest first value left out of the group's lists: when the `limit`-th
   * candidate played more, no one outside can enter the top, else the lists grow. A candidate's
   * bound is tightened by its month rows in the window's months; candidates are then summed (their
   * whole months from the month rows, the cut months' parts from the hours) in the order of that
   * bound, while it can still reach the top. A window over more than six months starts from a
   * floor summed for a few players likely near the top (the seeds). A window holding all the
   * scope's closed time reads the top from the totals.
   */
  private async topPlayers(s: Scope, limit: number): Promise<{ uuid: string; ms: number }[]> {
    // A window of a few days sums its own hours: the month rows bound it too loosely (a day's
    // window at 5,000,000 sessions: 106 ms bounded, 16-20 ms summed; bounds win from 4-5 days).
    if (this.hoursOnly || s.to.getTime() - s.from.getTime() < SUMMED_WINDOW_MS) {
      const rows = await this.rows<{ uuid: string; ms: number }>(sql`
        select p.uuid::text as uuid, p.ms from (${this.perPlayer(s)}) p where p.ms > 0 order by p.ms desc, p.uuid limit ${limit}`);
      return rows.map((r) => ({ uuid: r.uuid, ms: Number(r.ms) }));
    }
    // A window holding all the scope's closed time (every slot row inside it: a year's window on a
    // younger server, say): each player's total is their closed playtime in it. The top `limit`
    // plus as many as are online are read from the totals by playtime; those online are summed
    // from their hours with their open time.
    const months = this.months(s).map((m) => m.month);
    // Lists: the months in as few groups of up to six as they fill, of sizes as near equal as
    // can be (seven months are four and three, not six and one: each group's lists are read down
    // to its share of the floor, and a lone month's share read many rows), from the window's end;
    // per group, each month's players by their playtime from the group's first month to that one
    // (`ms`, `pair_ms` ... `sext_ms`), in month order. (Groups of up to four until 2026-11-29:
    // a window over five months was two groups, and its candidates seen in one group only were
    // probed for their months, about 3,500 at 5,000,000 sessions.)
    const lists: { group: number; month: Date; column: (typeof SPANS)[number] }[] = [];
    const groupCount = Math.ceil(months.length / SPANS.length);
    for (let end = months.length, g = 0; end > 0; g++) {
      const size = Math.ceil(end / (groupCount - g));
      for (let i = end - size; i < end; i++)
        lists.push({ group: g, month: months[i]!, column: SPANS[i - end + size]! });
      end -= size;
    }
    const groups = lists.length === 0 ? 0 : lists[lists.length - 1]!.group + 1;
    // A window over more than six months (two groups or more): its top players played in each,
    // and few of them are at the top of any (the benchmark's network over 180 days: none of the
    // first 100 of one group's last list was among the other's). A first floor comes from the
    // players with the most playtime over the window's first six months, over its last six and
    // over all their time, summed over closed sessions (at most their playtime, so their `limit`-th
    // is at most the top's): read beside the statements below, and the lists are then read down
    // to their shares of it at once. (Before, a first round of the lists' top rows found that
    // floor, probing 600 players' months and summing 160 at 5,000,000 sessions.)
    const seeds =
      groups > 1 &&
      sql`array(${sql.join(
        [
          ...[months[SPANS.length - 1]!, months[months.length - 1]!].map(
            (m) => sql`(select uuid from analytics_player_months where scope = ${s.scope} and month = ${at(m)}
                       order by ${sql.raw(SPANS[SPANS.length - 1]!)} desc nulls last, uuid limit ${SEEDS * limit})`,
          ),
          sql`(select uuid from analytics_player_totals where scope = ${s.scope} order by ms desc nulls last, uuid limit ${SEEDS * limit})`,
        ],
        sql` union `,
      )})`;
    const [held, online0, seeded] = await Promise.all([
      this.rows<{ held: boolean }>(sql`
        select coalesce((select min(slot) from analytics_slots where scope = ${s.scope}) >= ${at(s.from)}
           and (select max(slot) from analytics_slots where scope = ${s.scope}) < ${at(s.to)}, false) as held`),
      // The players online, read beside it.
      this.openPlayers(s),
      seeds ? this.closedPlaytimes(s, seeds) : Promise.resolve([]),
    ]);
    const online = new Set(online0);
    if (held[0]?.held) {
      const [tops, summed] = await Promise.all([
        this.rows<{ uuid: string; ms: number }>(sql`
          select t.uuid::text as uuid, t.ms::float8 as ms from analytics_player_totals t where t.scope = ${s.scope}
           order by t.ms desc nulls last, t.uuid limit ${limit + online.size}`),
        online.size === 0 ? Promise.resolve([]) : this.playtimes(s, [...online]),
      ]);
      return [...tops.filter((r) => !online.has(r.uuid)), ...summed]
        .map((r) => ({ uuid: r.uuid, ms: Number(r.ms) }))
        .filter((r) => r.ms > 0)
        .sort((x, y) => y.ms - x.ms || (x.uuid < y.uuid ? -1 : x.uuid > y.uuid ? 1 : 0))
        .slice(0, limit);
    }
    const lasts = lists.flatMap((l, i) => (lists[i + 1]?.group === l.group ? [] : [i]));
    const exact = new Map<string, number>();
    const order = ([u1, a]: [string, number], [u2, b]: [string, number]) => b - a || (u1 < u2 ? -1 : u1 > u2 ? 1 : 0);
    const top = () => [...exact].filter(([, ms]) => ms > 0).sort(order);
    // Each round reads every month list's top `n` rows, but only those at or above its share of
    // the `limit`-th playtime summed so far (the floor), by its group's months: a player below
    // every list's share cannot reach the floor. (Shares by months, not equal: a window's groups
    // can differ by a month, and a group's playtime grows with its months; when five months were
    // four and one, half the floor for the four read 25,000 rows at 5,000,000 sessions.) The
    // totals list reads only rows at or above the floor itself (a player with less in all their
    // time cannot enter), and only while it bounds the players outside the lists more tightly
    // than the months do (at 90 days its rows above the floor were a tenth of the scope's
    // players, read for nothing). The next round reads 16 times the rows.
    // Each candidate's bound is tightened, before it is summed, by its own month rows: at most its
    // playtime in the window's months. The lists alone bound a player seen in one list by the
    // others' n-th values, which are near their top where every player plays alike (the benchmark's
    // network: about 4,000 candidates summed for a 90-day window ending mid-month, against a
    // hundred or so whose months can reach the top). Kept across rounds: a bound only matters
    // against a floor that only rises.
    const monthly = new Map<string, number>();
    // Summing candidates: those online from all their hours, the others' whole months from their
    // month rows.
    const sum = async (uuids: string[]) => {
      for (const u of uuids) exact.set(u, 0);
      const on = uuids.filter((u) => online.has(u));
      const off = uuids.filter((u) => !online.has(u));
      const rows = await Promise.all([
        on.length === 0 ? [] : this.playtimes(s, on),
        off.length === 0 ? [] : this.closedPlaytimes(s, uuidArray(off)),
      ]);
      for (const r of rows.flat()) exact.set(r.uuid, Number(r.ms));
    };
    // At most the top's `limit`-th playtime: the seeds', then each round's (0: none yet).
    let floor = seeded.map((r) => Number(r.ms)).sort((x, y) => y - x)[limit - 1] ?? 0;
    // The least the top's `limit`-th can be: the `limit`-th summed so far, or `floor`.
    const floorNow = () => {
      const known = top()[limit - 1]?.[1];
      return known === undefined ? (floor > 0 ? floor : undefined) : Math.max(known, floor);
    };
    let withTotals = true;
    const first = Math.max(100, 4 * limit);
    // A seed with no session open has its playtime summed already.
    for (const r of seeded) if (!online.has(r.uuid)) exact.set(r.uuid, Number(r.ms));
    // Seeded, the first round reads up to 25,600 rows a list (its shares of the floor stop it
    // sooner: about 8,500 rows in all at 180 days); 256 times `first` would be 102,400 at a limit of 100.
    const start = floor > 0 ? Math.max(16 * first, 25_600) : first;
    for (let n = start; ; n *= 16) {
      // The lists, and last (index `lists.length`) the scope's players by all their playtime.
      const sources = [
        ...lists.map((l) => ({
          c: sql.raw(l.column),
          t: Math.floor(floor * (lists.filter((o) => o.group === l.group).length / lists.length)),
          list: sql`from analytics_player_months where scope = ${s.scope} and month = ${at(l.month)}`,
        })),
        ...(withTotals
          ? [
              {
                c: sql.raw("ms"),
                t: Math.floor(floor),
                list: sql`from analytics_player_totals where scope = ${s.scope}`,
              },
            ]
          : []),
      ];
      // A row per list: its top `n` rows at or above `t` as two arrays (tens of thousands of rows
      // in a late round cost the service more as rows than PostgreSQL to read), how many and the
      // least, and its first value below `t`.
      // In two statements at once (each on its own connection on PostgreSQL): the totals list
      // beside the months', else the first group's months beside the others'.
      const read = (part: number[]) =>
        this.rows<{
          l: number;
          u: string[] | null;
          v: (number | string)[] | null;
          c: number;
          least: number | null;
          below: number;
        }>(sql`
        ${sql.join(
          part.map((i) => {
            const { c, t: min, list } = sources[i]!;
            return sql`
              select ${sql.raw(String(i))} as l, x.u, x.v, x.c, x.least,
                     coalesce((select ${c} ${list} and ${c} < ${min} order by ${c} desc nulls last limit 1), 0)::float8 as below
                from (select array_agg(y.uuid::text) as u, array_agg(y.v::float8) as v, count(*)::int as c, min(y.v)::float8 as least
                        from (select uuid, ${c} as v ${list} and ${c} >= ${min} order by ${c} desc nulls last, uuid limit ${n}) y) x`;
          }),
          sql` union all `,
        )}`);
      const all = sources.map((_, i) => i);
      const apart = (i: number) => (withTotals ? i === lists.length : lists[i]!.group === 0);
      const halves = [all.filter(apart), all.filter((i) => !apart(i))].filter((h) => h.length > 0);
      const rows = (await Promise.all(halves.map(read))).flat();
      // What a player outside a list has there at most: the n-th row's value (the least) when the
      // list filled `n` rows, else the first value below `t`. The totals' is unbounded when unread.
      const totals = lists.length;
      const nth = new Array<number>(lists.length + 1).fill(0);
      nth[totals] = Number.POSITIVE_INFINITY;
      const seen = new Map<string, Map<number, number>>();
      for (const r of rows) {
        const l = Number(r.l);
        const u = r.u ?? [];
        const v = (r.v ?? []).map(Number);
        nth[l] = Number(r.c) === n ? Number(r.least) : Number(r.below);
        u.forEach((uuid, j) => {
          const mine = seen.get(uuid) ?? new Map<number, number>();
          mine.set(l, v[j]!);
          seen.set(uuid, mine);
        });
      }
      // A player's bound in each group, in month order: a value seen is their playtime over the
      // group up to that month (at least any earlier month's); unseen, at most the list's n-th
      // value, or the earlier months' bound when they had no row in that month. Over the groups,
      // at most all their playtime: what the totals list showed of them, else its n-th value (a
      // window of a year on a year's data closes here, where the groups' bounds add up).
      const groupsMost = (mine?: Map<number, number>) => {
        const per = new Array<number>(groups).fill(0);
        lists.forEach((l, i) => {
          per[l.group] = mine?.get(i) ?? Math.max(per[l.group]!, nth[i]!);
        });
        return per.reduce((a, b) => a + b, 0);
      };
      const most = (mine?: Map<number, number>) => Math.min(groupsMost(mine), mine?.get(totals) ?? nth[totals]!);
      const bound = most(undefined);
      for (const u of online) if (!seen.has(u)) seen.set(u, new Map());
      if (seen.size === 0) return [];
      const floor0 = floorNow() ?? Number.NEGATIVE_INFINITY;
      const listed = [...seen]
        .filter(([u]) => !exact.has(u))
        .map(([u, mine]) => ({ uuid: u, most: online.has(u) ? Number.POSITIVE_INFINITY : most(mine) }))
        .filter((p) => p.most >= floor0);
      // A player seen in every group's last list already has their months' playtime: each of
      // those values is the group's months summed.
      const whole = (mine: Map<number, number>) => lasts.every((i) => mine.has(i));
      const fresh: string[] = [];
      for (const p of listed) {
        if (p.most === Number.POSITIVE_INFINITY || monthly.has(p.uuid)) continue;
        if (whole(seen.get(p.uuid)!)) monthly.set(p.uuid, p.most);
        else fresh.push(p.uuid);
      }
      // Month rows are cheaper to read than hours: four times the summed parts' size, the
      // candidates split evenly over the two connections.
      const probe = Math.min(4 * this.summedPart, Math.ceil(fresh.length / 2));
      await this.inParts(fresh, Math.max(1, probe), async (part) => {
        for (const u of part) monthly.set(u, 0);
        for (const r of await this.monthBounds(s, months, part)) monthly.set(r.uuid, Number(r.ms));
      });
      const pending = listed
        .map((p) => ({ uuid: p.uuid, most: Math.min(p.most, monthly.get(p.uuid) ?? Number.POSITIVE_INFINITY) }))
        .filter((p) => p.most > 0)
        .sort((a, b) => b.most - a.most);
      // Summed by bound: the highest `limit` first (their playtimes set a floor), then those whose
      // bound reaches the floor, in two parts at once (each on its own connection on PostgreSQL).
      let next = 0;
      while (next < pending.length) {
        const atLeast = floorNow();
        if (atLeast === undefined) {
          const part = pending.slice(next, next + Math.min(limit, this.summedPart));
          next += part.length;
          await sum(part.map((p) => p.uuid));
          continue;
        }
        const left = pending.slice(next).filter((p) => p.most >= atLeast);
        if (left.length === 0) break;
        const part = left.slice(0, 2 * this.summedPart);
        next = pending.indexOf(part[part.length - 1]!) + 1;
        await this.inParts(
          part.map((p) => p.uuid),
          Math.min(this.summedPart, Math.ceil(part.length / 2)),
          sum,
        );
      }
      const best = top();
      const last = best[limit - 1];
      if (bound === 0 || (last && last[1] > bound)) return best.slice(0, limit).map(([uuid, ms]) => ({ uuid, ms }));
      if (last) floor = Math.max(floor, last[1]);
      // The totals list read again only if it bounded the players outside the lists this round.
      withTotals = nth[totals]! < groupsMost(undefined);
    }
  }

  /** Runs `work` over `items` in parts of `size`, two parts at once (each on its own connection on PostgreSQL). */
  private async inParts<T>(items: T[], size: number, work: (part: T[]) => Promise<void>) {
    for (let i = 0; i < items.length; i += 2 * size)
      await Promise.all(
        [items.slice(i, i + size), items.slice(i + size, i + 2 * size)].filter((p) => p.length > 0).map(work),
      );
  }

  /**
   * Given players' playtime in the window's months (their month rows, index-only): at least
   * their playtime in the window. Players with no row there are left out.
   */
  private monthBounds(s: Scope, months: Date[], uuids: string[]) {
    return this.rows<{ uuid: string; ms: number }>(sql`
      select uuid::text as uuid, sum(ms)::float8 as ms from analytics_player_months
       where uuid = any(${uuidArray(uuids)}) and scope = ${s.scope}
         and month >= ${at(months[0]!)} and month <= ${at(months[months.length - 1]!)}
       group by uuid`);
  }

  async editions(principal: Principal, teamId: string, q: WindowQuery) {
    const s = await this.resolve(principal, teamId, q);
    const totals = await this.editionTotals(s);
    let java = totals?.java;
    let bedrock = totals?.bedrock;
    if (!totals) {
      const rows = await this.rows<{ bedrock: boolean; players: number; ms: number }>(sql`
        select (p.uuid::text like '00000000-0000-0000-0009-%') as bedrock, count(*)::int as players, sum(p.ms)::float8 as ms
          from (${this.perPlayer(s)}) p where p.seen group by 1`);
      const of = (b: boolean) => {
        const r = rows.find((x) => x.bedrock === b);
        return { players: Number(r?.players ?? 0), ms: Number(r?.ms ?? 0) };
      };
      java = of(false);
      bedrock = of(true);
    }
    const players = java!.players + bedrock!.players;
    const ms = java!.ms + bedrock!.ms;
    const share = (n: number, d: number) => (d === 0 ? 0 : Math.round((n / d) * 10000) / 10000);
    return {
      ...this.window(s),
      editions: (["java", "bedrock"] as const).map((e) => {
        const r = e === "bedrock" ? bedrock! : java!;
        return {
          edition: e,
          players: r.players,
          player_share: share(r.players, players),
          playtime_seconds: Math.round(r.ms / 1000),
          playtime_share: share(r.ms, ms),
        };
      }),
    };
  }

  async peaks(principal: Principal, teamId: string, q: WindowQuery) {
    const s = await this.resolve(principal, teamId, q);
    const open = await this.rows<{ a: string }>(sql`
      select s.joined_at::text as a from player_sessions s
       where s.server_id in (${idList(s.ids)}) and s.left_at is null and s.joined_at <= ${at(s.now)}`);
    const opens = open.map((o) => pgTime(o.a)).sort((x, y) => x - y);
    // The window's slots by their key (a range), not the peak index: that one would walk the
    // scope's whole history from its highest peak down until it met the window.
    const [inWindow] = await this.rows<{ peak: number; peak_at: string }>(sql`
      select w.peak, w.peak_at::text as peak_at from (
        select peak, peak_at from analytics_slots
         where scope = ${s.scope} and slot >= ${at(s.from)} and slot < ${at(s.to)} and peak > 0 offset 0) w
       order by w.peak desc, w.peak_at limit 1`);
    const [ever] = await this.rows<{ peak: number; peak_at: string }>(sql`
      select a.peak, a.peak_at::text as peak_at from analytics_slots a where a.scope = ${s.scope} and a.peak > 0
       order by a.peak desc nulls last, a.peak_at limit 1`);
    let best = inWindow ? { players: Number(inWindow.peak), at: pgTime(inWindow.peak_at) } : null;
    let top = ever ? { players: Number(ever.peak), at: pgTime(ever.peak_at) } : null;
    if (opens.length > 0) {
      for (const c of await this.openPeaks(s, opens)) {
        if (
          c.slot >= s.from.getTime() &&
          c.slot < s.to.getTime() &&
          (!best || c.players > best.players || (c.players === best.players && c.at < best.at))
        )
          best = c;
        if (!top || c.players > top.players || (c.players === top.players && c.at < top.at)) top = c;
      }
    }
    const when = (p: { players: number; at: number } | null) =>
      p ? { players: p.players, at: iso(new Date(p.at)) } : null;
    return { ...this.window(s), online_now: opens.length, peak: when(best), most_online_ever: when(top) };
  }

  /**
   * Each slot from the first open session's start to now, with the open sessions added: a slot
   * no open session starts in is its closed peak plus the sessions open across it; a slot one
   * starts in is counted again from its events (closed sessions and open joins).
   */
  private async openPeaks(s: Scope, opens: number[]) {
    const lo = Math.floor(opens[0]! / QUARTER_MS) * QUARTER_MS;
    const slots = await this.rows<{ slot: string; start_level: number; peak: number; peak_at: string }>(sql`
      select slot::text as slot, start_level, peak, peak_at::text as peak_at from analytics_slots
       where scope = ${s.scope} and slot >= ${at(new Date(lo))} and slot <= ${at(s.now)}`);
    const bySlot = new Map(slots.map((r) => [pgTime(r.slot), r]));
    const joinSlots = [...new Set(opens.map((a) => Math.floor(a / QUARTER_MS) * QUARTER_MS))];
    const events = await this.rows<{ slot: string; at: string; d: number }>(sql`
      with t as (select unnest(array[${sql.raw(joinSlots.map((j) => `timestamptz '${new Date(j).toISOString()}'`).join(", "))}]) as slot)
      select t.slot::text as slot, s.joined_at::text as at, 1 as d from t join player_sessions s
          on s.server_id in (${idList(s.ids)}) and s.joined_at >= t.slot and s.joined_at < t.slot + interval '15 minutes'
         and (s.left_at is null or s.left_at > s.joined_at)
      union all
      select t.slot::text, s.left_at::text, -1 from t join player_sessions s
          on s.server_id in (${idList(s.ids)}) and s.left_at > t.slot and s.left_at < t.slot + interval '15 minutes'
         and s.left_at > s.joined_at`);
    const out: { slot: number; players: number; at: number }[] = [];
    for (let slot = lo; slot <= s.now.getTime(); slot += QUARTER_MS) {
      const row = bySlot.get(slot);
      const covering = opens.filter((a) => a < slot).length;
      if (!joinSlots.includes(slot)) {
        const players = Number(row?.peak ?? 0) + covering;
        if (players > 0) out.push({ slot, players, at: row && Number(row.peak) > 0 ? pgTime(row.peak_at) : slot });
        continue;
      }
      const ev = events
        .filter((e) => pgTime(e.slot) === slot)
        .map((e) => ({ t: pgTime(e.at), d: Number(e.d) }))
        .sort((x, y) => x.t - y.t || x.d - y.d);
      let level = Number(row?.start_level ?? 0) + covering;
      let peak = level;
      let when = slot;
      for (const e of ev) {
        level += e.d;
        if (level > peak) {
          peak = level;
          when = e.t;
        }
      }
      if (peak > 0) out.push({ slot, players: peak, at: when });
    }
    return out;
  }
}

/** A timestamptz as the database prints it (`2026-03-29 01:00:00.123+00`), in milliseconds. */
function pgTime(text: string): number {
  const m = /^(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d:\d\d(?:\.\d+)?)([+-]\d\d)(?::?(\d\d))?$/.exec(text);
  if (!m) return Date.parse(text);
  return Date.parse(`${m[1]}T${m[2]}${m[3]}:${m[4] ?? "00"}`);
}
