import { and, eq, inArray, lte } from "drizzle-orm";
import {
  applyLoginEvent,
  FINAL_STATUSES,
  type LoginEvent,
  type LoginState,
  type LoginStatus,
} from "../../machines/login-request";
import type { ClientsService } from "../clients/service";
import type { Config } from "../config";
import type { Db } from "../db/client";
import { clientApps, loginRequests, sessions } from "../db/schema";
import { authorizeUrl, identityConfig, pkceChallenge, runChain } from "../identity/chain";
import type { DenialCode, IdentityConfig } from "../identity/types";
import type { Clock } from "../lib/clock";
import { AppError } from "../lib/errors";
import type { Keyring } from "../lib/keyring";
import type { Logger } from "../lib/log";
import { sha256 } from "../lib/secrets";

type Row = typeof loginRequests.$inferSelect;
type Tx = Parameters<Parameters<Db["transaction"]>[0]>[0];

const SESSION_PREFIX = "mcp_sess_";
const POLL_INTERVAL_S = 2;

export interface TransitionResult {
  row: Row;
  /** Whether the event itself was applied (false when refused, or when expiry came first). */
  applied: boolean;
}

/**
 * The ms_auth login flow. Every status change is one machine event applied to the stored
 * state with an optimistic version check (restore -> send -> persist), so any instance can
 * continue any request and two concurrent events cannot both win.
 */
export class LoginService {
  readonly identity: IdentityConfig;
  readonly callbackUrl: string;

  constructor(
    private readonly db: Db,
    private readonly clients: ClientsService,
    private readonly keyring: Keyring,
    private readonly clock: Clock,
    private readonly config: Config,
    private readonly log: Logger,
  ) {
    this.identity = identityConfig(config);
    this.callbackUrl = `${config.PUBLIC_URL}/client/ms-auth/callback`;
  }

  // --- launcher backend (client credentials) ---

  async start(clientId: string, secret: string, clientState?: string) {
    await this.clients.verify(clientId, secret);
    if (!(await this.clients.msAuthModule(clientId))) {
      throw new AppError(
        "bad_request",
        "The ms_auth module is not enabled for this client: enable it with POST /client/apps/{client_id}/modules/ms-auth.",
      );
    }
    const id = crypto.randomUUID();
    const ttl = this.config.LOGIN_REQUEST_TTL_SECONDS;
    await this.db.insert(loginRequests).values({
      id,
      clientId,
      status: "pending",
      context: {},
      expiresAt: new Date(this.clock.now() + ttl * 1000),
      clientState: clientState ?? null,
    });
    const auth_url = authorizeUrl(this.identity, {
      redirectUri: this.callbackUrl,
      state: this.oauthState(id),
      codeChallenge: pkceChallenge(this.pkceVerifier(id)),
    });
    return { auth_request_id: id, auth_url, expires_in: ttl, interval: POLL_INTERVAL_S };
  }

  async poll(clientId: string, secret: string, requestId: string) {
    await this.clients.verify(clientId, secret);
    const row = await this.loadCurrent(requestId);
    if (!row || row.clientId !== clientId)
      throw new AppError("not_found", "Unknown auth_request_id for this client (use the latest one from start).");
    const status = row.status as LoginStatus;
    const out: {
      status: LoginStatus;
      mc_username?: string;
      svc_session_token?: string;
      error?: DenialCode | "expired";
      expires_in?: number;
    } = { status };
    if (row.context.mcUsername) out.mc_username = row.context.mcUsername;
    if (status === "denied" || status === "expired")
      out.error = row.context.error ?? (status === "expired" ? "expired" : "identity_error");
    if (status === "pending" || status === "authenticated")
      out.expires_in = Math.max(0, Math.ceil((row.expiresAt.getTime() - this.clock.now()) / 1000));
    if (status === "authorized") {
      const [session] = await this.db
        .select({ id: sessions.id })
        .from(sessions)
        .where(eq(sessions.loginRequestId, row.id))
        .limit(1);
      if (session) out.svc_session_token = this.sessionToken(session.id);
    }
    return out;
  }

  /** RFC 7662 manner: anything but a live session of this client is just `{valid: false}`. */
  async validate(clientId: string, secret: string, token: string) {
    await this.clients.verify(clientId, secret);
    const s = await this.liveSession(clientId, token);
    return s
      ? { valid: true as const, mc_uuid: s.mcUuid, mc_username: s.mcUsername, expires_at: s.expiresAt.toISOString() }
      : { valid: false as const };
  }

  /** RFC 7009 manner: always ok, so a caller learns nothing about tokens that are not theirs. */
  async revoke(clientId: string, secret: string, token: string) {
    await this.clients.verify(clientId, secret);
    if (token.startsWith(SESSION_PREFIX)) {
      await this.db
        .update(sessions)
        .set({ revokedAt: this.clock.date() })
        .where(and(eq(sessions.tokenHash, sha256(token)), eq(sessions.clientId, clientId)));
    }
    return { ok: true as const };
  }

  // --- browser (callback and consent) ---

  /** The request a callback's `state` names, or null when the state is not one we issued. */
  requestIdFromState(state: string | null): string | null {
    if (!state) return null;
    const dot = state.indexOf(".");
    if (dot < 0) return null;
    const id = state.slice(0, dot);
    if (!/^[0-9a-f-]{36}$/.test(id)) return null;
    return this.keyring.verify(state.slice(dot + 1), "oauth-state", id) ? id : null;
  }

  /** Runs the identity chain for a callback and moves the request on. */
  async completeSignIn(requestId: string, code: string, browserSecret: string): Promise<TransitionResult | null> {
    const before = await this.loadCurrent(requestId);
    if (before?.status !== "pending") return before ? { row: before, applied: false } : null;
    const result = await runChain(this.identity, {
      code,
      redirectUri: this.callbackUrl,
      codeVerifier: this.pkceVerifier(requestId),
    });
    if (!result.ok) {
      this.log.info("sign-in denied", { auth_request_id: requestId, error: result.error, detail: result.detail });
      return this.send(requestId, { type: "DENY", error: result.error });
    }
    return this.send(
      requestId,
      { type: "AUTHENTICATE", mcUuid: result.profile.id, mcUsername: result.profile.name },
      { browserHash: sha256(browserSecret) },
    );
  }

  deny(requestId: string, error: DenialCode) {
    return this.send(requestId, { type: "DENY", error });
  }

  /** Whether this browser (by its cookie) is the one that signed in on this request. */
  browserMatches(row: Row, browserSecret: string | undefined): boolean {
    return Boolean(browserSecret && row.browserHash && row.browserHash === sha256(browserSecret));
  }

  csrfToken(requestId: string, browserSecret: string) {
    return this.keyring.mac("csrf", requestId, browserSecret);
  }

  csrfValid(requestId: string, browserSecret: string, token: string) {
    return this.keyring.verify(token, "csrf", requestId, browserSecret);
  }

  /** Approve: authorized with a fresh session, created in the same transaction as the status change. */
  approve(row: Row) {
    return this.send(row.id, { type: "APPROVE" }, undefined, async (tx, updated) => {
      const id = crypto.randomUUID();
      await tx.insert(sessions).values({
        id,
        tokenHash: sha256(this.sessionToken(id)),
        clientId: updated.clientId,
        loginRequestId: updated.id,
        mcUuid: updated.context.mcUuid!,
        mcUsername: updated.context.mcUsername!,
        expiresAt: new Date(this.clock.now() + this.config.SESSION_TTL_SECONDS * 1000),
      });
    });
  }

  async consentView(row: Row) {
    const [app] = await this.db.select().from(clientApps).where(eq(clientApps.id, row.clientId)).limit(1);
    return app;
  }

  async redirectTarget(row: Row): Promise<string | null> {
    const module = await this.clients.msAuthModule(row.clientId);
    if (!module) return null;
    const url = new URL(module.postLoginRedirectUri);
    url.searchParams.set("auth_request_id", row.id);
    url.searchParams.set("status", row.status);
    if (row.status === "denied" || row.status === "expired")
      url.searchParams.set("error", row.context.error ?? row.status);
    if (row.clientState !== null) url.searchParams.set("state", row.clientState);
    return url.toString();
  }

  // --- machinery ---

  /** Loads a request, first expiring it if its deadline has passed. */
  async loadCurrent(id: string): Promise<Row | null> {
    const row = await this.load(id);
    if (!row || !this.overdue(row)) return row;
    return (await this.send(id, { type: "EXPIRE" }))?.row ?? null;
  }

  /** Expires every overdue request: the deadline holds even for requests nobody asks about. */
  async sweep(limit = 500): Promise<number> {
    const due = await this.db
      .select({ id: loginRequests.id })
      .from(loginRequests)
      .where(
        and(
          inArray(loginRequests.status, ["pending", "authenticated"]),
          lte(loginRequests.expiresAt, this.clock.date()),
        ),
      )
      .limit(limit);
    for (const { id } of due) await this.send(id, { type: "EXPIRE" });
    return due.length;
  }

  /**
   * restore -> send -> persist. The update only lands if the version is still the one read;
   * otherwise another instance moved first and we retry on its result. An overdue request
   * takes EXPIRE instead of the event asked for.
   */
  async send(
    id: string,
    event: LoginEvent,
    patch: Partial<Pick<Row, "browserHash">> = {},
    inTx?: (tx: Tx, updated: Row) => Promise<void>,
  ): Promise<TransitionResult | null> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const row = await this.load(id);
      if (!row) return null;
      const effective: LoginEvent = this.overdue(row) && event.type !== "EXPIRE" ? { type: "EXPIRE" } : event;
      const next = applyLoginEvent(
        { status: row.status as LoginStatus, context: row.context } satisfies LoginState,
        effective,
      );
      if (!next) return { row, applied: false };
      const own = effective === event;
      const updated = await this.db.transaction(async (tx) => {
        const [u] = await tx
          .update(loginRequests)
          .set({
            status: next.status,
            context: next.context,
            version: row.version + 1,
            updatedAt: this.clock.date(),
            ...(own ? patch : {}),
          })
          .where(and(eq(loginRequests.id, id), eq(loginRequests.version, row.version)))
          .returning();
        if (u && own && inTx) await inTx(tx, u);
        return u;
      });
      if (updated) return { row: updated, applied: own };
    }
    throw new AppError("conflict", "The login request is changing too fast; try again.");
  }

  private load(id: string): Promise<Row | null> {
    return this.db
      .select()
      .from(loginRequests)
      .where(eq(loginRequests.id, id))
      .limit(1)
      .then((r) => r[0] ?? null);
  }

  private overdue(row: Row) {
    return !FINAL_STATUSES.includes(row.status as LoginStatus) && row.expiresAt.getTime() <= this.clock.now();
  }

  private async liveSession(clientId: string, token: string) {
    if (!token.startsWith(SESSION_PREFIX)) return null;
    const [s] = await this.db
      .select()
      .from(sessions)
      .where(eq(sessions.tokenHash, sha256(token)))
      .limit(1);
    if (!s || s.clientId !== clientId || s.revokedAt || s.expiresAt.getTime() <= this.clock.now()) return null;
    return s;
  }

  /** `<id>.<mac>`: names the request and proves we issued it; nothing to store. */
  private oauthState(id: string) {
    return `${id}.${this.keyring.mac("oauth-state", id)}`;
  }

  /** Derived, never stored: 43 base64url characters, as RFC 7636 requires. */
  private pkceVerifier(id: string) {
    return this.keyring.mac("pkce", id);
  }

  /**
   * Session tokens are a keyed MAC of the session id: 256 bits, stored only as SHA-256, and
   * re-derivable so a poll whose answer was lost can be repeated and get the same token.
   */
  private sessionToken(sessionId: string) {
    return SESSION_PREFIX + this.keyring.mac("session", sessionId);
  }
}
