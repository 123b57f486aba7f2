import { sql } from "drizzle-orm";
import type { Db } from "../src/db/client";
import { rowsOf } from "../src/db/rows";
import { COHORT_COLUMNS } from "../src/db/schema/analytics";

/** Every analytics aggregate row of a team, in a stable order, for comparing with a rebuild. */
export async function dumpAggregates(db: Db, teamId: string) {
  const q = async (text: ReturnType<typeof sql>) => rowsOf<Record<string, unknown>>(await db.execute(text));
  return {
    hours: await q(sql`select h.server_id::text, h.hour::text, h.uuid::text, q0, q1, q2, q3, seen, joins
      from analytics_player_hours h join servers sv on sv.id = h.server_id where sv.team_id = ${teamId}
      order by 1, 2, 3`),
    slots:
      await q(sql`select scope, slot::text, online_ms::text, start_level, peak, peak_at::text, bedrock_ms::text, len0, len1, len2, len3, len4, len5, len6 from analytics_slots
      where team_id = ${teamId} and (online_ms > 0 or start_level > 0 or peak > 0 or len0 + len1 + len2 + len3 + len4 + len5 + len6 > 0) order by 1, 2`),
    months:
      await q(sql`select scope, month::text, uuid::text, ms::text, first_at::text, last_at::text, prev_at::text, prev_ms::text, pair_ms::text,
        prev2_ms::text, prev3_ms::text, prev4_ms::text, prev5_ms::text, tri_ms::text, quad_ms::text, quint_ms::text, sext_ms::text
      from analytics_player_months where team_id = ${teamId} order by 1, 2, 3`),
    counts: await q(sql`select scope, month::text, bedrock, players, firsts, ms::text from analytics_month_counts
      where team_id = ${teamId} and (players <> 0 or firsts <> 0 or ms <> 0) order by 1, 2, 3`),
    totals: await q(sql`select scope, uuid::text, ms::text from analytics_player_totals
      where team_id = ${teamId} order by 1, 2`),
    weeks:
      await q(sql`select scope, week::text, uuid::text, ms::text, first_at::text, last_at::text, next_at::text, ms1::text, ms2::text, ms3::text, g0, g1, g2, g3 from analytics_player_weeks
      where team_id = ${teamId} order by 1, 2, 3`),
    cohorts:
      await q(sql`select scope, cohort::text, week::text, ${sql.raw(COHORT_COLUMNS.join(", "))} from analytics_cohort_weeks
      where team_id = ${teamId} and (${sql.raw(COHORT_COLUMNS.map((c) => `${c} <> 0`).join(" or "))}) order by 1, 2, 3`),
    activity:
      await q(sql`select scope, week::text, very_active, active, regular, irregular from analytics_activity_weeks
      where team_id = ${teamId} and (very_active, active, regular, irregular) <> (0, 0, 0, 0) order by 1, 2`),
  };
}
