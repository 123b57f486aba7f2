import { and, eq, gt, isNull, sql } from "drizzle-orm";
import { FINAL_STATUSES, type LoginStatus, type PlayerTextures } from "../../machines/login-request";
import type { VerifiedClient } from "../clients/service";
import type { Config } from "../config";
import { identityProviderOf } from "../identity/chain";
import type { IdentityProvider } from "../identity/types";
import type { Db } from "../db/client";
import { sessions } from "../db/schema";
import type { Bus } from "../realtime/bus";
import type { Clock } from "../lib/clock";
import { BoundedCache } from "../lib/bounded-cache";
import { AppError } from "../lib/errors";
import { NO_TEAM_EVENTS, type TeamEventSink } from "../lib/events";
import { sha256 } from "../lib/secrets";
import type { SessionAssertions } from "./assertions";
import { textureClaims } from "./textures";
import { type DeviceCodes, formatUserCode, newUserCode } from "./device";
import { type LoginLinks, SESSION_PREFIX } from "./links";
import type { PollResult as PollAnswer } from "./schemas";
import type { LoginRequestRow, LoginRequestStore } from "./store";

const POLL_INTERVAL_S = 2;
const UNKNOWN_REQUEST = "Unknown auth_request_id for this client (use the latest one from start).";
/** How long a cached live session may be used without hearing of a change: the bound if a notice is lost. */
export const SESSION_CACHE_TTL_MS = 10_000;

interface LiveSession {
  id: string;
  clientId: string;
  mcUuid: string;
  mcUsername: string;
  expiresAt: Date;
  identityProvider: IdentityProvider;
  textures: PlayerTextures | null;
  /** When last_used_at was last written (or read), epoch ms: written again only after LAST_USED_GRANULARITY_MS. */
  lastUsedMs: number;
}

/** How stale a session's last_used_at may be: validate writes it at most this often per session and instance. */
export const LAST_USED_GRANULARITY_MS = 60_000;

/**
 * The launcher backend's calls. The caller's credentials were verified once, by the
 * procedure (`clientProcedure`); every method here acts for that verified client only.
 */
export class MsAuthService {
  /**
   * Token hash -> live session, so validate answers without a query. A revocation is announced
   * on the bus and drops the entry on every instance; expiry is checked on every read.
   */
  private readonly sessionCache: BoundedCache<string, LiveSession>;
  private readonly sessionQuery;
  /** Request id -> the poll answer once the request has ended: a final status never changes. */
  private readonly endedPolls: BoundedCache<string, { clientId: string; out: PollAnswer }>;
  private readonly developmentProviderOn: boolean;
  /** The device flow's user codes (set when the services are composed). */
  device?: DeviceCodes;

  constructor(
    private readonly db: Db,
    private readonly requests: LoginRequestStore,
    private readonly links: LoginLinks,
    private readonly clock: Clock,
    private readonly config: Config,
    private readonly bus?: Bus,
    private readonly assertions?: SessionAssertions,
    cache: { maxEntries: number; ttlMs: number } = { maxEntries: 100_000, ttlMs: SESSION_CACHE_TTL_MS },
    private readonly events: TeamEventSink = NO_TEAM_EVENTS,
  ) {
    this.sessionCache = new BoundedCache(cache.maxEntries, cache.ttlMs, () => clock.now());
    this.developmentProviderOn = identityProviderOf(config) === "development";
    this.endedPolls = new BoundedCache(cache.maxEntries, cache.ttlMs, () => clock.now());
    this.sessionQuery = db
      .select({
        id: sessions.id,
        clientId: sessions.clientId,
        mcUuid: sessions.mcUuid,
        mcUsername: sessions.mcUsername,
        expiresAt: sessions.expiresAt,
        revokedAt: sessions.revokedAt,
        identityProvider: sessions.identityProvider,
        textures: sessions.textures,
        lastUsedAt: sessions.lastUsedAt,
      })
      .from(sessions)
      .where(eq(sessions.tokenHash, sql.placeholder("hash")))
      .limit(1)
      .prepare("launcher_session_by_hash");
    // A final status this instance wrote is the poll's answer from then on: the poll that
    // follows an approval is answered without reading the request back.
    requests.onWritten((row, sessionId) => {
      const status = row.status as LoginStatus;
      // An OpenID Connect request is the relying party's, answered by the token endpoint.
      if (row.oidc || !FINAL_STATUSES.includes(status) || (status === "authorized" && !sessionId)) return;
      const out = this.answerFor(status, row, sessionId);
      this.endedPolls.set(row.id, { clientId: row.clientId, out }, this.endedPolls.epoch);
    });
    bus?.onNotice((n) => {
      if (n.type !== "launcher_session_revoked") return;
      this.sessionCache.deleteWhere((s) => s.id === n.session_id);
      this.assertions?.forget(n.session_id);
    });
  }

  /**
   * A new login request, or, with `auth_request_id`, the same live request again (a launcher
   * that restarted resumes its login with a new auth_url instead of starting over).
   */
  async start(
    client: VerifiedClient,
    input: { client_state?: string; auth_request_id?: string; flow?: "browser" | "device" },
  ) {
    if (!client.msAuth) {
      throw new AppError(
        "bad_request",
        "The ms_auth module is not enabled for this client: enable it with POST /client/apps/{client_id}/modules/ms-auth.",
      );
    }
    const fresh = {
      id: crypto.randomUUID(),
      clientId: client.app.id,
      ttlSeconds: this.config.LOGIN_REQUEST_TTL_SECONDS,
      clientState: input.client_state ?? null,
    };
    // A new device request is made with its code in one statement.
    let code: string | undefined;
    let row: LoginRequestRow;
    if (input.auth_request_id) row = await this.resumable(client, input.auth_request_id);
    else if (input.flow === "device" && this.device) {
      const drawn = newUserCode();
      const made = await this.requests.createWithCode(fresh, sha256(drawn));
      row = made.row;
      if (made.coded) code = drawn;
    } else row = await this.requests.create({ ...fresh, flow: input.flow ?? "browser" });
    if (input.flow && input.flow !== row.flow)
      throw new AppError(
        "bad_request",
        `This auth request was started with flow "${row.flow}"; resume it with that flow.`,
      );
    const out = {
      auth_request_id: row.id,
      auth_url: this.links.authUrl(row.id),
      expires_in: this.secondsLeft(row),
      interval: POLL_INTERVAL_S,
    };
    if (row.flow !== "device" || !this.device) return out;
    code ??= await this.device.issue(row.id, row.expiresAt, { replace: Boolean(input.auth_request_id) });
    const complete = this.device.verificationUriComplete(code);
    return {
      ...out,
      user_code: formatUserCode(code),
      verification_uri: this.device.verificationUri,
      verification_uri_complete: complete,
      qr_code_svg: await this.device.qrSvg(code),
    };
  }

  /** With `assertion`, an authorized request whose session is live also gets a signed assertion. */
  async poll(client: VerifiedClient, requestId: string, opts: { assertion?: boolean } = {}): Promise<PollAnswer> {
    const out = await this.pollAnswer(client, requestId);
    if (!opts.assertion || out.status !== "authorized" || !out.svc_session_token) return out;
    const assertion = await this.assertionFor(client, out.svc_session_token);
    // The cached answer is shared: the assertion goes on a copy.
    return assertion ? { ...out, assertion } : out;
  }

  private async pollAnswer(client: VerifiedClient, requestId: string): Promise<PollAnswer> {
    const ended = this.endedPolls.get(requestId);
    if (ended?.clientId === client.app.id) return ended.out;
    const epoch = this.endedPolls.epoch;
    // One statement: the request and its session, if any.
    const found = await this.requests.loadWithSession(requestId);
    if (!found || found.row.clientId !== client.app.id || found.row.oidc)
      throw new AppError("not_found", UNKNOWN_REQUEST);
    const row = await this.requests.current(found.row);
    if (!row) throw new AppError("not_found", UNKNOWN_REQUEST);
    const status = row.status as LoginStatus;
    const out = this.answerFor(status, row, found.sessionId);
    if (FINAL_STATUSES.includes(status)) this.endedPolls.set(requestId, { clientId: client.app.id, out }, epoch);
    return out;
  }

  private answerFor(status: LoginStatus, row: LoginRequestRow, sessionId: string | null): PollAnswer {
    const name = row.context.mcUsername;
    // The machine records the profile before `authenticated`, and the session is written with the
    // authorization and deleted only with its request: a missing one is a broken invariant.
    const known = <T>(v: T | null | undefined): T => {
      if (v === null || v === undefined)
        throw new Error(`login request ${row.id} is ${status} without its profile or session`);
      return v;
    };
    switch (status) {
      case "pending":
        return { status, expires_in: this.secondsLeft(row) };
      case "authenticated":
        return { status, mc_username: known(name), expires_in: this.secondsLeft(row) };
      case "authorized":
        return { status, svc_session_token: this.links.sessionToken(known(sessionId)), mc_username: known(name) };
      case "denied": {
        const error = row.context.error;
        return {
          status,
          error: error && error !== "expired" ? error : "identity_error",
          ...(name && { mc_username: name }),
        };
      }
      case "expired":
        return { status, error: "expired", ...(name && { mc_username: name }) };
    }
  }

  /** RFC 7662 manner: anything but a live session of this client is just `{valid: false}`. */
  async validate(client: VerifiedClient, token: string, opts: { assertion?: boolean; textures?: boolean } = {}) {
    const s = await this.liveSession(client.app.id, token);
    if (!s) return { valid: false as const };
    this.touch(s);
    const out = {
      valid: true as const,
      mc_uuid: s.mcUuid,
      mc_username: s.mcUsername,
      expires_at: s.expiresAt.toISOString(),
    };
    // Opt-in: without `textures` the answer (and the assertion) is exactly what it was before.
    const textures = opts.textures ? textureClaims(s.textures) : undefined;
    const withAssertion =
      opts.assertion && this.assertions ? { ...out, assertion: await this.assertions.sign(s, textures) } : out;
    return textures ? { ...withAssertion, ...textures } : withAssertion;
  }

  /**
   * Records that the client used the session (the player's apps page shows it), at most once a
   * minute per session on this instance, after the answer: a lost write only makes it staler.
   */
  private touch(s: LiveSession) {
    const now = this.clock.now();
    if (now - s.lastUsedMs < LAST_USED_GRANULARITY_MS) return;
    s.lastUsedMs = now;
    this.db
      .update(sessions)
      .set({ lastUsedAt: new Date(now) })
      .where(eq(sessions.id, s.id))
      .catch(() => undefined);
  }

  /** Signed only for a session that is live right now (not revoked, not expired, this client's). */
  private async assertionFor(client: VerifiedClient, token: string): Promise<string | undefined> {
    if (!this.assertions) return undefined;
    const s = await this.liveSession(client.app.id, token);
    return s ? this.assertions.sign(s) : undefined;
  }

  /** RFC 7009 manner: always ok, so a caller learns nothing about tokens that are not theirs. */
  async revoke(client: VerifiedClient, token: string) {
    if (token.startsWith(SESSION_PREFIX)) {
      const revoked = await this.db
        .update(sessions)
        .set({ revokedAt: this.clock.date() })
        .where(and(eq(sessions.tokenHash, sha256(token)), eq(sessions.clientId, client.app.id)))
        .returning({ id: sessions.id });
      for (const { id } of revoked) {
        this.sessionCache.deleteWhere((s) => s.id === id);
        this.assertions?.forget(id);
        // Stored already: a lost notice leaves other instances on their copy until its TTL.
        await this.bus?.publishNotice({ type: "launcher_session_revoked", session_id: id }).catch(() => undefined);
      }
    }
    return { ok: true as const };
  }

  /**
   * The player's own revocation (their apps page): every live session of `mcUuid` at this client
   * ends now, everywhere at once, and the client's team hears of it as `session.revoked`.
   * Returns how many sessions ended.
   */
  async revokeForPlayer(mcUuid: string, clientId: string): Promise<number> {
    const now = this.clock.date();
    const revoked = await this.db
      .update(sessions)
      .set({ revokedAt: now })
      .where(
        and(
          eq(sessions.mcUuid, mcUuid),
          eq(sessions.clientId, clientId),
          isNull(sessions.revokedAt),
          gt(sessions.expiresAt, now),
        ),
      )
      .returning({ id: sessions.id, mcUsername: sessions.mcUsername });
    for (const { id } of revoked) this.forgetSession(id);
    for (const { id } of revoked)
      await this.bus?.publishNotice({ type: "launcher_session_revoked", session_id: id }).catch(() => undefined);
    if (revoked.length > 0)
      this.events.emit({ clientId }, "session.revoked", {
        mc_uuid: mcUuid,
        mc_username: revoked[0]!.mcUsername,
        sessions: revoked.length,
        revoked_at: now.toISOString(),
        by: "player",
      });
    return revoked.length;
  }

  private forgetSession(id: string) {
    this.sessionCache.deleteWhere((s) => s.id === id);
    this.assertions?.forget(id);
  }

  /** Spec section 7: start answers 401 when the auth request has expired. */
  private async resumable(client: VerifiedClient, requestId: string): Promise<LoginRequestRow> {
    const row = await this.requests.loadCurrent(requestId);
    if (!row || row.clientId !== client.app.id || row.oidc) throw new AppError("not_found", UNKNOWN_REQUEST);
    if (row.status === "expired")
      throw new AppError("auth_request_expired", "This auth request has expired; call start without auth_request_id.");
    if (row.status !== "pending" && row.status !== "authenticated")
      throw new AppError("conflict", `This auth request has already ended (${row.status}); poll it for the result.`, {
        details: { status: row.status },
      });
    return row;
  }

  private secondsLeft(row: LoginRequestRow) {
    return Math.max(0, Math.ceil((row.expiresAt.getTime() - this.clock.now()) / 1000));
  }

  private async liveSession(clientId: string, token: string): Promise<LiveSession | null> {
    if (!token.startsWith(SESSION_PREFIX)) return null;
    const hash = sha256(token);
    let s = this.sessionCache.get(hash);
    if (!s) {
      const epoch = this.sessionCache.epoch;
      const [row] = await this.sessionQuery.execute({ hash });
      if (!row || row.revokedAt) return null;
      s = {
        id: row.id,
        clientId: row.clientId,
        mcUuid: row.mcUuid,
        mcUsername: row.mcUsername,
        expiresAt: row.expiresAt,
        identityProvider: row.identityProvider,
        textures: row.textures,
        lastUsedMs: row.lastUsedAt?.getTime() ?? Number.NEGATIVE_INFINITY,
      };
      this.sessionCache.set(hash, s, epoch);
    }
    if (s.clientId !== clientId || s.expiresAt.getTime() <= this.clock.now()) return null;
    // A development sign-in proves nothing once real accounts are required.
    if (s.identityProvider === "development" && !this.developmentProviderOn) return null;
    return s;
  }
}
