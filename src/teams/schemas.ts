import { z } from "zod";
import { ZEmail, ZName, ZTimestamp, ZUuid } from "../lib/schemas";

export const ZRole = z.enum(["owner", "admin", "viewer"]);
/** Roles that can be granted; ownership moves only by transfer. */
export const ZGrantableRole = z.enum(["admin", "viewer"]);

export const ZTeam = z.object({
  team_id: ZUuid,
  name: z.string(),
  role: ZRole,
  /** Members without a second factor are locked out of the team until they add one. */
  require_two_factor: z.boolean(),
  created_at: ZTimestamp,
  updated_at: ZTimestamp,
});
export const ZTeamRef = z.object({ team_id: ZUuid });

export const ZMember = z.object({ user_id: ZUuid, email: z.string(), role: ZRole, joined_at: ZTimestamp });
/**
 * An offer of membership to an email. `pending` until accepted or declined (both remove it) or
 * until `expires_at`, after which it is `expired` and cannot be accepted.
 */
export const ZInvitation = z.object({
  invitation_id: ZUuid,
  team_id: ZUuid,
  team_name: z.string(),
  email: z.string(),
  role: ZGrantableRole,
  status: z.enum(["pending", "expired"]),
  /** The email of the person who sent it; null once their account is gone. */
  invited_by: z.string().nullable(),
  created_at: ZTimestamp,
  expires_at: ZTimestamp,
});
export const ZInvitationRef = z.object({ invitation_id: ZUuid });
export const ZTeamInvitationRef = ZTeamRef.extend({ invitation_id: ZUuid });

export const ZApiKey = z.object({
  key_id: ZUuid,
  team_id: ZUuid,
  name: z.string(),
  role: ZGrantableRole,
  prefix: z.string(),
  created_at: ZTimestamp,
  revoked_at: ZTimestamp.nullable(),
});

export const ZCreateTeam = z.object({ name: ZName });
export const ZUpdateTeam = ZTeamRef.extend({ name: ZName });
export const ZTwoFactorRequirement = ZTeamRef.extend({ required: z.boolean() });
export const ZInvite = ZTeamRef.extend({ email: ZEmail, role: ZGrantableRole });
export const ZMemberRef = ZTeamRef.extend({ user_id: ZUuid });
export const ZUpdateMember = ZMemberRef.extend({ role: ZGrantableRole });
export const ZTransfer = ZTeamRef.extend({ user_id: ZUuid });
export const ZCreateApiKey = ZTeamRef.extend({ name: ZName, role: ZGrantableRole });
export const ZApiKeyRef = ZTeamRef.extend({ key_id: ZUuid });
