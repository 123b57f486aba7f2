import { z } from "zod";
import { LIMITS } from "../lib/limits";
import { ZEmail, ZTimestamp, ZUuid } from "../lib/schemas";

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
    .array(z.object({ team_id: ZUuid, name: z.string(), role: z.enum(["owner", "admin", "viewer"]) }))
    .max(LIMITS.teamsPerUser),
});

export type TTokenPair = z.infer<typeof ZTokenPair>;
