import type { Logger } from "../lib/log";
import type { Db } from "../db/client";
import { ServerActors } from "./actors";
import type { Bus } from "./bus";
import type { ServerEvent, ServerEventSink, ServerEventType } from "./events";
import { Watchers } from "./watchers";

/**
 * The realtime layer: services report changes here (after their write commits); the bus
 * carries them to every instance; each instance's actors update and broadcast to sockets.
 */
export class Realtime implements ServerEventSink {
  readonly actors: ServerActors;
  readonly watchers: Watchers;
  private broadcaster: (topic: string, message: string) => void = () => {};
  private unsubscribe: () => void;

  constructor(
    db: Db,
    readonly bus: Bus,
    private readonly log: Logger,
    idleMs: number,
  ) {
    this.actors = new ServerActors(
      db,
      (t, m) => this.broadcaster(t, m),
      idleMs,
      (id) => this.watchers.started(id),
    );
    this.watchers = new Watchers(bus, this.actors);
    this.unsubscribe = bus.subscribe((e) => this.actors.deliver(e));
  }

  /** Set once the listener is up: Bun's server.publish. */
  attach(broadcast: (topic: string, message: string) => void) {
    this.broadcaster = broadcast;
  }

  publish(serverId: string, type: ServerEventType, data: Record<string, unknown>, ts: Date = new Date()) {
    const event: ServerEvent = { type, server_id: serverId, ts: ts.toISOString(), data };
    // The change is already committed; a lost notification must not fail the request.
    this.bus
      .publish(event)
      .catch((err) => this.log.error("realtime publish failed", { err, type, server_id: serverId }));
  }

  /**
   * For events that only refresh what a viewer sees and that the next one replaces (a ping
   * result without a flip): published only when some instance has a live view of the server.
   */
  publishIfWatched(serverId: string, type: ServerEventType, data: Record<string, unknown>, ts?: Date) {
    if (this.watchers.watched(serverId)) this.publish(serverId, type, data, ts);
  }

  async close() {
    this.unsubscribe();
    this.actors.stopAll();
    await this.bus.close();
  }
}
