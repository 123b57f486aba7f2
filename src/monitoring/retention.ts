import { sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { rowsOf } from "./sql";

/** Raw samples are kept this long; older ones live on as hourly roll-ups. */
export const RAW_SAMPLE_HOURS = 48;
/** How long an agent event id is remembered for de-duplicating retried batches. */
export const EVENT_ID_DAYS = 7;

/**
 * Keeps storage bounded: folds raw samples older than 48 h into per-hour rows (sums and
 * extremes, so uptime and averages stay exact), and deletes everything older than the
 * retention period. Safe to run on several instances at once: the fold deletes the raw rows
 * it aggregates in the same statement, so a row is counted by whichever instance deletes it.
 */
export async function pruneAndRollUp(db: Db, retentionDays: number, now = new Date()) {
  const horizon = new Date(now.getTime() - retentionDays * 86_400_000).toISOString();
  // Whole hours only, so an hour is never split between raw rows and its roll-up.
  const rawCutoff = new Date(
    Math.floor((now.getTime() - RAW_SAMPLE_HOURS * 3600_000) / 3600_000) * 3600_000,
  ).toISOString();
  const eventCutoff = new Date(now.getTime() - EVENT_ID_DAYS * 86_400_000).toISOString();
  return db.transaction(async (tx) => {
    const prunedRaw = rowsOf<{ n: number }>(
      await tx.execute(
        sql`with d as (delete from server_samples where ts < ${horizon}::timestamptz returning 1) select count(*)::int as n from d`,
      ),
    )[0]!.n;
    const folded = rowsOf<{ n: number }>(
      await tx.execute(sql`
        with moved as (delete from server_samples where ts < ${rawCutoff}::timestamptz returning *),
        ins as (
          insert into server_sample_hours as h
            (server_id, hour, up_count, down_count, latency_count, latency_sum, latency_min, latency_max, latency_p95, players_sum)
          select server_id, date_bin(interval '1 hour', ts, timestamptz '2000-01-01 00:00:00+00'),
                 count(*) filter (where online), count(*) filter (where not online), count(latency_ms),
                 coalesce(sum(latency_ms), 0), min(latency_ms), max(latency_ms),
                 percentile_disc(0.95) within group (order by latency_ms),
                 coalesce(sum(players_online) filter (where online), 0)
            from moved group by 1, 2
          on conflict (server_id, hour) do update set
            up_count = h.up_count + excluded.up_count,
            down_count = h.down_count + excluded.down_count,
            latency_count = h.latency_count + excluded.latency_count,
            latency_sum = h.latency_sum + excluded.latency_sum,
            latency_min = least(h.latency_min, excluded.latency_min),
            latency_max = greatest(h.latency_max, excluded.latency_max),
            latency_p95 = greatest(h.latency_p95, excluded.latency_p95),
            players_sum = h.players_sum + excluded.players_sum
          returning 1)
        select (select count(*) from moved)::int as n`),
    )[0]!.n;
    const prunedHours = rowsOf<{ n: number }>(
      await tx.execute(
        sql`with d as (delete from server_sample_hours where hour < ${horizon}::timestamptz returning 1) select count(*)::int as n from d`,
      ),
    )[0]!.n;
    await tx.execute(sql`delete from agent_events where received_at < ${eventCutoff}::timestamptz`);
    // Time played is kept on the player; closed sessions past the retention period are history nobody reads.
    await tx.execute(sql`delete from player_sessions where left_at is not null and left_at < ${horizon}::timestamptz`);
    return { pruned_raw: prunedRaw, folded_raw: folded, pruned_hours: prunedHours };
  });
}
