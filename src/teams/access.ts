import { and, eq } from "drizzle-orm";
import type { Db } from "../db/client";
import { teamMembers, teams } from "../db/schema";
import { AppError } from "../lib/errors";
import { type Principal, type Role, requireAtLeast } from "../auth/principal";
import { lockedOut, twoFactorRequired } from "../auth/two-factor-gate";

/**
 * The caller's role in a team, or undefined when they have none (or the team does not exist).
 * A member of a team that requires a second factor, without one, gets 403 `two_factor_required`
 * (unless `evenLocked`: leaving such a team stays possible). API keys never sign in, so the
 * requirement is not theirs: a key is made and revoked by people who passed it.
 */
export async function teamRoleOf(
  db: Db,
  principal: Principal,
  teamId: string,
  opts: { evenLocked?: boolean } = {},
): Promise<Role | undefined> {
  if (principal.kind === "api_key") return principal.teamId === teamId ? principal.role : undefined;
  const [row] = await db
    .select({ role: teamMembers.role, locked: lockedOut(teams.requireTwoFactor, teamMembers.userId) })
    .from(teamMembers)
    .innerJoin(teams, eq(teams.id, teamMembers.teamId))
    .where(and(eq(teamMembers.teamId, teamId), eq(teamMembers.userId, principal.userId)))
    .limit(1);
  if (row?.locked && !opts.evenLocked) throw twoFactorRequired(teamId);
  return row?.role;
}

export const NOT_MEMBER = "You are not a member of this team.";

/**
 * The gate for routes addressed by team id. A team the caller does not belong to answers the
 * same 403 whether or not it exists, so team ids cannot be probed.
 */
export async function requireTeamRole(
  db: Db,
  principal: Principal,
  teamId: string,
  min: Role,
  opts: { evenLocked?: boolean } = {},
): Promise<Role> {
  const role = await teamRoleOf(db, principal, teamId, opts);
  if (!role) throw new AppError("forbidden", NOT_MEMBER);
  return requireAtLeast(role, min);
}

/**
 * The gate for resources addressed by their own id (a client, a server): outside the caller's
 * teams the resource answers 404 exactly as if it did not exist; inside, a too-low role is a 403.
 */
export async function requireResourceRole(
  db: Db,
  principal: Principal,
  teamId: string | undefined,
  min: Role,
  notFound: string,
): Promise<Role> {
  const role = teamId ? await teamRoleOf(db, principal, teamId) : undefined;
  if (!role) throw new AppError("not_found", notFound);
  return requireAtLeast(role, min);
}
