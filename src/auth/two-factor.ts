import { randomBytes } from "node:crypto";
import type { VerifiedRegistrationResponse } from "@simplewebauthn/server";
import { and, count, eq, gt, isNotNull, isNull, lt, or, sql } from "drizzle-orm";
import type { Secret } from "otpauth";
import type { Config } from "../config";
import type { Db } from "../db/client";
import { passkeys, recoveryCodes, totpFactors, twoFactorChallenges, users } from "../db/schema";
import { AppError } from "../lib/errors";
import type { Keyring } from "../lib/keyring";
import { LIMITS, overLimit } from "../lib/limits";
import { iso } from "../lib/schemas";
import { newSecret, sha256 } from "../lib/secrets";
import type { z } from "zod";
import type { TSecondFactorChallenge, TSecondFactorInput, ZPasskeyAttestation } from "./schemas";
import type { LoginThrottle } from "./throttle";
import { hasSecondFactor } from "./two-factor-gate";

/**
 * Loaded on first use: nothing here is needed until someone sets up or uses a second factor, and
 * the WebAuthn library alone would add several MiB to every idle instance.
 */
const webauthn = () => import("@simplewebauthn/server");
const otp = () => import("otpauth");
const qr = () => import("uqr");

const PERIOD = 30;
/** Wrong second factors one sign-in challenge takes before it is spent (the throttle counts each too). */
const TRIES_PER_CHALLENGE = 5;
const BAD_CHALLENGE = "The sign-in challenge is invalid, expired or used: sign in with your password again.";

type Tx = Parameters<Parameters<Db["transaction"]>[0]>[0];
type PasskeyRow = typeof passkeys.$inferSelect;

/** Checks an account's password for a sensitive change, counting a wrong one as a failed sign-in. */
export type ConfirmPassword = (userId: string, password: string, address: string) => Promise<void>;

const passkeyOut = (p: PasskeyRow) => ({
  passkey_id: p.id,
  name: p.name,
  created_at: iso(p.createdAt),
  last_used_at: p.lastUsedAt ? iso(p.lastUsedAt) : null,
});

/** `abcde-fghij`, 50 bits from an alphabet without look-alikes; compared without case or dashes. */
function newRecoveryCode(): string {
  const alphabet = "abcdefghjkmnpqrstuvwxyz23456789";
  const bytes = randomBytes(10);
  let s = "";
  for (const b of bytes) s += alphabet[b % alphabet.length];
  return `${s.slice(0, 5)}-${s.slice(5)}`;
}
const normaliseRecoveryCode = (code: string) => code.toLowerCase().replace(/[^a-z0-9]/g, "");

/**
 * The second factor of a dashboard sign-in: an authenticator app (TOTP, RFC 6238), passkeys
 * (WebAuthn) and one-time recovery codes. Enrolment and removal need the account's password
 * again, so a stolen access token alone can neither add an attacker's factor (and lock the owner
 * out) nor remove the owner's. The password step of a sign-in answers a challenge instead of a
 * session when the account has a factor; `verifySignIn` completes it.
 */
export class TwoFactorService {
  readonly rpId: string;
  readonly origin: string;

  constructor(
    private readonly db: Db,
    private readonly keyring: Keyring,
    private readonly throttle: LoginThrottle,
    private readonly config: Pick<Config, "PUBLIC_URL" | "TWO_FACTOR_ISSUER" | "TWO_FACTOR_CHALLENGE_TTL_SECONDS">,
    private readonly confirmPassword: ConfirmPassword,
  ) {
    const url = new URL(config.PUBLIC_URL);
    this.rpId = url.hostname;
    this.origin = url.origin;
  }

  async status(userId: string) {
    const [totp] = await this.db.select().from(totpFactors).where(eq(totpFactors.userId, userId));
    const keys = await this.db
      .select()
      .from(passkeys)
      .where(eq(passkeys.userId, userId))
      .orderBy(passkeys.createdAt)
      .limit(LIMITS.passkeysPerUser);
    const [codes] = await this.db
      .select({ n: count() })
      .from(recoveryCodes)
      .where(and(eq(recoveryCodes.userId, userId), isNull(recoveryCodes.usedAt)));
    const totpOn = Boolean(totp?.confirmedAt);
    return {
      enabled: totpOn || keys.length > 0,
      totp: { enabled: totpOn, confirmed_at: totp?.confirmedAt ? iso(totp.confirmedAt) : null },
      passkeys: keys.map(passkeyOut),
      recovery_codes_left: codes!.n,
    };
  }

  // --- Authenticator app (TOTP) ---

  private async totp(secret: Secret, label = "account") {
    const { TOTP } = await otp();
    return new TOTP({
      issuer: this.config.TWO_FACTOR_ISSUER,
      label,
      algorithm: "SHA1",
      digits: 6,
      period: PERIOD,
      secret,
    });
  }

  /** A new secret, pending until a code from it confirms it; a pending one is replaced. */
  async startTotp(userId: string, password: string, address: string) {
    await this.confirmPassword(userId, password, address);
    const [existing] = await this.db.select().from(totpFactors).where(eq(totpFactors.userId, userId));
    if (existing?.confirmedAt)
      throw new AppError("conflict", "An authenticator app is already set up; remove it before adding another.");
    const [user] = await this.db.select({ email: users.email }).from(users).where(eq(users.id, userId));
    const { Secret } = await otp();
    const secret = new Secret({ size: 20 });
    const sealed = this.keyring.seal(secret.base32, `totp:${userId}`);
    await this.db
      .insert(totpFactors)
      .values({ userId, secretSealed: sealed })
      .onConflictDoUpdate({
        target: totpFactors.userId,
        set: { secretSealed: sealed, lastStep: null, createdAt: new Date() },
        setWhere: isNull(totpFactors.confirmedAt),
      });
    const url = (await this.totp(secret, user!.email)).toString();
    const { renderSVG } = await qr();
    return { secret: secret.base32, otpauth_url: url, qr_svg: renderSVG(url, { border: 2, pixelSize: 6 }) };
  }

  /** The first right code turns the pending secret on; answers recovery codes when it is the account's first factor. */
  async confirmTotp(userId: string, code: string) {
    const [pending] = await this.db.select().from(totpFactors).where(eq(totpFactors.userId, userId));
    if (!pending) throw new AppError("conflict", "Start setting up an authenticator app first.");
    if (pending.confirmedAt) throw new AppError("conflict", "The authenticator app is already set up.");
    const step = await this.matchingStep(userId, pending.secretSealed, code);
    if (step === null)
      throw new AppError("bad_request", "The code does not match: check the app's clock and try the newest code.");
    return this.db.transaction(async (tx) => {
      const first = !(await this.hasFactor(tx, userId));
      const confirmed = await tx
        .update(totpFactors)
        .set({ confirmedAt: new Date(), lastStep: step })
        .where(and(eq(totpFactors.userId, userId), isNull(totpFactors.confirmedAt)))
        .returning({ userId: totpFactors.userId });
      if (confirmed.length === 0) throw new AppError("conflict", "The authenticator app is already set up.");
      return { recovery_codes: first ? await this.replaceRecoveryCodes(tx, userId) : [] };
    });
  }

  async removeTotp(userId: string, password: string, address: string) {
    await this.confirmPassword(userId, password, address);
    await this.db.transaction(async (tx) => {
      const gone = await tx.delete(totpFactors).where(eq(totpFactors.userId, userId)).returning();
      if (!gone.some((g) => g.confirmedAt)) throw new AppError("not_found", "No authenticator app is set up.");
      await this.dropCodesWithoutFactor(tx, userId);
    });
    return this.status(userId);
  }

  /** The time step the code belongs to (this one, or one either side for clock drift), or null. */
  private async matchingStep(userId: string, sealed: string, code: string): Promise<number | null> {
    const { Secret, TOTP } = await otp();
    const secret = Secret.fromBase32(this.keyring.open(sealed, `totp:${userId}`));
    const now = Date.now();
    const delta = (await this.totp(secret)).validate({ token: code, timestamp: now, window: 1 });
    return delta === null ? null : TOTP.counter({ period: PERIOD, timestamp: now }) + delta;
  }

  /** A right code, never one of a step already used: the stored step moves forward in the same statement. */
  private async spendTotp(userId: string, code: string): Promise<boolean> {
    const [f] = await this.db
      .select()
      .from(totpFactors)
      .where(and(eq(totpFactors.userId, userId), isNotNull(totpFactors.confirmedAt)));
    if (!f) return false;
    const step = await this.matchingStep(userId, f.secretSealed, code);
    if (step === null) return false;
    const claimed = await this.db
      .update(totpFactors)
      .set({ lastStep: step })
      .where(and(eq(totpFactors.userId, userId), or(isNull(totpFactors.lastStep), lt(totpFactors.lastStep, step))))
      .returning({ userId: totpFactors.userId });
    return claimed.length > 0;
  }

  // --- Passkeys (WebAuthn) ---

  async passkeyOptions(userId: string, password: string, address: string) {
    await this.confirmPassword(userId, password, address);
    const [user] = await this.db.select({ email: users.email }).from(users).where(eq(users.id, userId));
    const existing = await this.db.select().from(passkeys).where(eq(passkeys.userId, userId));
    if (existing.length >= LIMITS.passkeysPerUser) throw overLimit("passkeys per account", LIMITS.passkeysPerUser);
    const { generateRegistrationOptions } = await webauthn();
    const options = await generateRegistrationOptions({
      rpName: this.config.TWO_FACTOR_ISSUER,
      rpID: this.rpId,
      userName: user!.email,
      userID: new TextEncoder().encode(userId),
      attestationType: "none",
      excludeCredentials: existing.map((p) => ({ id: p.credentialId, transports: p.transports })),
      authenticatorSelection: { residentKey: "preferred", userVerification: "preferred" },
      timeout: this.config.TWO_FACTOR_CHALLENGE_TTL_SECONDS * 1000,
    });
    await this.db.transaction(async (tx) => {
      await tx
        .delete(twoFactorChallenges)
        .where(and(eq(twoFactorChallenges.userId, userId), eq(twoFactorChallenges.purpose, "passkey_registration")));
      await tx.insert(twoFactorChallenges).values({
        userId,
        purpose: "passkey_registration",
        webauthnChallenge: options.challenge,
        expiresAt: this.challengeExpiry(),
      });
    });
    return { options: options as unknown as Record<string, unknown> };
  }

  async addPasskey(userId: string, name: string, response: z.infer<typeof ZPasskeyAttestation>) {
    const [challenge] = await this.db
      .delete(twoFactorChallenges)
      .where(
        and(
          eq(twoFactorChallenges.userId, userId),
          eq(twoFactorChallenges.purpose, "passkey_registration"),
          gt(twoFactorChallenges.expiresAt, new Date()),
        ),
      )
      .returning();
    if (!challenge?.webauthnChallenge)
      throw new AppError("conflict", "No passkey set-up is in progress (or it expired): start again.");
    const { verifyRegistrationResponse } = await webauthn();
    let verified: VerifiedRegistrationResponse;
    try {
      verified = await verifyRegistrationResponse({
        response,
        expectedChallenge: challenge.webauthnChallenge,
        expectedOrigin: this.origin,
        expectedRPID: this.rpId,
        requireUserVerification: false,
      });
    } catch (err) {
      throw new AppError("bad_request", `The passkey could not be verified: ${(err as Error).message}`);
    }
    if (!verified.verified) throw new AppError("bad_request", "The passkey could not be verified.");
    const cred = verified.registrationInfo.credential;
    return this.db.transaction(async (tx) => {
      await tx.select({ id: users.id }).from(users).where(eq(users.id, userId)).for("update");
      const [mine] = await tx.select({ n: count() }).from(passkeys).where(eq(passkeys.userId, userId));
      if (mine!.n >= LIMITS.passkeysPerUser) throw overLimit("passkeys per account", LIMITS.passkeysPerUser);
      const first = !(await this.hasFactor(tx, userId));
      const [row] = await tx
        .insert(passkeys)
        .values({
          userId,
          credentialId: cred.id,
          publicKey: Buffer.from(cred.publicKey).toString("base64url"),
          counter: cred.counter,
          transports: cred.transports ?? response.response.transports ?? [],
          name,
        })
        .onConflictDoNothing()
        .returning();
      if (!row) throw new AppError("conflict", "This passkey is already registered.");
      return { passkey: passkeyOut(row), recovery_codes: first ? await this.replaceRecoveryCodes(tx, userId) : [] };
    });
  }

  async removePasskey(userId: string, passkeyId: string, password: string, address: string) {
    await this.confirmPassword(userId, password, address);
    await this.db.transaction(async (tx) => {
      const gone = await tx
        .delete(passkeys)
        .where(and(eq(passkeys.id, passkeyId), eq(passkeys.userId, userId)))
        .returning({ id: passkeys.id });
      if (gone.length === 0) throw new AppError("not_found", "No such passkey on this account.");
      await this.dropCodesWithoutFactor(tx, userId);
    });
    return this.status(userId);
  }

  private async checkPasskey(userId: string, expected: string | null, assertion: TSecondFactorInput["passkey"]) {
    if (!expected || !assertion) return false;
    const [cred] = await this.db
      .select()
      .from(passkeys)
      .where(and(eq(passkeys.credentialId, assertion.id), eq(passkeys.userId, userId)));
    if (!cred) return false;
    const { verifyAuthenticationResponse } = await webauthn();
    try {
      const { verified, authenticationInfo } = await verifyAuthenticationResponse({
        response: assertion,
        expectedChallenge: expected,
        expectedOrigin: this.origin,
        expectedRPID: this.rpId,
        credential: {
          id: cred.credentialId,
          publicKey: new Uint8Array(Buffer.from(cred.publicKey, "base64url")),
          counter: cred.counter,
          transports: cred.transports as never,
        },
        requireUserVerification: false,
      });
      if (!verified) return false;
      await this.db
        .update(passkeys)
        .set({ counter: authenticationInfo.newCounter, lastUsedAt: new Date() })
        .where(eq(passkeys.id, cred.id));
      return true;
    } catch {
      // A bad signature, another origin, a counter gone backwards (a cloned key): all just "wrong".
      return false;
    }
  }

  // --- Recovery codes ---

  async regenerateRecoveryCodes(userId: string, password: string, address: string) {
    await this.confirmPassword(userId, password, address);
    return this.db.transaction(async (tx) => {
      if (!(await this.hasFactor(tx, userId)))
        throw new AppError("conflict", "Recovery codes come with a second factor: set one up first.");
      return { recovery_codes: await this.replaceRecoveryCodes(tx, userId) };
    });
  }

  private async replaceRecoveryCodes(tx: Tx, userId: string): Promise<string[]> {
    const codes = Array.from({ length: LIMITS.recoveryCodes }, newRecoveryCode);
    await tx.delete(recoveryCodes).where(eq(recoveryCodes.userId, userId));
    await tx.insert(recoveryCodes).values(codes.map((c) => ({ userId, codeHash: sha256(normaliseRecoveryCode(c)) })));
    return codes;
  }

  private async spendRecoveryCode(userId: string, code: string): Promise<boolean> {
    const used = await this.db
      .update(recoveryCodes)
      .set({ usedAt: new Date() })
      .where(
        and(
          eq(recoveryCodes.userId, userId),
          eq(recoveryCodes.codeHash, sha256(normaliseRecoveryCode(code))),
          isNull(recoveryCodes.usedAt),
        ),
      )
      .returning({ id: recoveryCodes.id });
    return used.length > 0;
  }

  /** With the last factor gone, its recovery codes go too (they would otherwise come back with the next one). */
  private async dropCodesWithoutFactor(tx: Tx, userId: string) {
    if (!(await this.hasFactor(tx, userId))) await tx.delete(recoveryCodes).where(eq(recoveryCodes.userId, userId));
  }

  private async hasFactor(tx: Tx | Db, userId: string): Promise<boolean> {
    const [row] = await tx
      .select({ has: hasSecondFactor(users.id) })
      .from(users)
      .where(eq(users.id, userId));
    return Boolean(row?.has);
  }

  // --- Sign-in ---

  private challengeExpiry() {
    return new Date(Date.now() + this.config.TWO_FACTOR_CHALLENGE_TTL_SECONDS * 1000);
  }

  /**
   * After a right password: null when the account has no second factor (the caller issues the
   * session), else a challenge to complete at `/auth/login/second-factor`. Its token is stored
   * as SHA-256 and works once, for TWO_FACTOR_CHALLENGE_TTL_SECONDS.
   */
  async signInChallenge(userId: string): Promise<TSecondFactorChallenge | null> {
    const [totp] = await this.db
      .select({ on: totpFactors.userId })
      .from(totpFactors)
      .where(and(eq(totpFactors.userId, userId), isNotNull(totpFactors.confirmedAt)));
    const keys = await this.db
      .select({ id: passkeys.credentialId, transports: passkeys.transports })
      .from(passkeys)
      .where(eq(passkeys.userId, userId));
    if (!totp && keys.length === 0) return null;
    const options = keys.length
      ? await (await webauthn()).generateAuthenticationOptions({
          rpID: this.rpId,
          allowCredentials: keys.map((k) => ({ id: k.id, transports: k.transports })),
          userVerification: "preferred",
          timeout: this.config.TWO_FACTOR_CHALLENGE_TTL_SECONDS * 1000,
        })
      : null;
    const token = newSecret("two_factor");
    // Expired challenges of this account go as a new one is made: the table stays small without a sweeper.
    await this.db
      .delete(twoFactorChallenges)
      .where(and(eq(twoFactorChallenges.userId, userId), lt(twoFactorChallenges.expiresAt, new Date())));
    await this.db.insert(twoFactorChallenges).values({
      userId,
      purpose: "sign_in",
      tokenHash: sha256(token),
      webauthnChallenge: options?.challenge ?? null,
      expiresAt: this.challengeExpiry(),
    });
    return {
      second_factor_required: true,
      challenge_token: token,
      expires_in: this.config.TWO_FACTOR_CHALLENGE_TTL_SECONDS,
      methods: [...(totp ? (["totp"] as const) : []), "recovery_code", ...(options ? (["passkey"] as const) : [])],
      passkey_options: options as unknown as Record<string, unknown> | null,
    };
  }

  /**
   * Completes a sign-in: the account's id when the factor is right. A wrong one counts against
   * the same failed sign-in limits as a wrong password (per email and per address; 429 past
   * them), and a challenge takes only a few before it is spent.
   */
  async verifySignIn(input: TSecondFactorInput, address: string): Promise<string> {
    const [ch] = await this.db
      .select({ c: twoFactorChallenges, email: users.email })
      .from(twoFactorChallenges)
      .innerJoin(users, eq(users.id, twoFactorChallenges.userId))
      .where(
        and(
          eq(twoFactorChallenges.tokenHash, sha256(input.challenge_token)),
          eq(twoFactorChallenges.purpose, "sign_in"),
        ),
      )
      .limit(1);
    if (!ch || ch.c.usedAt || ch.c.expiresAt.getTime() <= Date.now())
      throw new AppError("unauthenticated", BAD_CHALLENGE);
    const { c, email } = ch;
    this.throttle.check(email, address);
    const ok = input.code
      ? await this.spendTotp(c.userId, input.code)
      : input.recovery_code
        ? await this.spendRecoveryCode(c.userId, input.recovery_code)
        : await this.checkPasskey(c.userId, c.webauthnChallenge, input.passkey);
    if (!ok) {
      const [after] = await this.db
        .update(twoFactorChallenges)
        .set({
          failures: sql`${twoFactorChallenges.failures} + 1`,
          usedAt: sql`case when ${twoFactorChallenges.failures} + 1 >= ${TRIES_PER_CHALLENGE} then now() else ${twoFactorChallenges.usedAt} end`,
        })
        .where(eq(twoFactorChallenges.id, c.id))
        .returning({ failures: twoFactorChallenges.failures });
      await this.throttle.failed(email, address);
      const spent = (after?.failures ?? TRIES_PER_CHALLENGE) >= TRIES_PER_CHALLENGE;
      throw new AppError(
        "unauthenticated",
        spent
          ? "The second factor is wrong, and this sign-in has had too many tries: sign in with your password again."
          : input.passkey
            ? "The passkey was not accepted."
            : "The code is wrong.",
      );
    }
    const claimed = await this.db
      .update(twoFactorChallenges)
      .set({ usedAt: new Date() })
      .where(and(eq(twoFactorChallenges.id, c.id), isNull(twoFactorChallenges.usedAt)))
      .returning({ id: twoFactorChallenges.id });
    if (claimed.length === 0) throw new AppError("unauthenticated", BAD_CHALLENGE);
    return c.userId;
  }
}
