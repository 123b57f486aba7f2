import type postgres from "postgres";
import type { Logger } from "../lib/log";
import type { ServerEvent } from "./events";

/**
 * Changes to state that every instance caches: a login session ended (logout, refresh-token
 * reuse), sign-ins for a key refused until a time, a client's credentials or modules changed
 * (rotation, module change, deletion; `team_id` alone: every client of a deleted team), or a
 * launcher session revoked. Keys are hashes or ids, never an email, address or secret in clear.
 */
export type AccountNotice =
  | { type: "session_revoked"; session_id: string }
  | { type: "login_blocked"; key: string; until_ms: number }
  | { type: "client_changed"; client_id: string }
  | { type: "team_clients_gone"; team_id: string }
  | { type: "launcher_session_revoked"; session_id: string }
  | { type: "assertion_keys_changed" }
  /** The servers an instance has live views of, and a starting instance asking for them (watchers.ts). */
  | { type: "watching"; server_ids: string[] }
  | { type: "watching_query" };

/**
 * Carries server events to every instance. An event published anywhere reaches every
 * subscriber on every instance, in the same order everywhere, except that an instance may show
 * its own `heartbeat` events at once (PgBus). Account notices travel the same way on a channel
 * of their own.
 */
export interface Bus {
  publish(event: ServerEvent): Promise<void>;
  /** Every event, from this instance and others. Returns an unsubscribe function. */
  subscribe(handler: (event: ServerEvent) => void): () => void;
  publishNotice(notice: AccountNotice): Promise<void>;
  /** Every account notice, from this instance and others. Returns an unsubscribe function. */
  onNotice(handler: (notice: AccountNotice) => void): () => void;
  close(): Promise<void>;
}

class Fanout<T extends { type: string }> {
  private handlers = new Set<(e: T) => void>();
  constructor(private readonly log: Logger) {}

  add(h: (e: T) => void) {
    this.handlers.add(h);
    return () => void this.handlers.delete(h);
  }

  deliver(e: T) {
    for (const h of this.handlers) {
      try {
        h(e);
      } catch (err) {
        this.log.error("bus handler failed", { err, type: e.type });
      }
    }
  }
}

/** One process (the PGlite default): delivery is a function call. */
export class InProcessBus implements Bus {
  private fanout: Fanout<ServerEvent>;
  private notices: Fanout<AccountNotice>;
  constructor(log: Logger) {
    this.fanout = new Fanout(log);
    this.notices = new Fanout(log);
  }
  async publish(event: ServerEvent) {
    this.fanout.deliver(event);
  }
  subscribe(handler: (e: ServerEvent) => void) {
    return this.fanout.add(handler);
  }
  async publishNotice(notice: AccountNotice) {
    this.notices.deliver(notice);
  }
  onNotice(handler: (n: AccountNotice) => void) {
    return this.notices.add(handler);
  }
  async close() {}
}

const CHANNEL = "mcp_server_events";
/** What a notification on CHANNEL holds: events with the sending instance's mark, or (earlier versions) an array or one event. */
type Notification = { o: string; e: ServerEvent[] } | ServerEvent[] | ServerEvent;
/** Events an instance delivers itself when it publishes them, and skips when its notification comes back. */
const shownAtOnce = (event: ServerEvent) => event.type === "heartbeat";
const NOTICE_CHANNEL = "mcp_account_notices";
/** NOTIFY payloads must stay under 8000 bytes. */
const MAX_PAYLOAD = 7900;

/**
 * PostgreSQL LISTEN/NOTIFY. Every instance listens on one channel; an instance hears its own
 * notifications too and delivers what it hears, so all instances see one order (the order
 * PostgreSQL commits the NOTIFYs in). One exception: a `heartbeat` is delivered here at once
 * and skipped when its own notification comes back. Under load the NOTIFY round trip (two
 * PostgreSQL processes to wake) was most of a live chart's delay; a heartbeat replaces only the
 * readings it carries, which no other event sets, and an older one arriving after a newer is
 * dropped by the actor, so its place among other instances' events changes nothing shown.
 */
export class PgBus implements Bus {
  private fanout: Fanout<ServerEvent>;
  private notices: Fanout<AccountNotice>;
  private unlisten: (() => Promise<void>)[] = [];
  /** Serialized events waiting for the next NOTIFY, the send that will carry them, and the latest send. */
  private outbox: string[] = [];
  private nextSend: Promise<void> | undefined;
  private lastSend: Promise<void> = Promise.resolve();
  /** Marks this instance's notifications, whose heartbeats it has delivered already. */
  private readonly origin = crypto.randomUUID();

  private constructor(
    private readonly sql: postgres.Sql,
    private readonly log: Logger,
  ) {
    this.fanout = new Fanout(log);
    this.notices = new Fanout(log);
  }

  static async connect(url: string, log: Logger, makeClient: (url: string) => postgres.Sql): Promise<PgBus> {
    // One connection: it holds the LISTEN, and publishing through it keeps this instance's order.
    const bus = new PgBus(makeClient(url), log);
    // A notification carries the events one instance published together, in order, with that
    // instance's mark (`{o, e}`; an array or one event from an instance of an earlier version).
    await bus.listenJson(CHANNEL, "event", (payload: Notification) => {
      const own = !Array.isArray(payload) && "e" in payload && payload.o === bus.origin;
      const events = Array.isArray(payload) ? payload : "e" in payload ? payload.e : [payload];
      for (const event of events) if (!(own && shownAtOnce(event))) bus.fanout.deliver(event);
    });
    await bus.listenJson(NOTICE_CHANNEL, "account notice", (notice: AccountNotice) => bus.notices.deliver(notice));
    return bus;
  }

  /** LISTENs on a channel whose payloads are JSON; an unreadable one is logged and dropped. */
  private async listenJson<T>(channel: string, what: string, deliver: (value: T) => void) {
    const listener = await this.sql.listen(channel, (payload) => {
      let value: T;
      try {
        value = JSON.parse(payload) as T;
      } catch {
        this.log.warn(`bus: unreadable ${what} dropped`);
        return;
      }
      deliver(value);
    });
    this.unlisten.push(() => listener.unlisten());
  }

  /**
   * Events published while the previous NOTIFY is under way wait for it and then go together, as
   * one JSON array per notification (split under the payload limit): at 1,000 heartbeats a
   * second, one NOTIFY each was a round trip and a commit on the bus's one connection per event.
   * Order is kept: batches are sent one after another on that connection.
   */
  publish(event: ServerEvent): Promise<void> {
    let payload = JSON.stringify(event);
    if (payload.length > MAX_PAYLOAD - 64) {
      this.log.warn("bus: event too large for NOTIFY, sent without data", { type: event.type, bytes: payload.length });
      payload = JSON.stringify({ ...event, data: { truncated: true } });
    }
    this.outbox.push(payload);
    if (shownAtOnce(event)) this.fanout.deliver(event);
    if (!this.nextSend) {
      const send = this.lastSend.then(() => this.sendOutbox());
      this.nextSend = send;
      this.lastSend = send.catch(() => {});
    }
    return this.nextSend;
  }

  private async sendOutbox() {
    // Events published from here on go in the send after this one.
    this.nextSend = undefined;
    const batch = this.outbox;
    this.outbox = [];
    const head = `{"o":"${this.origin}","e":[`;
    const wrap = (chunk: string[]) => `${head}${chunk.join(",")}]}`;
    let chunk: string[] = [];
    let size = head.length + 2;
    for (const payload of batch) {
      if (chunk.length > 0 && size + payload.length + 1 > MAX_PAYLOAD) {
        await this.sql`select pg_notify(${CHANNEL}, ${wrap(chunk)})`;
        chunk = [];
        size = head.length + 2;
      }
      chunk.push(payload);
      size += payload.length + 1;
    }
    if (chunk.length > 0) await this.sql`select pg_notify(${CHANNEL}, ${wrap(chunk)})`;
  }

  subscribe(handler: (e: ServerEvent) => void) {
    return this.fanout.add(handler);
  }

  async publishNotice(notice: AccountNotice) {
    await this.sql`select pg_notify(${NOTICE_CHANNEL}, ${JSON.stringify(notice)})`;
  }

  onNotice(handler: (n: AccountNotice) => void) {
    return this.notices.add(handler);
  }

  async close() {
    for (const unlisten of this.unlisten) await unlisten().catch(() => {});
    await this.sql.end({ timeout: 2 });
  }
}
