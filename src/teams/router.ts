import { z } from "zod";
import { LIMITS } from "../lib/limits";
import { ZOk } from "../lib/schemas";
import { router } from "../trpc/init";
import { authedProcedure, trustedOutput, userProcedure } from "../trpc/procedures";
import {
  ZApiKey,
  ZApiKeyRef,
  ZCreateApiKey,
  ZCreateTeam,
  ZInvitation,
  ZInvitationRef,
  ZInvite,
  ZMember,
  ZMemberRef,
  ZTeam,
  ZTeamInvitationRef,
  ZTeamRef,
  ZTransfer,
  ZTwoFactorRequirement,
  ZUpdateMember,
  ZUpdateTeam,
} from "./schemas";

const tags = ["teams"];
const err = [400, 401, 403, 404, 429];
const PEOPLE_ONLY =
  "People only: a team API key gets 403, so a leaked key cannot create members or keys that outlive its revocation.";
const ZMembers = z.object({ members: z.array(ZMember).max(LIMITS.membersPerTeam) });
const ZTeamInvitations = z.object({ invitations: z.array(ZInvitation).max(LIMITS.pendingInvitationsPerTeam) });

export const teamsRouter = router({
  create: userProcedure
    .meta({
      access: "user",
      audit: "team.create",
      status: 201,
      openapi: {
        method: "POST",
        path: "/teams",
        tags,
        summary: "Create a team; the caller becomes its owner",
        errorResponses: [400, 401, 403, 409, 429],
      },
    })
    .input(ZCreateTeam)
    .output(ZTeam)
    .mutation(({ ctx, input }) => ctx.services.teams.create(ctx.principal.userId, input.name)),

  list: authedProcedure
    .meta({
      access: "member",
      scope: "team:read",
      openapi: {
        method: "GET",
        path: "/teams",
        tags,
        summary: "Teams the caller belongs to (an API key sees its own team)",
        errorResponses: [401, 429],
      },
    })
    .output(z.object({ teams: z.array(ZTeam).max(LIMITS.teamsPerUser) }))
    .query(({ ctx }) => ctx.services.teams.list(ctx.principal)),

  // teamOut builds every field: no output re-validation on the most read team route.
  get: trustedOutput(
    authedProcedure
      .meta({
        access: "team:viewer",
        scope: "team:read",
        openapi: { method: "GET", path: "/teams/{team_id}", tags, summary: "One team", errorResponses: err },
      })
      .input(ZTeamRef)
      .output(ZTeam)
      .query(({ ctx, input }) => ctx.services.teams.get(ctx.principal, input.team_id)),
  ),

  update: authedProcedure
    .meta({
      access: "team:admin",
      audit: "team.update",
      scope: "team:write",
      openapi: {
        method: "PATCH",
        path: "/teams/{team_id}",
        tags,
        summary: "Rename a team or set its time zone",
        errorResponses: err,
      },
    })
    .input(ZUpdateTeam)
    .output(ZTeam)
    .mutation(({ ctx, input }) =>
      ctx.services.teams.update(ctx.principal, input.team_id, { name: input.name, time_zone: input.time_zone }),
    ),

  setTwoFactorRequirement: userProcedure
    .meta({
      access: "person:admin",
      audit: "team.two_factor_requirement",
      openapi: {
        method: "PUT",
        path: "/teams/{team_id}/two-factor",
        tags,
        summary: "Require (or stop requiring) a second factor of every member",
        description:
          "Owner or admin, a person (a team API key gets 403). While required, a member whose account has no second factor (an authenticator app or a passkey) gets 403 `two_factor_required` on every route of the team (leaving it excepted) and sees it locked in the dashboard until they add one. Turning it on needs a second factor of the caller's own (403 `two_factor_required` otherwise). Team API keys are not affected: a key never signs in, and only people who passed the requirement can create one.",
        errorResponses: err,
      },
    })
    .input(ZTwoFactorRequirement)
    .output(ZTeam)
    .mutation(({ ctx, input }) =>
      ctx.services.teams.setTwoFactorRequirement(ctx.principal, input.team_id, input.required),
    ),

  delete: authedProcedure
    .meta({
      access: "team:owner",
      audit: "team.delete",
      openapi: {
        method: "DELETE",
        path: "/teams/{team_id}",
        tags,
        summary: "Delete a team and everything it owns",
        errorResponses: err,
      },
    })
    .input(ZTeamRef)
    .output(ZOk)
    .mutation(({ ctx, input }) => ctx.services.teams.remove(ctx.principal, input.team_id)),

  members: authedProcedure
    .meta({
      access: "team:viewer",
      scope: "team:read",
      openapi: {
        method: "GET",
        path: "/teams/{team_id}/members",
        tags,
        summary: "Members of a team",
        errorResponses: err,
      },
    })
    .input(ZTeamRef)
    .output(ZMembers)
    .query(({ ctx, input }) => ctx.services.teams.members(ctx.principal, input.team_id)),

  invite: userProcedure
    .meta({
      access: "person:admin",
      audit: "member.invite",
      status: 201,
      openapi: {
        method: "POST",
        path: "/teams/{team_id}/members",
        tags,
        summary: "Invite an email to the team; they become a member when they accept",
        description: `${PEOPLE_ONLY} Answers 201 with a pending invitation, for an email with an account or not (one signing up later sees it). Nothing changes for the invitee until they accept it (POST /invitations/{invitation_id}/accept) before expires_at. 409 when the email is already a member, already has a pending invitation, or the team has the most members or pending invitations allowed. Each person may send a limited number of invitations per hour (429 with Retry-After).`,
        errorResponses: [...err, 409],
      },
    })
    .input(ZInvite)
    .output(ZInvitation)
    .mutation(({ ctx, input }) =>
      ctx.services.invitations.invite(ctx.principal, input.team_id, input.email, input.role),
    ),

  invitations: authedProcedure
    .meta({
      access: "team:admin",
      scope: "team:read",
      openapi: {
        method: "GET",
        path: "/teams/{team_id}/invitations",
        tags,
        summary: "The team's invitations not yet accepted or declined",
        errorResponses: err,
      },
    })
    .input(ZTeamRef)
    .output(ZTeamInvitations)
    .query(({ ctx, input }) => ctx.services.invitations.listForTeam(ctx.principal, input.team_id)),

  revokeInvitation: userProcedure
    .meta({
      audit: "member.invite_revoke",
      access: "person:admin",
      openapi: {
        method: "DELETE",
        path: "/teams/{team_id}/invitations/{invitation_id}",
        tags,
        summary: "Revoke an invitation; it can no longer be accepted",
        description: PEOPLE_ONLY,
        errorResponses: err,
      },
    })
    .input(ZTeamInvitationRef)
    .output(ZOk)
    .mutation(({ ctx, input }) => ctx.services.invitations.revoke(ctx.principal, input.team_id, input.invitation_id)),

  updateMember: userProcedure
    .meta({
      access: "person:admin",
      audit: "member.update",
      openapi: {
        method: "PATCH",
        path: "/teams/{team_id}/members/{user_id}",
        tags,
        summary: "Change a member's role",
        description: PEOPLE_ONLY,
        errorResponses: [...err, 409],
      },
    })
    .input(ZUpdateMember)
    .output(ZMember)
    .mutation(({ ctx, input }) =>
      ctx.services.teams.updateMember(ctx.principal, input.team_id, input.user_id, input.role),
    ),

  removeMember: userProcedure
    .meta({
      access: "person:admin",
      audit: "member.remove",
      openapi: {
        method: "DELETE",
        path: "/teams/{team_id}/members/{user_id}",
        tags,
        summary: "Remove a member (any member may remove themself)",
        description: PEOPLE_ONLY,
        errorResponses: [...err, 409],
      },
    })
    .input(ZMemberRef)
    .output(ZOk)
    .mutation(({ ctx, input }) => ctx.services.teams.removeMember(ctx.principal, input.team_id, input.user_id)),

  transfer: userProcedure
    .meta({
      access: "person:owner",
      audit: "team.transfer",
      openapi: {
        method: "POST",
        path: "/teams/{team_id}/transfer",
        tags,
        summary: "Transfer ownership to another member (the old owner becomes admin)",
        description: PEOPLE_ONLY,
        errorResponses: [...err, 409],
      },
    })
    .input(ZTransfer)
    .output(ZMembers)
    .mutation(({ ctx, input }) => ctx.services.teams.transfer(ctx.principal, input.team_id, input.user_id)),

  createApiKey: userProcedure
    .meta({
      access: "person:admin",
      audit: "api_key.create",
      status: 201,
      openapi: {
        method: "POST",
        path: "/teams/{team_id}/api-keys",
        tags,
        summary: "Create a team API key; the key is shown only in this response",
        description: `${PEOPLE_ONLY} A key carries either a role (admin, moderator or viewer) or scopes (servers:read, moderation:write, ...: each operation names the one it needs as x-api-key-scope), never both. server_ids limits it to those servers of the team: other servers answer 404, lists hold only these, and it calls server operations only. expires_at ends it: after that it answers 401 api_key_expired. The list shows each key's last use, to the minute.`,
        errorResponses: [...err, 409],
      },
    })
    .input(ZCreateApiKey)
    .output(z.object({ api_key: ZApiKey, key: z.string() }))
    .mutation(({ ctx, input }) => ctx.services.teams.createApiKey(ctx.principal, input.team_id, input.name, input)),

  listApiKeys: userProcedure
    .meta({
      access: "person:admin",
      openapi: {
        method: "GET",
        path: "/teams/{team_id}/api-keys",
        tags,
        summary: "The team's API keys (never the keys themselves)",
        description: PEOPLE_ONLY,
        errorResponses: err,
      },
    })
    .input(ZTeamRef)
    .output(z.object({ api_keys: z.array(ZApiKey).max(LIMITS.apiKeysListed) }))
    .query(({ ctx, input }) => ctx.services.teams.listApiKeys(ctx.principal, input.team_id)),

  revokeApiKey: userProcedure
    .meta({
      access: "person:admin",
      audit: "api_key.revoke",
      openapi: {
        method: "DELETE",
        path: "/teams/{team_id}/api-keys/{key_id}",
        tags,
        summary: "Revoke an API key; it stops working at once",
        description: PEOPLE_ONLY,
        errorResponses: err,
      },
    })
    .input(ZApiKeyRef)
    .output(ZApiKey)
    .mutation(({ ctx, input }) => ctx.services.teams.revokeApiKey(ctx.principal, input.team_id, input.key_id)),
});

const invitationTags = ["invitations"];
const ONLY_YOURS =
  "Only the invitee, signed in with the invited email, may act on an invitation: anyone else gets 404 as if it did not exist; a team API key gets 403.";

/** The invitee's side of team invitations: what they were offered, and their answer. */
export const invitationsRouter = router({
  list: userProcedure
    .meta({
      access: "user",
      openapi: {
        method: "GET",
        path: "/invitations",
        tags: invitationTags,
        summary: "Your pending team invitations, newest first",
        errorResponses: [401, 403, 429],
      },
    })
    .output(z.object({ invitations: z.array(ZInvitation).max(LIMITS.invitationsListed) }))
    .query(({ ctx }) => ctx.services.invitations.mine(ctx.principal.userId)),

  accept: userProcedure
    .meta({
      audit: "member.add",
      access: "invitee",
      openapi: {
        method: "POST",
        path: "/invitations/{invitation_id}/accept",
        tags: invitationTags,
        summary: "Accept an invitation: you join the team with the role it offers",
        description: `${ONLY_YOURS} Answers the team you joined. 409 \`invitation_expired\` after its expires_at; 409 \`conflict\` when you are in the most teams allowed, or the team has the most members allowed.`,
        errorResponses: [400, 401, 403, 404, 409, 429],
      },
    })
    .input(ZInvitationRef)
    .output(ZTeam)
    .mutation(({ ctx, input }) => ctx.services.invitations.accept(ctx.principal.userId, input.invitation_id)),

  decline: userProcedure
    .meta({
      audit: "member.invite_decline",
      access: "invitee",
      openapi: {
        method: "POST",
        path: "/invitations/{invitation_id}/decline",
        tags: invitationTags,
        summary: "Decline an invitation; it is removed",
        description: ONLY_YOURS,
        errorResponses: [400, 401, 403, 404, 429],
      },
    })
    .input(ZInvitationRef)
    .output(ZOk)
    .mutation(({ ctx, input }) => ctx.services.invitations.decline(ctx.principal.userId, input.invitation_id)),
});
