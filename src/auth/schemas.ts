import { z } from "zod";
import { LIMITS } from "../lib/limits";
import { ZEmail, ZTimestamp, ZUuid } from "../lib/schemas";

/** The most sign-ins the account page lists; keep in step with SESSIONS_LISTED in the service. */
const SESSIONS_MAX = 100;

export const ZPassword = z.string().min(8, "at least 8 characters").max(256);

export const ZSignupInput = z.object({ email: ZEmail, password: ZPassword });
export const ZLoginInput = z.object({ email: ZEmail, password: z.string().min(1).max(256) });
export const ZRefreshInput = z.object({ refresh_token: z.string().min(1).max(512) });

export const ZUser = z.object({ id: ZUuid, email: z.string(), created_at: ZTimestamp });

export const ZTokenPair = z.object({
  access_token: z.string(),
  token_type: z.literal("Bearer"),
  expires_in: z.number().int(),
  refresh_token: z.string(),
});

export const ZMe = ZUser.extend({
  teams: z
    .array(z.object({ team_id: ZUuid, name: z.string(), role: z.enum(["owner", "admin", "moderator", "viewer"]) }))
    .max(LIMITS.teamsPerUser),
});

export const ZChangePassword = z.object({
  current_password: z.string().min(1).max(256),
  new_password: ZPassword,
});
export const ZSessionRef = z.object({ session_id: ZUuid });

export const ZLoginSession = z.object({
  session_id: ZUuid,
  created_at: ZTimestamp,
  last_used_at: ZTimestamp.meta({
    description: "The last refresh, or the last request checked against the database (at most once a minute)",
  }),
  address: z.string().nullable().meta({ description: "The client address of the sign-in, as the edge saw it" }),
  user_agent: z.string().nullable().meta({ description: "The user agent of the sign-in" }),
  current: z.boolean().meta({ description: "True for the sign-in making this request" }),
});
export const ZLoginSessions = z.object({ sessions: z.array(ZLoginSession).max(SESSIONS_MAX) });
export const ZRevoked = z.object({ revoked: z.number().int().min(0).max(SESSIONS_MAX) });

export type TTokenPair = z.infer<typeof ZTokenPair>;
