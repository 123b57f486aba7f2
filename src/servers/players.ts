import { and, asc, count, desc, eq, gt, isNull, or, type SQL, sql } from "drizzle-orm";
import { NO_EVENTS, type ServerEventSink } from "../realtime/events";
import type { Db } from "../db/client";
import { bans, players, playerSessions } from "../db/schema";
import { AppError } from "../lib/errors";
import { iso } from "../lib/schemas";
import type { Principal } from "../auth/principal";
import { requireServerRole } from "./access";
import { rowsOf } from "../db/rows";

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
) {
  await closeSessions(
    tx,
    sql`s.server_id = ${serverId} and s.uuid = ${uuid}`,
    sql`least(${ts(at)}, coalesce(s.seen_at, s.joined_at))`,
    "rejoin",
  );
  await tx
    .insert(players)
    .values({ serverId, uuid, name, online: true, firstSeen: at, lastSeen: at })
    .onConflictDoUpdate({
      target: [players.serverId, players.uuid],
      set: {
        name,
        online: true,
        firstSeen: sql`least(${players.firstSeen}, ${ts(at)})`,
        lastSeen: sql`greatest(${players.lastSeen}, ${ts(at)})`,
      },
    });
  await tx.insert(playerSessions).values({ serverId, uuid, joinedAt: at, seenAt: at, source });
}

export async function applyLeave(tx: Tx, serverId: string, uuid: string, name: string | undefined, at: Date) {
  await closeSessions(tx, sql`s.server_id = ${serverId} and s.uuid = ${uuid}`, ts(at), "leave");
  await tx
    .update(players)
    .set({ online: false, lastSeen: sql`greatest(${players.lastSeen}, ${ts(at)})`, ...(name && { name }) })
    .where(and(eq(players.serverId, serverId), eq(players.uuid, uuid)));
}

/** A player whose open session a closer ended: what a `player_leave` event carries. */
export interface ClosedPlayer {
  server_id: string;
  uuid: string;
  name: string;
}

/**
 * Ends the open sessions `where` selects (over `player_sessions s`) at `end` (never before the
 * join), adds their lengths to time played and marks the players offline, in one statement so
 * a session is counted once however many closers race for it. Returns the players it marked
 * offline, for the closers whose leaves no agent reports (the live view is told of those).
 */
export async function closeSessions(tx: Tx, where: SQL, end: SQL, reason: SessionEnd): Promise<ClosedPlayer[]> {
  const result = await tx.execute(sql`
    with closed as (
      update player_sessions s
         set left_at = greatest(s.joined_at, ${end}), end_reason = ${reason}::session_end
       where s.left_at is null and ${where}
      returning s.server_id, s.uuid, s.joined_at, s.left_at),
    sums as (
      select server_id, uuid, sum(round(extract(epoch from left_at - joined_at)))::bigint as secs, max(left_at) as last
        from closed group by server_id, uuid)
    update players p
       set play_seconds = p.play_seconds + sums.secs, online = false, last_seen = greatest(p.last_seen, sums.last)
      from sums
     where p.server_id = sums.server_id and p.uuid = sums.uuid
    returning p.server_id, p.uuid, p.name`);
  return rowsOf<ClosedPlayer>(result);
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

export class PlayersService {
  constructor(
    private readonly db: Db,
    private readonly events: ServerEventSink = NO_EVENTS,
  ) {}

  async list(principal: Principal, serverId: string, page: { limit: number; offset: number; online?: boolean }) {
    await requireServerRole(this.db, principal, serverId, "viewer");
    const where = and(
      eq(players.serverId, serverId),
      page.online === undefined ? undefined : eq(players.online, page.online),
    );
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
        .orderBy(desc(players.online), desc(players.lastSeen), asc(players.uuid))
        .limit(page.limit)
        .offset(page.offset),
      this.db.select({ n: count() }).from(players).where(where),
      this.db
        .select()
        .from(bans)
        .where(activeBan(serverId))
        .orderBy(desc(bans.createdAt), asc(bans.uuid))
        .limit(page.limit)
        .offset(page.offset),
      this.db.select({ n: count() }).from(bans).where(activeBan(serverId)),
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

  async ban(principal: Principal, serverId: string, input: BanInput) {
    await requireServerRole(this.db, principal, serverId, "admin");
    if (input.expires && new Date(input.expires).getTime() <= Date.now())
      throw new AppError("bad_request", "expires must be in the future.");
    const row = await applyBan(
      this.db,
      serverId,
      input,
      "dashboard",
      principal.kind === "user" ? principal.userId : null,
    );
    const ban = banOut(row);
    this.events.publish(serverId, "ban_added", ban);
    return ban;
  }

  async unban(principal: Principal, serverId: string, uuid: string) {
    await requireServerRole(this.db, principal, serverId, "admin");
    const lifted = await applyUnban(this.db, serverId, uuid, "dashboard");
    if (lifted.length === 0) throw new AppError("not_found", "This player is not banned on this server.");
    this.events.publish(serverId, "ban_lifted", { uuid, source: "dashboard" });
    return { ok: true as const };
  }
}
