import { and, asc, count, desc, eq, gt, isNull, lte, or, type SQL, sql } from "drizzle-orm";
import { NO_EVENTS, type ServerEventSink } from "../realtime/events";
import type { Db } from "../db/client";
import { bans, kicks, players, playerSessions, servers } from "../db/schema";
import { AppError } from "../lib/errors";
import { LIMITS, overLimit } from "../lib/limits";
import { iso } from "../lib/schemas";
import type { Principal } from "../auth/principal";
import { requireServerRole } from "./access";
import { executeNamed } from "../db/prepared";
import { rowsOf, uuidArray } from "../db/rows";
import { audit } from "../audit/entry";
import {
  DEFAULT_HOP_GAP_SECONDS,
  lockNetworkPlayers,
  lockNetworksOfOpen,
  NETWORK_END_FROM_CLOSED,
  NETWORK_JOIN,
  type ServerNetwork,
} from "../networks/ingest";
import { DIRECTORY_FROM_SUMS, DIRECTORY_JOIN, recordModeration } from "../player-directory/ingest";
import { resolveOne } from "../player-directory/resolve";
import { addSessions, type Span } from "../analytics/aggregates";

/** A database handle or a transaction: the event appliers run inside the agent's batch transaction. */
export type Tx = Parameters<Parameters<Db["transaction"]>[0]>[0] | Db;
type BanRow = typeof bans.$inferSelect;
type Origin = "dashboard" | "game";

/** A time as a typed SQL parameter: postgres-js cannot bind a bare Date inside raw SQL. */
export const ts = (d: Date) => sql`${d.toISOString()}::timestamptz`;

export const banOut = (b: BanRow) => ({
  uuid: b.uuid,
  name: b.name,
  reason: b.reason,
  source: b.source,
  origin: b.origin,
  created: iso(b.createdAt),
  expires: b.expiresAt ? iso(b.expiresAt) : ("forever" as const),
});

/** What the audit log records of a ban. */
export const banFields = (b: BanRow) => ({
  reason: b.reason,
  source: b.source,
  origin: b.origin,
  expires: b.expiresAt ? iso(b.expiresAt) : "forever",
});

/** Writes the audit entry of a ban made (`after`) or lifted, inside the change's transaction. */
export async function auditBan(
  tx: Tx,
  teamId: string,
  serverId: string,
  uuid: string,
  name: string | null,
  made: BanRow | null,
) {
  await recordModeration(tx, {
    serverId,
    uuid,
    name,
    action: made ? "ban" : "unban",
    ...(made && { reason: made.reason, source: made.source, expiresAt: made.expiresAt, at: made.createdAt }),
  });
  return audit(tx, {
    teamId,
    action: made ? "player.ban" : "player.unban",
    target: { type: "player", id: uuid, name },
    serverId,
    ...(made ? { after: banFields(made) } : { changes: { banned: { before: true, after: false } } }),
  });
}

/**
 * How long a kick waits for the agent: several of its configuration reads (every 30 s by default),
 * and short enough that a player who comes back later is not kicked for something long past.
 */
export const KICK_WINDOW_SECONDS = 120;
type KickRow = typeof kicks.$inferSelect;

export const kickOut = (k: KickRow) => ({
  kick_id: k.id,
  uuid: k.uuid,
  name: k.name,
  reason: k.reason,
  created: iso(k.createdAt),
  until: iso(new Date(k.createdAt.getTime() + KICK_WINDOW_SECONDS * 1000)),
});

/** Kicks the agent should still carry out. */
export const pendingKick = (serverId: string) =>
  and(
    eq(kicks.serverId, serverId),
    gt(kicks.createdAt, sql`now() - ${sql.raw(`interval '${KICK_WINDOW_SECONDS} seconds'`)}`),
  );

/** Bans in force: not lifted and not expired. */
export const activeBan = (serverId: string) =>
  and(eq(bans.serverId, serverId), isNull(bans.liftedAt), or(isNull(bans.expiresAt), gt(bans.expiresAt, sql`now()`)));

export interface BanInput {
  uuid: string;
  name: string;
  reason?: string;
  source?: string;
  expires?: string | null;
  created?: string;
}

export type SessionEnd = "leave" | "rejoin" | "agent_silent" | "not_seen" | "server_offline";

/** A join or a leave of one player, as the agent reports it. */
export type PlayerEvent =
  | { type: "join"; uuid: string; name: string; at: Date }
  | { type: "leave"; uuid: string; name?: string; at: Date };

/**
 * Applies joins and leaves on one server, in their order, in the caller's transaction (which
 * holds the server's row, as every opener and closer of its sessions does). Events of different
 * players touch different rows (the player's row on the server, sessions, network sessions and
 * directory row are all the player's), so they go set-wise: round k applies each player's k-th
 * event of the batch, all leaves of the round in one statement and all joins in one. The
 * network sessions of the batch's players are locked once at its start; the sessions it
 * closed are added to the daily rollups and the analytics aggregates once at its end (those
 * only add up, and the peaks are recomputed from the closed sessions, so once gives what a
 * close at a time gives).
 */
export async function applyPlayerEvents(
  tx: Tx,
  serverId: string,
  events: PlayerEvent[],
  source: "agent" | "ping" = "agent",
  hopGapSeconds = DEFAULT_HOP_GAP_SECONDS,
) {
  if (events.length === 0) return;
  const rounds: PlayerEvent[][] = [];
  const seen = new Map<string, number>();
  for (const e of events) {
    const key = e.uuid.toLowerCase();
    const k = seen.get(key) ?? 0;
    seen.set(key, k + 1);
    if (!rounds[k]) rounds[k] = [];
    rounds[k].push({ ...e, uuid: key });
  }
  // One order for the rows the statements lock (the team directory's rows are shared by the team's servers).
  for (const r of rounds) r.sort((a, b) => (a.uuid < b.uuid ? -1 : a.uuid > b.uuid ? 1 : 0));
  const { open, network } = await startBatch(tx, serverId, [...seen.keys()]);
  const spans: Span[] = [];
  for (const round of rounds) {
    const leaves = round.filter((e) => e.type === "leave");
    const joins = round.filter((e) => e.type === "join");
    if (leaves.length > 0) {
      const closing = leaves.filter((e) => open.has(e.uuid));
      const closed =
        closing.length === 0
          ? []
          : await closeOnly(tx, {
              ...eventsOf(serverId, closing),
              end: sql`v.at`,
              reason: "leave",
              spans,
              leaveName: sql`nullif(v.name, '')`,
              named: true,
            });
      for (const e of leaves) open.delete(e.uuid);
      const done = new Set(closed.map((c) => c.uuid));
      const rest = leaves.filter((e) => !done.has(e.uuid));
      if (rest.length > 0) await leaveWithoutSession(tx, serverId, rest);
    }
    if (joins.length > 0) {
      const rejoining = joins.filter((e) => open.has(e.uuid));
      if (rejoining.length > 0)
        await closeOnly(tx, {
          ...eventsOf(serverId, rejoining),
          end: sql`least(v.at, coalesce(s.seen_at, s.joined_at))`,
          reason: "rejoin",
          spans,
          named: true,
        });
      await openSessions(tx, serverId, joins, source, network, hopGapSeconds);
      for (const e of joins) open.add(e.uuid);
    }
  }
  await addClosed(tx, spans);
}

/** The events as the relation `v` (uuid, name, at) and the open sessions of their players on the server. */
function eventsOf(serverId: string, events: PlayerEvent[]) {
  const rows = events.map((e) => ({ uuid: e.uuid, name: e.name ?? null, at: e.at.toISOString() }));
  return {
    from: sql`(select x.uuid, x.name, x.at from json_to_recordset(${JSON.stringify(rows)}::json)
      as x(uuid uuid, name text, at timestamptz)) v`,
    where: sql`s.server_id = ${serverId} and s.uuid = v.uuid`,
  };
}

/**
 * Which of `uuids` have a session open on the server; the network sessions their joins and
 * leaves may change (on the server's network, and on those the open sessions are hops of) are
 * locked, per network and player, for the rest of the transaction (`lockNetworkPlayers`).
 */
async function startBatch(tx: Tx, serverId: string, uuids: string[]) {
  const rows = rowsOf<{ uuid: string | null; team_id: string | null; network_name: string | null; kind: string }>(
    await executeNamed(
      tx,
      sql`
      with open as (
        select s.id, s.uuid from player_sessions s
         where s.server_id = ${serverId} and s.left_at is null
           and s.uuid = any(${uuidArray(uuids)})),
      own as (
        select team_id, network_name from servers
         where id = ${serverId} and kind = 'network' and network_name is not null),
      nets as (
        select ns.team_id, ns.network_name, open.uuid from open
          join network_session_hops h on h.session_id = open.id
          join network_sessions ns on ns.id = h.network_session_id)
      select uuid::text as uuid, null::text as team_id, null::text as network_name, 'open' as kind from open
      union all
      select uuid::text, team_id::text, network_name, 'net' from nets
      union all
      select null, team_id::text, network_name, 'own' from own`,
    ),
  );
  const own = rows.find((r) => r.kind === "own");
  await lockNetworkPlayers(tx, [
    ...rows
      .filter((r) => r.kind === "net")
      .map((r) => ({ teamId: r.team_id!, networkName: r.network_name!, uuid: r.uuid! })),
    ...(own ? uuids.map((uuid) => ({ teamId: own.team_id!, networkName: own.network_name!, uuid })) : []),
  ]);
  return {
    open: new Set(rows.filter((r) => r.kind === "open").map((r) => r.uuid!)),
    network: own ? { teamId: own.team_id!, networkName: own.network_name! } : null,
  };
}

/**
 * A join: the player is known from now on. A session still open (a leave the plugin missed,
 * e.g. after a crash or a restart) is closed first, at the last time the player was known online.
 */
export async function applyJoin(
  tx: Tx,
  serverId: string,
  uuid: string,
  name: string,
  at: Date,
  source: "agent" | "ping" = "agent",
  hopGapSeconds = DEFAULT_HOP_GAP_SECONDS,
) {
  await applyPlayerEvents(tx, serverId, [{ type: "join", uuid, name, at }], source, hopGapSeconds);
}

/** A leave: the player's open session ends then; the player is offline and was last seen then. */
export async function applyLeave(tx: Tx, serverId: string, uuid: string, name: string | undefined, at: Date) {
  await applyPlayerEvents(tx, serverId, [{ type: "leave", uuid, name, at }]);
}

/**
 * Leaves whose player had no session open: offline, last seen then (here and in the team's
 * directory), under the name given.
 */
async function leaveWithoutSession(tx: Tx, serverId: string, leaves: PlayerEvent[]) {
  const { from } = eventsOf(serverId, leaves);
  await tx.execute(sql`
    with p as (
      update players p
         set online = false, last_seen = greatest(p.last_seen, v.at), name = coalesce(nullif(v.name, ''), p.name)
        from ${from}
       where p.server_id = ${serverId} and p.uuid = v.uuid
      returning 1)
    update team_players t set last_seen = greatest(t.last_seen, v.at)
      from ${from}
     where t.team_id = (select team_id from servers where id = ${serverId}) and t.uuid = v.uuid`);
}

/**
 * Opens a session for each join (one a player) in one statement: the player's row on the server
 * (online, first and last seen, name), the session, the team directory's row and name history
 * (DIRECTORY_JOIN) and, on a server of a network whose lock the caller holds, the network session
 * each is a hop of (NETWORK_JOIN). The caller closed the players' sessions still open first.
 */
async function openSessions(
  tx: Tx,
  serverId: string,
  joins: PlayerEvent[],
  source: "agent" | "ping",
  network: ServerNetwork | null,
  gapSeconds: number,
) {
  const { from } = eventsOf(serverId, joins);
  await executeNamed(
    tx,
    sql`
    with v as (select * from ${from}),
    pl as (
      insert into players (server_id, uuid, name, online, first_seen, last_seen)
      select ${serverId}::uuid, v.uuid, v.name, true, v.at, v.at from v
      on conflict (server_id, uuid) do update set
        name = excluded.name, online = true,
        first_seen = least(players.first_seen, excluded.first_seen),
        last_seen = greatest(players.last_seen, excluded.last_seen)
      returning 1),
    opened as (
      insert into player_sessions (server_id, uuid, joined_at, seen_at, source)
      select ${serverId}::uuid, v.uuid, v.at, v.at, ${source}::session_source from v
      returning id, uuid),
    ${DIRECTORY_JOIN(serverId)}
    ${network ? sql`, ${NETWORK_JOIN(network, gapSeconds)}` : sql``}
    select 1`,
  );
}

/** A player whose open session a closer ended: what a `player_leave` event carries. */
export interface ClosedPlayer {
  server_id: string;
  uuid: string;
  name: string;
}

/** Day boundaries are UTC midnights, as `date_bin` draws them from this origin. */
export const DAY_ORIGIN = sql`timestamptz '2000-01-01 00:00:00+00'`;

/**
 * Ends the open sessions `where` selects (over `player_sessions s`) at `end` (never before the
 * join), adds their lengths to time played and marks the players offline, in one statement so a
 * session is counted once however many closers race for it; then adds them to the daily rollups
 * (`player_days`, `server_days`) and the analytics aggregates (src/analytics/aggregates.ts) in
 * the same transaction. Each closer holds the server's row (`for update`), so the peak
 * recomputed next sees every session closed before it on that server. The network sessions the
 * closed ones are hops of end with them (src/networks/ingest.ts).
 * Returns the players it marked offline, for the closers whose leaves no agent reports (the live view is told).
 */
export async function closeSessions(tx: Tx, where: SQL, end: SQL, reason: SessionEnd): Promise<ClosedPlayer[]> {
  return tx.transaction(async (t) => {
    await lockNetworksOfOpen(t, where);
    const spans: Span[] = [];
    const left = await closeOnly(t, { where, end, reason, spans });
    await addClosed(t, spans);
    return left;
  });
}

/**
 * The longest a session lasts: a close later than this after its join ends it this long after
 * the join (`MAX_SESSION`). A join stamped years back (a server whose clock was wrong at boot, a
 * replayed log) would otherwise make a session of years, and the analytics keep a row per quarter
 * hour a session touches: a ten-year session took its batch 31 s and its player's erasure longer
 * than a request may take. docs/history.md, "Player sessions".
 */
const MAX_SESSION_DAYS = 31;
const MAX_SESSION = sql.raw(`interval '${MAX_SESSION_DAYS} days'`);

/**
 * The closing statement: sessions, players' time played, network sessions' ends and the
 * directory; the closed sessions are pushed on `spans` for the rollups (`addClosed`). `from`
 * joins a relation the update may read (`v`: the events of applyPlayerEvents), `leaveName` the
 * name a leave reports, if any, for the player's row. `named`: the statement's text is the same
 * every time (the events' own closes), so it is sent prepared (`executeNamed`); other closers'
 * conditions list servers or players in the text.
 */
async function closeOnly(
  tx: Tx,
  c: { where: SQL; end: SQL; reason: SessionEnd; spans: Span[]; from?: SQL; leaveName?: SQL; named?: boolean },
) {
  const rows = rowsOf<{
    kind: "player" | "span";
    server_id: string;
    uuid: string;
    name: string | null;
    a: string | null;
    b: string | null;
  }>(
    await (c.named ? executeNamed : (h: Tx, q: SQL) => h.execute(q))(
      tx,
      sql`
      with closed as (
        update player_sessions s
           set left_at = least(greatest(s.joined_at, ${c.end}), s.joined_at + ${MAX_SESSION}), end_reason = ${c.reason}::session_end
          ${c.from ? sql`from ${c.from}` : sql``}
         where s.left_at is null and ${c.where}
        returning s.id, s.server_id, s.uuid, s.joined_at, s.left_at, ${c.leaveName ?? sql`null::text`} as leave_name),
      sums as (
        select server_id, uuid, sum(round(extract(epoch from left_at - joined_at)))::bigint as secs, max(left_at) as last,
               max(leave_name) as leave_name
          from closed group by server_id, uuid),
      played as (
        update players p
           set play_seconds = p.play_seconds + sums.secs, online = false, last_seen = greatest(p.last_seen, sums.last),
               name = coalesce(sums.leave_name, p.name)
          from sums
         where p.server_id = sums.server_id and p.uuid = sums.uuid
        returning p.server_id, p.uuid, p.name),
      ${NETWORK_END_FROM_CLOSED},
      ${DIRECTORY_FROM_SUMS}
      select 'player' as kind, server_id::text as server_id, uuid::text as uuid, name, null::text as a, null::text as b
        from played
      union all
      select 'span', server_id::text, uuid::text, null, joined_at::text, left_at::text from closed`,
    ),
  );
  const left: ClosedPlayer[] = [];
  for (const r of rows) {
    if (r.kind === "span") c.spans.push({ server_id: r.server_id, uuid: r.uuid, a: r.a!, b: r.b! });
    else left.push({ server_id: r.server_id, uuid: r.uuid, name: r.name! });
  }
  return left;
}

/**
 * Adds closed sessions to the daily rollups (with the touched days' peaks) and to the analytics
 * aggregates. Every session once: the closers hand each here exactly when they closed it.
 */
async function addClosed(t: Tx, spans: Span[]) {
  if (spans.length === 0) return;
  await executeNamed(
    t,
    sql`
      with closed as (
        select x.server_id, x.uuid, x.a as joined_at, x.b as left_at
          from json_to_recordset(${JSON.stringify(spans)}::json) as x(server_id uuid, uuid uuid, a timestamptz, b timestamptz)),
      ${ROLLUP_FROM_CLOSED}
      select count(*) from sd`,
  );
  // The days' peaks are raised with the analytics slots' peaks, from the quarters these sessions
  // touch (src/analytics/aggregates.ts, recomputePeaks).
  await addSessions(t, spans);
}

/**
 * The rollup part of a statement with a CTE `closed` (server_id, uuid, joined_at, left_at):
 * each session cut into its UTC days (the day it starts in, even when it lasts no time, and
 * every later day it runs into), added per (server, day, player) and per (server, day). Ends
 * with a CTE `sd` returning the (server_id, day) rows it touched. The migration that created
 * the tables backfills them with the same cut.
 */
const ROLLUP_FROM_CLOSED = sql`
  pieces as (
    select c.server_id, d.day, c.uuid, c.joined_at,
           (extract(epoch from least(c.left_at, d.day + interval '1 day') - greatest(c.joined_at, d.day)) * 1000000)::bigint as us
      from closed c,
           generate_series(date_bin('1 day', c.joined_at, ${DAY_ORIGIN}), c.left_at, interval '1 day') as d(day)
     where d.day < c.left_at or d.day <= c.joined_at),
  pd as (
    insert into player_days (server_id, day, uuid, playtime_us, joins, carried_from)
    select server_id, day, uuid, sum(us), count(*) filter (where joined_at >= day), min(joined_at) filter (where joined_at < day)
      from pieces group by server_id, day, uuid
    on conflict (server_id, day, uuid) do update set
      playtime_us = player_days.playtime_us + excluded.playtime_us,
      joins = player_days.joins + excluded.joins,
      carried_from = least(player_days.carried_from, excluded.carried_from)
    returning server_id, day, (xmax = 0) as fresh),
  sd as (
    insert into server_days (server_id, day, players, playtime_us)
    select p.server_id, p.day, coalesce(f.n, 0), p.us
      from (select server_id, day, sum(us) as us from pieces group by server_id, day) p
      left join (select server_id, day, count(*) filter (where fresh) as n from pd group by server_id, day) f
        on f.server_id = p.server_id and f.day = p.day
    on conflict (server_id, day) do update set
      players = server_days.players + excluded.players,
      playtime_us = server_days.playtime_us + excluded.playtime_us
    returning server_id, day)`;

/**
 * The closed sessions touching each given (server, day) as spans: those that started that day
 * (the `(server_id, joined_at)` index) and those running into it from earlier (found from the
 * day's `player_days.carried_from` on the player's own index). Each look-up is a lateral
 * subquery kept apart (`offset 0`) so it stays an index range scan per day: PGlite never
 * gathers statistics, and without them the planner otherwise joins every session of the server.
 */
export const closedSpansOfDays = (days: SQL) => sql`
  select d.server_id, d.day, s.uuid, s.joined_at, s.left_at
    from (${days}) d
    cross join lateral (
      select s.uuid, s.joined_at, s.left_at from player_sessions s
       where s.server_id = d.server_id and s.joined_at >= d.day and s.joined_at < d.day + interval '1 day'
         and s.left_at is not null
      offset 0) s
  union all
  select d.server_id, d.day, s.uuid, s.joined_at, s.left_at
    from (${days}) d
    cross join lateral (
      select pd.uuid, pd.carried_from from player_days pd
       where pd.server_id = d.server_id and pd.day = d.day and pd.carried_from is not null
      offset 0) pd
    cross join lateral (
      select s.uuid, s.joined_at, s.left_at from player_sessions s
       where s.server_id = d.server_id and s.uuid = pd.uuid and s.joined_at >= pd.carried_from and s.joined_at < d.day
         and s.left_at > d.day
      offset 0) s`;

/** Instants as a list of typed SQL literals (folded into constants when planned, unlike a JSON parameter). */
export const timestampList = (dates: Date[]) =>
  sql.raw(dates.map((d) => `timestamptz '${d.toISOString()}'`).join(", "));

/**
 * The peak of each touched day over its closed sessions, from those sessions: the most spans
 * [joined, left) holding one instant (a leave and a join at the same instant are not together,
 * ordered leave first; a session that lasts no time is never open). Only grows. Erasure's
 * `rebuildDays` uses it, after setting the days' peaks to 0; the ingest raises day peaks from the
 * analytics slots' instead (src/analytics/aggregates.ts, `recomputePeaks` with `days`).
 */
export async function recomputePeaks(t: Tx, touched: { server_id: string; day: string }[]) {
  const days = sql`select x.server_id, x.day from json_to_recordset(${JSON.stringify(touched)}::json) as x(server_id uuid, day timestamptz)`;
  await executeNamed(
    t,
    sql`
    with spans as (${closedSpansOfDays(days)}),
    cut as (
      select server_id, day, greatest(joined_at, day) as a, least(left_at, day + interval '1 day') as b from spans),
    pts as (
      select server_id, day, a as t, 1 as delta from cut where a < b
      union all select server_id, day, b, -1 from cut where a < b),
    run as (
      select server_id, day, delta,
             sum(delta) over (partition by server_id, day order by t, delta rows unbounded preceding) as level
        from pts),
    peaks as (select server_id, day, max(level)::int as peak from run where delta = 1 group by server_id, day)
    update server_days sd set peak = greatest(sd.peak, peaks.peak)
      from peaks
     where sd.server_id = peaks.server_id and sd.day = peaks.day`,
  );
}

export async function applyBan(tx: Tx, serverId: string, ban: BanInput, origin: Origin, createdBy: string | null) {
  const values = {
    serverId,
    uuid: ban.uuid,
    name: ban.name,
    reason: ban.reason ?? "Banned by an operator.",
    source: ban.source ?? (origin === "dashboard" ? "Dashboard" : "Server"),
    origin,
    createdAt: ban.created ? new Date(ban.created) : new Date(),
    expiresAt: ban.expires ? new Date(ban.expires) : null,
    createdBy,
    liftedAt: null,
    liftOrigin: null,
  };
  const { serverId: _s, uuid: _u, ...set } = values;
  const [row] = await tx
    .insert(bans)
    .values(values)
    .onConflictDoUpdate({ target: [bans.serverId, bans.uuid], set })
    .returning();
  return row!;
}

export async function applyUnban(tx: Tx, serverId: string, uuid: string, origin: Origin) {
  return tx
    .update(bans)
    .set({ liftedAt: sql`now()`, liftOrigin: origin })
    .where(and(eq(bans.serverId, serverId), eq(bans.uuid, uuid), isNull(bans.liftedAt)))
    .returning();
}

const FULL_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * A search: a whole UUID, or a name prefix in any letter case, as a range of the lower-cased
 * name in byte order (the `players_name_idx` index) and then the exact prefix test.
 */
function nameOrUuid(
  name: typeof players.name | typeof bans.name,
  uuid: typeof players.uuid | typeof bans.uuid,
  q: string,
): SQL {
  const key = q.trim().toLowerCase();
  if (FULL_UUID.test(key)) return sql`${uuid} = ${key}::uuid`;
  return sql`(lower(${name}) collate "C" >= (${key}::text collate "C") and lower(${name}) collate "C" < ((${key} || chr(1114111))::text collate "C") and starts_with(lower(${name}), ${key}))`;
}

export class PlayersService {
  constructor(
    private readonly db: Db,
    private readonly events: ServerEventSink = NO_EVENTS,
  ) {}

  async list(
    principal: Principal,
    serverId: string,
    page: {
      limit: number;
      offset: number;
      online?: boolean;
      q?: string;
      sort?: "last_seen" | "first_seen" | "playtime" | "name";
      order?: "asc" | "desc";
    },
  ) {
    await requireServerRole(this.db, principal, serverId, "viewer");
    const where = and(
      eq(players.serverId, serverId),
      page.online === undefined ? undefined : eq(players.online, page.online),
      page.q ? nameOrUuid(players.name, players.uuid, page.q) : undefined,
    );
    const dir = (page.order ?? (page.sort === "name" ? "asc" : "desc")) === "asc" ? asc : desc;
    const orderBy = page.sort
      ? [
          dir(
            {
              last_seen: players.lastSeen,
              first_seen: players.firstSeen,
              playtime: players.playSeconds,
              name: sql`lower(${players.name}) collate "C"`,
            }[page.sort],
          ),
          dir(players.uuid),
        ]
      : [desc(players.online), desc(players.lastSeen), asc(players.uuid)];
    const bansWhere = and(activeBan(serverId), page.q ? nameOrUuid(bans.name, bans.uuid, page.q) : undefined);
    // Time played includes the running session of a player who is online now.
    const open = this.db
      .select({ uuid: playerSessions.uuid, joinedAt: playerSessions.joinedAt })
      .from(playerSessions)
      .where(and(eq(playerSessions.serverId, serverId), isNull(playerSessions.leftAt)))
      .as("open");
    const [rows, [total], banRows, [bansTotal]] = await Promise.all([
      this.db
        .select({
          p: players,
          running: sql<number>`coalesce(extract(epoch from (now() - ${open.joinedAt})), 0)::float8`,
        })
        .from(players)
        .leftJoin(open, eq(open.uuid, players.uuid))
        .where(where)
        .orderBy(...orderBy)
        .limit(page.limit)
        .offset(page.offset),
      this.db.select({ n: count() }).from(players).where(where),
      this.db
        .select()
        .from(bans)
        .where(bansWhere)
        .orderBy(desc(bans.createdAt), asc(bans.uuid))
        .limit(page.limit)
        .offset(page.offset),
      this.db.select({ n: count() }).from(bans).where(bansWhere),
    ]);
    return {
      players: rows.map(({ p, running }) => ({
        uuid: p.uuid,
        name: p.name,
        online: p.online,
        first_seen: iso(p.firstSeen),
        last_seen: iso(p.lastSeen),
        time_played_seconds: p.playSeconds + (p.online ? Math.max(0, Math.round(Number(running))) : 0),
      })),
      players_total: total!.n,
      bans: banRows.map(banOut),
      bans_total: bansTotal!.n,
      limit: page.limit,
      offset: page.offset,
    };
  }

  /** A ban or kick given by name alone: the player the team's directory knows by it (404, or 409 with candidates). */
  private async byName<T extends { uuid?: string; name: string }>(
    teamId: string,
    input: T,
  ): Promise<T & { uuid: string }> {
    if (input.uuid) return { ...input, uuid: input.uuid };
    const player = await resolveOne(this.db, teamId, input.name);
    return { ...input, uuid: player.uuid, name: player.name };
  }

  async ban(principal: Principal, serverId: string, given: Omit<BanInput, "uuid"> & { uuid?: string }) {
    const { server } = await requireServerRole(this.db, principal, serverId, "moderator");
    const input = await this.byName(server.teamId, given);
    if (input.expires && new Date(input.expires).getTime() <= Date.now())
      throw new AppError("bad_request", "expires must be in the future.");
    const row = await this.db.transaction(async (tx) => {
      const r = await applyBan(tx, serverId, input, "dashboard", principal.kind === "user" ? principal.userId : null);
      await auditBan(tx, server.teamId, serverId, r.uuid, r.name, r);
      return r;
    });
    const ban = banOut(row);
    this.events.publish(serverId, "ban_added", ban);
    return ban;
  }

  /**
   * Asks the agent to kick a player: it runs `kick <name> <reason>` on its next configuration read
   * (within KICK_WINDOW_SECONDS), once. Kicks past their window are pruned here.
   */
  async kick(principal: Principal, serverId: string, given: { uuid?: string; name: string; reason?: string }) {
    const { server } = await requireServerRole(this.db, principal, serverId, "moderator");
    const input = await this.byName(server.teamId, given);
    const row = await this.db.transaction(async (tx) => {
      // Locked first, so two kicks at once cannot both squeeze under the cap.
      await tx.select({ id: servers.id }).from(servers).where(eq(servers.id, serverId)).for("update");
      await tx
        .delete(kicks)
        .where(
          and(
            eq(kicks.serverId, serverId),
            lte(kicks.createdAt, sql`now() - ${sql.raw(`interval '${KICK_WINDOW_SECONDS} seconds'`)}`),
          ),
        );
      const [pending] = await tx.select({ n: count() }).from(kicks).where(pendingKick(serverId));
      if (pending!.n >= LIMITS.kicksPending) throw overLimit("kicks waiting for the agent", LIMITS.kicksPending);
      const [r] = await tx
        .insert(kicks)
        .values({
          serverId,
          uuid: input.uuid,
          name: input.name,
          reason: input.reason ?? "",
          createdBy: principal.kind === "user" ? principal.userId : null,
        })
        .returning();
      await audit(tx, {
        teamId: server.teamId,
        target: { type: "player", id: input.uuid, name: input.name },
        serverId,
        after: { reason: r!.reason },
      });
      await recordModeration(tx, {
        serverId,
        uuid: r!.uuid,
        name: r!.name,
        action: "kick",
        reason: r!.reason,
      });
      return r!;
    });
    return kickOut(row);
  }

  async unban(principal: Principal, serverId: string, uuid: string) {
    const { server } = await requireServerRole(this.db, principal, serverId, "moderator");
    await this.db.transaction(async (tx) => {
      const lifted = await applyUnban(tx, serverId, uuid, "dashboard");
      if (lifted.length === 0) throw new AppError("not_found", "This player is not banned on this server.");
      await auditBan(tx, server.teamId, serverId, uuid, lifted[0]!.name, null);
    });
    this.events.publish(serverId, "ban_lifted", { uuid, source: "dashboard" });
    return { ok: true as const };
  }
}
