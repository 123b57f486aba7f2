import { sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { actorName } from "../audit/entry";
import type { AuditActor } from "../audit/scope";
import { currentAuditScope } from "../audit/scope";

/** A database handle or a transaction: the directory is kept in the transaction of the change it follows. */
type Tx = Parameters<Parameters<Db["transaction"]>[0]>[0] | Db;

const at_ = (d: Date) => sql`${d.toISOString()}::timestamptz`;
const teamOf = (serverId: string) => sql`(select team_id from servers where id = ${serverId}::uuid)`;

/**
 * A join on one of the team's servers: the directory row is made or brought up to date (a
 * session more; the name becomes the current one unless a later join is already known, as a
 * backfill can arrive out of order), and the name goes into the player's name history.
 */
export async function directoryJoin(tx: Tx, serverId: string, uuid: string, name: string, at: Date) {
  await tx.execute(sql`
    with v as (select ${uuid}::uuid as uuid, ${name}::text as name, ${at_(at)} as at),
    ${DIRECTORY_JOIN(serverId)}
    select 1`);
}

/**
 * `directoryJoin` for many joins (one a player) as CTEs (dir_team, dir_tp, dir_names) of the
 * statement that opens their sessions, given its relation `v` (uuid, name, at).
 */
export const DIRECTORY_JOIN = (serverId: string) => sql`
  dir_team as (select ${teamOf(serverId)} as id),
  dir_tp as (
    insert into team_players (team_id, uuid, name, first_seen, last_seen, sessions)
    select dir_team.id, v.uuid, v.name, v.at, v.at, 1 from dir_team, v
    on conflict (team_id, uuid) do update set
      name = case when excluded.last_seen >= team_players.last_seen then excluded.name else team_players.name end,
      first_seen = least(team_players.first_seen, excluded.first_seen),
      last_seen = greatest(team_players.last_seen, excluded.last_seen),
      sessions = team_players.sessions + 1
    returning 1),
  dir_names as (
    insert into player_names (team_id, uuid, name, first_used, last_used)
    select dir_team.id, v.uuid, v.name, v.at, v.at from dir_team, v
    on conflict (team_id, uuid, name) do update set
      first_used = least(player_names.first_used, excluded.first_used),
      last_used = greatest(player_names.last_used, excluded.last_used)
    returning 1)`;

/** A leave: the player was last seen then. */
export async function directoryLeave(tx: Tx, serverId: string, uuid: string, at: Date) {
  await tx.execute(sql`
    update team_players set last_seen = greatest(last_seen, ${at_(at)})
     where team_id = ${teamOf(serverId)} and uuid = ${uuid}::uuid`);
}

/**
 * The directory's part of the statement that closes sessions (`closeSessions`,
 * src/servers/players.ts), given its CTE `sums` (server_id, uuid, secs, last): time played and
 * last seen added per team, in the same statement, so a session is counted once.
 */
export const DIRECTORY_FROM_SUMS = sql`
  team_played as (
    update team_players t
       set play_seconds = t.play_seconds + x.secs, last_seen = greatest(t.last_seen, x.last)
      from (select sv.team_id, sums.uuid, sum(sums.secs)::bigint as secs, max(sums.last) as last
              from sums join servers sv on sv.id = sums.server_id
             group by sv.team_id, sums.uuid) x
     where t.team_id = x.team_id and t.uuid = x.uuid
    returning 1)`;

export interface ModerationAct {
  serverId: string;
  uuid: string;
  name: string | null;
  action: "ban" | "unban" | "kick";
  reason?: string | null;
  source?: string | null;
  expiresAt?: Date | null;
  /** When it happened; absent: the transaction's now(), the default of the row it records (a kick's created_at). */
  at?: Date;
}

/**
 * Records a ban, a lift or a kick in the team's moderation history, in the act's transaction.
 * The actor is the request's (the audit scope the tRPC layer opened): a person or an API key
 * from the dashboard or the API; for what the agent reports, the game.
 */
export async function recordModeration(tx: Tx, act: ModerationAct) {
  const actor: AuditActor = currentAuditScope()?.actor ?? { kind: "system", name: "system" };
  const fromGame = actor.kind === "agent";
  await tx.execute(sql`
    insert into moderation_events
      (team_id, server_id, server_name, uuid, name, action, origin, actor_kind, actor_id, actor_name, reason, source, expires_at, at)
    select sv.team_id, sv.id, sv.name, ${act.uuid}::uuid, ${act.name}, ${act.action}::moderation_action,
           ${fromGame ? "game" : "dashboard"}::ban_origin, ${actor.kind}::audit_actor_kind,
           ${actor.kind === "system" ? null : actor.id}::uuid,
           ${fromGame ? sql`'game'` : actorName(actor)},
           ${act.reason ?? null}, ${act.source ?? null},
           ${act.expiresAt ? at_(act.expiresAt) : null}::timestamptz, ${act.at ? at_(act.at) : sql`now()`}
      from servers sv where sv.id = ${act.serverId}::uuid`);
}
