/**
 * The baselines: the same answers computed the way the service did before metric buckets, one
 * SQL aggregate over the raw 30 s samples of the window.
 */
import { sql } from "drizzle-orm";
import type { Db } from "../../src/db/client";
import { rowsOf } from "../../src/db/rows";

const ORIGIN = sql`timestamptz '2000-01-01 00:00:00+00'`;

/** uptime-stats?window=30d over raw samples: summary, p95 and 6 h buckets. */
export async function rawUptime30d(db: Db, serverId: string) {
  const since = new Date(Date.now() - 30 * 86_400_000).toISOString();
  const bucket = 6 * 3600;
  const [summary, p95, buckets] = await Promise.all([
    db.execute(sql`
      select count(*) filter (where online)::int as up, count(*) filter (where not online)::int as down,
             avg(latency_ms)::float8 as avg, min(latency_ms) as min, max(latency_ms) as max
        from server_samples where server_id = ${serverId} and ts >= ${since}::timestamptz`),
    db.execute(sql`
      select percentile_disc(0.95) within group (order by latency_ms) as p95
        from server_samples where server_id = ${serverId} and ts >= ${since}::timestamptz`),
    db.execute(sql`
      select date_bin(make_interval(secs => ${bucket}), ts, ${ORIGIN}) as start,
             count(*) filter (where online)::int as up, count(*) filter (where not online)::int as down,
             avg(latency_ms)::float8 as latency_avg_ms, max(latency_ms) as latency_max_ms,
             avg(players_online)::float8 as players_avg
        from server_samples where server_id = ${serverId} and ts >= ${since}::timestamptz
       group by 1 order by 1`),
  ]);
  return { ...rowsOf(summary)[0]!, ...rowsOf(p95)[0]!, buckets: rowsOf(buckets) };
}

/** metrics?window=30d over raw samples: min/avg/max of what a ping measures, per 6 h bucket. */
export async function rawMetrics30d(db: Db, serverId: string) {
  const since = new Date(Date.now() - 30 * 86_400_000).toISOString();
  const result = await db.execute(sql`
    select date_bin(make_interval(secs => ${6 * 3600}), ts, ${ORIGIN}) as ts,
           min(players_online) as players_min, avg(players_online)::float8 as players_avg, max(players_online) as players_max,
           min(latency_ms) as latency_min, avg(latency_ms)::float8 as latency_avg, max(latency_ms) as latency_max,
           min(online::int) as online_min, avg(online::int)::float8 as online_avg, max(online::int) as online_max
      from server_samples where server_id = ${serverId} and ts >= ${since}::timestamptz
     group by 1 order by 1`);
  return { metrics: rowsOf(result) };
}
