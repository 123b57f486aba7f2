import { and, asc, count, desc, eq, gt, inArray, isNotNull, isNull, or, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import {
  networkBans,
  networkRanks,
  networkSessionHops,
  networkSessions,
  players,
  playerSessions,
  servers,
  serverStatus,
  users,
} from "../db/schema";
import { AppError } from "../lib/errors";
import { LIMITS, overLimit } from "../lib/limits";
import { iso } from "../lib/schemas";
import { type Principal, reachesServer, type Role } from "../auth/principal";
import { requireTeamRole } from "../teams/access";
import { audit } from "../audit/entry";
import { NO_EVENTS, type ServerEventSink } from "../realtime/events";
import { resolveOne } from "../player-directory/resolve";
import { findRankProblem, type RankFields } from "../servers/ranks";
import { MAX_HOPS, NETWORK_WINDOWS, type NetworkWindow } from "./schemas";

type BanRow = typeof networkBans.$inferSelect;
type RankRow = typeof networkRanks.$inferSelect;
type Tx = Parameters<Parameters<Db["transaction"]>[0]>[0];
interface Network {
  teamId: string;
  name: string;
  /** The servers of the network the caller reaches. */
  servers: { id: string; name: string }[];
}

const CURSOR_PREFIX = "n1.";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const encodeCursor = (id: string) => Buffer.from(CURSOR_PREFIX + id).toString("base64url");
const badCursor = () =>
  new AppError("bad_request", "cursor is not one this endpoint issued; start again without it.", {
    details: { field: "cursor" },
  });
function decodeCursor(cursor: string): string {
  const text = /^[A-Za-z0-9_-]+$/.test(cursor) ? Buffer.from(cursor, "base64url").toString("utf8") : "";
  const id = text.startsWith(CURSOR_PREFIX) ? text.slice(CURSOR_PREFIX.length) : "";
  if (!UUID.test(id)) throw badCursor();
  return id;
}

/** Bans in force on a network: not lifted (nor replaced) and not expired. */
export const activeNetworkBan = and(
  isNull(networkBans.liftedAt),
  or(isNull(networkBans.expiresAt), gt(networkBans.expiresAt, sql`now()`)),
);

const expires = (b: Pick<BanRow, "expiresAt">) => (b.expiresAt ? iso(b.expiresAt) : ("forever" as const));

/** A network ban as a server's agent takes it: the shape of a server ban from the dashboard. */
export const networkBanForAgent = (b: BanRow) => ({
  uuid: b.uuid,
  name: b.name,
  reason: b.reason,
  source: b.source,
  origin: "dashboard" as const,
  created: iso(b.createdAt),
  expires: expires(b),
});

const actor = (userId: string | null, keyId: string | null, email: string | null) =>
  userId
    ? { kind: "user" as const, id: userId, name: email }
    : keyId
      ? { kind: "api_key" as const, id: keyId, name: null }
      : null;

const banOut = (b: BanRow, createdEmail: string | null, liftedEmail: string | null) => ({
  ban_id: b.id,
  network_name: b.networkName,
  uuid: b.uuid,
  name: b.name,
  reason: b.reason,
  source: b.source,
  created: iso(b.createdAt),
  expires: expires(b),
  created_by: actor(b.createdBy, b.createdByKey, createdEmail),
  active: b.liftedAt === null && (b.expiresAt === null || b.expiresAt.getTime() > Date.now()),
  lifted_at: b.liftedAt ? iso(b.liftedAt) : null,
  lifted_by: actor(b.liftedBy, b.liftedByKey, liftedEmail),
  end_reason: (b.endReason as "lifted" | "replaced" | null) ?? null,
});

export const networkRankOut = (r: RankRow) => ({
  name: r.name,
  display_name: r.displayName,
  weight: r.weight,
  prefix: r.prefix,
  suffix: r.suffix,
  permissions: r.permissions,
  parents: r.parents,
  created_at: iso(r.createdAt),
  updated_at: iso(r.updatedAt),
});

const who = (p: Principal) =>
  p.kind === "user" ? { user: p.userId, key: null } : { user: null, key: p.keyId as string | null };

const banFields = (b: BanRow) => ({ reason: b.reason, source: b.source, expires: expires(b) });

/**
 * Networks as their own thing (docs/networks.md): the page of one, its sessions counted once
 * across its servers (kept at ingest by ./ingest.ts), its bans and its ranks, which every server
 * of it carries in its agent's configuration (`forServer`).
 */
export class NetworksService {
  constructor(
    private readonly db: Db,
    /** Where a ban or a lift is told, once per server of the network (live views, `player.banned` webhooks). */
    private readonly events: ServerEventSink = NO_EVENTS,
  ) {}

  /**
   * The network named `name` in the team, as the caller reaches it: 404 when none of the team's
   * servers (that the caller reaches) is in it. A change needs a credential that reaches every
   * server of the team: a key limited to some servers cannot act on a whole network.
   */
  private async network(principal: Principal, teamId: string, name: string, min: Role, write = false) {
    await requireTeamRole(this.db, principal, teamId, min);
    if (write && principal.kind === "api_key" && principal.serverIds)
      throw new AppError("forbidden", "This API key is limited to some servers: it cannot act on a whole network.");
    const rows = await this.db
      .select({ id: servers.id, name: servers.name })
      .from(servers)
      .where(and(eq(servers.teamId, teamId), eq(servers.kind, "network"), eq(servers.networkName, name)))
      .orderBy(asc(servers.createdAt), asc(servers.id));
    const reached = rows.filter((s) => reachesServer(principal, s.id));
    if (reached.length === 0) throw new AppError("not_found", "No server of this team is in this network.");
    return { teamId, name, servers: reached } satisfies Network;
  }

  async page(principal: Principal, teamId: string, name: string, window: NetworkWindow, now = new Date()) {
    const net = await this.network(principal, teamId, name, "viewer");
    const ids = net.servers.map((s) => s.id);
    const from = new Date(now.getTime() - NETWORK_WINDOWS[window] * 86_400_000);
    const fromSql = sql`${from.toISOString()}::timestamptz`;
    const toSql = sql`${now.toISOString()}::timestamptz`;
    const [statusRows, open, spans, [nsCount]] = await Promise.all([
      this.db
        .select({ id: serverStatus.serverId, online: serverStatus.online })
        .from(serverStatus)
        .where(inArray(serverStatus.serverId, ids)),
      this.db
        .select({
          serverId: playerSessions.serverId,
          uuid: playerSessions.uuid,
          joinedAt: playerSessions.joinedAt,
          name: players.name,
        })
        .from(playerSessions)
        .leftJoin(players, and(eq(players.serverId, playerSessions.serverId), eq(players.uuid, playerSessions.uuid)))
        .where(and(inArray(playerSessions.serverId, ids), isNull(playerSessions.leftAt)))
        .orderBy(desc(playerSessions.joinedAt), asc(playerSessions.id)),
      // Each session's part inside the window; an open one runs to now.
      this.db
        .select({
          serverId: playerSessions.serverId,
          seconds: sql<number>`coalesce(sum(extract(epoch from least(coalesce(${playerSessions.leftAt}, ${toSql}), ${toSql}) - greatest(${playerSessions.joinedAt}, ${fromSql}))), 0)::float8`,
          started: sql<number>`(count(*) filter (where ${playerSessions.joinedAt} >= ${fromSql}))::int`,
        })
        .from(playerSessions)
        .where(
          and(
            inArray(playerSessions.serverId, ids),
            sql`${playerSessions.joinedAt} < ${toSql}`,
            sql`coalesce(${playerSessions.leftAt}, 'infinity'::timestamptz) > ${fromSql}`,
          ),
        )
        .groupBy(playerSessions.serverId),
      this.db
        .select({ n: count() })
        .from(networkSessions)
        .where(
          and(
            eq(networkSessions.teamId, teamId),
            eq(networkSessions.networkName, name),
            sql`${networkSessions.joinedAt} >= ${fromSql}`,
            sql`${networkSessions.joinedAt} < ${toSql}`,
          ),
        ),
    ]);
    const nameOf = new Map(net.servers.map((s) => [s.id, s.name]));
    const onlineBy = new Map<string, number>();
    const seen = new Map<
      string,
      { uuid: string; name: string; server_id: string; server_name: string; since: string }
    >();
    for (const o of open) {
      onlineBy.set(o.serverId, (onlineBy.get(o.serverId) ?? 0) + 1);
      // Newest join first: a player in the middle of a transfer is on the server they went to.
      if (!seen.has(o.uuid))
        seen.set(o.uuid, {
          uuid: o.uuid,
          name: o.name ?? o.uuid,
          server_id: o.serverId,
          server_name: nameOf.get(o.serverId)!,
          since: iso(o.joinedAt),
        });
    }
    const spanBy = new Map(spans.map((s) => [s.serverId, s]));
    const seconds = (id: string) => Math.max(0, Math.round(Number(spanBy.get(id)?.seconds ?? 0)));
    const started = (id: string) => Number(spanBy.get(id)?.started ?? 0);
    const totalSeconds = ids.reduce((n, id) => n + seconds(id), 0);
    const totalStarted = ids.reduce((n, id) => n + started(id), 0);
    const share = (part: number, whole: number) => (whole === 0 ? 0 : Math.round((part / whole) * 10_000) / 10_000);
    const statusBy = new Map(statusRows.map((s) => [s.id, s.online]));
    const everyone = [...seen.values()].sort((a, b) => a.name.localeCompare(b.name) || a.uuid.localeCompare(b.uuid));
    return {
      network_name: name,
      window,
      from: iso(from),
      to: iso(now),
      servers: net.servers.map((s) => ({
        server_id: s.id,
        name: s.name,
        online: statusBy.get(s.id) ?? null,
        players_online: onlineBy.get(s.id) ?? 0,
        playtime_seconds: seconds(s.id),
        playtime_share: share(seconds(s.id), totalSeconds),
        sessions: started(s.id),
        sessions_share: share(started(s.id), totalStarted),
      })),
      players_online: seen.size,
      online: everyone.slice(0, LIMITS.pageSize * 10),
      playtime_seconds: totalSeconds,
      network_sessions: nsCount!.n,
    };
  }

  async sessions(
    principal: Principal,
    teamId: string,
    name: string,
    q: { limit: number; cursor?: string; uuid?: string },
  ) {
    const net = await this.network(principal, teamId, name, "viewer");
    const mine = and(eq(networkSessions.teamId, teamId), eq(networkSessions.networkName, name));
    let position: ReturnType<typeof sql> | undefined;
    if (q.cursor) {
      const id = decodeCursor(q.cursor);
      const [row] = await this.db
        .select({ id: networkSessions.id })
        .from(networkSessions)
        .where(and(mine, eq(networkSessions.id, id)));
      if (!row) throw badCursor();
      // Compared on the stored values, so microseconds a JavaScript Date would drop still order.
      position = sql`(${networkSessions.joinedAt}, ${networkSessions.id}) < (select joined_at, id from network_sessions where id = ${id})`;
    }
    const openHop = sql`exists (
      select 1 from network_session_hops h join player_sessions s on s.id = h.session_id
       where h.network_session_id = ${networkSessions.id} and s.left_at is null)`;
    const rows = await this.db
      .select({
        ns: networkSessions,
        online: sql<boolean>`${openHop}`,
        running: sql<number>`extract(epoch from (case when ${openHop} then now() else coalesce(${networkSessions.leftAt}, now()) end) - ${networkSessions.joinedAt})::float8`,
      })
      .from(networkSessions)
      .where(and(mine, q.uuid ? eq(networkSessions.uuid, q.uuid) : undefined, position))
      .orderBy(desc(networkSessions.joinedAt), desc(networkSessions.id))
      .limit(q.limit + 1);
    const page = rows.slice(0, q.limit);
    const ids = page.map((r) => r.ns.id);
    const reached = new Set(net.servers.map((s) => s.id));
    const hops =
      ids.length === 0
        ? []
        : await this.db
            .select({
              nsId: networkSessionHops.networkSessionId,
              serverId: playerSessions.serverId,
              serverName: servers.name,
              uuid: playerSessions.uuid,
              joinedAt: playerSessions.joinedAt,
              leftAt: playerSessions.leftAt,
              name: players.name,
            })
            .from(networkSessionHops)
            .innerJoin(playerSessions, eq(playerSessions.id, networkSessionHops.sessionId))
            .innerJoin(servers, eq(servers.id, playerSessions.serverId))
            .leftJoin(
              players,
              and(eq(players.serverId, playerSessions.serverId), eq(players.uuid, playerSessions.uuid)),
            )
            .where(inArray(networkSessionHops.networkSessionId, ids))
            .orderBy(asc(playerSessions.joinedAt), asc(playerSessions.id));
    const hopsOf = new Map<string, typeof hops>();
    for (const h of hops) hopsOf.set(h.nsId, [...(hopsOf.get(h.nsId) ?? []), h]);
    return {
      sessions: page.map(({ ns, online, running }) => {
        const all = hopsOf.get(ns.id) ?? [];
        const shown = all.filter((h) => reached.has(h.serverId)).slice(-MAX_HOPS);
        const on = online === true || (online as unknown) === "t";
        return {
          network_session_id: ns.id,
          uuid: ns.uuid,
          // The name on the latest hop: the one the player last used on the network.
          name: all.at(-1)?.name ?? null,
          joined_at: iso(ns.joinedAt),
          left_at: on || !ns.leftAt ? null : iso(ns.leftAt),
          duration_seconds: Math.max(0, Math.round(Number(running))),
          online: on,
          hops: shown.map((h) => ({
            server_id: h.serverId,
            server_name: h.serverName,
            joined_at: iso(h.joinedAt),
            left_at: h.leftAt ? iso(h.leftAt) : null,
          })),
        };
      }),
      next_cursor: rows.length > q.limit ? encodeCursor(page.at(-1)!.ns.id) : null,
    };
  }

  async bans(
    principal: Principal,
    teamId: string,
    name: string,
    q: { state: "active" | "all"; limit: number; offset: number },
  ) {
    await this.network(principal, teamId, name, "viewer");
    const where = and(
      eq(networkBans.teamId, teamId),
      eq(networkBans.networkName, name),
      q.state === "active" ? activeNetworkBan : undefined,
    );
    const lifter = sql<string | null>`(select email from users where id = ${networkBans.liftedBy})`;
    const [rows, [total]] = await Promise.all([
      this.db
        .select({ b: networkBans, createdEmail: users.email, liftedEmail: lifter })
        .from(networkBans)
        .leftJoin(users, eq(users.id, networkBans.createdBy))
        .where(where)
        .orderBy(desc(networkBans.createdAt), desc(networkBans.id))
        .limit(q.limit)
        .offset(q.offset),
      this.db.select({ n: count() }).from(networkBans).where(where),
    ]);
    return {
      bans: rows.map((r) => banOut(r.b, r.createdEmail, r.liftedEmail)),
      total: total!.n,
      limit: q.limit,
      offset: q.offset,
    };
  }

  /**
   * Bans a player on every server of the network. A ban of the player still open (in force, or
   * expired and never lifted) is closed as replaced, never overwritten: the history keeps both.
   */
  async ban(
    principal: Principal,
    teamId: string,
    name: string,
    given: { uuid?: string; name: string; reason?: string; source?: string; expires?: string | null },
  ) {
    const net = await this.network(principal, teamId, name, "moderator", true);
    // By name alone: the player the team's directory knows by it, as a server ban does.
    const found = given.uuid ? null : await resolveOne(this.db, teamId, given.name);
    const input = { ...given, uuid: found?.uuid ?? given.uuid!, name: found?.name ?? given.name };
    if (input.expires && new Date(input.expires).getTime() <= Date.now())
      throw new AppError("bad_request", "expires must be in the future.");
    const by = who(principal);
    const row = await this.db.transaction(async (tx) => {
      const key = and(
        eq(networkBans.teamId, teamId),
        eq(networkBans.networkName, name),
        eq(networkBans.uuid, input.uuid),
      );
      await tx
        .update(networkBans)
        .set({ liftedAt: sql`now()`, liftedBy: by.user, liftedByKey: by.key, endReason: "replaced" })
        .where(and(key, isNull(networkBans.liftedAt)));
      const [r] = await tx
        .insert(networkBans)
        .values({
          teamId,
          networkName: name,
          uuid: input.uuid,
          name: input.name,
          reason: input.reason ?? "Banned by an operator.",
          source: input.source ?? "Dashboard",
          expiresAt: input.expires ? new Date(input.expires) : null,
          createdBy: by.user,
          createdByKey: by.key,
        })
        .returning();
      await auditNetwork(tx, teamId, name, "network.ban", input.uuid, input.name, { after: banFields(r!) });
      return r!;
    });
    for (const s of net.servers)
      this.events.publish(s.id, "ban_added", { ...networkBanForAgent(row), network_name: name });
    const [out] = (await this.bans(principal, teamId, name, { state: "all", limit: 1, offset: 0 })).bans;
    return out!;
  }

  /** Lifts the player's ban on the network: every server's agent pardons them. */
  async unban(principal: Principal, teamId: string, name: string, uuid: string) {
    const net = await this.network(principal, teamId, name, "moderator", true);
    const by = who(principal);
    await this.db.transaction(async (tx) => {
      const lifted = await tx
        .update(networkBans)
        .set({ liftedAt: sql`now()`, liftedBy: by.user, liftedByKey: by.key, endReason: "lifted" })
        .where(
          and(
            eq(networkBans.teamId, teamId),
            eq(networkBans.networkName, name),
            eq(networkBans.uuid, uuid),
            activeNetworkBan,
          ),
        )
        .returning();
      if (lifted.length === 0) throw new AppError("not_found", "This player is not banned on this network.");
      await auditNetwork(tx, teamId, name, "network.unban", uuid, lifted[0]!.name, { before: banFields(lifted[0]!) });
    });
    for (const s of net.servers)
      this.events.publish(s.id, "ban_lifted", { uuid, source: "dashboard", network_name: name });
    return { ok: true as const };
  }

  async ranks(principal: Principal, teamId: string, name: string) {
    await this.network(principal, teamId, name, "viewer");
    return { ranks: (await this.ranksOf(this.db, teamId, name)).map(networkRankOut) };
  }

  private ranksOf(db: Db | Tx, teamId: string, name: string) {
    return db
      .select()
      .from(networkRanks)
      .where(and(eq(networkRanks.teamId, teamId), eq(networkRanks.networkName, name)))
      .orderBy(desc(networkRanks.weight), asc(networkRanks.name));
  }

  async createRank(principal: Principal, teamId: string, name: string, rank: string, fields: RankFields) {
    const out = await this.writeRanks(principal, teamId, name, async (tx, rows) => {
      if (rows.some((r) => r.name === rank))
        throw new AppError("conflict", `A rank named ${rank} already exists on this network.`);
      if (rows.length >= LIMITS.ranksPerNetwork) throw overLimit("ranks per network", LIMITS.ranksPerNetwork);
      checkGraph(rows, rank, fields.parents ?? []);
      const [row] = await tx
        .insert(networkRanks)
        .values({
          teamId,
          networkName: name,
          name: rank,
          displayName: fields.display_name ?? null,
          weight: fields.weight ?? 0,
          prefix: fields.prefix ?? null,
          suffix: fields.suffix ?? null,
          permissions: fields.permissions ?? [],
          parents: fields.parents ?? [],
        })
        .returning();
      const r = networkRankOut(row!);
      await auditNetwork(tx, teamId, name, "network.rank_create", rank, rank, { after: r }, "rank");
      return r;
    });
    return out;
  }

  async updateRank(principal: Principal, teamId: string, name: string, rank: string, fields: RankFields) {
    return this.writeRanks(principal, teamId, name, async (tx, rows) => {
      const before = rows.find((r) => r.name === rank);
      if (!before) throw new AppError("not_found", `No rank named ${rank} on this network.`);
      if (fields.parents) checkGraph(rows, rank, fields.parents);
      const [row] = await tx
        .update(networkRanks)
        .set({
          ...(fields.display_name !== undefined && { displayName: fields.display_name }),
          ...(fields.weight !== undefined && { weight: fields.weight }),
          ...(fields.prefix !== undefined && { prefix: fields.prefix }),
          ...(fields.suffix !== undefined && { suffix: fields.suffix }),
          ...(fields.permissions !== undefined && { permissions: fields.permissions }),
          ...(fields.parents !== undefined && { parents: fields.parents }),
          updatedAt: new Date(),
        })
        .where(eq(networkRanks.id, before.id))
        .returning();
      const r = networkRankOut(row!);
      await auditNetwork(
        tx,
        teamId,
        name,
        "network.rank_update",
        rank,
        rank,
        { before: networkRankOut(before), after: r },
        "rank",
      );
      return r;
    });
  }

  async removeRank(principal: Principal, teamId: string, name: string, rank: string) {
    return this.writeRanks(principal, teamId, name, async (tx, rows) => {
      const before = rows.find((r) => r.name === rank);
      if (!before) throw new AppError("not_found", `No rank named ${rank} on this network.`);
      const children = rows.filter((r) => r.parents.includes(rank)).map((r) => r.name);
      if (children.length)
        throw new AppError(
          "conflict",
          `Ranks ${children.join(", ")} inherit from ${rank}; change their parents first.`,
          {
            details: { children },
          },
        );
      await tx.delete(networkRanks).where(eq(networkRanks.id, before.id));
      await auditNetwork(
        tx,
        teamId,
        name,
        "network.rank_delete",
        rank,
        rank,
        { before: networkRankOut(before) },
        "rank",
      );
      return { ok: true as const };
    });
  }

  /**
   * Rank writes of one network run one at a time (a lock on the network's ranks), so two concurrent
   * edits cannot each pass the cycle check and together form a cycle. The agents pick the change
   * up on their next configuration read.
   */
  private async writeRanks<T>(
    principal: Principal,
    teamId: string,
    name: string,
    fn: (tx: Tx, rows: RankRow[]) => Promise<T>,
  ): Promise<T> {
    await this.network(principal, teamId, name, "admin", true);
    return this.db.transaction(async (tx) => {
      await tx.execute(
        sql`select 1 from pg_advisory_xact_lock(hashtextextended(${`network-ranks/${teamId}/${name}`}, 0))`,
      );
      return fn(tx, await this.ranksOf(tx, teamId, name));
    });
  }

  /**
   * What a server's agent takes from its network: the bans in force, the lifts of the last
   * `pardonSince`, and the ranks. Empty for a server in no network.
   */
  async forServer(serverId: string, pardonSince: Date) {
    const [srv] = await this.db
      .select({ teamId: servers.teamId, kind: servers.kind, networkName: servers.networkName })
      .from(servers)
      .where(eq(servers.id, serverId));
    if (srv?.kind !== "network" || !srv.networkName) return { bans: [], pardons: [], ranks: [] };
    const mine = and(eq(networkBans.teamId, srv.teamId), eq(networkBans.networkName, srv.networkName));
    const [bans, pardons, ranks] = await Promise.all([
      this.db
        .select()
        .from(networkBans)
        .where(and(mine, activeNetworkBan))
        .orderBy(desc(networkBans.createdAt))
        .limit(LIMITS.bansInAgentConfig),
      this.db
        .select({ uuid: networkBans.uuid, liftedAt: networkBans.liftedAt })
        .from(networkBans)
        .where(
          and(
            mine,
            isNotNull(networkBans.liftedAt),
            eq(networkBans.endReason, "lifted"),
            gt(networkBans.liftedAt, sql`${pardonSince.toISOString()}::timestamptz`),
          ),
        )
        .orderBy(desc(networkBans.liftedAt))
        .limit(LIMITS.pardonsInAgentConfig),
      this.ranksOf(this.db, srv.teamId, srv.networkName),
    ]);
    return { bans, pardons: pardons.map((p) => ({ uuid: p.uuid, liftedAt: p.liftedAt! })), ranks };
  }
}

function checkGraph(rows: RankRow[], name: string, parents: string[]) {
  const problem = findRankProblem(new Map(rows.map((r) => [r.name, r.parents])), name, parents);
  if (problem) throw problem;
}

/**
 * A network's audit entry: its target is the player (a ban) or the rank, and the network's name is
 * recorded with the fields before and after.
 */
function auditNetwork(
  tx: Tx,
  teamId: string,
  network: string,
  action: "network.ban" | "network.unban" | "network.rank_create" | "network.rank_update" | "network.rank_delete",
  id: string,
  name: string | null,
  change: { before?: Record<string, unknown>; after?: Record<string, unknown> },
  type: "player" | "rank" = "player",
) {
  return audit(tx, {
    teamId,
    action,
    target: { type, id, name },
    before: change.before ? { network, ...change.before } : null,
    after: change.after ? { network, ...change.after } : null,
  });
}
