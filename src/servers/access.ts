import { and, eq, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { sameAs } from "../db/prepared";
import { servers, teamMembers, teams } from "../db/schema";
import { AppError } from "../lib/errors";
import { ZUuid } from "../lib/schemas";
import { reachesServer, requireAtLeast } from "../auth/principal";
import type { Principal, Role } from "../auth/principal";
import { lockedOut, twoFactorRequired } from "../auth/two-factor-gate";

export type SelectorHeader = "x-team-id" | "x-server-id";

/**
 * Reads a selector header. Selectors are headers on both doors (the seed contract), so they
 * are checked here rather than by the input schema; the message names the header.
 */
export function selectorHeader(headers: Headers, name: SelectorHeader): string {
  const value = headers.get(name);
  if (value === null || value.trim() === "") throw new AppError("bad_request", `The ${name} header is required.`);
  if (!ZUuid.safeParse(value.trim()).success) throw new AppError("bad_request", `The ${name} header must be a UUID.`);
  return value.trim().toLowerCase();
}

export type ServerRow = typeof servers.$inferSelect;

const NOT_FOUND = "Server not found.";

/**
 * The gate for server-scoped data. A server outside the caller's teams answers exactly like
 * one that does not exist (404), so server ids cannot be probed; a member whose role is too
 * low learns only that (403), which reveals nothing new to them.
 */
function buildGate(db: Db) {
  // A key reaches the servers of its own team; a user, those of the teams they are a member of.
  // The server by its key; the team checked on the row found (`sameAs`: servers_team_idx would not be used).
  const ofKeyTeam = and(eq(servers.id, sql.placeholder("serverId")), sameAs(servers.teamId, "teamId", "uuid"));
  const membership = and(eq(teamMembers.teamId, servers.teamId), eq(teamMembers.userId, sql.placeholder("userId")));
  const byId = eq(servers.id, sql.placeholder("serverId"));
  // The team's two-factor requirement, answered in the same statement as the membership.
  const ofTeam = eq(teams.id, servers.teamId);
  const locked = lockedOut(teams.requireTwoFactor, teamMembers.userId);
  return {
    byKey: db.select().from(servers).where(ofKeyTeam).limit(1).prepare("server_gate_by_key"),
    byMember: db
      .select({ server: servers, role: teamMembers.role, locked })
      .from(servers)
      .innerJoin(teamMembers, membership)
      .innerJoin(teams, ofTeam)
      .where(byId)
      .limit(1)
      .prepare("server_gate_by_member"),
    // The same answers without the server's row, for callers that need only the role (the
    // analytics socket, at every authentication and revalidation): one column read back, not twelve.
    keyReaches: db.select({ id: servers.id }).from(servers).where(ofKeyTeam).limit(1).prepare("server_reach_by_key"),
    memberRole: db
      .select({ role: teamMembers.role, locked })
      .from(servers)
      .innerJoin(teamMembers, membership)
      .innerJoin(teams, ofTeam)
      .where(byId)
      .limit(1)
      .prepare("server_role_by_member"),
  };
}
// Every server-scoped request passes the gate: its statements are built and prepared once
// per database, not per call.
const gates = new WeakMap<Db, ReturnType<typeof buildGate>>();

function gateOf(db: Db) {
  let gate = gates.get(db);
  if (!gate) {
    gate = buildGate(db);
    gates.set(db, gate);
  }
  return gate;
}

export async function requireServerRole(
  db: Db,
  principal: Principal,
  serverId: string,
  min: Role,
): Promise<{ server: ServerRow; role: Role }> {
  const gate = gateOf(db);
  let server: ServerRow | undefined;
  let role: Role | null | undefined;
  if (principal.kind === "api_key") {
    // A key limited to other servers: this one answers as if it did not exist.
    if (reachesServer(principal, serverId)) [server] = await gate.byKey.execute({ serverId, teamId: principal.teamId });
    role = principal.role;
  } else {
    const [row] = await gate.byMember.execute({ serverId, userId: principal.userId });
    if (row?.locked) throw twoFactorRequired(row.server.teamId);
    server = row?.server;
    role = row?.role;
  }
  if (!server || role === undefined) throw new AppError("not_found", NOT_FOUND);
  return { server, role: requireAtLeast(role, min) };
}

/**
 * The caller's role on the server, by the same rule as `requireServerRole`, or undefined when the
 * server is unknown or outside the caller's teams (not told apart, as there). `serverId` must be
 * a UUID.
 */
export async function serverRoleOf(db: Db, principal: Principal, serverId: string): Promise<Role | undefined> {
  const gate = gateOf(db);
  if (principal.kind === "api_key") {
    if (!reachesServer(principal, serverId)) return undefined;
    const [reached] = await gate.keyReaches.execute({ serverId, teamId: principal.teamId });
    return reached ? (principal.role ?? undefined) : undefined;
  }
  const [row] = await gate.memberRole.execute({ serverId, userId: principal.userId });
  // A member locked out by the team's two-factor requirement reaches nothing of it.
  return row?.locked ? undefined : row?.role;
}

/**
 * What a team's incident or maintenance window is about: exactly one of a server of the team
 * (one a limited key reaches) or a network of it (never for a key limited to some servers: a
 * network is more than those). 400 for neither or both, 404 for one the team does not have.
 */
export async function requireServerOrNetwork(
  db: Db,
  principal: Principal,
  teamId: string,
  target: { server_id?: string; network_name?: string },
  forWhat: string,
): Promise<void> {
  if ((target.server_id === undefined) === (target.network_name === undefined))
    throw new AppError("bad_request", "Give exactly one of server_id and network_name.");
  if (target.server_id !== undefined) {
    const [found] = await db
      .select({ id: servers.id })
      .from(servers)
      .where(and(eq(servers.id, target.server_id), eq(servers.teamId, teamId)));
    if (!found || !reachesServer(principal, target.server_id)) throw new AppError("not_found", "Server not found.");
    return;
  }
  if (principal.kind === "api_key" && principal.serverIds)
    throw new AppError("forbidden", `This API key is limited to some servers: it cannot ${forWhat} for a network.`);
  const [member] = await db
    .select({ id: servers.id })
    .from(servers)
    .where(and(eq(servers.teamId, teamId), eq(servers.kind, "network"), eq(servers.networkName, target.network_name!)))
    .limit(1);
  if (!member) throw new AppError("not_found", "Network not found.");
}
