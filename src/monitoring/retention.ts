import { sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { rowsOf } from "../db/rows";
import { pruneTeamPlayerData } from "../privacy/retention";

/** How long an agent event id is remembered for de-duplicating retried batches. */
export const EVENT_ID_DAYS = 7;

export interface HistoryRetention {
  /** Raw ping samples and one-minute buckets. */
  minuteHours: number;
  /** One-hour buckets (and closed player sessions, ended incidents). */
  hourDays: number;
  /** Audit log entries (AUDIT_RETENTION_DAYS); unset: kept. */
  auditDays?: number;
  /** PLAYER_DATA_MAX_RETENTION_DAYS: teams' own retention and the players nobody has seen for this long; unset: not run. */
  playerDataDays?: number;
}

/**
 * Keeps storage bounded. Nothing is folded here: both tiers were filled as the data arrived,
 * so pruning a tier is a plain delete by time, and two instances pruning at once only race to
 * delete the same rows.
 */
export async function pruneHistory(db: Db, keep: HistoryRetention, now = new Date()) {
  const minuteCutoff = new Date(now.getTime() - keep.minuteHours * 3600_000).toISOString();
  const hourCutoff = new Date(now.getTime() - keep.hourDays * 86_400_000).toISOString();
  const eventCutoff = new Date(now.getTime() - EVENT_ID_DAYS * 86_400_000).toISOString();
  const count = async (statement: ReturnType<typeof sql>) =>
    rowsOf<{ n: number }>(
      await db.execute(sql`with d as (${statement} returning 1) select count(*)::int as n from d`),
    )[0]!.n;
  const prunedRaw = await count(sql`delete from server_samples where ts < ${minuteCutoff}::timestamptz`);
  const prunedMinutes = await count(sql`delete from server_metrics_minute where bucket < ${minuteCutoff}::timestamptz`);
  const prunedHours = await count(sql`delete from server_metrics_hour where bucket < ${hourCutoff}::timestamptz`);
  await db.execute(sql`delete from agent_events where received_at < ${eventCutoff}::timestamptz`);
  // Time played is kept on the player; closed sessions past the retention period are history nobody reads.
  await db.execute(sql`delete from player_sessions where left_at is not null and left_at < ${hourCutoff}::timestamptz`);
  // Network sessions go with their hops: ended before the cutoff, and none of their hops left.
  await db.execute(sql`
    delete from network_sessions ns
     where ns.left_at < ${hourCutoff}::timestamptz
       and not exists (select 1 from network_session_hops h where h.network_session_id = ns.id)`);
  // Incidents are read beside the hourly buckets, so they are kept as long.
  await db.execute(sql`delete from server_incidents where ended_at < ${hourCutoff}::timestamptz`);
  // Daily rollups of the sessions: the day the cutoff falls in stays (a summary's first day is read raw from it).
  for (const table of ["player_days", "server_days"])
    await db.execute(
      sql`delete from ${sql.raw(table)} where day < date_bin('1 day', ${hourCutoff}::timestamptz, timestamptz '2000-01-01 00:00:00+00')`,
    );
  // The only path that removes audit entries: by age, never by what they say.
  const prunedAudit =
    keep.auditDays === undefined
      ? 0
      : await count(
          sql`delete from audit_log where at < ${new Date(now.getTime() - keep.auditDays * 86_400_000).toISOString()}::timestamptz`,
        );
  const players =
    keep.playerDataDays === undefined
      ? { pruned_team_sessions: 0, forgotten_players: 0 }
      : await pruneTeamPlayerData(db, keep.playerDataDays, now);
  return {
    pruned_raw: prunedRaw,
    pruned_minutes: prunedMinutes,
    pruned_hours: prunedHours,
    pruned_audit: prunedAudit,
    ...players,
  };
}
