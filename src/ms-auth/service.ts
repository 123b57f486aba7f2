import { and, eq } from "drizzle-orm";
import type { LoginStatus } from "../../machines/login-request";
import type { VerifiedClient } from "../clients/service";
import type { Config } from "../config";
import type { Db } from "../db/client";
import { sessions } from "../db/schema";
import type { DenialCode } from "../identity/types";
import type { Clock } from "../lib/clock";
import { AppError } from "../lib/errors";
import { sha256 } from "../lib/secrets";
import { type LoginLinks, SESSION_PREFIX } from "./links";
import type { LoginRequestRow, LoginRequestStore } from "./store";

const POLL_INTERVAL_S = 2;
const UNKNOWN_REQUEST = "Unknown auth_request_id for this client (use the latest one from start).";

/**
 * The launcher backend's calls. The caller's credentials were verified once, by the
 * procedure (`clientProcedure`); every method here acts for that verified client only.
 */
export class MsAuthService {
  constructor(
    private readonly db: Db,
    private readonly requests: LoginRequestStore,
    private readonly links: LoginLinks,
    private readonly clock: Clock,
    private readonly config: Config,
  ) {}

  /**
   * A new login request, or, with `auth_request_id`, the same live request again (a launcher
   * that restarted resumes its login with a new auth_url instead of starting over).
   */
  async start(client: VerifiedClient, input: { client_state?: string; auth_request_id?: string }) {
    if (!client.msAuth) {
      throw new AppError(
        "bad_request",
        "The ms_auth module is not enabled for this client: enable it with POST /client/apps/{client_id}/modules/ms-auth.",
      );
    }
    const row = input.auth_request_id
      ? await this.resumable(client, input.auth_request_id)
      : await this.requests.create({
          id: crypto.randomUUID(),
          clientId: client.app.id,
          ttlSeconds: this.config.LOGIN_REQUEST_TTL_SECONDS,
          clientState: input.client_state ?? null,
        });
    return {
      auth_request_id: row.id,
      auth_url: this.links.authUrl(row.id),
      expires_in: this.secondsLeft(row),
      interval: POLL_INTERVAL_S,
    };
  }

  async poll(client: VerifiedClient, requestId: string) {
    const row = await this.requests.loadCurrent(requestId);
    if (!row || row.clientId !== client.app.id) throw new AppError("not_found", UNKNOWN_REQUEST);
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
    if (status === "pending" || status === "authenticated") out.expires_in = this.secondsLeft(row);
    if (status === "authorized") {
      const [session] = await this.db
        .select({ id: sessions.id })
        .from(sessions)
        .where(eq(sessions.loginRequestId, row.id))
        .limit(1);
      if (session) out.svc_session_token = this.links.sessionToken(session.id);
    }
    return out;
  }

  /** RFC 7662 manner: anything but a live session of this client is just `{valid: false}`. */
  async validate(client: VerifiedClient, token: string) {
    const s = await this.liveSession(client.app.id, token);
    return s
      ? { valid: true as const, mc_uuid: s.mcUuid, mc_username: s.mcUsername, expires_at: s.expiresAt.toISOString() }
      : { valid: false as const };
  }

  /** RFC 7009 manner: always ok, so a caller learns nothing about tokens that are not theirs. */
  async revoke(client: VerifiedClient, token: string) {
    if (token.startsWith(SESSION_PREFIX)) {
      await this.db
        .update(sessions)
        .set({ revokedAt: this.clock.date() })
        .where(and(eq(sessions.tokenHash, sha256(token)), eq(sessions.clientId, client.app.id)));
    }
    return { ok: true as const };
  }

  /** Spec section 7: start answers 401 when the auth request has expired. */
  private async resumable(client: VerifiedClient, requestId: string): Promise<LoginRequestRow> {
    const row = await this.requests.loadCurrent(requestId);
    if (!row || row.clientId !== client.app.id) throw new AppError("not_found", UNKNOWN_REQUEST);
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
}
