import { sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { rowsOf } from "../db/rows";
import { LIMITS } from "../lib/limits";
import type { DownReason } from "./down-reason";
import { bucketOut, readBuckets, readBucketsWithP95, type Stat, type Tier } from "./history";

/** uptime-stats windows: the one-minute tier up to a day, the hourly tier beyond. */
export const UPTIME_WINDOWS = {
  "1h": { seconds: 3600, bucketSeconds: 60, tier: "minute" },
  "24h": { seconds: 86_400, bucketSeconds: 600, tier: "minute" },
  "7d": { seconds: 7 * 86_400, bucketSeconds: 3600, tier: "hour" },
  "30d": { seconds: 30 * 86_400, bucketSeconds: 6 * 3600, tier: "hour" },
} as const satisfies Record<string, { seconds: number; bucketSeconds: number; tier: Tier }>;
export type UptimeWindow = keyof typeof UPTIME_WINDOWS;

/** metrics windows: at most 289 buckets each, the tier chosen so a bucket holds whole rows. */
export const METRICS_WINDOWS = {
  "1h": { seconds: 3600, bucketSeconds: 60, tier: "minute" },
  "24h": { seconds: 86_400, bucketSeconds: 300, tier: "minute" },
  "7d": { seconds: 7 * 86_400, bucketSeconds: 3600, tier: "hour" },
  "30d": { seconds: 30 * 86_400, bucketSeconds: 6 * 3600, tier: "hour" },
  "90d": { seconds: 90 * 86_400, bucketSeconds: 86_400, tier: "hour" },
} as const satisfies Record<string, { seconds: number; bucketSeconds: number; tier: Tier }>;
export type MetricsWindow = keyof typeof METRICS_WINDOWS;

export const METRIC_NAMES = ["players", "tps", "mspt", "memory", "latency", "online"] as const;
export type MetricName = (typeof METRIC_NAMES)[number];

const round = (n: number | null, digits = 2) =>
  n === null || n === undefined ? null : Math.round(Number(n) * 10 ** digits) / 10 ** digits;
const ratio = (up: number, down: number) => (up + down === 0 ? null : Math.round((up / (up + down)) * 1e6) / 1e6);
const n = (v: number | null | undefined) => Number(v ?? 0);
const least = (a: number | null, b: number | null) => (a === null ? b : b === null ? a : Math.min(a, b));
const greatest = (a: number | null, b: number | null) => (a === null ? b : b === null ? a : Math.max(a, b));

/**
 * The down periods that overlap a window, the most recent first, each whole (a start before the
 * window is kept) with its length up to its end, or up to `now` while it lasts. Read from the
 * incident rows the pinger writes with each flip, not from the buckets: an outage of minutes is
 * one of many checks in an hourly bucket, and no bucket of a 7d or 30d view is all down.
 */
export async function incidents(db: Db, serverId: string, sinceMs: number, toMs: number) {
  const since = new Date(sinceMs).toISOString();
  const to = new Date(toMs).toISOString();
  const result = await db.execute(sql`
    select (extract(epoch from started_at) * 1000)::float8 as started_ms,
           (extract(epoch from ended_at) * 1000)::float8 as ended_ms,
           reason
      from server_incidents
     where server_id = ${serverId} and kind <> 'manual' and started_at <= ${to}::timestamptz
       and (ended_at is null or ended_at > ${since}::timestamptz)
     order by started_at desc
     limit ${LIMITS.uptimeIncidents}`);
  return rowsOf<{ started_ms: number; ended_ms: number | null; reason: DownReason | null }>(result).map((r) => {
    const start = Number(r.started_ms);
    const end = r.ended_ms === null ? null : Number(r.ended_ms);
    return {
      started_at: new Date(start).toISOString(),
      ended_at: end === null ? null : new Date(end).toISOString(),
      duration_seconds: Math.max(0, Math.round(((end ?? toMs) - start) / 1000)),
      ongoing: end === null,
      reason: r.reason,
    };
  });
}

/**
 * Uptime and latency of one server over a window, with evenly spaced buckets for a graph, from
 * the metric buckets; and the window's incidents.
 */
export async function uptimeStats(db: Db, serverId: string, window: UptimeWindow, now = new Date()) {
  const { seconds, bucketSeconds, tier } = UPTIME_WINDOWS[window];
  const toMs = now.getTime();
  const sinceMs = toMs - seconds * 1000;
  const [{ buckets, p95 }, downs] = await Promise.all([
    readBucketsWithP95(db, serverId, tier, bucketSeconds, sinceMs, toMs),
    incidents(db, serverId, sinceMs, toMs),
  ]);
  // Every figure is a sum or an extreme over the same rows as the buckets: add the buckets up.
  let up = 0;
  let down = 0;
  let lc = 0;
  let ls = 0;
  let min: number | null = null;
  let max: number | null = null;
  for (const b of buckets) {
    up += n(b.up);
    down += n(b.down);
    lc += n(b.latency_n);
    ls += n(b.latency_sum);
    min = least(min, b.latency_min === null || b.latency_min === undefined ? null : Number(b.latency_min));
    max = greatest(max, b.latency_max === null || b.latency_max === undefined ? null : Number(b.latency_max));
  }
  return {
    server_id: serverId,
    window,
    from: new Date(sinceMs).toISOString(),
    to: now.toISOString(),
    bucket_seconds: bucketSeconds,
    samples: up + down,
    up,
    down,
    uptime: ratio(up, down),
    latency_ms: { avg: lc === 0 ? null : round(ls / lc), min, max, p95: round(p95) },
    buckets: buckets.map((b) => ({
      start: new Date(Number(b.start_ms)).toISOString(),
      up: n(b.up),
      down: n(b.down),
      uptime: ratio(n(b.up), n(b.down)),
      latency_avg_ms: n(b.latency_n) === 0 ? null : round(n(b.latency_sum) / n(b.latency_n)),
      latency_max_ms: b.latency_max === null || b.latency_max === undefined ? null : Number(b.latency_max),
      players_avg: n(b.players_n) === 0 ? null : round(n(b.players_sum) / n(b.players_n)),
    })),
    incidents: downs,
  };
}

type Point = Stat & { ts: string };

/** Each requested metric as aligned `{ts, min, avg, max}` buckets (memory brings memory_max along). */
export async function metricHistory(
  db: Db,
  serverId: string,
  window: MetricsWindow,
  metrics: readonly MetricName[],
  now = new Date(),
) {
  const { seconds, bucketSeconds, tier } = METRICS_WINDOWS[window];
  const toMs = now.getTime();
  const sinceMs = toMs - seconds * 1000;
  const buckets = await readBuckets(db, serverId, tier, bucketSeconds, sinceMs, toMs);
  const wanted = new Set(metrics);
  const out: Partial<Record<MetricName | "memory_max", Point[]>> = {};
  const names = [...METRIC_NAMES, "memory_max"] as const;
  for (const name of names) if (wanted.has(name === "memory_max" ? "memory" : name)) out[name] = [];
  for (const b of buckets) {
    const ts = new Date(Number(b.start_ms)).toISOString();
    const all = bucketOut(b);
    for (const name of names) out[name]?.push({ ts, ...all[name] });
  }
  return {
    server_id: serverId,
    window,
    from: new Date(sinceMs).toISOString(),
    to: now.toISOString(),
    bucket_seconds: bucketSeconds,
    tier,
    metrics: out,
  };
}
