import { asc, count, eq, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { serverStatus, servers, teams } from "../db/schema";
import { literalAddress, type OutboundPolicy, refusal } from "../lib/address-guard";
import { AppError } from "../lib/errors";
import { iso } from "../lib/schemas";
import { displayPrefix, newSecret, sha256 } from "../lib/secrets";
import { requireTeamRole } from "../teams/access";
import { LIMITS, overLimit } from "../lib/limits";
import { reachesServer } from "../auth/principal";
import type { Principal } from "../auth/principal";
import { requireServerRole, type ServerRow } from "./access";
import type { TUpdateServer } from "./schemas";
import type { DownReason } from "../monitoring/down-reason";
import { audit } from "../audit/entry";

type StatusRow = typeof serverStatus.$inferSelect;

const isoOrNull = (d: Date | null | undefined) => (d ? iso(d) : null);

/** Why the last check found the server down and since when; both null unless it is down. */
function downState(st: StatusRow | null | undefined) {
  if (st?.online !== false) return { down_reason: null, down_since: null };
  return { down_reason: (st.downReason as DownReason | null) ?? null, down_since: isoOrNull(st.changedAt) };
}

export function serverOut(s: ServerRow, st: StatusRow | null | undefined) {
  return {
    server_id: s.id,
    team_id: s.teamId,
    name: s.name,
    host: s.host,
    port: s.port,
    kind: s.kind,
    network_name: s.networkName,
    agent_token_prefix: s.agentTokenPrefix,
    created_at: iso(s.createdAt),
    updated_at: iso(s.updatedAt),
    status: {
      online: st?.online ?? null,
      latency_ms: st?.latencyMs ?? null,
      players_online: st?.playersOnline ?? null,
      players_max: st?.playersMax ?? null,
      version: st?.version ?? null,
      motd: st?.motd ?? null,
      checked_at: isoOrNull(st?.checkedAt),
      changed_at: isoOrNull(st?.changedAt),
      ...downState(st),
    },
    agent: st?.heartbeatAt
      ? {
          tps: st.tps,
          mspt: st.mspt,
          players_online: st.agentPlayersOnline,
          memory_used_mb: st.memoryUsedMb,
          memory_max_mb: st.memoryMaxMb,
          reported_at: iso(st.heartbeatAt),
        }
      : null,
  };
}
export type TServerOut = ReturnType<typeof serverOut>;

/** What the audit log records of a server: its settings, never its token. */
const serverFields = (s: Pick<ServerRow, "name" | "host" | "port" | "kind" | "networkName">) => ({
  name: s.name,
  host: s.host,
  port: s.port,
  kind: s.kind,
  network_name: s.networkName,
});
const serverTarget = (s: Pick<ServerRow, "id" | "name">) => ({ type: "server", id: s.id, name: s.name });

function checkNetwork(kind: string, networkName: string | null | undefined) {
  if (kind === "network" && !networkName)
    throw new AppError("bad_request", "network_name is required when kind is network.");
  if (kind === "single" && networkName) throw new AppError("bad_request", "network_name is only for kind network.");
}

/**
 * A literal address is refused as soon as it is registered; a name can only be judged by what
 * it resolves to, which the pinger checks at every ping.
 */
function checkHost(host: string, policy: OutboundPolicy) {
  const address = literalAddress(host);
  const why = address && refusal(address, policy);
  if (why) throw new AppError("bad_request", `host: ${why}.`, { details: { field: "host", address } });
}

export class ServersService {
  constructor(
    private readonly db: Db,
    private readonly outbound: OutboundPolicy = { allowPrivate: false },
  ) {}

  async create(
    principal: Principal,
    input: {
      team_id: string;
      name: string;
      host: string;
      port: number;
      kind: "single" | "network";
      network_name?: string;
    },
  ) {
    await requireTeamRole(this.db, principal, input.team_id, "admin");
    if (principal.kind === "api_key" && principal.serverIds)
      throw new AppError("forbidden", "This API key is limited to some servers: it cannot register new ones.");
    checkNetwork(input.kind, input.network_name);
    checkHost(input.host, this.outbound);
    const agentToken = newSecret("agent");
    const [row] = await this.db.transaction(async (tx) => {
      await tx.select({ id: teams.id }).from(teams).where(eq(teams.id, input.team_id)).for("update");
      const [mine] = await tx.select({ n: count() }).from(servers).where(eq(servers.teamId, input.team_id));
      if (mine!.n >= LIMITS.serversPerTeam) throw overLimit("servers per team", LIMITS.serversPerTeam);
      const rows = await tx
        .insert(servers)
        .values({
          teamId: input.team_id,
          name: input.name,
          host: input.host,
          port: input.port,
          kind: input.kind,
          networkName: input.kind === "network" ? input.network_name! : null,
          agentTokenHash: sha256(agentToken),
          agentTokenPrefix: displayPrefix(agentToken),
        })
        .returning();
      const s = rows[0]!;
      await audit(tx, {
        teamId: s.teamId,
        target: serverTarget(s),
        serverId: s.id,
        after: { ...serverFields(s), agent_token_prefix: s.agentTokenPrefix },
      });
      return rows;
    });
    return { ...serverOut(row!, null), agent_token: agentToken };
  }

  private async withStatus(where: ReturnType<typeof eq>) {
    const rows = await this.db
      .select({ server: servers, status: serverStatus })
      .from(servers)
      .leftJoin(serverStatus, eq(serverStatus.serverId, servers.id))
      .where(where)
      .orderBy(asc(servers.createdAt), asc(servers.id));
    return rows.map((r) => serverOut(r.server, r.status));
  }

  async list(principal: Principal, teamId: string) {
    await requireTeamRole(this.db, principal, teamId, "viewer");
    const all = await this.withStatus(eq(servers.teamId, teamId));
    // A key limited to some servers lists those only (and its networks are made of them).
    return { servers: all.filter((s) => reachesServer(principal, s.server_id)) };
  }

  async get(principal: Principal, serverId: string) {
    await requireServerRole(this.db, principal, serverId, "viewer");
    const [out] = await this.withStatus(eq(servers.id, serverId));
    if (!out) throw new AppError("not_found", "Server not found.");
    return out;
  }

  async update(principal: Principal, input: TUpdateServer) {
    const { server } = await requireServerRole(this.db, principal, input.server_id, "admin");
    const kind = input.kind ?? server.kind;
    // Switching to single drops the network name unless one is given (which is then an error).
    const networkName =
      input.network_name !== undefined ? input.network_name : kind === "single" ? null : server.networkName;
    checkNetwork(kind, networkName);
    if (input.host !== undefined) checkHost(input.host, this.outbound);
    const moved =
      (input.host !== undefined && input.host !== server.host) ||
      (input.port !== undefined && input.port !== server.port);
    const next = {
      name: input.name ?? server.name,
      host: input.host ?? server.host,
      port: input.port ?? server.port,
      kind,
      networkName,
    };
    await this.db.transaction(async (tx) => {
      await tx
        .update(servers)
        .set({
          ...next,
          updatedAt: new Date(),
          // A new address is checked at once rather than at the old schedule.
          ...(moved && { nextCheckAt: sql`now()` }),
        })
        .where(eq(servers.id, server.id));
      if (moved) await tx.delete(serverStatus).where(eq(serverStatus.serverId, server.id));
      await audit(tx, {
        teamId: server.teamId,
        target: serverTarget({ id: server.id, name: next.name }),
        serverId: server.id,
        before: serverFields(server),
        after: serverFields(next),
      });
    });
    return this.get(principal, server.id);
  }

  async remove(principal: Principal, serverId: string) {
    const { server } = await requireServerRole(this.db, principal, serverId, "admin");
    await this.db.transaction(async (tx) => {
      await tx.delete(servers).where(eq(servers.id, serverId));
      await audit(tx, { teamId: server.teamId, target: serverTarget(server), serverId, before: serverFields(server) });
    });
    return { ok: true as const };
  }

  /** A new agent token; the old one stops working at once. */
  async rotateAgentToken(principal: Principal, serverId: string) {
    const { server } = await requireServerRole(this.db, principal, serverId, "admin");
    const agentToken = newSecret("agent");
    await this.db.transaction(async (tx) => {
      await tx
        .update(servers)
        .set({ agentTokenHash: sha256(agentToken), agentTokenPrefix: displayPrefix(agentToken), updatedAt: new Date() })
        .where(eq(servers.id, serverId));
      await audit(tx, {
        teamId: server.teamId,
        target: serverTarget(server),
        serverId,
        before: { agent_token_prefix: server.agentTokenPrefix },
        after: { agent_token_prefix: displayPrefix(agentToken) },
      });
    });
    return { server_id: serverId, agent_token: agentToken, agent_token_prefix: displayPrefix(agentToken) };
  }

  /** The team's networks, each with its servers and the players summed over servers that are up. */
  async networks(principal: Principal, teamId: string) {
    const { servers: all } = await this.list(principal, teamId);
    const byName = new Map<string, TServerOut[]>();
    for (const s of all) {
      if (s.kind !== "network" || !s.network_name) continue;
      const group = byName.get(s.network_name) ?? [];
      group.push(s);
      byName.set(s.network_name, group);
    }
    const networks = [...byName.entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([network_name, members]) => {
        const up = members.filter((m) => m.status.online === true);
        return {
          network_name,
          servers: members,
          servers_total: members.length,
          servers_online: up.length,
          players_online: up.reduce((n, m) => n + (m.status.players_online ?? 0), 0),
          players_max: up.reduce((n, m) => n + (m.status.players_max ?? 0), 0),
        };
      });
    return { networks };
  }
}
