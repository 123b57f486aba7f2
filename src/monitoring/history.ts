import { and, eq, type SQL, sql } from "drizzle-orm";
import { getTableConfig } from "drizzle-orm/pg-core";
import { serverMetricsHour, serverMetricsMinute } from "../db/schema";
import type { Db } from "../db/client";
import type { Logger } from "../lib/log";
import type { ServerEventSink } from "../realtime/events";
import { rowsOf } from "../db/rows";

/**
 * Metric history: two tiers of buckets per server (one minute, one hour), each row holding a
 * count, sum, least and greatest value per series. Samples are summed in memory per (server,
 * minute) and added to both tiers every few seconds (`MetricBuffer`, ./buffer.ts), so reads sum
 * a few hundred rows instead of scanning samples.
 */

/** Series stored in a bucket, and their column prefix. */
export const SERIES = {
  latency: "latency",
  players: "players",
  tps: "tps",
  mspt: "mspt",
  memUsed: "mem_used",
  memMax: "mem_max",
} as const;
export type Series = keyof typeof SERIES;

/** What one source measured at one moment. A series it does not measure is absent; null means "measured nothing". */
export interface Reading extends Partial<Record<Series, number | null>> {
  online?: boolean;
}

export const TIERS = {
  minute: { table: "server_metrics_minute", seconds: 60 },
  hour: { table: "server_metrics_hour", seconds: 3600 },
} as const;
export type Tier = keyof typeof TIERS;

const ORIGIN = sql`timestamptz '2000-01-01 00:00:00+00'`;
export const floorTo = (ms: number, seconds: number) => Math.floor(ms / (seconds * 1000)) * seconds * 1000;

/** Summed columns of one bucket (or of several merged); every field may be null where no row was. */
export interface BucketSums {
  start_ms: number;
  up: number | null;
  down: number | null;
  [column: string]: number | null;
}

export interface Stat {
  min: number | null;
  avg: number | null;
  max: number | null;
}

const round = (n: number | null, digits = 3) =>
  n === null || n === undefined ? null : Math.round(Number(n) * 10 ** digits) / 10 ** digits;
const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));

/** One series of a bucket as min/avg/max; nulls where it has no value. */
export function seriesStat(b: BucketSums, s: Series): Stat {
  const col = SERIES[s];
  const n = num(b[`${col}_n`]) ?? 0;
  if (n === 0) return { min: null, avg: null, max: null };
  return { min: num(b[`${col}_min`]), avg: round((num(b[`${col}_sum`]) ?? 0) / n), max: num(b[`${col}_max`]) };
}

/** Up or down as 1 or 0: the average is the share of pings that found the server up. */
export function onlineStat(b: BucketSums): Stat {
  const up = num(b.up) ?? 0;
  const down = num(b.down) ?? 0;
  if (up + down === 0) return { min: null, avg: null, max: null };
  return { min: down > 0 ? 0 : 1, avg: round(up / (up + down), 6), max: up > 0 ? 1 : 0 };
}

/**
 * The summed columns of a bucket as drizzle select fields: counts and sums add up, extremes
 * take the least and greatest, so any grouping of rows merges exactly.
 */
function sumFields(t: typeof serverMetricsHour | typeof serverMetricsMinute, series: readonly Series[]) {
  const fields: Record<string, SQL<number | null>> = {
    up: sql<number | null>`sum(${t.upN})::int`,
    down: sql<number | null>`sum(${t.downN})::int`,
  };
  for (const c of series.map((s) => SERIES[s])) {
    fields[`${c}_n`] = sql<number | null>`sum(${sql.identifier(`${c}_n`)})::int`;
    fields[`${c}_sum`] = sql<number | null>`sum(${sql.identifier(`${c}_sum`)})::float8`;
    fields[`${c}_min`] = sql<number | null>`min(${sql.identifier(`${c}_min`)})::float8`;
    fields[`${c}_max`] = sql<number | null>`max(${sql.identifier(`${c}_max`)})::float8`;
  }
  return fields;
}

/**
 * The 95th percentile latency is taken by nearest rank over the window's rows of the tier, each
 * row counting its greatest latency as many times as it has samples: an upper estimate, exact
 * when a row holds one sample. Rows are first summed per distinct latency (pings store whole
 * milliseconds, so there are few), which leaves the running sum a short list to order. An
 * uncorrelated subquery: PostgreSQL runs it once per statement.
 */
function p95Field(t: typeof serverMetricsHour | typeof serverMetricsMinute) {
  const name = sql.identifier(getTableConfig(t).name);
  return sql<number | null>`(select min(v)::float8 from (
      select v, sum(w) over (order by v rows unbounded preceding) as cum, sum(w) over () as total
        from (select latency_max as v, sum(latency_n) as w
                from ${name}
               where server_id = ${sql.placeholder("serverId")} and bucket >= ${sql.placeholder("from")}::timestamptz
                 and bucket <= ${sql.placeholder("to")}::timestamptz and latency_n > 0
               group by 1) by_latency) ranked
     where cum >= 0.95 * total)`;
}

/**
 * A window's rows of one tier grouped into `bucketSeconds` buckets. Prepared once per database
 * and tier (the dashboard repeats these reads more than any other): only the grouped rows come
 * back, and the empty buckets of the grid are added in `onGrid`. The uptime read (with its p95)
 * asks only for the series it shows: decoding the columns is most of the read's CPU.
 */
function buildBucketReads(db: Db) {
  const build = (tier: Tier, withP95: boolean) => {
    const series: readonly Series[] = withP95 ? UPTIME_SERIES : ALL_SERIES;
    const t = tier === "hour" ? serverMetricsHour : serverMetricsMinute;
    const start = sql<number>`(extract(epoch from date_bin(make_interval(secs => ${sql.placeholder("bucketSeconds")}::int), ${t.bucket}, ${ORIGIN})) * 1000)::float8`;
    const fields = Object.fromEntries(
      Object.entries({ start_ms: start, ...sumFields(t, series) }).map(([name, f]) => [name, f.as(name)]),
    );
    const grouped = db
      .select(fields)
      .from(t)
      .where(
        and(
          eq(t.serverId, sql.placeholder("serverId")),
          sql`${t.bucket} >= ${sql.placeholder("from")}::timestamptz`,
          sql`${t.bucket} <= ${sql.placeholder("to")}::timestamptz`,
        ),
      )
      .groupBy(sql`1`)
      .as("g");
    // The grouped rows come back as one JSON array: decoding a few thousand fields one by one
    // through the driver and drizzle's row mapper cost more CPU than the rest of the request.
    return db
      .select({
        rows: sql<BucketSums[] | string>`coalesce(json_agg(g order by g.start_ms), '[]'::json)`,
        ...(withP95 && { p95: p95Field(t) }),
      })
      .from(grouped)
      .prepare(`metric_buckets_${tier}${withP95 ? "_p95" : ""}`);
  };
  return {
    minute: { plain: build("minute", false), p95: build("minute", true) },
    hour: { plain: build("hour", false), p95: build("hour", true) },
  };
}
const ALL_SERIES = Object.keys(SERIES) as Series[];
/** What uptime-stats shows: up/down, latency and players. */
export const UPTIME_SERIES: readonly Series[] = ["latency", "players"];
const bucketReads = new WeakMap<Db, ReturnType<typeof buildBucketReads>>();

async function groupedRows(
  db: Db,
  serverId: string,
  tier: Tier,
  bucketSeconds: number,
  sinceMs: number,
  toMs: number,
  withP95: boolean,
) {
  let reads = bucketReads.get(db);
  if (!reads) {
    reads = buildBucketReads(db);
    bucketReads.set(db, reads);
  }
  const read = withP95 ? reads[tier].p95 : reads[tier].plain;
  // Rows are taken from the window's start rounded down to the tier's resolution, so the first bucket is whole.
  const from = new Date(floorTo(sinceMs, TIERS[tier].seconds)).toISOString();
  const to = new Date(toMs).toISOString();
  const [row] = await read.execute({ serverId, from, to, bucketSeconds });
  // postgres.js and PGlite both parse json; the string case is a driver that does not.
  const rows = row ? (typeof row.rows === "string" ? (JSON.parse(row.rows) as BucketSums[]) : row.rows) : [];
  return { rows, p95: (row as { p95?: number | null } | undefined)?.p95 ?? null };
}

/** Every bucket of the aligned grid from the window's start to its end, empty ones with nulls. */
function onGrid(rows: BucketSums[], bucketSeconds: number, sinceMs: number, toMs: number): BucketSums[] {
  const byStart = new Map(rows.map((r) => [Number(r.start_ms), r]));
  const out: BucketSums[] = [];
  const step = bucketSeconds * 1000;
  for (let b = floorTo(sinceMs, bucketSeconds); b <= toMs; b += step) {
    out.push(byStart.get(b) ?? { ...EMPTY, start_ms: b });
  }
  return out;
}

const EMPTY: BucketSums = Object.fromEntries([
  ["start_ms", 0],
  ["up", null],
  ["down", null],
  ...Object.values(SERIES).flatMap((c) => ["n", "sum", "min", "max"].map((k) => [`${c}_${k}`, null])),
]) as BucketSums;

/**
 * A window of a tier re-bucketed to `bucketSeconds` on an aligned grid (every bucket present,
 * empty ones with nulls).
 */
export async function readBuckets(
  db: Db,
  serverId: string,
  tier: Tier,
  bucketSeconds: number,
  sinceMs: number,
  toMs: number,
): Promise<BucketSums[]> {
  const { rows } = await groupedRows(db, serverId, tier, bucketSeconds, sinceMs, toMs, false);
  return onGrid(rows, bucketSeconds, sinceMs, toMs);
}

/**
 * The buckets of a window and its latency p95, in one statement (uptime-stats wants both: one
 * round trip instead of two on the read a dashboard repeats most).
 */
export async function readBucketsWithP95(
  db: Db,
  serverId: string,
  tier: Tier,
  bucketSeconds: number,
  sinceMs: number,
  toMs: number,
): Promise<{ buckets: BucketSums[]; p95: number | null }> {
  const { rows, p95 } = await groupedRows(db, serverId, tier, bucketSeconds, sinceMs, toMs, true);
  return { buckets: onGrid(rows, bucketSeconds, sinceMs, toMs), p95 };
}

/** Every series of one bucket, as the `metrics` message and the metrics read carry it. */
export function bucketOut(b: BucketSums) {
  return {
    players: seriesStat(b, "players"),
    tps: seriesStat(b, "tps"),
    mspt: seriesStat(b, "mspt"),
    memory: seriesStat(b, "memUsed"),
    memory_max: seriesStat(b, "memMax"),
    latency: seriesStat(b, "latency"),
    online: onlineStat(b),
  };
}

/**
 * Announces closed minutes. The flush that opens a server's new minute row is the only statement
 * that sees it opened (`xmax = 0`), on whichever instance ran it, so each minute is announced once.
 */
export class MinuteCloser {
  constructor(
    private readonly db: Db,
    private readonly sink: ServerEventSink,
    private readonly log: Logger,
    /** Whether some instance has a live view of the server: only those minutes are read and announced. */
    private readonly watched: (serverId: string) => boolean = () => true,
  ) {}

  /**
   * After a flush that opened the minutes starting at `at`: publish each server's latest earlier
   * minute, read in one statement. Never throws: the figures are stored whatever becomes of
   * their announcement.
   */
  async openedMany(opened: { serverId: string; at: number }[]) {
    const list = opened.filter((o) => this.watched(o.serverId));
    if (list.length === 0) return;
    try {
      await this.announce(list);
    } catch (err) {
      this.log.warn("announcing closed minutes failed", { servers: list.length, err });
    }
  }

  private async announce(list: { serverId: string; at: number }[]) {
    const json = JSON.stringify(
      list.map((o) => ({ server_id: o.serverId, before: new Date(floorTo(o.at, 60)).toISOString() })),
    );
    const result = await this.db.execute(sql`
      select o.server_id, (extract(epoch from m.bucket) * 1000)::float8 as start_ms, m.up_n as up, m.down_n as down, ${sql.raw(
        Object.values(SERIES)
          .map((c) => `m.${c}_n, m.${c}_sum, m.${c}_min, m.${c}_max`)
          .join(", "),
      )}
        from json_to_recordset(${json}::json) as o(server_id uuid, before timestamptz)
        cross join lateral (
          select * from server_metrics_minute
           where server_id = o.server_id and bucket < o.before
           order by bucket desc limit 1) m`);
    for (const { server_id, ...rest } of rowsOf<{ server_id: string }>(result)) {
      const row = rest as unknown as BucketSums;
      const ts = new Date(Number(row.start_ms));
      this.sink.publish(server_id, "metrics", { bucket_seconds: 60, start: ts.toISOString(), ...bucketOut(row) }, ts);
    }
  }
}

/**
 * Adds a server's stored raw ping samples to both tiers, as if each had arrived through the
 * pinger: for imports and for building history in tests and benchmarks. Not idempotent: run
 * it once over samples the pinger did not store.
 */
export async function addRawSamplesToBuckets(db: Db, serverId: string) {
  for (const { table, seconds } of Object.values(TIERS)) {
    await db.execute(sql`
      insert into ${sql.raw(table)} as b (server_id, bucket, up_n, down_n, latency_n, latency_sum, latency_min, latency_max,
                                           players_n, players_sum, players_min, players_max)
      select server_id, date_bin(make_interval(secs => ${seconds}), ts, ${ORIGIN}),
             count(*) filter (where online), count(*) filter (where not online),
             count(latency_ms), coalesce(sum(latency_ms), 0), min(latency_ms), max(latency_ms),
             count(players_online), coalesce(sum(players_online), 0), min(players_online), max(players_online)
        from server_samples where server_id = ${serverId}
       group by 1, 2
      on conflict (server_id, bucket) do update set
        up_n = b.up_n + excluded.up_n, down_n = b.down_n + excluded.down_n,
        latency_n = b.latency_n + excluded.latency_n, latency_sum = b.latency_sum + excluded.latency_sum,
        latency_min = least(b.latency_min, excluded.latency_min), latency_max = greatest(b.latency_max, excluded.latency_max),
        players_n = b.players_n + excluded.players_n, players_sum = b.players_sum + excluded.players_sum,
        players_min = least(b.players_min, excluded.players_min), players_max = greatest(b.players_max, excluded.players_max)`);
  }
}
