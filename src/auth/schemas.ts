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
  /** Whether the account has a second factor (an authenticator app or a passkey). */
  two_factor: z.boolean(),
  teams: z
    .array(
      z.object({
        team_id: ZUuid,
        name: z.string(),
        role: z.enum(["owner", "admin", "viewer"]),
        require_two_factor: z.boolean(),
        /** The team requires a second factor and this account has none: its routes answer 403 two_factor_required. */
        locked: z.boolean(),
      }),
    )
    .max(LIMITS.teamsPerUser),
});

export type TTokenPair = z.infer<typeof ZTokenPair>;

// Two-factor sign-in.

const ZB64u = (max: number) =>
  z
    .string()
    .min(1)
    .max(max)
    .regex(/^[A-Za-z0-9_-]+$/, "must be base64url");
const ZTransports = z.array(z.enum(["ble", "cable", "hybrid", "internal", "nfc", "smart-card", "usb"])).max(8);

/** A WebAuthn assertion as `navigator.credentials.get()` gives it, in its JSON form. */
export const ZPasskeyAssertion = z.object({
  id: ZB64u(1024),
  rawId: ZB64u(1024),
  type: z.literal("public-key"),
  response: z.object({
    clientDataJSON: ZB64u(4096),
    authenticatorData: ZB64u(4096),
    // ML-DSA-44 signatures (post-quantum; offered first where the runtime has it) are 2,420 bytes.
    signature: ZB64u(8192),
    userHandle: ZB64u(512).optional(),
  }),
  clientExtensionResults: z.object({}).loose().default({}),
  authenticatorAttachment: z.enum(["platform", "cross-platform"]).optional(),
});

/** A WebAuthn attestation as `navigator.credentials.create()` gives it, in its JSON form. */
export const ZPasskeyAttestation = z.object({
  id: ZB64u(1024),
  rawId: ZB64u(1024),
  type: z.literal("public-key"),
  response: z.object({
    clientDataJSON: ZB64u(4096),
    attestationObject: ZB64u(16_384),
    transports: ZTransports.optional(),
  }),
  clientExtensionResults: z.object({}).loose().default({}),
  authenticatorAttachment: z.enum(["platform", "cross-platform"]).optional(),
});

const ZTotpCode = z
  .string()
  .trim()
  .min(6)
  .max(6)
  .regex(/^\d{6}$/, "6 digits");
const ZRecoveryCode = z.string().trim().min(8).max(32);
const ZCurrentPassword = z.object({ password: z.string().min(1).max(256) });
export const ZPasswordConfirmation = ZCurrentPassword;

export const ZSecondFactorChallenge = z.object({
  second_factor_required: z.literal(true),
  challenge_token: z.string(),
  expires_in: z.number().int(),
  methods: z.array(z.enum(["totp", "recovery_code", "passkey"])).max(3),
  /** PublicKeyCredentialRequestOptionsJSON, for `navigator.credentials.get()`; null without passkeys. */
  passkey_options: z.record(z.string().max(64), z.unknown()).nullable(),
});
export type TSecondFactorChallenge = z.infer<typeof ZSecondFactorChallenge>;

export const ZLoginAnswer = z.union([ZTokenPair, ZSecondFactorChallenge]);

export const ZSecondFactorInput = z
  .object({
    challenge_token: z.string().min(1).max(128),
    code: ZTotpCode.optional().meta({ description: "A code from the authenticator app" }),
    recovery_code: ZRecoveryCode.optional().meta({ description: "One of the recovery codes; it then stops working" }),
    passkey: ZPasskeyAssertion.optional().meta({ description: "A WebAuthn assertion for `passkey_options`" }),
  })
  .refine((v) => [v.code, v.recovery_code, v.passkey].filter((x) => x !== undefined).length === 1, {
    message: "give exactly one of code, recovery_code and passkey",
    path: ["code"],
  });
export type TSecondFactorInput = z.infer<typeof ZSecondFactorInput>;

export const ZPasskey = z.object({
  passkey_id: ZUuid,
  name: z.string(),
  created_at: ZTimestamp,
  last_used_at: ZTimestamp.nullable(),
});

export const ZTwoFactorStatus = z.object({
  enabled: z.boolean(),
  totp: z.object({ enabled: z.boolean(), confirmed_at: ZTimestamp.nullable() }),
  passkeys: z.array(ZPasskey).max(LIMITS.passkeysPerUser),
  recovery_codes_left: z.number().int(),
});

export const ZTotpSetup = z.object({
  secret: z.string().max(64),
  otpauth_url: z.string().max(1024),
  /** The otpauth URL as a QR code, an SVG document (tens of KB). */
  qr_svg: z.string().max(262_144),
});
export const ZTotpConfirm = z.object({ code: ZTotpCode });
export const ZRecoveryCodes = z.object({
  /** Shown once; empty when the account already had codes. */
  recovery_codes: z.array(z.string()).max(LIMITS.recoveryCodes),
});
export const ZPasskeyOptions = z.object({
  /** PublicKeyCredentialCreationOptionsJSON, for `navigator.credentials.create()`. */
  options: z.record(z.string().max(64), z.unknown()),
});
export const ZAddPasskey = z.object({
  name: z.string().trim().min(1).max(60),
  response: ZPasskeyAttestation,
});
export const ZAddedPasskey = ZRecoveryCodes.extend({ passkey: ZPasskey });
export const ZPasskeyRemove = ZCurrentPassword.extend({ passkey_id: ZUuid });
