import { type Credential, resolveCredential } from "./trpc";

type Nullable<T> = T | null;
type Envelope<T extends string, D> = { type: T; server_id: string; ts: string; data: D };
export interface PlayerRef {
  uuid: string;
  name: string;
}
export interface MinMaxAvg {
  min: Nullable<number>;
  avg: Nullable<number>;
  max: Nullable<number>;
}

/** Messages of the analytics stream (`/asyncapi.json`), each `{type, server_id, ts, data}`. */
export type AnalyticsMessage =
  | Envelope<"auth_ok", { expires_at: Nullable<string> }>
  | Envelope<
      "snapshot",
      {
        status: "up" | "down" | "unknown";
        online: Nullable<boolean>;
        latency_ms: Nullable<number>;
        players_online: number;
        players_max: Nullable<number>;
        players: PlayerRef[];
        version: Nullable<string>;
        motd: Nullable<string>;
        checked_at: Nullable<string>;
        tps: Nullable<number>;
        mspt: Nullable<number>;
        memory_used_mb: Nullable<number>;
        memory_max_mb: Nullable<number>;
        last_heartbeat_at: Nullable<string>;
      }
    >
  | Envelope<
      "heartbeat",
      { tps?: number; mspt?: number; players_online?: number; memory_used_mb?: number; memory_max_mb?: number }
    >
  | Envelope<"player_join", PlayerRef>
  | Envelope<"player_leave", PlayerRef>
  | Envelope<
      "status",
      {
        online?: boolean;
        latency_ms?: Nullable<number>;
        players_online?: Nullable<number>;
        players_max?: Nullable<number>;
        version?: Nullable<string>;
        changed?: boolean;
      }
    >
  | Envelope<
      "ban_added",
      { uuid?: string; name?: string; reason?: string; source?: string; expires_at?: Nullable<string> }
    >
  | Envelope<"ban_lifted", { uuid?: string }>
  | Envelope<"ranks_changed", { action?: "created" | "updated" | "deleted"; rank?: Record<string, unknown> }>
  | Envelope<
      "announcements_changed",
      { action?: "created" | "updated" | "deleted"; announcement?: Record<string, unknown> }
    >
  | Envelope<
      "metrics",
      {
        bucket_seconds: 60;
        start: string;
        players: MinMaxAvg;
        tps: MinMaxAvg;
        mspt: MinMaxAvg;
        memory: MinMaxAvg;
        memory_max: MinMaxAvg;
        latency: MinMaxAvg;
        online: MinMaxAvg;
      }
    >
  | Envelope<"token_expiring", { expires_at: string }>
  | Envelope<"pong", Record<string, never>>;

export type AnalyticsMessageType = AnalyticsMessage["type"];
export type AnalyticsMessageOf<T extends AnalyticsMessageType> = Extract<AnalyticsMessage, { type: T }>;

/** Every type the stream sends; a test holds it equal to the service's AsyncAPI document. */
export const ANALYTICS_MESSAGE_TYPES = [
  "auth_ok",
  "snapshot",
  "heartbeat",
  "player_join",
  "player_leave",
  "status",
  "ban_added",
  "ban_lifted",
  "ranks_changed",
  "announcements_changed",
  "metrics",
  "token_expiring",
  "pong",
] as const satisfies readonly AnalyticsMessageType[];

/** Close codes of the stream (docs/realtime.md). */
export const ANALYTICS_CLOSE = {
  unauthenticated: 4001,
  forbidden: 4003,
  unknownServer: 4004,
  credentialEnded: 4011,
  tooManySockets: 4012,
  tooManyMessages: 4029,
  badMessage: 4400,
} as const;

/**
 * Closes after which connecting again cannot help: the credential, the server id or this
 * client's messages are wrong. 4011 (expired or revoked while connected) is retried: the
 * credential function may have a fresh token by then. 4012 (the credential or address holds its
 * cap of sockets) is retried with the backoff: one of the others may have closed by then.
 */
const FINAL_CLOSES: ReadonlySet<number> = new Set([
  ANALYTICS_CLOSE.unauthenticated,
  ANALYTICS_CLOSE.forbidden,
  ANALYTICS_CLOSE.unknownServer,
  ANALYTICS_CLOSE.badMessage,
]);

/** The part of the WHATWG WebSocket this client uses (global in browsers, Bun, Deno and Node 22+). */
export interface WebSocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  onopen: ((ev: unknown) => void) | null;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onclose: ((ev: { code: number; reason: string }) => void) | null;
  onerror: ((ev: unknown) => void) | null;
}
export type WebSocketConstructor = new (url: string) => WebSocketLike;

export interface AnalyticsSocketOptions {
  baseUrl: string;
  serverId: string;
  /** A user access token or a team API key, or a function returning the current one (asked on every connect and on `token_expiring`). */
  token: Credential;
  /** Reconnect backoff: first delay, cap (ms), and the number of attempts in a row before giving up. */
  backoff?: { initialMs?: number; maxMs?: number; maxAttempts?: number };
  /** Defaults to the global `WebSocket`. */
  WebSocket?: WebSocketConstructor;
}

export type AnalyticsEvents = {
  [T in AnalyticsMessageType]: (message: AnalyticsMessageOf<T>) => void;
} & {
  /** Every message, whatever its type. */
  message: (message: AnalyticsMessage) => void;
  /** The connection dropped; the next attempt starts after `delayMs` (and begins with a fresh `snapshot`). */
  reconnecting: (info: { attempt: number; delayMs: number; code: number; reason: string }) => void;
  /** The stream ended for good: closed by `close()`, a final close code, or out of attempts. */
  closed: (info: { code: number; reason: string }) => void;
};

/**
 * A typed client of `/ws/server/:id/analytics`. Authenticates with a first `auth` message (as
 * browsers must: they cannot set headers on an upgrade), re-authenticates on `token_expiring`,
 * and reconnects with exponential, jittered backoff after a drop; each reconnection
 * begins with a new `snapshot`, which replaces the live state.
 */
export class AnalyticsSocket {
  private ws?: WebSocketLike;
  private readonly handlers = new Map<string, Set<(arg: never) => void>>();
  private attempt = 0;
  private timer?: ReturnType<typeof setTimeout>;
  private stopped = false;
  private readonly url: string;
  private readonly Ctor: WebSocketConstructor;

  constructor(private readonly options: AnalyticsSocketOptions) {
    // http -> ws, https -> wss
    const base = options.baseUrl.replace(/\/+$/, "").replace(/^http/, "ws");
    this.url = `${base}/ws/server/${encodeURIComponent(options.serverId)}/analytics`;
    const Ctor = options.WebSocket ?? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
    if (!Ctor) throw new Error("No WebSocket implementation: pass one as the WebSocket option (e.g. from 'ws').");
    this.Ctor = Ctor;
  }

  on<E extends keyof AnalyticsEvents>(event: E, handler: AnalyticsEvents[E]): () => void {
    const set = this.handlers.get(event) ?? new Set();
    this.handlers.set(event, set);
    set.add(handler as (arg: never) => void);
    return () => set.delete(handler as (arg: never) => void);
  }

  /** Opens the stream; resolves once it is authenticated (`auth_ok`), rejects if the first connection ends first. */
  connect(): Promise<void> {
    this.stopped = false;
    return new Promise((resolve, reject) => {
      const offOk = this.on("auth_ok", () => {
        offOk();
        offClosed();
        resolve();
      });
      const offClosed = this.on("closed", ({ code, reason }) => {
        offOk();
        offClosed();
        reject(new Error(`analytics stream closed (${code}${reason ? `: ${reason}` : ""})`));
      });
      this.open();
    });
  }

  /** Ends the stream; no reconnection. */
  close(): void {
    if (this.stopped && !this.ws) return;
    this.stopped = true;
    clearTimeout(this.timer);
    const ws = this.ws;
    this.ws = undefined;
    ws?.close(1000, "client closed");
    this.emit("closed", { code: 1000, reason: "client closed" });
  }

  ping(): void {
    this.send({ type: "ping" });
  }

  private open() {
    const ws = new this.Ctor(this.url);
    this.ws = ws;
    ws.onopen = () => {
      void this.authenticate(ws);
    };
    ws.onmessage = (ev) => {
      if (typeof ev.data !== "string") return;
      let message: AnalyticsMessage;
      try {
        message = JSON.parse(ev.data) as AnalyticsMessage;
      } catch {
        return;
      }
      if (message.type === "auth_ok") this.attempt = 0;
      if (message.type === "token_expiring") void this.authenticate(ws);
      this.emit(message.type, message as never);
      this.emit("message", message);
    };
    ws.onerror = () => {};
    ws.onclose = (ev) => {
      if (this.ws !== ws) return;
      this.ws = undefined;
      this.dropped(ev.code, ev.reason);
    };
  }

  private async authenticate(ws: WebSocketLike) {
    const token = await resolveCredential(this.options.token).catch(() => undefined);
    if (this.ws !== ws) return;
    if (!token) return ws.close(1000, "no credential");
    ws.send(JSON.stringify({ type: "auth", token }));
  }

  private dropped(code: number, reason: string) {
    const { initialMs = 500, maxMs = 30_000, maxAttempts = 10 } = this.options.backoff ?? {};
    if (this.stopped) return;
    if (FINAL_CLOSES.has(code) || this.attempt >= maxAttempts) {
      this.stopped = true;
      return this.emit("closed", { code, reason });
    }
    const ceiling = Math.min(maxMs, initialMs * 2 ** this.attempt);
    const delayMs = Math.round(ceiling / 2 + Math.random() * (ceiling / 2));
    this.attempt++;
    this.emit("reconnecting", { attempt: this.attempt, delayMs, code, reason });
    this.timer = setTimeout(() => this.open(), delayMs);
  }

  private send(message: object) {
    if (this.ws?.readyState === 1) this.ws.send(JSON.stringify(message));
  }

  private emit<E extends keyof AnalyticsEvents>(event: E, arg: Parameters<AnalyticsEvents[E]>[0]) {
    for (const handler of this.handlers.get(event) ?? []) (handler as (a: typeof arg) => void)(arg);
  }
}

export function connectAnalytics(options: AnalyticsSocketOptions): AnalyticsSocket {
  return new AnalyticsSocket(options);
}
