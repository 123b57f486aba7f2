import { sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { rowsOf } from "./sql";

export const UPTIME_WINDOWS = {
  "1h": { seconds: 3600, bucketSeconds: 60 },
  "24h": { seconds: 86_400, bucketSeconds: 600 },
  "7d": { seconds: 7 * 86_400, bucketSeconds: 3600 },
  "30d": { seconds: 30 * 86_400, bucketSeconds: 6 * 3600 },
} as const;
export type UptimeWindow = keyof typeof UPTIME_WINDOWS;

/**
 * Raw samples and hourly roll-ups as one stream of partial aggregates, so every figure below
 * is a sum over both (raw samples are the last 48 h, roll-ups the hours before; they never overlap).
 */
const units = (serverId: string, since: string) => sql`
  select s.ts as t, s.online::int as up, (not s.online)::int as down,
         (s.latency_ms is not null)::int as lc, coalesce(s.latency_ms, 0)::float8 as ls,
         s.latency_ms as lmin, s.latency_ms as lmax, coalesce(s.players_online, 0)::float8 as ps
    from server_samples s
   where s.server_id = ${serverId} and s.ts >= ${since}::timestamptz
  union all
  select h.hour, h.up_count, h.down_count, h.latency_count, h.latency_sum, h.latency_min, h.latency_max, h.players_sum::float8
    from server_sample_hours h
   where h.server_id = ${serverId} and h.hour >= ${since}::timestamptz`;

/**
 * The 95th percentile by nearest rank. Over raw samples it is exact; an hour that has been
 * rolled up contributes its own p95 weighted by its sample count, an approximation.
 */
const p95 = (serverId: string, since: string) => sql`
  with vals as (
    select latency_ms::float8 as v, 1 as w from server_samples
     where server_id = ${serverId} and ts >= ${since}::timestamptz and latency_ms is not null
    union all
    select latency_p95, latency_count from server_sample_hours
     where server_id = ${serverId} and hour >= ${since}::timestamptz and latency_p95 is not null),
  ranked as (select v, sum(w) over (order by v rows unbounded preceding) as cum, sum(w) over () as total from vals)
  select min(v)::float8 as p95 from ranked where cum >= 0.95 * total`;

interface SummaryRow {
  up: number;
  down: number;
  lc: number;
  avg: number | null;
  min: number | null;
  max: number | null;
}
interface BucketRow {
  start_ms: number;
  up: number;
  down: number;
  avg: number | null;
  max: number | null;
  players: number | null;
}

const round = (n: number | null, digits = 2) =>
  n === null || n === undefined ? null : Math.round(Number(n) * 10 ** digits) / 10 ** digits;
const ratio = (up: number, down: number) => (up + down === 0 ? null : Math.round((up / (up + down)) * 1e6) / 1e6);

/** Uptime and latency of one server over a window, with evenly spaced buckets for a graph. */
export async function uptimeStats(db: Db, serverId: string, window: UptimeWindow, now = new Date()) {
  const { seconds, bucketSeconds } = UPTIME_WINDOWS[window];
  const since = new Date(now.getTime() - seconds * 1000).toISOString();
  const to = now.toISOString();
  const [summary, percentile, buckets] = await Promise.all([
    db.execute(sql`
      with u as (${units(serverId, since)})
      select coalesce(sum(up), 0)::int as up, coalesce(sum(down), 0)::int as down, coalesce(sum(lc), 0)::int as lc,
             (sum(ls) / nullif(sum(lc), 0))::float8 as avg, min(lmin)::int as min, max(lmax)::int as max
        from u`),
    db.execute(p95(serverId, since)),
    db.execute(sql`
      with u as (${units(serverId, since)}),
      agg as (
        select date_bin(make_interval(secs => ${bucketSeconds}), t, timestamptz '2000-01-01 00:00:00+00') as b,
               sum(up) as up, sum(down) as down, sum(ls) / nullif(sum(lc), 0) as avg, max(lmax) as max, sum(ps) / nullif(sum(up), 0) as players
          from u group by 1),
      grid as (
        select generate_series(
                 date_bin(make_interval(secs => ${bucketSeconds}), ${since}::timestamptz, timestamptz '2000-01-01 00:00:00+00'),
                 ${to}::timestamptz, make_interval(secs => ${bucketSeconds})) as b)
      select (extract(epoch from grid.b) * 1000)::float8 as start_ms, coalesce(agg.up, 0)::int as up, coalesce(agg.down, 0)::int as down,
             agg.avg::float8 as avg, agg.max::int as max, agg.players::float8 as players
        from grid left join agg on agg.b = grid.b
       order by grid.b`),
  ]);
  const s = rowsOf<SummaryRow>(summary)[0]!;
  return {
    server_id: serverId,
    window,
    from: since,
    to,
    bucket_seconds: bucketSeconds,
    samples: s.up + s.down,
    up: s.up,
    down: s.down,
    uptime: ratio(s.up, s.down),
    latency_ms: {
      avg: round(s.avg),
      min: s.min,
      max: s.max,
      p95: round(rowsOf<{ p95: number | null }>(percentile)[0]?.p95 ?? null),
    },
    buckets: rowsOf<BucketRow>(buckets).map((b) => ({
      start: new Date(Number(b.start_ms)).toISOString(),
      up: b.up,
      down: b.down,
      uptime: ratio(b.up, b.down),
      latency_avg_ms: round(b.avg),
      latency_max_ms: b.max,
      players_avg: round(b.players),
    })),
  };
}
