import { and, eq, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { servers, teamMembers } from "../db/schema";
import { AppError } from "../lib/errors";
import { ZUuid } from "../lib/schemas";
import { requireAtLeast } from "../auth/principal";
import type { Principal, Role } from "../auth/principal";

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
  return {
    byKey: db
      .select()
      .from(servers)
      .where(and(eq(servers.id, sql.placeholder("serverId")), eq(servers.teamId, sql.placeholder("teamId"))))
      .limit(1)
      .prepare("server_gate_by_key"),
    byMember: db
      .select({ server: servers, role: teamMembers.role })
      .from(servers)
      .innerJoin(
        teamMembers,
        and(eq(teamMembers.teamId, servers.teamId), eq(teamMembers.userId, sql.placeholder("userId"))),
      )
      .where(eq(servers.id, sql.placeholder("serverId")))
      .limit(1)
      .prepare("server_gate_by_member"),
  };
}
// Every server-scoped request passes the gate: its two statements are built and prepared once
// per database, not per call.
const gates = new WeakMap<Db, ReturnType<typeof buildGate>>();

export async function requireServerRole(
  db: Db,
  principal: Principal,
  serverId: string,
  min: Role,
): Promise<{ server: ServerRow; role: Role }> {
  let gate = gates.get(db);
  if (!gate) {
    gate = buildGate(db);
    gates.set(db, gate);
  }
  let server: ServerRow | undefined;
  let role: Role | undefined;
  if (principal.kind === "api_key") {
    [server] = await gate.byKey.execute({ serverId, teamId: principal.teamId });
    role = principal.role;
  } else {
    const [row] = await gate.byMember.execute({ serverId, userId: principal.userId });
    server = row?.server;
    role = row?.role;
  }
  if (!server || !role) throw new AppError("not_found", NOT_FOUND);
  return { server, role: requireAtLeast(role, min) };
}
