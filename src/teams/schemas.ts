import { z } from "zod";
import { SCOPE_NAMES, SCOPES, SERVER_SCOPES } from "../auth/scopes";
import { LIMITS } from "../lib/limits";
import { ZEmail, ZName, ZTimestamp, ZUuid } from "../lib/schemas";

export const ZRole = z.enum(["owner", "admin", "moderator", "viewer"]);
/** Roles that can be granted; ownership moves only by transfer. */
export const ZGrantableRole = z.enum(["admin", "moderator", "viewer"]);

export const ZTeam = z.object({
  team_id: ZUuid,
  name: z.string(),
  role: ZRole,
  /** Members without a second factor are locked out of the team until they add one. */
  require_two_factor: z.boolean(),
  /** IANA name; the analytics reads' default zone. */
  time_zone: z.string().meta({ description: "IANA time zone of the team's analytics (days, weeks, hours)" }),
  created_at: ZTimestamp,
  updated_at: ZTimestamp,
});
export const ZTeamRef = z.object({ team_id: ZUuid });

export const ZMember = z.object({ user_id: ZUuid, email: z.string(), role: ZRole, joined_at: ZTimestamp });
export const ZScope = z.enum(SCOPE_NAMES).meta({
  description: `What a scoped key may do: ${Object.entries(SCOPES)
    .map(([k, v]) => `\`${k}\` (${v})`)
    .join("; ")}.`,
});
const ZScopes = z.array(ZScope).min(1).max(SCOPE_NAMES.length);
const ZServerIds = z.array(ZUuid).min(1).max(LIMITS.serversPerApiKey);
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
  /** Exactly one of role and scopes is set. */
  role: ZGrantableRole.nullable(),
  scopes: ZScopes.nullable(),
  server_ids: ZServerIds.nullable().meta({ description: "The only servers the key reaches; null for all" }),
  expires_at: ZTimestamp.nullable(),
  last_used_at: ZTimestamp.nullable().meta({
    description: "When the key was last used, to the minute (it is recorded at most once a minute)",
  }),
  prefix: z.string(),
  created_at: ZTimestamp,
  revoked_at: ZTimestamp.nullable(),
});

export const ZCreateTeam = z.object({ name: ZName });
export const ZUpdateTeam = ZTeamRef.extend({
  name: ZName.optional().meta({ description: "The new name; unchanged when absent" }),
  time_zone: z.string().min(1).max(64).optional().meta({
    description: "IANA time zone for analytics, e.g. Europe/Berlin; 400 for an unknown zone",
    example: "Europe/Berlin",
  }),
});
export const ZTwoFactorRequirement = ZTeamRef.extend({ required: z.boolean() });
export const ZInvite = ZTeamRef.extend({ email: ZEmail, role: ZGrantableRole });
export const ZMemberRef = ZTeamRef.extend({ user_id: ZUuid });
export const ZUpdateMember = ZMemberRef.extend({ role: ZGrantableRole });
export const ZTransfer = ZTeamRef.extend({ user_id: ZUuid });
export const ZCreateApiKey = ZTeamRef.extend({
  name: ZName,
  role: ZGrantableRole.optional().meta({ description: "A role for the key; give this or scopes, not both" }),
  scopes: ZScopes.optional().meta({ description: "Scopes for the key instead of a role" }),
  server_ids: ZServerIds.optional().meta({
    description: `Limit the key to these servers of the team: it then calls server routes only, and with scopes only ${SERVER_SCOPES.join(", ")}`,
  }),
  expires_at: ZTimestamp.optional().meta({ description: "When the key stops working (401 api_key_expired after)" }),
}).superRefine((v, ctx) => {
  if ((v.role === undefined) === (v.scopes === undefined))
    ctx.addIssue({ code: "custom", path: ["scopes"], message: "give either role or scopes, not both" });
  if (v.scopes && new Set(v.scopes).size !== v.scopes.length)
    ctx.addIssue({ code: "custom", path: ["scopes"], message: "a scope is listed twice" });
  if (v.server_ids && v.scopes?.some((s) => !SERVER_SCOPES.includes(s)))
    ctx.addIssue({
      code: "custom",
      path: ["scopes"],
      message: `a key limited to servers may only hold ${SERVER_SCOPES.join(", ")}`,
    });
});
export const ZApiKeyRef = ZTeamRef.extend({ key_id: ZUuid });
