import { and, count, desc, eq, gt, lte } from "drizzle-orm";
import { alias } from "drizzle-orm/pg-core";
import type { Db } from "../db/client";
import { teamInvitations, teamMembers, teams, users } from "../db/schema";
import type { Clock } from "../lib/clock";
import { AppError } from "../lib/errors";
import { LIMITS, overLimit } from "../lib/limits";
import type { RateLimiter, RateLimitPolicy } from "../lib/rate-limit";
import { iso } from "../lib/schemas";
import { type Principal, principalKey } from "../auth/principal";
import { type TeamsService, teamOut } from "./service";
import { audit } from "../audit/entry";

type InvitationRow = typeof teamInvitations.$inferSelect;

const NO_INVITATION = "No such invitation for your account.";

export interface InvitationOptions {
  limiter: RateLimiter;
  /** Invitations per inviter: each attempt by an admin counts, taken or not. */
  perInviter: RateLimitPolicy;
  ttlHours: number;
}

/**
 * Membership is offered, never imposed: an admin invites an email, and only the person signed
 * in with that email can accept (which makes the membership, counted against their caps then)
 * or decline. Until then nothing of the team shows in their team list, nor can ownership reach
 * them (a transfer needs a member).
 */
export class InvitationsService {
  constructor(
    private readonly db: Db,
    private readonly teams: TeamsService,
    private readonly clock: Clock,
    private readonly opts: InvitationOptions,
  ) {}

  private out(row: InvitationRow, teamName: string, invitedBy: string | null) {
    return {
      invitation_id: row.id,
      team_id: row.teamId,
      team_name: teamName,
      email: row.email,
      role: row.role as "admin" | "moderator" | "viewer",
      status: row.expiresAt.getTime() > this.clock.now() ? ("pending" as const) : ("expired" as const),
      invited_by: invitedBy,
      created_at: iso(row.createdAt),
      expires_at: iso(row.expiresAt),
    };
  }

  /** The invitations of a team with their team name and inviter's email, oldest first. */
  private withNames(where: ReturnType<typeof and>) {
    const inviter = alias(users, "inviter");
    return this.db
      .select({ invitation: teamInvitations, teamName: teams.name, invitedBy: inviter.email })
      .from(teamInvitations)
      .innerJoin(teams, eq(teams.id, teamInvitations.teamId))
      .leftJoin(inviter, eq(inviter.id, teamInvitations.invitedBy))
      .where(where);
  }

  async invite(principal: Principal, teamId: string, email: string, role: "admin" | "moderator" | "viewer") {
    await this.teams.requirePerson(principal, teamId, "admin");
    await this.opts.limiter.enforce(this.opts.perInviter, principalKey(principal), {});
    const inviterId = principal.kind === "user" ? principal.userId : null;
    const now = this.clock.date();
    const id = await this.db.transaction(async (tx) => {
      // Locked, so two invitations at once cannot both squeeze under the team's caps.
      const [team] = await tx.select({ id: teams.id }).from(teams).where(eq(teams.id, teamId)).for("update");
      if (!team) throw new AppError("not_found", "Team not found.");
      const [member] = await tx
        .select({ id: users.id })
        .from(teamMembers)
        .innerJoin(users, eq(users.id, teamMembers.userId))
        .where(and(eq(teamMembers.teamId, teamId), eq(users.email, email)))
        .limit(1);
      if (member) throw new AppError("conflict", "This account is already a member of the team.");
      // An expired invitation is gone for good: the next one to that email replaces it.
      await tx
        .delete(teamInvitations)
        .where(and(eq(teamInvitations.teamId, teamId), lte(teamInvitations.expiresAt, now)));
      const [members] = await tx.select({ n: count() }).from(teamMembers).where(eq(teamMembers.teamId, teamId));
      if (members!.n >= LIMITS.membersPerTeam) throw overLimit("members per team", LIMITS.membersPerTeam);
      const [pending] = await tx.select({ n: count() }).from(teamInvitations).where(eq(teamInvitations.teamId, teamId));
      if (pending!.n >= LIMITS.pendingInvitationsPerTeam)
        throw overLimit("pending invitations per team; revoke some", LIMITS.pendingInvitationsPerTeam);
      const [row] = await tx
        .insert(teamInvitations)
        .values({
          teamId,
          email,
          role,
          invitedBy: inviterId,
          createdAt: now,
          expiresAt: new Date(now.getTime() + this.opts.ttlHours * 3600_000),
        })
        .onConflictDoNothing()
        .returning({ id: teamInvitations.id });
      if (!row)
        throw new AppError(
          "conflict",
          "This email already has a pending invitation to the team; revoke it to change it.",
        );
      await audit(tx, {
        teamId,
        target: { type: "invitation", id: row.id, name: email },
        after: { email, role, expires_at: iso(new Date(now.getTime() + this.opts.ttlHours * 3600_000)) },
      });
      return row.id;
    });
    const [made] = await this.withNames(eq(teamInvitations.id, id));
    return this.out(made!.invitation, made!.teamName, made!.invitedBy);
  }

  /** A team's invitations, pending and expired (expired ones stay until the next invitation clears them). */
  async listForTeam(principal: Principal, teamId: string) {
    await this.teams.require(principal, teamId, "admin");
    const rows = await this.withNames(eq(teamInvitations.teamId, teamId))
      .orderBy(teamInvitations.createdAt)
      .limit(LIMITS.pendingInvitationsPerTeam);
    return { invitations: rows.map((r) => this.out(r.invitation, r.teamName, r.invitedBy)) };
  }

  async revoke(principal: Principal, teamId: string, invitationId: string) {
    await this.teams.requirePerson(principal, teamId, "admin");
    await this.db.transaction(async (tx) => {
      const [gone] = await tx
        .delete(teamInvitations)
        .where(and(eq(teamInvitations.id, invitationId), eq(teamInvitations.teamId, teamId)))
        .returning();
      if (!gone) throw new AppError("not_found", "No such invitation in this team.");
      await audit(tx, {
        teamId,
        target: { type: "invitation", id: gone.id, name: gone.email },
        before: { email: gone.email, role: gone.role },
      });
    });
    return { ok: true as const };
  }

  /** The signed-in person's invitations still open, newest first: matched by their account's email. */
  async mine(userId: string) {
    const email = await this.emailOf(userId);
    const rows = await this.withNames(
      and(eq(teamInvitations.email, email), gt(teamInvitations.expiresAt, this.clock.date())),
    )
      .orderBy(desc(teamInvitations.createdAt))
      .limit(LIMITS.invitationsListed);
    return { invitations: rows.map((r) => this.out(r.invitation, r.teamName, r.invitedBy)) };
  }

  /** Makes the membership the invitation offers; the caller's team cap is counted now, not when invited. */
  async accept(userId: string, invitationId: string) {
    const email = await this.emailOf(userId);
    return this.db.transaction(async (tx) => {
      const [inv] = await tx
        .select()
        .from(teamInvitations)
        .where(and(eq(teamInvitations.id, invitationId), eq(teamInvitations.email, email)))
        .for("update");
      if (!inv) throw new AppError("not_found", NO_INVITATION);
      if (inv.expiresAt.getTime() <= this.clock.now())
        throw new AppError("invitation_expired", "This invitation has expired; ask the team for a new one.");
      // The same locks, in the same order, as an invitation and a team creation take.
      const [team] = await tx.select().from(teams).where(eq(teams.id, inv.teamId)).for("update");
      await tx.select({ id: users.id }).from(users).where(eq(users.id, userId)).for("update");
      const [members] = await tx.select({ n: count() }).from(teamMembers).where(eq(teamMembers.teamId, inv.teamId));
      if (members!.n >= LIMITS.membersPerTeam) throw overLimit("members per team", LIMITS.membersPerTeam);
      const [mine] = await tx.select({ n: count() }).from(teamMembers).where(eq(teamMembers.userId, userId));
      if (mine!.n >= LIMITS.teamsPerUser)
        throw overLimit("teams per account; leave one before accepting", LIMITS.teamsPerUser);
      const [joined] = await tx
        .insert(teamMembers)
        .values({ teamId: inv.teamId, userId, role: inv.role })
        .onConflictDoNothing()
        .returning();
      await tx.delete(teamInvitations).where(eq(teamInvitations.id, inv.id));
      if (!joined) throw new AppError("conflict", "You are already a member of this team.");
      await audit(tx, {
        teamId: inv.teamId,
        target: { type: "member", id: userId, name: email },
        after: { role: joined.role, invitation_id: inv.id },
      });
      return teamOut(team!, joined.role);
    });
  }

  /** Declining removes the invitation, expired or not; the team may invite again. */
  async decline(userId: string, invitationId: string) {
    const email = await this.emailOf(userId);
    await this.db.transaction(async (tx) => {
      const [gone] = await tx
        .delete(teamInvitations)
        .where(and(eq(teamInvitations.id, invitationId), eq(teamInvitations.email, email)))
        .returning();
      if (!gone) throw new AppError("not_found", NO_INVITATION);
      await audit(tx, {
        teamId: gone.teamId,
        target: { type: "invitation", id: gone.id, name: gone.email },
        before: { email: gone.email, role: gone.role },
      });
    });
    return { ok: true as const };
  }

  private async emailOf(userId: string) {
    const [user] = await this.db.select({ email: users.email }).from(users).where(eq(users.id, userId)).limit(1);
    if (!user) throw new AppError("unauthenticated", "The account no longer exists.");
    return user.email;
  }
}
