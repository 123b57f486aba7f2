import { sql, type SQL } from "drizzle-orm";
import type { Db } from "../db/client";
import { rowsOf } from "../db/rows";

/** A database handle or an open transaction: these run inside the ingest's own transaction. */
type Tx = Parameters<Parameters<Db["transaction"]>[0]>[0] | Db;

/** NETWORK_HOP_GAP_SECONDS when a caller does not say (docs/configuration.md). */
export const DEFAULT_HOP_GAP_SECONDS = 30;

/**
 * A player's network sessions on one network change one at a time: every writer takes the
 * (network, player) transaction lock first, for all the players it writes, in one order (the
 * keys sorted bytewise). Network sessions of different players never share a row, so batches of
 * two servers of one network about different players run side by side; about the same players,
 * they wait for each other instead of deadlocking on those players' rows. A batch holds its
 * server's row and then these locks, never the other way round.
 */
export async function lockNetworkPlayers(tx: Tx, keys: { teamId: string; networkName: string; uuid: string }[]) {
  if (keys.length === 0) return;
  await tx.execute(sql`
    select count(pg_advisory_xact_lock(hashtextextended(k, 0))) from (
      select k from (values ${sql.join(
        keys.map((x) => sql`(${networkPlayerKey(x.teamId, x.networkName, x.uuid)})`),
        sql`, `,
      )}) v(k) group by k order by k collate "C") x`);
}

const networkPlayerKey = (teamId: string, networkName: string, uuid: string) =>
  `network/${teamId}/${networkName}/${uuid.toLowerCase()}`;

/** The network a server of kind `network` belongs to. */
export interface ServerNetwork {
  teamId: string;
  networkName: string;
}

/**
 * Player sessions just opened on a server of network `n` join their network sessions: each
 * player's latest one on the network that started before the join (a late event from long ago
 * does not reach into a later session), when a hop of it is still open (a transfer that joins
 * before it leaves) or it ended at most `gapSeconds` before the join (docs/networks.md); else a
 * new one. CTEs of the statement that opens the sessions (src/servers/players.ts), given its
 * relation `v` (uuid, at, one row a player) and CTE `opened` (id, uuid), under the network's
 * lock. The statement's snapshot does not see the new sessions, so an open hop found is another.
 */
export const NETWORK_JOIN = (n: ServerNetwork, gapSeconds: number) => sql`
  net_latest as (
    select v.uuid, v.at, l.id, l.left_at from v
     cross join lateral (
       select id, left_at from network_sessions
        where team_id = ${n.teamId} and network_name = ${n.networkName} and uuid = v.uuid
          and joined_at <= v.at + make_interval(secs => ${gapSeconds})
        -- uuid first (it is fixed here, so the order is the same): only the player index gives
        -- this order. A network new since the table's statistics were taken looks one row long
        -- to the planner, which then took the time index and filtered every session of the
        -- network by player (8,650 rows a player, 266 ms a batch, and growing as it filled).
        order by uuid desc, joined_at desc, id desc limit 1) l),
  net_found as (
    update network_sessions ns set joined_at = least(ns.joined_at, latest.at)
      from net_latest latest
     where ns.id = latest.id
       and (latest.left_at >= latest.at - make_interval(secs => ${gapSeconds})
            or exists (
              select 1 from network_session_hops h join player_sessions s on s.id = h.session_id
               where h.network_session_id = latest.id and s.left_at is null))
    returning ns.id, ns.uuid),
  net_made as (
    insert into network_sessions (team_id, network_name, uuid, joined_at)
    select ${n.teamId}, ${n.networkName}, v.uuid, v.at from v
     where not exists (select 1 from net_found f where f.uuid = v.uuid)
    returning id, uuid),
  net_hop as (
    insert into network_session_hops (session_id, network_session_id)
    select o.id, x.id from opened o join (select id, uuid from net_found union all select id, uuid from net_made) x
      on x.uuid = o.uuid
    returning 1)`;

/**
 * Before sessions that `where` selects (over `player_sessions s`) are closed: locks the
 * (network, player) pairs whose network sessions they are hops of, so the close may move those
 * sessions' ends.
 */
export async function lockNetworksOfOpen(tx: Tx, where: SQL) {
  const keys = rowsOf<{ team_id: string; network_name: string; uuid: string }>(
    await tx.execute(sql`
      select distinct ns.team_id::text as team_id, ns.network_name, s.uuid::text as uuid
        from player_sessions s
        join network_session_hops h on h.session_id = s.id
        join network_sessions ns on ns.id = h.network_session_id
       where s.left_at is null and ${where}`),
  );
  await lockNetworkPlayers(
    tx,
    keys.map((k) => ({ teamId: k.team_id, networkName: k.network_name, uuid: k.uuid })),
  );
}

/**
 * The part of the closing statement (after its CTE `closed` with id and left_at) that moves each
 * touched network session's end to its latest closed hop.
 */
export const NETWORK_END_FROM_CLOSED = sql`
  net_ends as (
    update network_sessions ns set left_at = greatest(ns.left_at, x.last)
      from (select h.network_session_id, max(c.left_at) as last
              from closed c join network_session_hops h on h.session_id = c.id
             group by h.network_session_id) x
     where ns.id = x.network_session_id
    returning ns.id)`;
