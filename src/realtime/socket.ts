import { Elysia } from "elysia";
import { requestInfo } from "../http/request";
import { AppError } from "../lib/errors";
import { hasPrefix } from "../lib/secrets";
import type { Services } from "../trpc/context";
import { serverRoleOf } from "../servers/access";
import { type Principal, roleAtLeast } from "../auth/principal";
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
  /**
   * More analytics sockets open at once than one credential (WS_MAX_SOCKETS_PER_CREDENTIAL) or one
   * client address (WS_MAX_SOCKETS_PER_ADDRESS) may hold on this instance; the earlier ones stay.
   */
  tooManySockets: 4012,
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
  /** Open sockets per `address:` and `credential:` key, for the per-instance caps. */
  open: Map<string, number>;
  /**
   * What each counted socket holds: its address key, then its credential key once authenticated,
   * joined by a space. Kept here rather than as fields so a connection stays at 12 fields (see
   * `Connection`).
   */
  holds: Map<Connection, string>;
}

function countOf(hub: Hub, key: string) {
  return hub.open.get(key) ?? 0;
}

function addTo(hub: Hub, key: string, by: 1 | -1) {
  const n = countOf(hub, key) + by;
  if (n > 0) hub.open.set(key, n);
  else hub.open.delete(key);
}

/** A principal's key: every token of one account counts together, and each API key on its own. */
function credentialKey(principal: Principal) {
  return principal.kind === "user" ? `credential:user:${principal.userId}` : `credential:key:${principal.keyId}`;
}

/**
 * One analytics socket's state, and the handlers Bun calls for it (Elysia's dispatcher calls
 * `ws.data.open/message/close`). Methods sit on the prototype and timers exist only while
 * needed, so an idle subscribed socket costs this object and Bun's own socket: Elysia's `.ws()`
 * kept the whole request context and a set of closures alive per socket (11.5 KiB against 1.1
 * KiB for bare Bun).
 *
 * At most 12 fields: JavaScriptCore sizes an object by its fields, 13 to 18 of them make a
 * 160-byte object, and that is the size of Bun's `fs.Stats`, which PGlite's file layer creates
 * for every relation-size check (eight for the role query of `check`). A connection of that size
 * is allocated among the dead ones the previous socket's query left, and after collection each
 * keeps a mostly empty block of them resident: on PGlite 1.0 to 1.6 KiB of JS heap blocks per
 * idle socket at 15 fields, 0.3 to 0.5 at 12 (bench/realtime.ts, RSS per idle socket over five
 * and six runs: 2.2 to 3.7 KiB, mean 3.0, against 1.6 to 2.9, mean 2.3).
 */
class Connection {
  /**
   * The credential. Until `open`, the one from the upgrade's authorization header (undefined:
   * expect an auth message; null: a malformed header), read by nothing else before its check
   * passes; then the one that passed, which revalidation checks again. A failed check ends the
   * socket.
   */
  token: string | undefined | null;
  /** Authenticated and counted as a subscriber of the server's actor (and its topic, once the snapshot is sent). */
  subscribed = false;
  closed = false;
  /** The auth deadline, only until the first authentication. */
  timer?: ReturnType<typeof setTimeout>;
  revalidateAt = 0;
  /** When the token's expiry notice is due and when it expires (epoch ms; 0: not due / no expiry). */
  noticeAt = 0;
  expiresAt = 0;
  /**
   * The message budget as one time (GCRA, an even-refill token bucket): each message moves it
   * 60 s / WS_MESSAGES_PER_MIN later, from now if it is past; a message that would move it more
   * than a minute ahead of now is over the budget.
   */
  spentUntil = 0;
  /** Messages received before authentication succeeded. */
  early = 0;
  ws!: RawSocket;

  constructor(
    private readonly hub: Hub,
    readonly serverId: string,
    headerToken: string | undefined | null,
  ) {
    this.token = headerToken;
  }

  open(ws: RawSocket) {
    this.ws = ws;
    this.hub.services.metrics?.socketOpened();
    const { config } = this.hub.services;
    const address = this.hub.holds.get(this);
    if (address !== undefined) {
      // Counted from the upgrade on, authenticated or not: unauthenticated sockets hold descriptors too.
      if (countOf(this.hub, address) >= config.WS_MAX_SOCKETS_PER_ADDRESS) {
        this.hub.holds.delete(this);
        return this.end(CLOSE.tooManySockets, "too many analytics sockets from this address");
      }
      addTo(this.hub, address, 1);
    }
    if (this.token === null) return this.end(CLOSE.unauthenticated, "malformed authorization header");
    if (this.token !== undefined) return this.startAuth(this.token);
    this.timer = setTimeout(
      () => this.end(CLOSE.unauthenticated, "no auth message in time"),
      config.WS_AUTH_TIMEOUT_MS,
    );
  }

  message(_ws: RawSocket, message: string | Buffer) {
    this.hub.services.metrics?.socketMessage("in");
    if (this.closed) return;
    if (!this.subscribed && ++this.early > MAX_EARLY_MESSAGES) {
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
    this.releaseHolds();
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
  private async check(
    token: string,
  ): Promise<{ exp: number | undefined; credential: string } | { close: number; reason: string }> {
    const { auth, database } = this.hub.services;
    if (hasPrefix("agent", token)) return { close: CLOSE.forbidden, reason: "agent tokens cannot read analytics" };
    let principal = await auth.authenticate(token).catch((err) => {
      if (err instanceof AppError && err.status === 401) return null;
      throw err;
    });
    if (!principal) return { close: CLOSE.unauthenticated, reason: "invalid, expired or revoked credential" };
    // A scoped key reads analytics with servers:read, as a viewer; a key limited to some servers
    // reaches only those (serverRoleOf).
    if (principal.kind === "api_key" && principal.scopes) {
      if (!principal.scopes.includes("servers:read"))
        return { close: CLOSE.forbidden, reason: "this API key's scopes do not include servers:read" };
      principal = { ...principal, role: "viewer" };
    }
    // The same gate as the server routes: outside the caller's teams is the same as unknown.
    // Only the role is read back, not the server's row: each socket's authentication leaves
    // less garbage around the little it keeps (see scheduleExpiry).
    const role = UUID.test(this.serverId) ? await serverRoleOf(database.db, principal, this.serverId) : undefined;
    if (!role || !roleAtLeast(role, "viewer")) return { close: CLOSE.unknownServer, reason: "unknown server" };
    return { exp: principal.exp ?? undefined, credential: credentialKey(principal) };
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
    if (!this.holdCredential(result.credential))
      return this.end(CLOSE.tooManySockets, "too many analytics sockets for this credential");
    clearTimeout(this.timer);
    this.timer = undefined;
    this.token = this.hub.services.tokens.shared(token);
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

  /**
   * Counts this socket against its credential's cap (a re-authentication as another principal
   * moves it); false, with nothing counted, when the credential already holds its cap elsewhere.
   */
  private holdCredential(credential: string): boolean {
    const hub = this.hub;
    const held = hub.holds.get(this) ?? "";
    const space = held.indexOf(" ");
    const address = space < 0 ? held : held.slice(0, space);
    const current = space < 0 ? "" : held.slice(space + 1);
    if (current === credential) return true;
    if (countOf(hub, credential) >= hub.services.config.WS_MAX_SOCKETS_PER_CREDENTIAL) return false;
    if (current) addTo(hub, current, -1);
    addTo(hub, credential, 1);
    hub.holds.set(this, `${address} ${credential}`);
    return true;
  }

  private releaseHolds() {
    const held = this.hub.holds.get(this);
    if (held === undefined) return;
    this.hub.holds.delete(this);
    for (const key of held.split(" ")) if (key) addTo(this.hub, key, -1);
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
   * Each message spends a share of a minute's budget, which comes back evenly, so a socket
   * cannot make the service answer pings or re-run credential checks without bound.
   */
  private spend(): boolean {
    const now = performance.now();
    const spentUntil = Math.max(this.spentUntil, now) + 60_000 / this.hub.services.config.WS_MESSAGES_PER_MIN;
    if (spentUntil - now > 60_000) return false;
    this.spentUntil = spentUntil;
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
  const hub: Hub = { services, live: new Set(), open: new Map(), holds: new Map() };
  return new Elysia({ name: "analytics-socket" }).get(
    "/ws/server/:server_id/analytics",
    ({ request, params, server }) => {
      const header = request.headers.get("authorization");
      const m = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : undefined;
      // A malformed header is refused on the socket, with its close code.
      const token = header ? (m ? m[1]! : null) : undefined;
      const connection = new Connection(hub, params.server_id, token);
      // Counted (or refused) when the socket opens; only the address is known yet.
      hub.holds.set(connection, `address:${requestInfo(request).ip}`);
      if (!server?.upgrade(request, { data: connection })) {
        hub.holds.delete(connection);
        throw new AppError("bad_request", "Expected a WebSocket upgrade.");
      }
    },
  );
}
