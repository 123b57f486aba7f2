import { Elysia } from "elysia";
import { AppError } from "../lib/errors";
import { hasPrefix } from "../lib/secrets";
import type { Services } from "../trpc/context";
import { serverRoleOf } from "../servers/access";
import { roleAtLeast } from "../auth/principal";
import { topicOf } from "./actors";

/** Close codes of the analytics stream (docs/realtime.md). */
export const CLOSE = {
  /** No credential in time, or an invalid one. */
  unauthenticated: 4001,
  /** A credential of a kind that may not read analytics (a server agent token). */
  forbidden: 4003,
  /** No such server, or one outside the caller's teams: the same answer, so ids cannot be probed. */
  unknownServer: 4004,
  /** The credential expired or was revoked, or the caller lost access, while connected. */
  credentialEnded: 4011,
  /** More messages than the socket's budget (WS_MESSAGES_PER_MIN), or more than a few before authenticating. */
  tooManyMessages: 4029,
  /** A message that is not JSON or not a known type. */
  badMessage: 4400,
} as const;

interface RawSocket {
  send(data: string): number;
  close(code?: number, reason?: string): void;
  subscribe(topic: string): void;
  readyState: number;
}

/** Before authenticating, a socket may send only this many messages (an auth, a retry, a ping). */
const MAX_EARLY_MESSAGES = 5;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** What every connection shares: one object, referenced by each, instead of closures per socket. */
interface Hub {
  services: Services;
  /** Subscribed connections, revalidated by one shared ticker rather than a timer each. */
  live: Set<Connection>;
  ticker?: ReturnType<typeof setInterval>;
}

/**
 * One analytics socket's state, and the handlers Bun calls for it (Elysia's dispatcher calls
 * `ws.data.open/message/close`). Methods sit on the prototype and timers exist only while
 * needed, so an idle subscribed socket costs this object and Bun's own socket: Elysia's `.ws()`
 * kept the whole request context and a set of closures alive per socket (11.5 KiB against 1.1
 * KiB for bare Bun).
 */
class Connection {
  token?: string;
  authenticated = false;
  subscribed = false;
  closed = false;
  /** The auth deadline, only until the first authentication. */
  timer?: ReturnType<typeof setTimeout>;
  revalidateAt = 0;
  /** When the token's expiry notice is due and when it expires (epoch ms; 0: not due / no expiry). */
  noticeAt = 0;
  expiresAt = 0;
  /** Message budget (a token bucket): tokens left, and when it was last refilled. */
  budget: number;
  refilledAt: number;
  /** Messages received before authentication succeeded. */
  early = 0;
  ws!: RawSocket;

  constructor(
    private readonly hub: Hub,
    readonly serverId: string,
    /** Token from the upgrade's authorization header; undefined: expect an auth message; null: malformed. */
    private readonly headerToken: string | undefined | null,
  ) {
    this.budget = hub.services.config.WS_MESSAGES_PER_MIN;
    this.refilledAt = performance.now();
  }

  open(ws: RawSocket) {
    this.ws = ws;
    this.hub.services.metrics?.socketOpened();
    const { config } = this.hub.services;
    if (this.headerToken === null) return this.end(CLOSE.unauthenticated, "malformed authorization header");
    if (this.headerToken !== undefined) return this.startAuth(this.headerToken);
    this.timer = setTimeout(
      () => this.end(CLOSE.unauthenticated, "no auth message in time"),
      config.WS_AUTH_TIMEOUT_MS,
    );
  }

  message(_ws: RawSocket, message: string | Buffer) {
    this.hub.services.metrics?.socketMessage("in");
    if (this.closed) return;
    if (!this.authenticated && ++this.early > MAX_EARLY_MESSAGES) {
      return this.end(CLOSE.tooManyMessages, "too many messages before authenticating");
    }
    if (!this.spend()) return this.end(CLOSE.tooManyMessages, "message budget exceeded");
    let msg: unknown;
    try {
      msg = JSON.parse(typeof message === "string" ? message : message.toString("utf8"));
    } catch {
      return this.end(CLOSE.badMessage, "messages must be JSON");
    }
    const m = msg as { type?: unknown; token?: unknown } | null;
    if (m?.type === "auth" && typeof m.token === "string" && m.token.length <= 2048) return this.startAuth(m.token);
    if (m?.type === "ping") return this.control("pong", {});
    this.end(CLOSE.badMessage, "unknown message type");
  }

  drain() {}

  close() {
    this.hub.services.metrics?.socketClosed();
    if (this.subscribed) {
      this.hub.services.realtime.actors.release(this.serverId);
      this.unregister();
    }
    this.closed = true;
    clearTimeout(this.timer);
  }

  end(code: number, reason: string) {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.timer);
    this.ws.close(code, reason);
  }

  private control(type: string, data: Record<string, unknown>) {
    this.hub.services.metrics?.socketMessage("out");
    this.ws.send(JSON.stringify({ type, server_id: this.serverId, ts: new Date().toISOString(), data }));
  }

  private startAuth(token: string) {
    this.authenticate(token).catch((err) => {
      this.hub.services.log.error("analytics auth failed", { err });
      this.end(1011, "internal error");
    });
  }

  /**
   * Whether the token may read this server, and when it expires (epoch seconds; undefined: an
   * API key, no expiry); a close code when it may not. A database failure rejects instead: it
   * says nothing about the credential.
   */
  private async check(token: string): Promise<{ exp: number | undefined } | { close: number; reason: string }> {
    const { auth, database } = this.hub.services;
    if (hasPrefix("agent", token)) return { close: CLOSE.forbidden, reason: "agent tokens cannot read analytics" };
    const principal = await auth.authenticate(token);
    if (!principal) return { close: CLOSE.unauthenticated, reason: "invalid, expired or revoked credential" };
    // The same gate as the server routes: outside the caller's teams is the same as unknown.
    // Only the role is read back, not the server's row: each socket's authentication leaves
    // less garbage around the little it keeps (see scheduleExpiry).
    const role = UUID.test(this.serverId) ? await serverRoleOf(database.db, principal, this.serverId) : undefined;
    if (!role || !roleAtLeast(role, "viewer")) return { close: CLOSE.unknownServer, reason: "unknown server" };
    return { exp: principal.kind === "user" ? principal.exp : undefined };
  }

  private async authenticate(token: string) {
    const { realtime, log } = this.hub.services;
    const result = await this.check(token);
    if (this.closed) return;
    if ("close" in result)
      return this.end(
        this.subscribed && result.close === CLOSE.unauthenticated ? CLOSE.credentialEnded : result.close,
        result.reason,
      );
    clearTimeout(this.timer);
    this.timer = undefined;
    this.token = token;
    this.authenticated = true;
    this.scheduleExpiry(result.exp);
    const authOk = { expires_at: result.exp ? new Date(result.exp * 1000).toISOString() : null };
    if (this.subscribed) return this.control("auth_ok", authOk);
    this.subscribed = true;
    try {
      await realtime.actors.acquire(this.serverId);
    } catch (err) {
      log.error("analytics snapshot failed", { err, server_id: this.serverId });
      this.subscribed = false;
      return this.end(1011, "internal error");
    }
    if (this.closed) return realtime.actors.release(this.serverId);
    // Snapshot first, then the topic, in one synchronous step: anything later than the
    // snapshot arrives as an event.
    this.control("auth_ok", authOk);
    this.hub.services.metrics?.socketMessage("out");
    this.ws.send(realtime.actors.snapshot(this.serverId));
    this.ws.subscribe(topicOf(this.serverId));
    this.register();
  }

  /**
   * Two numbers the shared ticker acts on, not a timer and closures per socket. Whatever a socket
   * allocates once authenticated lives as long as it is open, scattered among the garbage its
   * authentication left (query results, token checks), and each such survivor keeps an allocator
   * page from being returned: per-socket timers and the principal object cost 5 to 20 KiB of RSS per
   * idle socket on PGlite, against about 0.2 KiB of JS heap.
   */
  private scheduleExpiry(exp?: number) {
    if (!exp) {
      this.noticeAt = this.expiresAt = 0;
      return;
    }
    this.expiresAt = exp * 1000;
    this.noticeAt = Math.max(1, this.expiresAt - this.hub.services.config.WS_EXPIRY_NOTICE_SECONDS * 1000);
  }

  /** Called by the ticker: the notice once, then the end of the stream at expiry. */
  expire(now: number) {
    if (this.closed) return;
    if (this.noticeAt && this.noticeAt <= now) {
      this.noticeAt = 0;
      this.control("token_expiring", {
        expires_at: new Date(this.expiresAt).toISOString(),
        reauth: { type: "auth", token: "<new access token>" },
      });
    }
    if (this.expiresAt && this.expiresAt <= now) this.end(CLOSE.credentialEnded, "token expired");
  }

  /** API keys can be revoked and members removed at any time: look again now and then. */
  async revalidate() {
    if (this.closed || !this.token) return;
    const result = await this.check(this.token).catch(() => undefined);
    if (result && "close" in result) this.end(CLOSE.credentialEnded, "credential revoked or access removed");
  }

  private register() {
    const hub = this.hub;
    this.revalidateAt = Date.now() + hub.services.config.WS_REVALIDATE_SECONDS * 1000;
    hub.live.add(this);
    hub.ticker ??= setInterval(() => tick(hub), REVALIDATE_TICK_MS);
  }

  private unregister() {
    const hub = this.hub;
    hub.live.delete(this);
    if (hub.live.size === 0 && hub.ticker) {
      clearInterval(hub.ticker);
      hub.ticker = undefined;
    }
  }

  /**
   * Each message spends one token; the bucket holds a minute's budget and refills evenly, so
   * a socket cannot make the service answer pings or re-run credential checks without bound.
   */
  private spend(): boolean {
    const { config } = this.hub.services;
    const now = performance.now();
    const perMs = config.WS_MESSAGES_PER_MIN / 60_000;
    this.budget = Math.min(config.WS_MESSAGES_PER_MIN, this.budget + (now - this.refilledAt) * perMs);
    this.refilledAt = now;
    if (this.budget < 1) return false;
    this.budget -= 1;
    return true;
  }
}

/** How often the shared ticker looks for connections due a revalidation, an expiry notice or an expiry. */
const REVALIDATE_TICK_MS = 250;

function tick(hub: Hub) {
  const now = Date.now();
  const every = hub.services.config.WS_REVALIDATE_SECONDS * 1000;
  for (const c of hub.live) {
    if (c.expiresAt) c.expire(now);
    if (c.closed || c.revalidateAt > now) continue;
    c.revalidateAt = now + every;
    void c.revalidate();
  }
}

/**
 * `GET /ws/server/:server_id/analytics`. Authenticate with `authorization: Bearer` on the
 * upgrade, or (browsers) with a first message `{"type":"auth","token":...}` within
 * WS_AUTH_TIMEOUT_MS. Then: a `snapshot`, then every event of the server as it happens.
 *
 * A plain GET route that upgrades itself, rather than Elysia's `.ws()`: the request passes the
 * edge like any other, and the socket keeps only its `Connection`.
 */
export function analyticsSocket(services: Services) {
  const hub: Hub = { services, live: new Set() };
  return new Elysia({ name: "analytics-socket" }).get(
    "/ws/server/:server_id/analytics",
    ({ request, params, server }) => {
      const header = request.headers.get("authorization");
      const m = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : undefined;
      // A malformed header is refused on the socket, with its close code.
      const token = header ? (m ? m[1]! : null) : undefined;
      if (!server?.upgrade(request, { data: new Connection(hub, params.server_id, token) }))
        throw new AppError("bad_request", "Expected a WebSocket upgrade.");
    },
  );
}
