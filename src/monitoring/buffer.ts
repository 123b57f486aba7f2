import { sql } from "drizzle-orm";
import type { Db } from "../db/client";
import type { Clock } from "../lib/clock";
import type { Logger } from "../lib/log";
import { floorTo, type MinuteCloser, type Reading, SERIES, type Series, TIERS, type Tier } from "./history";
import { rowsOf } from "../db/rows";

/** Partial sums of one (server, bucket): merged into the stored row by adding, `least`, `greatest`. */
interface Acc {
  serverId: string;
  bucket: number;
  up: number;
  down: number;
  /** Per series: count, sum, least, greatest (null while the count is 0). */
  s: Record<Series, [number, number, number | null, number | null]>;
}

const SERIES_KEYS = Object.keys(SERIES) as Series[];

function emptyAcc(serverId: string, bucket: number): Acc {
  const s = {} as Acc["s"];
  for (const k of SERIES_KEYS) s[k] = [0, 0, null, null];
  return { serverId, bucket, up: 0, down: 0, s };
}

function addReading(a: Acc, r: Reading) {
  if (r.online !== undefined) {
    if (r.online) a.up++;
    else a.down++;
  }
  for (const k of SERIES_KEYS) {
    const v = r[k];
    if (v === undefined || v === null) continue;
    const t = a.s[k];
    t[0]++;
    t[1] += v;
    t[2] = t[2] === null ? v : Math.min(t[2], v);
    t[3] = t[3] === null ? v : Math.max(t[3], v);
  }
}

function mergeAcc(into: Acc, from: Acc) {
  into.up += from.up;
  into.down += from.down;
  for (const k of SERIES_KEYS) {
    const t = into.s[k];
    const f = from.s[k];
    if (f[0] === 0) continue;
    t[0] += f[0];
    t[1] += f[1];
    t[2] = t[2] === null ? f[2] : Math.min(t[2], f[2]!);
    t[3] = t[3] === null ? f[3] : Math.max(t[3], f[3]!);
  }
}

const COLUMNS = [
  "up_n",
  "down_n",
  ...Object.values(SERIES).flatMap((c) => [`${c}_n`, `${c}_sum`, `${c}_min`, `${c}_max`]),
];
const RECORD_TYPE = sql.raw(
  [
    "server_id uuid",
    "bucket timestamptz",
    "up_n int",
    "down_n int",
    ...Object.values(SERIES).flatMap((c) => [`${c}_n int`, `${c}_sum float8`, `${c}_min float8`, `${c}_max float8`]),
  ].join(", "),
);
const INSERT_COLUMNS = sql.raw(["server_id", "bucket", ...COLUMNS].join(", "));
const MERGE = sql.raw(
  [
    "up_n = b.up_n + excluded.up_n",
    "down_n = b.down_n + excluded.down_n",
    ...Object.values(SERIES).map(
      (c) =>
        `${c}_n = b.${c}_n + excluded.${c}_n, ${c}_sum = b.${c}_sum + excluded.${c}_sum, ` +
        `${c}_min = least(b.${c}_min, excluded.${c}_min), ${c}_max = greatest(b.${c}_max, excluded.${c}_max)`,
    ),
  ].join(", "),
);

/** One tier's rows as a JSON array of records, sorted by key so concurrent flushes lock rows in one order. */
function rowsJson(accs: Iterable<Acc>): string {
  const rows = [...accs].sort((x, y) =>
    x.serverId < y.serverId ? -1 : x.serverId > y.serverId ? 1 : x.bucket - y.bucket,
  );
  return JSON.stringify(
    rows.map((a) => {
      const o: Record<string, unknown> = {
        server_id: a.serverId,
        bucket: new Date(a.bucket).toISOString(),
        up_n: a.up,
        down_n: a.down,
      };
      for (const k of SERIES_KEYS) {
        const c = SERIES[k];
        const [n, sum, min, max] = a.s[k];
        o[`${c}_n`] = n;
        o[`${c}_sum`] = sum;
        o[`${c}_min`] = min;
        o[`${c}_max`] = max;
      }
      return o;
    }),
  );
}

function upsertTier(tier: Tier, json: string) {
  const table = sql.raw(TIERS[tier].table);
  // A server deleted since its readings were summed is skipped instead of failing everyone's flush.
  return sql`insert into ${table} as b (${INSERT_COLUMNS})
    select x.* from json_to_recordset(${json}::json) as x(${RECORD_TYPE})
     where exists (select 1 from servers s where s.id = x.server_id)
    on conflict (server_id, bucket) do update set ${MERGE}`;
}

/**
 * How often the periodic flush (`flush(false)`) also writes the hourly tier. Each flush upserts
 * one row per server and tier it has readings of: with a flush every 5 s and a check every 30 s,
 * that was two row writes per check, the larger part of the pinger's database work beyond the
 * check itself (bench/pinger-parts.ts). An hourly row needs no fresher sums than this.
 */
export const HOUR_TIER_EVERY_MS = 60_000;

/**
 * Heartbeats and ping results summed in memory per (server, minute) and added to the metric
 * tiers in ONE statement a flush: a multi-row upsert per tier, merging by adding counts and sums
 * and taking least / greatest, so several instances holding parts of the same minute merge
 * exactly. The hourly rows are the minute sums added up per hour; the periodic flush sends them
 * every HOUR_TIER_EVERY_MS (summing meanwhile), and at once when past hours' readings arrive (a
 * backfill); a full `flush()` every time.
 *
 * Durability: a crash loses what was summed since the last flush (at most one flush interval;
 * for the hourly tier at most HOUR_TIER_EVERY_MS); `flush()` on a graceful stop loses nothing.
 * A flush that fails keeps its sums for the next.
 */
export class MetricBuffer {
  private pending = new Map<string, Acc>();
  /**
   * Readings older than the one-minute tier keeps (an agent's backfill), summed per (server,
   * hour): they go to the hourly tier only, rather than into minute rows retention would delete.
   */
  private pendingHours = new Map<string, Acc>();
  /** Hourly sums of readings already in the minute tier, waiting for the hourly tier's turn. */
  private hoursDue = new Map<string, Acc>();
  private hoursWrittenAt: number;
  /**
   * The (server, hour) rows this buffer has written to the hourly tier, with their hour: the
   * first readings of an hour (a new server, or the clock past the hour) go at the next flush
   * rather than up to HOUR_TIER_EVERY_MS later, so a 7d or 30d view never shows a server checked
   * for a minute as never checked. One write more per server and hour.
   */
  private hoursStored = new Map<string, number>();
  private flushing: Promise<void> | undefined;
  private again = false;
  private againAll = false;

  constructor(
    private readonly db: Db,
    private readonly log: Logger,
    private readonly closer?: MinuteCloser,
    private readonly opts: {
      /** How long the one-minute tier keeps a row (METRICS_MINUTE_RETENTION_HOURS); unset: every reading goes to both tiers. */
      minuteRetentionMs?: number;
      clock?: Clock;
    } = {},
  ) {
    this.hoursWrittenAt = this.now();
  }

  private now() {
    return this.opts.clock?.now() ?? Date.now();
  }

  /** Adds a reading taken at `at` (ms) to its server's minute. */
  add(serverId: string, at: number, r: Reading) {
    const old = at < this.now() - (this.opts.minuteRetentionMs ?? Number.POSITIVE_INFINITY);
    const map = old ? this.pendingHours : this.pending;
    const bucket = floorTo(at, old ? TIERS.hour.seconds : TIERS.minute.seconds);
    const key = `${serverId}|${bucket}`;
    let a = map.get(key);
    if (!a) {
      a = emptyAcc(serverId, bucket);
      map.set(key, a);
    }
    addReading(a, r);
  }

  /** (server, minute) pairs, and (server, hour) pairs of old readings, waiting for the next flush. */
  get size() {
    return this.pending.size + this.pendingHours.size;
  }

  /**
   * Sends everything summed so far; resolves once what was pending when it was called is stored
   * (a flush under way is waited for, then another runs for what arrived meanwhile). `all`
   * false (the periodic task) sends the hourly tier only when HOUR_TIER_EVERY_MS have passed.
   */
  flush(all = true): Promise<void> {
    if (this.flushing) {
      this.again = true;
      this.againAll ||= all;
      return this.flushing;
    }
    this.flushing = (async () => {
      try {
        let full = all;
        do {
          this.again = false;
          await this.flushOnce(full);
          full = this.againAll;
          this.againAll = false;
        } while (this.again && (this.size > 0 || (full && this.hoursDue.size > 0)));
      } finally {
        this.flushing = undefined;
      }
    })();
    return this.flushing;
  }

  private async flushOnce(all: boolean) {
    // Readings of past hours (an agent's backfill) are history someone is waiting to see: the
    // hourly tier goes with them at once.
    const hourKey = (a: Acc) => `${a.serverId}|${floorTo(a.bucket, TIERS.hour.seconds)}`;
    let newHour = false;
    for (const a of this.pending.values())
      if (!this.hoursStored.has(hourKey(a))) {
        newHour = true;
        break;
      }
    const writeHours =
      all || newHour || this.pendingHours.size > 0 || this.now() - this.hoursWrittenAt >= HOUR_TIER_EVERY_MS;
    if (this.size === 0 && (this.hoursDue.size === 0 || !writeHours)) {
      // Nothing held back: the hourly tier is as current as it can be.
      if (this.hoursDue.size === 0) this.hoursWrittenAt = this.now();
      return;
    }
    const batch = this.pending;
    const oldHours = this.pendingHours;
    this.pending = new Map();
    this.pendingHours = new Map();
    // The readings summed per hour: merged into the hourly sums kept for the hourly tier's turn
    // once the minute tier has taken them (never before: a failed flush keeps them), or sent now
    // with those sums (copied: a failed statement leaves them as they were).
    const hours = new Map<string, Acc>();
    const addTo = (into: Map<string, Acc>, a: Acc) => {
      const bucket = floorTo(a.bucket, TIERS.hour.seconds);
      const key = `${a.serverId}|${bucket}`;
      let h = into.get(key);
      if (!h) {
        h = emptyAcc(a.serverId, bucket);
        into.set(key, h);
      }
      mergeAcc(h, a);
    };
    if (writeHours)
      for (const a of [...this.hoursDue.values(), ...batch.values(), ...oldHours.values()]) addTo(hours, a);
    let opened: { server_id: string; bucket_ms: number }[];
    try {
      // Both tiers in one statement when both go: all or nothing, so a retried flush cannot count
      // a tier twice.
      const minute = upsertTier("minute", rowsJson(batch.values()));
      const result = await this.db.execute(
        writeHours
          ? sql`
        with minute as (${minute}
          returning b.server_id, (extract(epoch from b.bucket) * 1000)::float8 as bucket_ms, (xmax = 0) as opened),
        hour as (${upsertTier("hour", rowsJson(hours.values()))})
        select server_id, bucket_ms from minute where opened`
          : sql`
        with minute as (${minute}
          returning b.server_id, (extract(epoch from b.bucket) * 1000)::float8 as bucket_ms, (xmax = 0) as opened)
        select server_id, bucket_ms from minute where opened`,
      );
      opened = rowsOf<{ server_id: string; bucket_ms: number }>(result);
      if (writeHours) {
        this.hoursDue = new Map();
        this.hoursWrittenAt = this.now();
        const thisHour = floorTo(this.now(), TIERS.hour.seconds);
        for (const [key, hour] of this.hoursStored) if (hour < thisHour) this.hoursStored.delete(key);
        for (const a of batch.values()) {
          const hour = floorTo(a.bucket, TIERS.hour.seconds);
          if (hour >= thisHour) this.hoursStored.set(hourKey(a), hour);
        }
      } else for (const a of [...batch.values(), ...oldHours.values()]) addTo(this.hoursDue, a);
    } catch (err) {
      // Nothing was stored: keep the sums (with whatever arrived since) for the next flush.
      for (const [from, into] of [
        [batch, this.pending],
        [oldHours, this.pendingHours],
      ] as const) {
        for (const [key, a] of from) {
          const cur = into.get(key);
          if (cur) mergeAcc(a, cur);
          into.set(key, a);
        }
      }
      throw err;
    }
    // Only a minute opened now closes one worth announcing: a backfilled reading may open a row
    // hours in the past, and live views have moved on from there.
    const recent = floorTo(this.now(), TIERS.minute.seconds) - TIERS.minute.seconds * 1000;
    const closing = opened.filter((o) => Number(o.bucket_ms) >= recent);
    if (closing.length > 0 && this.closer)
      await this.closer.openedMany(closing.map((o) => ({ serverId: o.server_id, at: Number(o.bucket_ms) })));
  }

  /** A background task: flushes every `ms`, and once more when stopped. */
  task(ms: number) {
    let timer: ReturnType<typeof setInterval> | undefined;
    const run = (all = false) =>
      this.flush(all).catch((err) => this.log.error("metric flush failed", { err, pending: this.pending.size }));
    return {
      name: "metrics-flush",
      start: () => {
        timer ??= setInterval(() => void run(), ms);
      },
      stop: async () => {
        clearInterval(timer);
        timer = undefined;
        await run(true);
      },
    };
  }
}
