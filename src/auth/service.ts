import { and, desc, eq, exists, gt, isNull, ne, sql } from "drizzle-orm";
import type { Config } from "../config";
import type { Db } from "../db/client";
import { apiKeys, loginSessions, refreshTokens, teamMembers, teams, users } from "../db/schema";
import { AppError } from "../lib/errors";
import type { RateLimiter, RateLimitPolicy } from "../lib/rate-limit";
import { iso } from "../lib/schemas";
import { hasPrefix, newSecret, sha256 } from "../lib/secrets";
import type { Principal } from "../auth/principal";
import type { Scope } from "./scopes";
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
/** A key's `last_used_at` is written at most this often: the key lookup itself stays a read. */
const KEY_LAST_USED_EVERY_MS = 60_000;
/** The most sign-ins the account page lists (and "sign out all others" ends in one go). */
const SESSIONS_LISTED = 100;

/** Where a sign-in came from, as the edge saw it. */
export interface SignInOrigin {
  address: string;
  userAgent: string | null;
}

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
  /** Every request with an API key reads it: one prepared statement. */
  private readonly keyByHash;

  constructor(
    private readonly db: Db,
    private readonly tokens: AccessTokens,
    private readonly sessions: LoginSessions,
    private readonly throttle: LoginThrottle,
    private readonly config: Pick<Config, "REFRESH_TOKEN_TTL_SECONDS" | "PASSWORD_MEMORY_KIB" | "PASSWORD_TIME_COST">,
    private readonly guard: SignupGuard,
  ) {
    this.dummyHash = this.hash("not-a-real-password");
    this.keyByHash = db
      .select({
        id: apiKeys.id,
        teamId: apiKeys.teamId,
        role: apiKeys.role,
        scopes: apiKeys.scopes,
        serverIds: apiKeys.serverIds,
        expiresAt: apiKeys.expiresAt,
        lastUsedAt: apiKeys.lastUsedAt,
      })
      .from(apiKeys)
      .where(and(eq(apiKeys.keyHash, sql.placeholder("hash")), isNull(apiKeys.revokedAt)))
      .limit(1)
      .prepare("api_key_by_hash");
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
   * `email` is already normalised (lower case); `from.address` is the client's, for the throttle.
   * An account with a second factor gets a challenge instead of a session (`completeSignIn`).
   */
  async login(email: string, password: string, from: SignInOrigin): Promise<TTokenPair | TSecondFactorChallenge> {
    this.throttle.check(email, from.address);
    const [user] = await this.db.select().from(users).where(eq(users.email, email)).limit(1);
    const stored = user?.passwordHash ?? (await this.dummyHash);
    const ok = await this.guard.gate.run("signin", () => Bun.password.verify(password, stored));
    if (!user || !ok) {
      await this.throttle.failed(email, from.address);
      throw new AppError("unauthenticated", BAD_LOGIN);
    }
    return (await this.twoFactor.signInChallenge(user.id)) ?? this.startSession(user.id, from);
  }

  /** The second step of a sign-in that answered a challenge: a session when the factor is right. */
  async completeSignIn(input: TSecondFactorInput, from: SignInOrigin): Promise<TTokenPair> {
    const userId = await this.twoFactor.verifySignIn(input, from.address);
    return this.startSession(userId, from);
  }

  /** A new sign-in (a refresh-token family), recorded with where it came from so the account can list it. */
  private async startSession(userId: string, from: SignInOrigin): Promise<TTokenPair> {
    const familyId = crypto.randomUUID();
    await this.db.insert(loginSessions).values({
      id: familyId,
      userId,
      address: from.address || null,
      userAgent: from.userAgent?.slice(0, 512) || null,
    });
    return this.issue(userId, familyId);
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

  /**
   * Changes the password after checking the current one (a wrong one counts against the sign-in
   * limits like a failed sign-in), then ends every other sign-in of the account: whoever else
   * held the old password, or a session made with it, is out.
   */
  async changePassword(userId: string, sessionId: string, current: string, next: string, address: string) {
    const [user] = await this.db.select().from(users).where(eq(users.id, userId)).limit(1);
    if (!user) throw new AppError("unauthenticated", "The account no longer exists.");
    this.throttle.check(user.email, address);
    const ok = await this.guard.gate.run("signin", () => Bun.password.verify(current, user.passwordHash));
    if (!ok) {
      await this.throttle.failed(user.email, address);
      throw new AppError("forbidden", "The current password is wrong.");
    }
    const passwordHash = await this.guard.gate.run("signin", () => this.hash(next));
    await this.db.update(users).set({ passwordHash }).where(eq(users.id, userId));
    return this.revokeOtherSessions(userId, sessionId);
  }

  /** The account's sign-ins that can still be used, most recently used first. */
  async listSessions(userId: string, currentId: string) {
    const usable = this.db
      .select({ one: sql`1` })
      .from(refreshTokens)
      .where(
        and(
          eq(refreshTokens.familyId, loginSessions.id),
          isNull(refreshTokens.usedAt),
          isNull(refreshTokens.revokedAt),
          gt(refreshTokens.expiresAt, sql`now()`),
        ),
      );
    const rows = await this.db
      .select()
      .from(loginSessions)
      .where(and(eq(loginSessions.userId, userId), isNull(loginSessions.revokedAt), exists(usable)))
      .orderBy(desc(loginSessions.lastUsedAt), desc(loginSessions.id))
      .limit(SESSIONS_LISTED);
    return {
      sessions: rows.map((r) => ({
        session_id: r.id,
        created_at: iso(r.createdAt),
        last_used_at: iso(r.lastUsedAt),
        address: r.address,
        user_agent: r.userAgent,
        current: r.id === currentId,
      })),
    };
  }

  /** Ends one of the account's sign-ins (the current one too: that is signing out). */
  async revokeSession(userId: string, sessionId: string) {
    const [row] = await this.db
      .select({ id: loginSessions.id })
      .from(loginSessions)
      .where(and(eq(loginSessions.id, sessionId), eq(loginSessions.userId, userId), isNull(loginSessions.revokedAt)))
      .limit(1);
    if (!row) throw new AppError("not_found", "No such sign-in on this account.");
    await this.revokeFamily(sessionId);
    return { ok: true as const };
  }

  /** Ends every sign-in of the account but the one making the call. */
  async revokeOtherSessions(userId: string, currentId: string) {
    const ended = await this.db
      .update(loginSessions)
      .set({ revokedAt: new Date() })
      .where(and(eq(loginSessions.userId, userId), ne(loginSessions.id, currentId), isNull(loginSessions.revokedAt)))
      .returning({ id: loginSessions.id });
    for (const { id } of ended) await this.revokeFamily(id);
    return { revoked: ended.length };
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
    await this.db.update(loginSessions).set({ lastUsedAt: new Date() }).where(eq(loginSessions.id, row.familyId));
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

  /**
   * Resolves a bearer credential: a team API key (by hash) or a user access token (JWT). An
   * expired key is refused with its own code, so its holder knows to ask for a new one.
   */
  async authenticate(token: string): Promise<Principal | null> {
    if (hasPrefix("api_key", token)) {
      const [key] = await this.keyByHash.execute({ hash: sha256(token) });
      if (!key) return null;
      const now = Date.now();
      if (key.expiresAt && key.expiresAt.getTime() <= now)
        throw new AppError("api_key_expired", "This API key has expired; a team admin can create a new one.", {
          details: { expires_at: iso(key.expiresAt) },
        });
      if (!key.lastUsedAt || now - key.lastUsedAt.getTime() >= KEY_LAST_USED_EVERY_MS) await this.touchKey(key.id);
      return {
        kind: "api_key",
        keyId: key.id,
        teamId: key.teamId,
        role: key.role,
        scopes: (key.scopes as Scope[] | null) ?? null,
        serverIds: key.serverIds ?? null,
        exp: key.expiresAt ? Math.floor(key.expiresAt.getTime() / 1000) : null,
      };
    }
    const claims = await this.tokens.verify(token);
    // Signed by us, yet possibly for an account or login that is gone: only a live session counts.
    if (!claims || !UUID.test(claims.sub) || !UUID.test(claims.sid)) return null;
    if (!(await this.sessions.isLive(claims.sid, claims.sub))) return null;
    return { kind: "user", userId: claims.sub, sessionId: claims.sid, exp: claims.exp };
  }

  /** Once a minute at most per key; a failure costs the key's "last used" a minute, not the request. */
  private async touchKey(keyId: string) {
    await this.db
      .update(apiKeys)
      .set({ lastUsedAt: new Date() })
      .where(eq(apiKeys.id, keyId))
      .catch(() => undefined);
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
    await this.db
      .update(loginSessions)
      .set({ revokedAt: sql`coalesce(${loginSessions.revokedAt}, now())` })
      .where(eq(loginSessions.id, familyId));
    await this.sessions.revoked(familyId);
  }
}
