import { ZOk } from "../lib/schemas";
import { router } from "../trpc/init";
import { publicProcedure, userProcedure } from "../trpc/procedures";
import {
  ZAddedPasskey,
  ZAddPasskey,
  ZLoginAnswer,
  ZLoginInput,
  ZMe,
  ZPasskeyOptions,
  ZPasskeyRemove,
  ZPasswordConfirmation,
  ZRecoveryCodes,
  ZRefreshInput,
  ZSecondFactorInput,
  ZSignupInput,
  ZTokenPair,
  ZTotpConfirm,
  ZTotpSetup,
  ZTwoFactorStatus,
  ZUser,
} from "./schemas";

const tags = ["auth"];

export const authRouter = router({
  signup: publicProcedure
    .meta({
      access: "public",
      status: 201,
      openapi: {
        method: "POST",
        path: "/auth/signup",
        tags,
        protect: false,
        summary: "Create an account",
        description:
          "Sign-up attempts are limited per client address and for the whole service (SIGNUPS_PER_ADDRESS_PER_HOUR, SIGNUPS_PER_HOUR), and password hashing runs in a few slots of which sign-ups hold only a share: over a limit, or with the sign-up queue full, the answer is 429 with Retry-After and no account is made.",
        errorResponses: [400, 409, 429],
      },
    })
    .input(ZSignupInput)
    .output(ZUser)
    .mutation(({ ctx, input }) => ctx.services.auth.signup(input.email, input.password, ctx.ip)),

  login: publicProcedure
    .meta({
      access: "public",
      openapi: {
        method: "POST",
        path: "/auth/login",
        tags,
        protect: false,
        summary: "Sign in; returns an access token and a refresh token, or a second-factor challenge",
        description:
          "Failed sign-ins are limited per email (whether or not an account has it) and per client address: over either limit every sign-in for it answers 429 with Retry-After until the window ends. Password checks run in a few hashing slots, some kept from sign-ups: with every slot busy and the sign-in queue full, 429 with Retry-After. An account with a second factor gets no tokens here but `second_factor_required: true` with a `challenge_token` (single use, TWO_FACTOR_CHALLENGE_TTL_SECONDS) to complete at `POST /auth/login/second-factor`, the factors it may use, and for passkeys the WebAuthn request options.",
        errorResponses: [400, 401, 429],
      },
    })
    .input(ZLoginInput)
    .output(ZLoginAnswer)
    .mutation(({ ctx, input }) => ctx.services.auth.login(input.email, input.password, ctx.ip)),

  secondFactor: publicProcedure
    .meta({
      access: "public",
      openapi: {
        method: "POST",
        path: "/auth/login/second-factor",
        tags,
        protect: false,
        summary: "Complete a sign-in with the second factor; returns an access token and a refresh token",
        description:
          "Send the `challenge_token` from `POST /auth/login` with exactly one of: `code` (6 digits from the authenticator app; each code works once), `recovery_code` (works once), or `passkey` (the WebAuthn assertion for the challenge's `passkey_options`). A wrong factor is 401 and counts against the same failed sign-in limits as a wrong password (per email and per address; 429 with Retry-After past them); after 5 wrong tries the challenge is spent. An unknown, expired or used challenge is 401: sign in with the password again.",
        errorResponses: [400, 401, 429],
      },
    })
    .input(ZSecondFactorInput)
    .output(ZTokenPair)
    .mutation(({ ctx, input }) => ctx.services.auth.completeSignIn(input, ctx.ip)),

  refresh: publicProcedure
    .meta({
      access: "public",
      openapi: {
        method: "POST",
        path: "/auth/refresh",
        tags,
        protect: false,
        summary: "Exchange a refresh token for a new pair (the old one stops working)",
        errorResponses: [400, 401, 429],
      },
    })
    .input(ZRefreshInput)
    .output(ZTokenPair)
    .mutation(({ ctx, input }) => ctx.services.auth.refresh(input.refresh_token)),

  logout: publicProcedure
    .meta({
      access: "public",
      openapi: {
        method: "POST",
        path: "/auth/logout",
        tags,
        protect: false,
        summary: "Revoke a refresh token and its whole family",
        description:
          "Ends the login: its refresh tokens and the access tokens issued under it stop working on every instance, and analytics sockets using them close with 4011.",
        errorResponses: [400, 429],
      },
    })
    .input(ZRefreshInput)
    .output(ZOk)
    .mutation(({ ctx, input }) => ctx.services.auth.logout(input.refresh_token)),

  me: userProcedure
    .meta({
      access: "user",
      openapi: {
        method: "GET",
        path: "/auth/me",
        tags,
        summary: "The signed-in account and its teams",
        errorResponses: [401, 403, 429],
      },
    })
    .output(ZMe)
    .query(({ ctx }) => ctx.services.auth.me(ctx.principal.userId)),
});

const factorErrors = [400, 401, 403, 409, 429];
const PASSWORD =
  "Needs the account's password again (`password`): a stolen access token alone cannot change the account's factors. A wrong password is 401 and counts as a failed sign-in of the account (429 past the limits).";

/** The signed-in person's own second factors; API keys get 403 (they have no account). */
export const twoFactorRouter = router({
  status: userProcedure
    .meta({
      access: "user",
      openapi: {
        method: "GET",
        path: "/auth/two-factor",
        tags,
        summary: "The account's second factors",
        description:
          "Whether the account has a second factor, its authenticator app, its passkeys and how many unused recovery codes are left. Secrets and codes are never returned here.",
        errorResponses: [401, 403, 429],
      },
    })
    .output(ZTwoFactorStatus)
    .query(({ ctx }) => ctx.services.twoFactor.status(ctx.principal.userId)),

  startTotp: userProcedure
    .meta({
      access: "user",
      openapi: {
        method: "POST",
        path: "/auth/two-factor/totp",
        tags,
        summary: "Start setting up an authenticator app (TOTP)",
        description: `Answers a new secret (base32), its \`otpauth://\` URL and that URL as an SVG QR code, to scan or type into an authenticator app (RFC 6238: SHA-1, 6 digits, 30 s). Nothing changes at sign-in until \`POST /auth/two-factor/totp/confirm\` gets a right code; starting again replaces a pending secret. The secret is stored sealed (AES-256-GCM). 409 when an app is already set up. ${PASSWORD}`,
        errorResponses: factorErrors,
      },
    })
    .input(ZPasswordConfirmation)
    .output(ZTotpSetup)
    .mutation(({ ctx, input }) => ctx.services.twoFactor.startTotp(ctx.principal.userId, input.password, ctx.ip)),

  confirmTotp: userProcedure
    .meta({
      access: "user",
      openapi: {
        method: "POST",
        path: "/auth/two-factor/totp/confirm",
        tags,
        summary: "Turn the authenticator app on with a code from it",
        description:
          "A right code from the pending secret turns it on: from then on sign-in asks for a code after the password. When it is the account's first factor the answer holds 10 recovery codes, shown this once (stored as SHA-256); otherwise `recovery_codes` is empty. 400 for a wrong code; 409 when nothing is pending.",
        errorResponses: factorErrors,
      },
    })
    .input(ZTotpConfirm)
    .output(ZRecoveryCodes)
    .mutation(({ ctx, input }) => ctx.services.twoFactor.confirmTotp(ctx.principal.userId, input.code)),

  removeTotp: userProcedure
    .meta({
      access: "user",
      openapi: {
        method: "POST",
        path: "/auth/two-factor/totp/remove",
        tags,
        summary: "Remove the authenticator app",
        description: `Sign-in stops asking for its codes. With no factor left, the recovery codes go too, and teams that require a second factor lock this account out. 404 when no app is set up. ${PASSWORD}`,
        errorResponses: [...factorErrors, 404],
      },
    })
    .input(ZPasswordConfirmation)
    .output(ZTwoFactorStatus)
    .mutation(({ ctx, input }) => ctx.services.twoFactor.removeTotp(ctx.principal.userId, input.password, ctx.ip)),

  passkeyOptions: userProcedure
    .meta({
      access: "user",
      openapi: {
        method: "POST",
        path: "/auth/two-factor/passkeys/options",
        tags,
        summary: "Start adding a passkey: WebAuthn creation options",
        description: `Answers PublicKeyCredentialCreationOptionsJSON for \`navigator.credentials.create()\` (or @simplewebauthn/browser's \`startRegistration\`). The relying party id is the host of PUBLIC_URL. The challenge is kept for TWO_FACTOR_CHALLENGE_TTL_SECONDS; a new request replaces it. 409 at 10 passkeys. ${PASSWORD}`,
        errorResponses: factorErrors,
      },
    })
    .input(ZPasswordConfirmation)
    .output(ZPasskeyOptions)
    .mutation(({ ctx, input }) => ctx.services.twoFactor.passkeyOptions(ctx.principal.userId, input.password, ctx.ip)),

  addPasskey: userProcedure
    .meta({
      access: "user",
      openapi: {
        method: "POST",
        path: "/auth/two-factor/passkeys",
        tags,
        summary: "Finish adding a passkey with the authenticator's answer",
        description:
          "Send the RegistrationResponseJSON the browser produced for the options, and a name for the passkey. It is checked against the stored challenge, this service's origin and relying party id; only its public key and signature counter are kept. When it is the account's first factor the answer holds 10 recovery codes, shown this once. 400 when it does not verify; 409 when no set-up is in progress (or it expired) or the passkey is already registered.",
        errorResponses: factorErrors,
      },
    })
    .input(ZAddPasskey)
    .output(ZAddedPasskey)
    .mutation(({ ctx, input }) => ctx.services.twoFactor.addPasskey(ctx.principal.userId, input.name, input.response)),

  removePasskey: userProcedure
    .meta({
      access: "user",
      openapi: {
        method: "POST",
        path: "/auth/two-factor/passkeys/{passkey_id}/remove",
        tags,
        summary: "Remove a passkey",
        description: `The passkey stops signing in. With no factor left, the recovery codes go too. 404 for a passkey this account does not have. ${PASSWORD}`,
        errorResponses: [...factorErrors, 404],
      },
    })
    .input(ZPasskeyRemove)
    .output(ZTwoFactorStatus)
    .mutation(({ ctx, input }) =>
      ctx.services.twoFactor.removePasskey(ctx.principal.userId, input.passkey_id, input.password, ctx.ip),
    ),

  regenerateRecoveryCodes: userProcedure
    .meta({
      access: "user",
      openapi: {
        method: "POST",
        path: "/auth/two-factor/recovery-codes",
        tags,
        summary: "Replace the recovery codes",
        description: `10 new recovery codes, shown this once; the old ones stop working. 409 without a second factor. ${PASSWORD}`,
        errorResponses: factorErrors,
      },
    })
    .input(ZPasswordConfirmation)
    .output(ZRecoveryCodes)
    .mutation(({ ctx, input }) =>
      ctx.services.twoFactor.regenerateRecoveryCodes(ctx.principal.userId, input.password, ctx.ip),
    ),
});
