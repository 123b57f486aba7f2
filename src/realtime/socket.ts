import { Elysia } from "elysia";
import { hasPrefix } from "../lib/secrets";
import type { Services } from "../trpc/context";
import { requireServerRole } from "../servers/access";
import type { Principal } from "../auth/principal";
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

interface SocketState {
  serverId: string;
  token?: string;
  principal?: Principal;
  subscribed: boolean;
  closed: boolean;
  authTimer?: ReturnType<typeof setTimeout>;
  noticeTimer?: ReturnType<typeof setTimeout>;
  expiryTimer?: ReturnType<typeof setTimeout>;
  revalidateTimer?: ReturnType<typeof setInterval>;
  /** Message budget (a token bucket): tokens left, and when it was last refilled. */
  budget: number;
  refilledAt: number;
  /** Messages received before authentication succeeded. */
  early: number;
}

/** Before authenticating, a socket may send only this many messages (an auth, a retry, a ping). */
const MAX_EARLY_MESSAGES = 5;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * `GET /ws/server/:server_id/analytics`. Authenticate with `authorization: Bearer` on the
 * upgrade, or (browsers) with a first message `{"type":"auth","token":...}` within
 * WS_AUTH_TIMEOUT_MS. Then: a `snapshot`, then every event of the server as it happens.
 */
export function analyticsSocket(services: Services) {
  const { config, realtime, auth, tokens, log } = services;
  const db = services.database.db;
  const states = new WeakMap<object, SocketState>();

  const control = (ws: RawSocket, st: SocketState, type: string, data: Record<string, unknown>) =>
    ws.send(JSON.stringify({ type, server_id: st.serverId, ts: new Date().toISOString(), data }));

  const end = (ws: RawSocket, st: SocketState, code: number, reason: string) => {
    if (st.closed) return;
    st.closed = true;
    clearTimers(st);
    ws.close(code, reason);
  };

  function clearTimers(st: SocketState) {
    clearTimeout(st.authTimer);
    clearTimeout(st.noticeTimer);
    clearTimeout(st.expiryTimer);
    clearInterval(st.revalidateTimer);
  }

  /** Who the token is and whether it may read this server; a close code when not. */
  async function check(
    st: SocketState,
    token: string,
  ): Promise<{ principal: Principal; exp?: number } | { close: number; reason: string }> {
    if (hasPrefix("agent", token)) return { close: CLOSE.forbidden, reason: "agent tokens cannot read analytics" };
    const principal = await auth.authenticate(token);
    if (!principal) return { close: CLOSE.unauthenticated, reason: "invalid, expired or revoked credential" };
    // The same gate as the server routes: outside the caller's teams is the same as unknown.
    const visible =
      UUID.test(st.serverId) &&
      (await requireServerRole(db, principal, st.serverId, "viewer").then(
        () => true,
        () => false,
      ));
    if (!visible) return { close: CLOSE.unknownServer, reason: "unknown server" };
    const exp = principal.kind === "user" ? (await tokens.verify(token))?.exp : undefined;
    return { principal, exp };
  }

  async function authenticate(ws: RawSocket, st: SocketState, token: string) {
    const result = await check(st, token);
    if (st.closed) return;
    if ("close" in result)
      return end(
        ws,
        st,
        st.subscribed && result.close === CLOSE.unauthenticated ? CLOSE.credentialEnded : result.close,
        result.reason,
      );
    clearTimeout(st.authTimer);
    st.token = token;
    st.principal = result.principal;
    scheduleExpiry(ws, st, result.exp);
    if (!st.subscribed) {
      st.subscribed = true;
      let snapshot: Awaited<ReturnType<typeof realtime.actors.acquire>>;
      try {
        snapshot = await realtime.actors.acquire(st.serverId);
      } catch (err) {
        log.error("analytics snapshot failed", { err, server_id: st.serverId });
        st.subscribed = false;
        return end(ws, st, 1011, "internal error");
      }
      if (st.closed) return realtime.actors.release(st.serverId);
      // Snapshot first, then the topic: anything later than the snapshot arrives as an event.
      control(ws, st, "auth_ok", { expires_at: result.exp ? new Date(result.exp * 1000).toISOString() : null });
      ws.send(JSON.stringify(snapshot));
      ws.subscribe(topicOf(st.serverId));
      st.revalidateTimer = setInterval(() => void revalidate(ws, st), config.WS_REVALIDATE_SECONDS * 1000);
    } else {
      control(ws, st, "auth_ok", { expires_at: result.exp ? new Date(result.exp * 1000).toISOString() : null });
    }
  }

  function scheduleExpiry(ws: RawSocket, st: SocketState, exp?: number) {
    clearTimeout(st.noticeTimer);
    clearTimeout(st.expiryTimer);
    if (!exp) return;
    const msLeft = exp * 1000 - Date.now();
    const noticeIn = msLeft - config.WS_EXPIRY_NOTICE_SECONDS * 1000;
    st.noticeTimer = setTimeout(
      () =>
        control(ws, st, "token_expiring", {
          expires_at: new Date(exp * 1000).toISOString(),
          reauth: { type: "auth", token: "<new access token>" },
        }),
      Math.max(0, noticeIn),
    );
    st.expiryTimer = setTimeout(() => end(ws, st, CLOSE.credentialEnded, "token expired"), Math.max(0, msLeft));
  }

  /** API keys can be revoked and members removed at any time: look again now and then. */
  async function revalidate(ws: RawSocket, st: SocketState) {
    if (st.closed || !st.token) return;
    const result = await check(st, st.token).catch(() => undefined);
    if (result && "close" in result) end(ws, st, CLOSE.credentialEnded, "credential revoked or access removed");
  }

  /**
   * Each message spends one token; the bucket holds a minute's budget and refills evenly, so
   * a socket cannot make the service answer pings or re-run credential checks without bound.
   */
  function spend(st: SocketState): boolean {
    const now = performance.now();
    const perMs = config.WS_MESSAGES_PER_MIN / 60_000;
    st.budget = Math.min(config.WS_MESSAGES_PER_MIN, st.budget + (now - st.refilledAt) * perMs);
    st.refilledAt = now;
    if (st.budget < 1) return false;
    st.budget -= 1;
    return true;
  }

  return new Elysia({ name: "analytics-socket" }).ws("/ws/server/:server_id/analytics", {
    open(ws) {
      const raw = ws.raw as unknown as RawSocket;
      const ctx = ws.data as unknown as { params: { server_id: string }; request: Request };
      const st: SocketState = {
        serverId: ctx.params.server_id,
        subscribed: false,
        closed: false,
        budget: config.WS_MESSAGES_PER_MIN,
        refilledAt: performance.now(),
        early: 0,
      };
      states.set(ws.raw, st);
      const header = ctx.request.headers.get("authorization");
      const m = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
      if (header && !m) return end(raw, st, CLOSE.unauthenticated, "malformed authorization header");
      if (m)
        return void authenticate(raw, st, m[1]!).catch((err) => {
          log.error("analytics auth failed", { err });
          end(raw, st, 1011, "internal error");
        });
      st.authTimer = setTimeout(
        () => end(raw, st, CLOSE.unauthenticated, "no auth message in time"),
        config.WS_AUTH_TIMEOUT_MS,
      );
    },
    message(ws, message) {
      const raw = ws.raw as unknown as RawSocket;
      const st = states.get(ws.raw);
      if (!st || st.closed) return;
      if (!st.principal && ++st.early > MAX_EARLY_MESSAGES) {
        return end(raw, st, CLOSE.tooManyMessages, "too many messages before authenticating");
      }
      if (!spend(st)) return end(raw, st, CLOSE.tooManyMessages, "message budget exceeded");
      let msg: unknown = message;
      if (typeof message === "string") {
        try {
          msg = JSON.parse(message);
        } catch {
          return end(raw, st, CLOSE.badMessage, "messages must be JSON");
        }
      }
      const m = msg as { type?: unknown; token?: unknown };
      if (m?.type === "auth" && typeof m.token === "string" && m.token.length <= 2048) {
        return void authenticate(raw, st, m.token).catch((err) => {
          log.error("analytics auth failed", { err });
          end(raw, st, 1011, "internal error");
        });
      }
      if (m?.type === "ping") return control(raw, st, "pong", {});
      end(raw, st, CLOSE.badMessage, "unknown message type");
    },
    close(ws) {
      const st = states.get(ws.raw);
      if (!st) return;
      st.closed = true;
      clearTimers(st);
      if (st.subscribed) realtime.actors.release(st.serverId);
    },
  });
}
