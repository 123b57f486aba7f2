import { sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { rowsOf } from "../db/rows";
import { moveActivity, moveCohorts, rebuildPlayerMonths } from "../analytics/aggregates";
import { rebuildDays } from "./holders";

/**
 * The teams' own retention (docs/privacy.md, "Retention"), run by the hourly retention job:
 * closed sessions and their daily rollups past a team's session retention are deleted, and
 * players not seen for the team's player retention (PLAYER_DATA_MAX_RETENTION_DAYS when the team
 * set none) are forgotten with their sessions and rollups, the days they were in rebuilt. Bans
 * stay (a ban outlives the player's data, as after an erasure); audit entries follow
 * AUDIT_RETENTION_DAYS.
 */
export async function pruneTeamPlayerData(db: Db, maxRetentionDays: number, now = new Date()) {
  const at = now.toISOString();
  const count = async (statement: ReturnType<typeof sql>) =>
    rowsOf<{ n: number }>(
      await db.execute(sql`with d as (${statement} returning 1) select count(*)::int as n from d`),
    )[0]!.n;
  const cutoff = sql`(${at}::timestamptz - tp.session_retention_days * interval '1 day')`;
  const sessions = await count(sql`
    delete from player_sessions s using servers v, team_privacy tp
     where s.server_id = v.id and tp.team_id = v.team_id and tp.session_retention_days is not null
       and s.left_at is not null and s.left_at < ${cutoff}`);
  // The day the cutoff falls in stays, as the platform-wide retention does.
  for (const table of ["player_days", "server_days"])
    await db.execute(sql`
      delete from ${sql.raw(table)} r using servers v, team_privacy tp
       where r.server_id = v.id and tp.team_id = v.team_id and tp.session_retention_days is not null
         and r.day < date_bin('1 day', ${cutoff}, timestamptz '2000-01-01 00:00:00+00')`);
  const forgotten = await db.transaction(async (tx) => {
    const gone = rowsOf<{ server_id: string; uuid: string }>(
      await tx.execute(sql`
        delete from players p using servers v left join team_privacy tp on tp.team_id = v.team_id
         where p.server_id = v.id and not p.online
           and p.last_seen < ${at}::timestamptz - least(coalesce(tp.player_retention_days, ${maxRetentionDays}), ${maxRetentionDays}) * interval '1 day'
        returning p.server_id::text as server_id, p.uuid::text as uuid`),
    );
    if (gone.length === 0) return 0;
    const list = sql`select x.server_id, x.uuid from json_to_recordset(${JSON.stringify(gone)}::json) as x(server_id uuid, uuid uuid)`;
    await tx.execute(
      sql`delete from player_sessions s using (${list}) g where s.server_id = g.server_id and s.uuid = g.uuid`,
    );
    await tx.execute(sql`delete from kicks k using (${list}) g where k.server_id = g.server_id and k.uuid = g.uuid`);
    const hours = sql`select h.* from analytics_player_hours h join (${list}) g on h.server_id = g.server_id and h.uuid = g.uuid`;
    await moveActivity(tx, hours, -1);
    await moveCohorts(tx, hours);
    await tx.execute(
      sql`delete from analytics_player_hours h using (${list}) g where h.server_id = g.server_id and h.uuid = g.uuid`,
    );
    await rebuildPlayerMonths(tx, list);
    // The team-wide rows go when the player is left on none of the team's servers; moderation
    // records (bans, their history, notes) stay until an erasure, as bans must.
    const teamWide = sql`
      select distinct v.team_id, g.uuid from (${list}) g join servers v on v.id = g.server_id
       where not exists (
         select 1 from players p join servers v2 on v2.id = p.server_id where v2.team_id = v.team_id and p.uuid = g.uuid)`;
    for (const table of ["team_players", "player_names", "network_sessions"])
      await tx.execute(
        sql`delete from ${sql.raw(table)} x using (${teamWide}) t where x.team_id = t.team_id and x.uuid = t.uuid`,
      );
    const days = rowsOf<{ server_id: string; day: Date | string }>(
      await tx.execute(sql`
        delete from player_days d using (${list}) g where d.server_id = g.server_id and d.uuid = g.uuid
        returning d.server_id::text as server_id, d.day`),
    );
    await rebuildDays(
      tx,
      days.map((d) => ({ server_id: d.server_id, day: new Date(d.day).toISOString() })),
    );
    return gone.length;
  });
  return { pruned_team_sessions: sessions, forgotten_players: forgotten };
}
