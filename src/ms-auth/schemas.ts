import { z } from "zod";
import { DENIAL_CODES } from "../identity/types";
import { ZUuid } from "../lib/schemas";

export const ZClientCreds = z.object({ client_id: ZUuid, client_secret: z.string().min(1).max(256) });
export const ZLoginStatus = z.enum(["pending", "authenticated", "authorized", "denied", "expired"]);

export const ZStartInput = ZClientCreds.extend({
  client_state: z
    .string()
    .max(512)
    .optional()
    .meta({ description: "Opaque launcher state, returned as `state` on the redirect" }),
  auth_request_id: ZUuid.optional().meta({
    description:
      "Resume this login (a launcher that restarted): same auth_request_id, fresh auth_url; 401 auth_request_expired once it has expired. Its client_state is the one given when it started.",
  }),
});
export const ZStartOutput = z.object({
  auth_request_id: ZUuid,
  auth_url: z.string(),
  expires_in: z.number().int(),
  interval: z.number().int(),
});

const ZAssertionWanted = z.boolean().optional().meta({
  description:
    "Also return a signed session `assertion` (a short-lived EdDSA JWT, keys at /.well-known/jwks.json) when the login is authorized / the session is valid. Default false.",
});
const ZAssertion = z.string().optional().meta({
  description:
    "Only when `assertion: true` was asked and the session is live: a compact JWS (header alg EdDSA, kid, typ JWT; claims iss = the service URL, aud = client_id, sub = mc_uuid, name = mc_username, iat, exp, jti). Verify it against /.well-known/jwks.json; it stays valid until exp even if the session is revoked.",
});

export const ZPollInput = ZClientCreds.extend({ auth_request_id: ZUuid, assertion: ZAssertionWanted });
export const ZPollOutput = z.object({
  status: ZLoginStatus,
  svc_session_token: z.string().optional(),
  mc_username: z.string().optional(),
  error: z.union([z.enum(DENIAL_CODES), z.literal("expired")]).optional(),
  expires_in: z.number().int().optional().meta({ description: "Seconds left, while pending or authenticated" }),
  assertion: ZAssertion,
});

export const ZSessionInput = ZClientCreds.extend({ svc_session_token: z.string().min(1).max(512) });
export const ZValidateInput = ZSessionInput.extend({ assertion: ZAssertionWanted });
export const ZValidateOutput = z.object({
  valid: z.boolean(),
  mc_uuid: z.string().optional(),
  mc_username: z.string().optional(),
  expires_at: z.string().optional(),
  assertion: ZAssertion,
});
