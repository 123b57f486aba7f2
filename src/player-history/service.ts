import { and, count, desc, eq, inArray, isNull, sql } from "drizzle-orm";
import { type Principal, principalKey } from "../auth/principal";
import { InFlightLimit } from "../lib/in-flight";
import type { Db } from "../db/client";
import { bans, players, playerSessions, serverStatus, servers } from "../db/schema";
import { AppError } from "../lib/errors";
import { iso } from "../lib/schemas";
import type { PingResult, SampledPlayer } from "../monitoring/ping";
import { playerSummary } from "./summary";
import { requireServerRole } from "../servers/access";
import { activeBan, applyJoin, banOut, type ClosedPlayer, closeSessions, ts } from "../servers/players";
import { NO_EVENTS, type ServerEventSink } from "../realtime/events";
import { optedOut } from "../privacy/service";

export const SUMMARY_WINDOWS = { "24h": 1, "7d": 7, "30d": 30, "90d": 90 } as const;
export type SummaryWindow = keyof typeof SUMMARY_WINDOWS;

/** Sessions a profile shows; older ones are on the sessions page. */
const RECENT_SESSIONS = 10;
const CURSOR_PREFIX = "s1.";

type SessionRow = typeof playerSessions.$inferSelect & { name: string | null; running: number };

const sessionOut = (s: SessionRow) => ({
  session_id: s.id,
  uuid: s.uuid,
  name: s.name,
  joined_at: iso(s.joinedAt),
  left_at: s.leftAt ? iso(s.leftAt) : null,
  duration_seconds: Math.max(0, Math.round(Number(s.running))),
  online: s.leftAt === null,
  source: s.source,
  end_reason: s.endReason,
});

/** Opaque to callers: a version prefix and the last session's id, base64url. */
const encodeCursor = (id: string) => Buffer.from(CURSOR_PREFIX + id).toString("base64url");
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
function decodeCursor(cursor: string): string {
  const text = /^[A-Za-z0-9_-]+$/.test(cursor) ? Buffer.from(cursor, "base64url").toString("utf8") : "";
  const id = text.startsWith(CURSOR_PREFIX) ? text.slice(CURSOR_PREFIX.length) : "";
  if (!UUID.test(id)) throw badCursor();
  return id;
}
const badCursor = () =>
  new AppError("bad_request", "cursor is not one this endpoint issued; start again without it.", {
    details: { field: "cursor" },
  });

/**
 * Player sessions: derived from the agent's joins and leaves (src/servers/players.ts applies
 * them inside the agent's batch), and from the pinger's sample lists for servers where no
 * agent runs. docs/history.md ("Player sessions") states when a session is closed.
 */
export class PlayerHistoryService {
  constructor(
    private readonly db: Db,
    /** How long without news a player is still taken to be online (PLAYER_SESSION_TIMEOUT_SECONDS). */
    private readonly timeoutSeconds: number,
    /**
     * Where the joins and leaves it writes are told (the live views): a player it marks online or
     * offline in `players` is a `player_join` or `player_leave`, as the agent's are, so a live
     * view and the players list say the same. Published after the write commits.
     */
    private readonly events: ServerEventSink = NO_EVENTS,
    /** Expensive reads in flight per caller. */
    private readonly expensive: InFlightLimit = new InFlightLimit(2),
    /** NETWORK_HOP_GAP_SECONDS: how a join continues a network session (docs/networks.md). */
    private readonly hopGapSeconds?: number,
  ) {}

  private publishLeaves(closed: ClosedPlayer[], at: Date) {
    for (const p of closed) this.events.publish(p.server_id, "player_leave", { uuid: p.uuid, name: p.name }, at);
  }

  /**
   * What pings contribute. Ignored while the agent is running (its events are exact); else
   * each listed player's session is kept open or opened, and when the answer lists everyone
   * online (or the server is down) the ping sessions of players not listed are closed at the
   * last sample that listed them. Many pings at once (a pinger's shared write, at most one per
   * server).
   */
  async fromSamples(
    samples: readonly { serverId: string; result: Pick<PingResult, "online" | "playersOnline" | "sample"> }[],
    at = new Date(),
  ) {
    const work = samples.flatMap(({ serverId, result: r }) => {
      const listed = r.online ? (r.sample ?? []) : [];
      const complete = !r.online || (r.playersOnline !== null && listed.length >= r.playersOnline);
      return listed.length === 0 && !complete ? [] : [{ serverId, r, listed, complete }];
    });
    // Most pings of an empty server have nothing to close: one indexed look for all of them
    // instead of a transaction each.
    const empty = work.filter((w) => w.listed.length === 0).map((w) => w.serverId);
    const open = new Set<string>();
    if (empty.length > 0)
      for (const row of await this.db
        .selectDistinct({ serverId: playerSessions.serverId })
        .from(playerSessions)
        .where(and(inArray(playerSessions.serverId, empty), isNull(playerSessions.leftAt))))
        open.add(row.serverId);
    const settled = await Promise.allSettled(
      work
        .filter((w) => w.listed.length > 0 || open.has(w.serverId))
        .map((w) => this.applySample(w.serverId, w.r.online, w.listed, w.complete, at)),
    );
    const failed = settled.flatMap((s) => (s.status === "rejected" ? [s.reason] : []));
    if (failed.length > 0) throw new AggregateError(failed, "player sessions from ping samples failed");
  }

  private async applySample(serverId: string, online: boolean, listed: SampledPlayer[], complete: boolean, at: Date) {
    const joined: SampledPlayer[] = [];
    let left: ClosedPlayer[] = [];
    await this.db.transaction(async (tx) => {
      // Serialised with the agent's batches for this server (they lock the same row).
      const [row] = await tx.select({ id: servers.id }).from(servers).where(eq(servers.id, serverId)).for("update");
      if (!row) return;
      const [status] = await tx
        .select({ heartbeatAt: serverStatus.heartbeatAt })
        .from(serverStatus)
        .where(eq(serverStatus.serverId, serverId));
      const hb = status?.heartbeatAt;
      if (hb && hb.getTime() > at.getTime() - this.timeoutSeconds * 1000) return;
      // Players who opted out are not made into sessions; a complete list still closes the others'.
      const dropped = await optedOut(
        tx,
        serverId,
        listed.map((p) => p.uuid),
      );
      if (dropped.size > 0) listed = listed.filter((p) => !dropped.has(p.uuid));

      for (const p of listed) {
        const kept = await tx
          .update(playerSessions)
          .set({ seenAt: sql`greatest(${playerSessions.seenAt}, ${ts(at)})` })
          .where(
            and(eq(playerSessions.serverId, serverId), eq(playerSessions.uuid, p.uuid), isNull(playerSessions.leftAt)),
          )
          .returning({ id: playerSessions.id });
        if (kept.length === 0) {
          // No session of any source was open: the player was offline until this sample.
          await applyJoin(tx, serverId, p.uuid, p.name, at, "ping", this.hopGapSeconds);
          joined.push(p);
        } else {
          await tx
            .update(players)
            .set({ name: p.name, online: true, lastSeen: sql`greatest(${players.lastSeen}, ${ts(at)})` })
            .where(and(eq(players.serverId, serverId), eq(players.uuid, p.uuid)));
        }
      }
      if (!complete) return;
      const notListed =
        listed.length === 0
          ? sql`true`
          : sql`s.uuid not in (${sql.join(
              listed.map((p) => sql`${p.uuid}::uuid`),
              sql`, `,
            )})`;
      // Down: nobody is playing, whoever opened the session (an agent still running would have returned above).
      const which = online ? sql`s.source = 'ping' and ${notListed}` : sql`true`;
      left = await closeSessions(
        tx,
        sql`s.server_id = ${serverId} and ${which}`,
        sql`coalesce(s.seen_at, s.joined_at)`,
        online ? "not_seen" : "server_offline",
      );
    });
    // Only what this sample changed: a player it listed again, or one already offline, is no news.
    for (const p of joined) this.events.publish(serverId, "player_join", { uuid: p.uuid, name: p.name }, at);
    this.publishLeaves(left, at);
  }

  /**
   * Closes sessions nobody has vouched for within the timeout: an agent that stopped sending
   * heartbeats, a player no ping has listed since. Each ends at the last time it was known online.
   * One transaction a server holding its row, as the agent's batches and the pings do, so closers
   * of one server never interleave (the daily rollups' peak relies on it).
   */
  async sweep(now = new Date()) {
    const before = ts(new Date(now.getTime() - this.timeoutSeconds * 1000));
    const stale = sql`coalesce(s.seen_at, s.joined_at) < ${before}`;
    const end = sql`coalesce(s.seen_at, s.joined_at)`;
    const due = await this.db
      .selectDistinct({ serverId: playerSessions.serverId })
      .from(playerSessions)
      .where(
        and(
          isNull(playerSessions.leftAt),
          sql`coalesce(${playerSessions.seenAt}, ${playerSessions.joinedAt}) < ${before}`,
        ),
      );
    for (const { serverId } of due) {
      const closed = await this.db.transaction(async (tx) => {
        await tx.select({ id: servers.id }).from(servers).where(eq(servers.id, serverId)).for("update");
        const mine = sql`s.server_id = ${serverId} and ${stale}`;
        return [
          ...(await closeSessions(tx, sql`${mine} and s.source = 'agent'`, end, "agent_silent")),
          ...(await closeSessions(tx, sql`${mine} and s.source = 'ping'`, end, "not_seen")),
        ];
      });
      this.publishLeaves(closed, now);
    }
  }

  private sessionQuery() {
    return this.db
      .select({
        s: playerSessions,
        name: players.name,
        running: sql<number>`extract(epoch from coalesce(${playerSessions.leftAt}, now()) - ${playerSessions.joinedAt})::float8`,
      })
      .from(playerSessions)
      .leftJoin(players, and(eq(players.serverId, playerSessions.serverId), eq(players.uuid, playerSessions.uuid)));
  }

  async sessions(principal: Principal, serverId: string, q: { limit: number; cursor?: string; uuid?: string }) {
    await requireServerRole(this.db, principal, serverId, "viewer");
    let after: { joinedAt: Date; id: string } | undefined;
    if (q.cursor) {
      const id = decodeCursor(q.cursor);
      const [row] = await this.db
        .select({ joinedAt: playerSessions.joinedAt, id: playerSessions.id })
        .from(playerSessions)
        .where(and(eq(playerSessions.id, id), eq(playerSessions.serverId, serverId)));
      if (!row) throw badCursor();
      after = row;
    }
    // The row comparison runs on the stored value, so microseconds a JavaScript Date would drop still order.
    const position = after
      ? sql`(${playerSessions.joinedAt}, ${playerSessions.id}) < (select joined_at, id from player_sessions where id = ${after.id})`
      : undefined;
    const rows = await this.sessionQuery()
      .where(and(eq(playerSessions.serverId, serverId), q.uuid ? eq(playerSessions.uuid, q.uuid) : undefined, position))
      .orderBy(desc(playerSessions.joinedAt), desc(playerSessions.id))
      .limit(q.limit + 1);
    const page = rows.slice(0, q.limit);
    return {
      sessions: page.map((r) => sessionOut({ ...r.s, name: r.name, running: r.running })),
      next_cursor: rows.length > q.limit ? encodeCursor(page.at(-1)!.s.id) : null,
    };
  }

  async profile(principal: Principal, serverId: string, uuid: string) {
    await requireServerRole(this.db, principal, serverId, "viewer");
    const where = and(eq(players.serverId, serverId), eq(players.uuid, uuid));
    const [player] = await this.db.select().from(players).where(where);
    if (!player) throw new AppError("not_found", "No player with this UUID has been seen on this server.");
    const [recent, [n], [ban]] = await Promise.all([
      this.sessionQuery()
        .where(and(eq(playerSessions.serverId, serverId), eq(playerSessions.uuid, uuid)))
        .orderBy(desc(playerSessions.joinedAt), desc(playerSessions.id))
        .limit(RECENT_SESSIONS),
      this.db
        .select({ n: count() })
        .from(playerSessions)
        .where(and(eq(playerSessions.serverId, serverId), eq(playerSessions.uuid, uuid))),
      this.db
        .select()
        .from(bans)
        .where(and(activeBan(serverId), eq(bans.uuid, uuid))),
    ]);
    const sessions = recent.map((r) => sessionOut({ ...r.s, name: r.name, running: r.running }));
    const open = sessions.find((s) => s.online);
    return {
      uuid: player.uuid,
      name: player.name,
      online: open !== undefined,
      first_seen: iso(player.firstSeen),
      last_seen: iso(player.lastSeen),
      time_played_seconds: player.playSeconds + (open?.duration_seconds ?? 0),
      session_count: n!.n,
      recent_sessions: sessions,
      banned: ban !== undefined,
      ban: ban ? banOut(ban) : null,
    };
  }

  /**
   * The player summary of a window ending now (./summary.ts). At most EXPENSIVE_READS_PER_CREDENTIAL
   * run at once per caller; one more is 429 with Retry-After.
   */
  async summary(principal: Principal, serverId: string, window: SummaryWindow, now = new Date()) {
    return this.expensive.run(principalKey(principal), async () => {
      await requireServerRole(this.db, principal, serverId, "viewer");
      const from = new Date(now.getTime() - SUMMARY_WINDOWS[window] * 86_400_000);
      const summary = await playerSummary(this.db, serverId, from, now);
      return { server_id: serverId, window, from: iso(from), to: iso(now), ...summary };
    });
  }
}
