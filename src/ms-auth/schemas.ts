import { z } from "zod";
import { DENIAL_CODES } from "../identity/types";
import { ZTimestamp, ZUuid } from "../lib/schemas";

export const ZClientCreds = z.object({ client_id: ZUuid, client_secret: z.string().min(1).max(256) });
export const ZLoginStatus = z.enum(["pending", "authenticated", "authorized", "denied", "expired"]);

export const ZStartInput = ZClientCreds.extend({
  client_state: z
    .string()
    .max(512)
    .optional()
    .meta({ description: "Opaque launcher state, returned as `state` on the redirect" }),
  flow: z.enum(["browser", "device"]).optional().meta({
    description:
      "`browser` (default): open auth_url on the player's machine. `device`: show user_code and verification_uri (or the QR code) so the player signs in on any other device (RFC 8628); poll the same way. On a resume it may be left out; given, it must be the request's own.",
  }),
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
  user_code: z.string().optional().meta({
    description:
      "Device flow only: the code the player types at verification_uri, shown as `XXXX-XXXX` (8 of the letters BCDFGHJKLMNPQRSTVWXZ; case, spaces and dashes are ignored). Used once; expires with the request. A resume issues a new one and the old one stops working.",
  }),
  verification_uri: z.string().optional().meta({
    description: "Device flow only: the short address to show the player (`<service>/device`)",
  }),
  verification_uri_complete: z.string().optional().meta({
    description:
      "Device flow only: verification_uri with the code filled in, for a link or a QR code; the player still confirms the code there",
  }),
  qr_code_svg: z.string().optional().meta({
    description: "Device flow only: verification_uri_complete as a QR code, an SVG document (black on white)",
  }),
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
const ZMcUsername = z.string().max(16).meta({ description: "The player's Minecraft name" });
const ZExpiresIn = z.number().int().min(0).meta({ description: "Seconds left before the request expires" });

/*
 * Poll answers one object per status, so each variant names exactly the fields it carries and
 * a variant can grow a field without touching the others.
 */
export const ZPollPending = z
  .object({ status: z.literal("pending"), expires_in: ZExpiresIn })
  .meta({ id: "PollPending", description: "Waiting for the player to sign in at auth_url" });
export const ZPollAuthenticated = z
  .object({ status: z.literal("authenticated"), mc_username: ZMcUsername, expires_in: ZExpiresIn })
  .meta({ id: "PollAuthenticated", description: "The player signed in and has yet to approve on the consent page" });
export const ZPollAuthorized = z
  .object({
    status: z.literal("authorized"),
    svc_session_token: z
      .string()
      .meta({ description: "The player's session: send it to session/validate from the launcher's backend" }),
    mc_username: ZMcUsername,
    assertion: ZAssertion,
  })
  .meta({ id: "PollAuthorized", description: "The player approved: the session token is ready" });
export const ZPollDenied = z
  .object({
    status: z.literal("denied"),
    error: z.enum(DENIAL_CODES).meta({ description: "Why the sign-in was refused" }),
    mc_username: ZMcUsername.optional(),
  })
  .meta({ id: "PollDenied", description: "The sign-in was refused or the player declined; final" });
export const ZPollExpired = z
  .object({ status: z.literal("expired"), error: z.literal("expired"), mc_username: ZMcUsername.optional() })
  .meta({ id: "PollExpired", description: "The deadline passed before the player approved; final" });
export const ZPollOutput = z
  .discriminatedUnion("status", [ZPollPending, ZPollAuthenticated, ZPollAuthorized, ZPollDenied, ZPollExpired])
  .meta({ id: "PollResult", description: "A login request's status and the fields that status carries" });
export type PollResult = z.infer<typeof ZPollOutput>;

export const ZSessionInput = ZClientCreds.extend({ svc_session_token: z.string().min(1).max(512) });
const ZTexturesWanted = z.boolean().optional().meta({
  description:
    "Also return the player's active `skin` (texture URL and model) and `cape` as the Minecraft profile showed them at sign-in, and put them in the `assertion` when one is asked for. Default false: the answer is as without it.",
});
export const ZValidateInput = ZSessionInput.extend({ assertion: ZAssertionWanted, textures: ZTexturesWanted });
export const ZSkin = z
  .object({
    url: z.string().meta({ description: "The skin's texture (a PNG on textures.minecraft.net)" }),
    variant: z
      .enum(["CLASSIC", "SLIM"])
      .meta({ description: "The player model: CLASSIC (Steve, 4 px arms) or SLIM (Alex, 3 px)" }),
  })
  .nullable()
  .meta({
    id: "PlayerSkin",
    description: "The ACTIVE skin; null when unknown (a session from before skins were kept)",
  });
export const ZCape = z
  .object({
    url: z.string().meta({ description: "The cape's texture (a PNG on textures.minecraft.net)" }),
    alias: z.string().nullable().meta({ description: "Mojang's name for the cape (e.g. Migrator), when given" }),
  })
  .nullable()
  .meta({ id: "PlayerCape", description: "The ACTIVE cape; null when the player wears none" });
export const ZSessionValid = z
  .object({
    valid: z.literal(true),
    mc_uuid: z.string().meta({ description: "The player's Minecraft UUID, dashed" }),
    mc_username: ZMcUsername,
    expires_at: ZTimestamp.meta({ description: "When the session ends" }),
    assertion: ZAssertion,
    skin: ZSkin.optional().meta({ description: "Only with `textures: true`" }),
    cape: ZCape.optional().meta({ description: "Only with `textures: true`" }),
  })
  .meta({ id: "SessionValid", description: "A live session of this client" });
export const ZSessionInvalid = z
  .object({ valid: z.literal(false) })
  .meta({ id: "SessionInvalid", description: "Unknown, expired, revoked or another client's token" });
export const ZValidateOutput = z
  .discriminatedUnion("valid", [ZSessionValid, ZSessionInvalid])
  .meta({ id: "SessionValidation", description: "Whether a svc_session_token is live, and whose it is" });

export const ZDiagnosticsInput = z.object({
  client_id: ZUuid.meta({ description: "The client application whose sign-ins are checked (you must own its team)" }),
  probe: z
    .enum(["true", "false"])
    .default("true")
    .transform((v) => v === "true")
    .meta({
      description:
        "Redeem a made-up code at the Microsoft token endpoint to learn whether it accepts the app's client secret (default true). Nothing is redeemed.",
    }),
});
const ZCheckStatus = z.enum(["ok", "info", "warning", "error"]);
export const ZDiagnosticCheck = z
  .object({
    id: z
      .enum([
        "identity_provider",
        "redirect_uri",
        "client_secret",
        "client_secret_expiry",
        "token_endpoint",
        "minecraft_api_access",
        "ms_auth_module",
      ])
      .meta({ description: "What was checked (stable)" }),
    status: ZCheckStatus,
    summary: z.string().meta({ description: "What was found" }),
    action: z.string().optional().meta({ description: "What to do about it, when something is to be done" }),
  })
  .meta({ id: "MsAuthDiagnosticCheck" });
export const ZDiagnosticsReport = z
  .object({
    client_id: ZUuid,
    identity_provider: z.enum(["development", "microsoft"]),
    redirect_uri: z.string().meta({ description: "The callback URL the Microsoft app must have registered, exactly" }),
    checked_at: ZTimestamp,
    status: ZCheckStatus.meta({ description: "The worst status among the checks" }),
    checks: z.array(ZDiagnosticCheck).max(16),
  })
  .meta({ id: "MsAuthDiagnostics", description: "The ms_auth self-test" });
