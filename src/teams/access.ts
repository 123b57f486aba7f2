import { and, eq } from "drizzle-orm";
import type { Db } from "../db/client";
import { teamMembers } from "../db/schema";
import { AppError } from "../lib/errors";
import type { Principal, Role } from "../trpc/context";

const RANK: Record<Role, number> = { viewer: 1, admin: 2, owner: 3 };

export function roleAtLeast(role: Role, min: Role): boolean {
  return RANK[role] >= RANK[min];
}

/**
 * The one gate for team-scoped data. A team the caller does not belong to answers the same
 * 403 whether or not it exists, so ids cannot be probed.
 */
export async function requireTeamRole(db: Db, principal: Principal, teamId: string, min: Role): Promise<Role> {
  let role: Role | undefined;
  if (principal.kind === "api_key") {
    role = principal.teamId === teamId ? principal.role : undefined;
  } else {
    const [row] = await db
      .select({ role: teamMembers.role })
      .from(teamMembers)
      .where(and(eq(teamMembers.teamId, teamId), eq(teamMembers.userId, principal.userId)))
      .limit(1);
    role = row?.role;
  }
  if (!role) throw new AppError("forbidden", "You are not a member of this team.");
  if (!roleAtLeast(role, min)) throw new AppError("forbidden", `This needs the ${min} role or higher in the team; you have ${role}.`);
  return role;
}
