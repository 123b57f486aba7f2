import { and, eq, isNull, sql } from "drizzle-orm";
import type { Config } from "../config";
import type { Db } from "../db/client";
import { apiKeys, refreshTokens, teamMembers, teams, users } from "../db/schema";
import { AppError } from "../lib/errors";
import type { RateLimiter, RateLimitPolicy } from "../lib/rate-limit";
import { iso } from "../lib/schemas";
import { hasPrefix, newSecret, sha256 } from "../lib/secrets";
import type { Principal } from "../auth/principal";
import type { AccessTokens } from "./jwt";
import type { TSecondFactorChallenge, TSecondFactorInput, TTokenPair } from "./schemas";
import { hasSecondFactor, lockedOut } from "./two-factor-gate";
import type { TwoFactorService } from "./two-factor";
import type { LoginSessions } from "./sessions";
import type { PasswordGate } from "./password-gate";
import type { LoginThrottle } from "./throttle";

const BAD_LOGIN = "The email or password is wrong.";
const BAD_REFRESH = "The refresh token is invalid, expired or revoked.";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Sign-up attempt limits (per address, overall), and the password hashing slots sign-ins share. */
export interface SignupGuard {
  limiter: RateLimiter;
  perAddress: RateLimitPolicy;
  overall: RateLimitPolicy;
  gate: PasswordGate;
}

export class AuthService {
  /** Verified against when the email is unknown, so both failures take the same time. */
  private dummyHash: Promise<string>;
  /** Set once at start-up (it needs this service's password check in turn). */
  twoFactor!: TwoFactorService;

  constructor(
    private readonly db: Db,
    private readonly tokens: AccessTokens,
    private readonly sessions: LoginSessions,
    private readonly throttle: LoginThrottle,
    private readonly config: Pick<Config, "REFRESH_TOKEN_TTL_SECONDS" | "PASSWORD_MEMORY_KIB" | "PASSWORD_TIME_COST">,
    private readonly guard: SignupGuard,
  ) {
    this.dummyHash = this.hash("not-a-real-password");
  }

  private hash(password: string) {
    return Bun.password.hash(password, {
      algorithm: "argon2id",
      memoryCost: this.config.PASSWORD_MEMORY_KIB,
      timeCost: this.config.PASSWORD_TIME_COST,
    });
  }

  /**
   * Every attempt counts against the address's and the service's sign-up limits before any hashing
   * (taken emails too: counting only new accounts would let a flood probe for free), then the hash
   * waits for a sign-up's share of the password slots.
   */
  async signup(email: string, password: string, address: string) {
    const { limiter, perAddress, overall, gate } = this.guard;
    await limiter.enforce(perAddress, sha256(`address:${address}`), {});
    await limiter.enforce(overall, "all", {});
    const passwordHash = await gate.run("signup", () => this.hash(password));
    const [row] = await this.db.insert(users).values({ email, passwordHash }).onConflictDoNothing().returning();
    if (!row) throw new AppError("conflict", "An account with this email already exists.");
    return { id: row.id, email: row.email, created_at: iso(row.createdAt) };
  }

  /**
   * `email` is already normalised (lower case); `address` is the client's, for the throttle. An
   * account with a second factor gets a challenge instead of a session (`completeSignIn`).
   */
  async login(email: string, password: string, address: string): Promise<TTokenPair | TSecondFactorChallenge> {
    this.throttle.check(email, address);
    const [user] = await this.db.select().from(users).where(eq(users.email, email)).limit(1);
    const stored = user?.passwordHash ?? (await this.dummyHash);
    const ok = await this.guard.gate.run("signin", () => Bun.password.verify(password, stored));
    if (!user || !ok) {
      await this.throttle.failed(email, address);
      throw new AppError("unauthenticated", BAD_LOGIN);
    }
    return (await this.twoFactor.signInChallenge(user.id)) ?? this.issue(user.id, crypto.randomUUID());
  }

  /** The second step of a sign-in that answered a challenge: a session when the factor is right. */
  async completeSignIn(input: TSecondFactorInput, address: string): Promise<TTokenPair> {
    const userId = await this.twoFactor.verifySignIn(input, address);
    return this.issue(userId, crypto.randomUUID());
  }

  /**
   * The password again, for a change a stolen access token alone must not make (adding or
   * removing a second factor). A wrong one counts as a failed sign-in of the account.
   */
  async confirmPassword(userId: string, password: string, address: string): Promise<void> {
    const [user] = await this.db.select().from(users).where(eq(users.id, userId)).limit(1);
    if (!user) throw new AppError("unauthenticated", "The account no longer exists.");
    this.throttle.check(user.email, address);
    const ok = await this.guard.gate.run("signin", () => Bun.password.verify(password, user.passwordHash));
    if (!ok) {
      await this.throttle.failed(user.email, address);
      throw new AppError("unauthenticated", "The password is wrong.");
    }
  }

  async refresh(token: string): Promise<TTokenPair> {
    const hash = sha256(token);
    const [row] = await this.db.select().from(refreshTokens).where(eq(refreshTokens.tokenHash, hash)).limit(1);
    if (!row) throw new AppError("unauthenticated", BAD_REFRESH);
    if (row.usedAt || row.revokedAt) {
      // A used token presented again means two holders: end the whole family.
      await this.revokeFamily(row.familyId);
      throw new AppError("unauthenticated", BAD_REFRESH);
    }
    if (row.expiresAt.getTime() <= Date.now()) throw new AppError("unauthenticated", BAD_REFRESH);
    const claimed = await this.db
      .update(refreshTokens)
      .set({ usedAt: new Date() })
      .where(and(eq(refreshTokens.id, row.id), isNull(refreshTokens.usedAt), isNull(refreshTokens.revokedAt)))
      .returning({ id: refreshTokens.id });
    if (claimed.length === 0) {
      await this.revokeFamily(row.familyId);
      throw new AppError("unauthenticated", BAD_REFRESH);
    }
    return this.issue(row.userId, row.familyId);
  }

  async logout(token: string) {
    const [row] = await this.db
      .select({ familyId: refreshTokens.familyId })
      .from(refreshTokens)
      .where(eq(refreshTokens.tokenHash, sha256(token)))
      .limit(1);
    if (row) await this.revokeFamily(row.familyId);
    return { ok: true as const };
  }

  async me(userId: string) {
    const [user] = await this.db.select().from(users).where(eq(users.id, userId)).limit(1);
    if (!user) throw new AppError("unauthenticated", "The account no longer exists.");
    const memberships = await this.db
      .select({
        team_id: teams.id,
        name: teams.name,
        role: teamMembers.role,
        require_two_factor: teams.requireTwoFactor,
        locked: lockedOut(teams.requireTwoFactor, teamMembers.userId),
      })
      .from(teamMembers)
      .innerJoin(teams, eq(teams.id, teamMembers.teamId))
      .where(eq(teamMembers.userId, userId))
      .orderBy(teams.createdAt);
    const [factor] = await this.db
      .select({ has: hasSecondFactor(users.id) })
      .from(users)
      .where(eq(users.id, userId));
    return {
      id: user.id,
      email: user.email,
      created_at: iso(user.createdAt),
      two_factor: Boolean(factor?.has),
      teams: memberships.map((m) => ({ ...m, locked: Boolean(m.locked) })),
    };
  }

  /** Resolves a bearer credential: a team API key (by hash) or a user access token (JWT). */
  async authenticate(token: string): Promise<Principal | null> {
    if (hasPrefix("api_key", token)) {
      const [key] = await this.db
        .select({ id: apiKeys.id, teamId: apiKeys.teamId, role: apiKeys.role })
        .from(apiKeys)
        .where(and(eq(apiKeys.keyHash, sha256(token)), isNull(apiKeys.revokedAt)))
        .limit(1);
      return key ? { kind: "api_key", keyId: key.id, teamId: key.teamId, role: key.role } : null;
    }
    const claims = await this.tokens.verify(token);
    // Signed by us, yet possibly for an account or login that is gone: only a live session counts.
    if (!claims || !UUID.test(claims.sub) || !UUID.test(claims.sid)) return null;
    if (!(await this.sessions.isLive(claims.sid, claims.sub))) return null;
    return { kind: "user", userId: claims.sub, exp: claims.exp };
  }

  private async issue(userId: string, familyId: string): Promise<TTokenPair> {
    const refresh = newSecret("refresh");
    await this.db.insert(refreshTokens).values({
      userId,
      familyId,
      tokenHash: sha256(refresh),
      expiresAt: new Date(Date.now() + this.config.REFRESH_TOKEN_TTL_SECONDS * 1000),
    });
    return {
      access_token: await this.tokens.sign(userId, familyId),
      token_type: "Bearer",
      expires_in: this.tokens.ttlSeconds,
      refresh_token: refresh,
    };
  }

  private async revokeFamily(familyId: string) {
    await this.db
      .update(refreshTokens)
      .set({ revokedAt: sql`coalesce(${refreshTokens.revokedAt}, now())` })
      .where(eq(refreshTokens.familyId, familyId));
    await this.sessions.revoked(familyId);
  }
}
