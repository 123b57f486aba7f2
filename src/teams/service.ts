import { and, count, desc, eq, inArray, isNull, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { apiKeys, servers, teamMembers, teams, users } from "../db/schema";
import { AppError } from "../lib/errors";
import { LIMITS, overLimit } from "../lib/limits";
import { iso } from "../lib/schemas";
import { displayPrefix, newSecret, sha256 } from "../lib/secrets";
import { type Principal, type Role, requireAtLeast } from "../auth/principal";
import { hasSecondFactor, lockedOut, twoFactorRequired } from "../auth/two-factor-gate";
import type { Scope } from "../auth/scopes";
import { NOT_MEMBER, requireTeamRole } from "./access";
import { validTimeZone } from "../lib/time-zone";
import { audit } from "../audit/entry";

type TeamRow = typeof teams.$inferSelect;
type KeyRow = typeof apiKeys.$inferSelect;

export const teamOut = (t: TeamRow, role: Role) => ({
  team_id: t.id,
  name: t.name,
  role,
  require_two_factor: t.requireTwoFactor,
  time_zone: t.timeZone,
  created_at: iso(t.createdAt),
  updated_at: iso(t.updatedAt),
});

type GrantableRole = "admin" | "moderator" | "viewer";

const keyOut = (k: KeyRow) => ({
  key_id: k.id,
  team_id: k.teamId,
  name: k.name,
  role: k.role as GrantableRole | null,
  scopes: k.scopes as [Scope, ...Scope[]] | null,
  server_ids: k.serverIds as [string, ...string[]] | null,
  expires_at: k.expiresAt ? iso(k.expiresAt) : null,
  last_used_at: k.lastUsedAt ? iso(k.lastUsedAt) : null,
  prefix: k.prefix,
  created_at: iso(k.createdAt),
  revoked_at: k.revokedAt ? iso(k.revokedAt) : null,
});

const memberTarget = (u: { id: string; email: string }) => ({ type: "member", id: u.id, name: u.email });
/** What a new key may do: a role or scopes, optionally only some servers, optionally until a time. */
export interface KeyGrant {
  role?: GrantableRole;
  scopes?: Scope[];
  server_ids?: string[];
  expires_at?: string;
}

export class TeamsService {
  /** The most read team route, `GET /teams/{id}`: the caller's role and the team in one prepared statement. */
  private readonly teamWithRole;
  private readonly teamById;

  constructor(
    private readonly db: Db,
    /** Told after a team is deleted (with it its clients: caches of them must go). */
    private readonly onRemoved: (teamId: string) => Promise<void> = async () => {},
    /** Told after a team's time zone changed: retention's kept counts are made again in it (src/analytics/zones.ts). */
    private readonly onZoneChanged: () => void = () => {},
  ) {
    this.teamWithRole = db
      .select({ team: teams, role: teamMembers.role, locked: lockedOut(teams.requireTwoFactor, teamMembers.userId) })
      .from(teamMembers)
      .innerJoin(teams, eq(teams.id, teamMembers.teamId))
      .where(and(eq(teamMembers.teamId, sql.placeholder("teamId")), eq(teamMembers.userId, sql.placeholder("userId"))))
      .limit(1)
      .prepare("team_with_member_role");
    this.teamById = db
      .select()
      .from(teams)
      .where(eq(teams.id, sql.placeholder("teamId")))
      .limit(1)
      .prepare("team_by_id");
  }

  require(principal: Principal, teamId: string, min: Role, opts: { evenLocked?: boolean } = {}) {
    return requireTeamRole(this.db, principal, teamId, min, opts);
  }

  /**
   * Members and API keys are managed by people only: what a key created would outlive the
   * key's revocation, so a leaked key could otherwise plant a successor or a new member.
   */
  requirePerson(principal: Principal, teamId: string, min: Role, opts: { evenLocked?: boolean } = {}) {
    if (principal.kind !== "user")
      throw new AppError("forbidden", "Only a signed-in team member can manage members and API keys, not an API key.");
    return this.require(principal, teamId, min, opts);
  }

  async create(userId: string, name: string) {
    return this.db.transaction(async (tx) => {
      // Locked first, so two creates at once cannot both squeeze under the cap.
      await tx.select({ id: users.id }).from(users).where(eq(users.id, userId)).for("update");
      const [mine] = await tx.select({ n: count() }).from(teamMembers).where(eq(teamMembers.userId, userId));
      if (mine!.n >= LIMITS.teamsPerUser) throw overLimit("teams per account", LIMITS.teamsPerUser);
      const [team] = await tx.insert(teams).values({ name }).returning();
      await tx.insert(teamMembers).values({ teamId: team!.id, userId, role: "owner" });
      await audit(tx, { teamId: team!.id, target: { type: "team", id: team!.id, name }, after: { name } });
      return teamOut(team!, "owner");
    });
  }

  async list(principal: Principal) {
    if (principal.kind === "api_key") {
      const [team] = await this.db.select().from(teams).where(eq(teams.id, principal.teamId));
      return { teams: team ? [teamOut(team, requireAtLeast(principal.role, "viewer"))] : [] };
    }
    const rows = await this.db
      .select({ team: teams, role: teamMembers.role })
      .from(teamMembers)
      .innerJoin(teams, eq(teams.id, teamMembers.teamId))
      .where(eq(teamMembers.userId, principal.userId))
      .orderBy(teams.createdAt);
    return { teams: rows.map((r) => teamOut(r.team, r.role)) };
  }

  async get(principal: Principal, teamId: string) {
    // The same answers as `require(…, "viewer")` then a read: no role is 403 whether or not the
    // team exists; a membership implies the team (deleting a team deletes its members).
    if (principal.kind === "api_key") {
      if (principal.teamId !== teamId) throw new AppError("forbidden", NOT_MEMBER);
      const [team] = await this.teamById.execute({ teamId });
      if (!team) throw new AppError("not_found", "Team not found.");
      return teamOut(team, requireAtLeast(principal.role, "viewer"));
    }
    const [row] = await this.teamWithRole.execute({ teamId, userId: principal.userId });
    if (!row) throw new AppError("forbidden", NOT_MEMBER);
    if (row.locked) throw twoFactorRequired(teamId);
    return teamOut(row.team, requireAtLeast(row.role, "viewer"));
  }

  /** Renames the team and/or sets its time zone (the fields given). */
  async update(principal: Principal, teamId: string, change: { name?: string; time_zone?: string }) {
    const role = await this.require(principal, teamId, "admin");
    if (change.time_zone !== undefined && !validTimeZone(change.time_zone))
      throw new AppError("bad_request", `Unknown time zone: ${change.time_zone}.`);
    const team = await this.db.transaction(async (tx) => {
      const [before] = await tx
        .select({ name: teams.name, time_zone: teams.timeZone })
        .from(teams)
        .where(eq(teams.id, teamId))
        .for("update");
      if (!before) throw new AppError("not_found", "Team not found.");
      const [row] = await tx
        .update(teams)
        .set({
          ...(change.name !== undefined && { name: change.name }),
          ...(change.time_zone !== undefined && { timeZone: change.time_zone }),
          updatedAt: new Date(),
        })
        .where(eq(teams.id, teamId))
        .returning();
      const after = {
        ...(change.name !== undefined && { name: change.name }),
        ...(change.time_zone !== undefined && { time_zone: change.time_zone }),
      };
      const was = {
        ...(change.name !== undefined && { name: before.name }),
        ...(change.time_zone !== undefined && { time_zone: before.time_zone }),
      };
      await audit(tx, { teamId, target: { type: "team", id: teamId, name: row!.name }, before: was, after });
      return row!;
    });
    // Retention's kept counts are made again in the new zone after the answer, not inside it.
    if (team.timeZone !== team.cohortZone) this.onZoneChanged();
    return teamOut(team, role);
  }

  async remove(principal: Principal, teamId: string) {
    await this.require(principal, teamId, "owner");
    await this.db.transaction(async (tx) => {
      const [gone] = await tx.delete(teams).where(eq(teams.id, teamId)).returning({ name: teams.name });
      // The entry outlives the team (the log has no foreign keys) until the retention removes it.
      if (gone) await audit(tx, { teamId, target: { type: "team", id: teamId, name: gone.name }, before: gone });
    });
    await this.onRemoved(teamId);
    return { ok: true as const };
  }

  async members(principal: Principal, teamId: string) {
    await this.require(principal, teamId, "viewer");
    const rows = await this.db
      .select({ user_id: users.id, email: users.email, role: teamMembers.role, joined: teamMembers.createdAt })
      .from(teamMembers)
      .innerJoin(users, eq(users.id, teamMembers.userId))
      .where(eq(teamMembers.teamId, teamId))
      .orderBy(teamMembers.createdAt);
    return { members: rows.map(({ joined, ...m }) => ({ ...m, joined_at: iso(joined) })) };
  }

  async updateMember(principal: Principal, teamId: string, userId: string, role: GrantableRole) {
    await this.requirePerson(principal, teamId, "admin");
    const member = await this.member(teamId, userId);
    if (member.role === "owner")
      throw new AppError("conflict", "The owner's role changes only by transferring ownership.");
    const row = await this.db.transaction(async (tx) => {
      const [r] = await tx
        .update(teamMembers)
        .set({ role })
        .where(and(eq(teamMembers.teamId, teamId), eq(teamMembers.userId, userId)))
        .returning();
      await audit(tx, {
        teamId,
        target: memberTarget({ id: userId, email: member.email }),
        before: { role: member.role },
        after: { role },
      });
      return r!;
    });
    return { user_id: userId, email: member.email, role: row.role, joined_at: iso(row.createdAt) };
  }

  async removeMember(principal: Principal, teamId: string, userId: string) {
    const leavingSelf = principal.kind === "user" && principal.userId === userId;
    // Leaving stays open to a member the team's two-factor requirement locks out.
    await this.requirePerson(principal, teamId, leavingSelf ? "viewer" : "admin", { evenLocked: leavingSelf });
    const member = await this.member(teamId, userId);
    if (member.role === "owner")
      throw new AppError("conflict", "The owner cannot be removed; transfer ownership first.");
    await this.db.transaction(async (tx) => {
      await tx.delete(teamMembers).where(and(eq(teamMembers.teamId, teamId), eq(teamMembers.userId, userId)));
      await audit(tx, {
        teamId,
        target: memberTarget({ id: userId, email: member.email }),
        before: { role: member.role },
      });
    });
    return { ok: true as const };
  }

  /**
   * The owner hands the team to another member, and stays on as admin. Only a member: someone
   * merely invited is not one until they accept.
   */
  async transfer(principal: Principal, teamId: string, userId: string) {
    await this.requirePerson(principal, teamId, "owner");
    const target = await this.member(teamId, userId);
    if (target.role === "owner") throw new AppError("conflict", "This member already owns the team.");
    await this.db.transaction(async (tx) => {
      const [old] = await tx
        .update(teamMembers)
        .set({ role: "admin" })
        .where(and(eq(teamMembers.teamId, teamId), eq(teamMembers.role, "owner")))
        .returning({ userId: teamMembers.userId });
      await tx
        .update(teamMembers)
        .set({ role: "owner" })
        .where(and(eq(teamMembers.teamId, teamId), eq(teamMembers.userId, userId)));
      await audit(tx, {
        teamId,
        target: memberTarget({ id: userId, email: target.email }),
        changes: {
          role: { before: target.role, after: "owner" },
          owner_id: { before: old?.userId ?? null, after: userId },
        },
      });
    });
    return this.members(principal, teamId);
  }

  async createApiKey(principal: Principal, teamId: string, name: string, grant: KeyGrant) {
    await this.requirePerson(principal, teamId, "admin");
    const expiresAt = grant.expires_at === undefined ? null : new Date(grant.expires_at);
    if (expiresAt && expiresAt.getTime() <= Date.now())
      throw new AppError("bad_request", "expires_at must be in the future.");
    const serverIds = grant.server_ids ? [...new Set(grant.server_ids)] : null;
    if (serverIds) {
      const found = await this.db
        .select({ id: servers.id })
        .from(servers)
        .where(and(eq(servers.teamId, teamId), inArray(servers.id, serverIds)));
      if (found.length !== serverIds.length)
        throw new AppError("bad_request", "Every server in server_ids must be a server of this team.", {
          details: { unknown: serverIds.filter((id) => !found.some((f) => f.id === id)) },
        });
    }
    const key = newSecret("api_key");
    const [row] = await this.db.transaction(async (tx) => {
      await tx.select({ id: teams.id }).from(teams).where(eq(teams.id, teamId)).for("update");
      const [active] = await tx
        .select({ n: count() })
        .from(apiKeys)
        .where(and(eq(apiKeys.teamId, teamId), isNull(apiKeys.revokedAt)));
      if (active!.n >= LIMITS.activeApiKeysPerTeam)
        throw overLimit("active API keys per team; revoke unused ones", LIMITS.activeApiKeysPerTeam);
      const rows = await tx
        .insert(apiKeys)
        .values({
          teamId,
          name,
          role: grant.role ?? null,
          scopes: grant.scopes ?? null,
          serverIds,
          expiresAt,
          keyHash: sha256(key),
          prefix: displayPrefix(key),
          createdBy: principal.kind === "user" ? principal.userId : null,
        })
        .returning();
      const k = rows[0]!;
      await audit(tx, {
        teamId,
        target: { type: "api_key", id: k.id, name },
        after: {
          name,
          role: k.role,
          scopes: k.scopes,
          server_ids: k.serverIds,
          expires_at: k.expiresAt ? k.expiresAt.toISOString() : null,
          prefix: k.prefix,
        },
      });
      return rows;
    });
    return { api_key: keyOut(row!), key };
  }

  async listApiKeys(principal: Principal, teamId: string) {
    await this.requirePerson(principal, teamId, "admin");
    // Every active key, then the most recently revoked ones.
    const rows = await this.db
      .select()
      .from(apiKeys)
      .where(eq(apiKeys.teamId, teamId))
      .orderBy(sql`${apiKeys.revokedAt} is not null`, desc(apiKeys.revokedAt), desc(apiKeys.createdAt))
      .limit(LIMITS.apiKeysListed);
    return { api_keys: rows.map(keyOut) };
  }

  async revokeApiKey(principal: Principal, teamId: string, keyId: string) {
    await this.requirePerson(principal, teamId, "admin");
    const row = await this.db.transaction(async (tx) => {
      const [before] = await tx
        .select({ revokedAt: apiKeys.revokedAt })
        .from(apiKeys)
        .where(and(eq(apiKeys.id, keyId), eq(apiKeys.teamId, teamId)))
        .for("update");
      if (!before) throw new AppError("not_found", "No such API key in this team.");
      const [r] = await tx.update(apiKeys).set({ revokedAt: new Date() }).where(eq(apiKeys.id, keyId)).returning();
      await audit(tx, {
        teamId,
        target: { type: "api_key", id: keyId, name: r!.name },
        before: { revoked_at: before.revokedAt ? iso(before.revokedAt) : null },
        after: { revoked_at: iso(r!.revokedAt!) },
      });
      return r!;
    });
    return keyOut(row);
  }

  /**
   * Turns the team's two-factor requirement on or off. Turning it on needs a second factor of
   * the caller's own, so no one locks themselves out of the team they are changing.
   */
  async setTwoFactorRequirement(principal: Principal, teamId: string, required: boolean) {
    const role = await this.requirePerson(principal, teamId, "admin");
    if (required && principal.kind === "user") {
      const [me] = await this.db
        .select({ has: hasSecondFactor(users.id) })
        .from(users)
        .where(eq(users.id, principal.userId));
      if (!me?.has)
        throw new AppError(
          "two_factor_required",
          "Add an authenticator app or a passkey to your own account before requiring one of the team.",
          { details: { team_id: teamId } },
        );
    }
    const team = await this.db.transaction(async (tx) => {
      const [before] = await tx
        .select({ requireTwoFactor: teams.requireTwoFactor })
        .from(teams)
        .where(eq(teams.id, teamId))
        .for("update");
      const [row] = await tx
        .update(teams)
        .set({ requireTwoFactor: required, updatedAt: new Date() })
        .where(eq(teams.id, teamId))
        .returning();
      if (!before || !row) throw new AppError("not_found", "Team not found.");
      await audit(tx, {
        teamId,
        target: { type: "team", id: teamId, name: row.name },
        before: { require_two_factor: before.requireTwoFactor },
        after: { require_two_factor: required },
      });
      return row;
    });
    return teamOut(team, role);
  }

  private async member(teamId: string, userId: string) {
    const [m] = await this.db
      .select({ role: teamMembers.role, email: users.email })
      .from(teamMembers)
      .innerJoin(users, eq(users.id, teamMembers.userId))
      .where(and(eq(teamMembers.teamId, teamId), eq(teamMembers.userId, userId)))
      .limit(1);
    if (!m) throw new AppError("not_found", "No such member in this team.");
    return m;
  }
}
