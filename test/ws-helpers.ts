import type { RunningServer } from "../src/app";

export interface WsMessage {
  type: string;
  server_id: string;
  ts: string;
  data: any;
}

/** A real WebSocket client that queues what it receives, for tests to take in order. */
export class WsClient {
  private queue: WsMessage[] = [];
  private waiters: ((m: WsMessage) => void)[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;

  private constructor(readonly ws: WebSocket) {
    ws.addEventListener("message", (ev) => {
      const m = JSON.parse(String(ev.data)) as WsMessage;
      const w = this.waiters.shift();
      if (w) w(m);
      else this.queue.push(m);
    });
    this.closed = new Promise((resolve) =>
      ws.addEventListener("close", (ev) => resolve({ code: ev.code, reason: ev.reason })),
    );
  }

  static connect(server: RunningServer, serverId: string, headers: Record<string, string> = {}): Promise<WsClient> {
    const url = `${server.url.replace("http", "ws")}/ws/server/${serverId}/analytics`;
    // Bun's WebSocket takes headers, as a launcher backend's client would send them.
    const ws = new WebSocket(url, { headers } as never);
    const client = new WsClient(ws);
    return new Promise((resolve, reject) => {
      ws.addEventListener("open", () => resolve(client), { once: true });
      ws.addEventListener("error", () => reject(new Error("websocket error")), { once: true });
    });
  }

  send(msg: unknown) {
    this.ws.send(typeof msg === "string" ? msg : JSON.stringify(msg));
  }

  /** The next message, failing after `ms`. */
  next(ms = 3000): Promise<WsMessage> {
    const queued = this.queue.shift();
    if (queued) return Promise.resolve(queued);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(done), 1);
        reject(new Error(`no message within ${ms} ms`));
      }, ms);
      const done = (m: WsMessage) => {
        clearTimeout(timer);
        resolve(m);
      };
      this.waiters.push(done);
    });
  }

  /** Messages until one of `type` arrives (inclusive). */
  async until(type: string, ms = 3000): Promise<WsMessage[]> {
    const seen: WsMessage[] = [];
    for (;;) {
      const m = await this.next(ms);
      seen.push(m);
      if (m.type === type) return seen;
    }
  }

  /** Nothing arrives for `ms` (what did arrive is returned, for the assertion message). */
  async quiet(ms: number): Promise<WsMessage[]> {
    await Bun.sleep(ms);
    return this.queue.splice(0);
  }

  close() {
    this.ws.close();
  }
}

/** Resolves with the close code, or "open" if the socket is still open after `ms`. */
export async function closeCode(c: WsClient, ms = 3000): Promise<number | "open"> {
  const r = await Promise.race([c.closed, Bun.sleep(ms).then(() => "open" as const)]);
  return r === "open" ? r : r.code;
}
