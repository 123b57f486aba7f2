import { and, eq } from "drizzle-orm";
import { createActor, type Actor } from "xstate";
import { serverMachine, snapshotData, type LiveServer } from "../../machines/server";
import type { Db } from "../db/client";
import { players, serverStatus } from "../db/schema";
import type { ServerEvent } from "./events";

type ServerActor = Actor<typeof serverMachine>;

interface Entry {
  actor?: ServerActor;
  ready: Promise<void>;
  /** Events that arrived while the actor was being seeded from the database. */
  pending: ServerEvent[];
  subscribers: number;
  /**
   * When the last subscriber left (or the first came). Events do not count: a server is pinged
   * every interval whoever watches it, so counting them kept every actor ever started alive.
   */
  lastActivity: number;
  /**
   * The `snapshot` message of the actor's current state and when it was built: sockets that
   * subscribe together (a reconnect after a restart, many viewers of one server) share one string
   * instead of building their own. Dropped whenever an event reaches the actor.
   */
  snapshot?: string;
  snapshotAt: number;
}

/** How long a snapshot message of an unchanged actor is reused, so its `ts` stays the time it is sent, near enough. */
const SNAPSHOT_REUSE_MS = 1000;

export const topicOf = (serverId: string) => `server:${serverId}`;

/**
 * One actor per active server on this instance: started when the first subscriber arrives
 * (seeded from the database), fed every event the bus delivers for its server, stopped when
 * it has had no subscribers for the idle time. The database is the record (every change an
 * event carries is committed first); a later subscriber's actor is seeded from it again.
 */
export class ServerActors {
  private entries = new Map<string, Entry>();

  constructor(
    private readonly db: Db,
    /** Publishes to a topic's local subscribers (Bun pub/sub). */
    private readonly broadcast: (topic: string, message: string) => void,
    private readonly idleMs: number,
    /** Runs when an actor starts, before it is seeded: tells the other instances it is watched. */
    private readonly onStart: (serverId: string) => Promise<unknown> = async () => {},
  ) {}

  /** Whether this instance has an actor (a live view) for the server. */
  has(serverId: string) {
    return this.entries.has(serverId);
  }

  /** The servers this instance has actors for. */
  servers() {
    return this.entries.keys();
  }

  /** Running actors and local subscribers, for health and tests. */
  stats(serverId?: string) {
    if (serverId)
      return { actors: this.entries.has(serverId) ? 1 : 0, subscribers: this.entries.get(serverId)?.subscribers ?? 0 };
    let subscribers = 0;
    for (const e of this.entries.values()) subscribers += e.subscribers;
    return { actors: this.entries.size, subscribers };
  }

  /**
   * Registers a subscriber; resolves once the server's actor is running. The subscriber then
   * takes `snapshot` and subscribes to the topic in one synchronous step.
   */
  async acquire(serverId: string): Promise<void> {
    let entry = this.entries.get(serverId);
    if (!entry) {
      const created: Entry = {
        pending: [],
        subscribers: 0,
        lastActivity: Date.now(),
        ready: Promise.resolve(),
        snapshotAt: 0,
      };
      created.ready = this.onStart(serverId)
        .then(() => this.seed(serverId))
        .then((seed) => {
          const actor = createActor(
            serverMachine.provide({
              actions: { broadcast: (_, p) => this.broadcast(topicOf(serverId), JSON.stringify(p.event)) },
            }),
            { input: seed },
          );
          actor.start();
          for (const e of created.pending) actor.send({ type: "EVENT", event: e });
          created.pending = [];
          created.actor = actor;
        });
      created.ready.catch(() => this.entries.delete(serverId));
      this.entries.set(serverId, created);
      entry = created;
    }
    entry.subscribers++;
    entry.lastActivity = Date.now();
    try {
      await entry.ready;
    } catch (err) {
      entry.subscribers--;
      throw err;
    }
  }

  /**
   * The `snapshot` message (JSON) of a server whose `acquire` has resolved: everything up to
   * now. Anything later reaches the topic, so a subscriber must subscribe before the event loop
   * turns again.
   */
  snapshot(serverId: string): string {
    const entry = this.entries.get(serverId);
    if (!entry?.actor) throw new Error(`no running actor for server ${serverId}`);
    const now = Date.now();
    if (entry.snapshot === undefined || now - entry.snapshotAt >= SNAPSHOT_REUSE_MS) {
      const snap = entry.actor.getSnapshot();
      const message: ServerEvent<"snapshot"> = {
        type: "snapshot",
        server_id: serverId,
        ts: new Date(now).toISOString(),
        data: snapshotData(snap.context, String(snap.value)),
      };
      entry.snapshot = JSON.stringify(message);
      entry.snapshotAt = now;
    }
    return entry.snapshot;
  }

  release(serverId: string) {
    const entry = this.entries.get(serverId);
    if (!entry) return;
    entry.subscribers = Math.max(0, entry.subscribers - 1);
    entry.lastActivity = Date.now();
  }

  /** Every event from the bus; servers without a local actor need nothing here. */
  deliver(event: ServerEvent) {
    const entry = this.entries.get(event.server_id);
    if (!entry) return;
    entry.snapshot = undefined;
    if (entry.actor) entry.actor.send({ type: "EVENT", event });
    else entry.pending.push(event);
  }

  /** Stops actors that have had no subscriber for the idle time, whatever events they still get. */
  sweep(now = Date.now()) {
    for (const [id, e] of this.entries) {
      if (e.subscribers === 0 && e.actor && now - e.lastActivity >= this.idleMs) {
        e.actor.stop();
        this.entries.delete(id);
      }
    }
  }

  stopAll() {
    for (const e of this.entries.values()) e.actor?.stop();
    this.entries.clear();
  }

  private async seed(serverId: string): Promise<LiveServer> {
    const [st] = await this.db.select().from(serverStatus).where(eq(serverStatus.serverId, serverId)).limit(1);
    const online = await this.db
      .select({ uuid: players.uuid, name: players.name })
      .from(players)
      .where(and(eq(players.serverId, serverId), eq(players.online, true)));
    const iso = (d: Date | null | undefined) => (d ? d.toISOString() : null);
    return {
      serverId,
      online: st?.online ?? null,
      latencyMs: st?.latencyMs ?? null,
      playersMax: st?.playersMax ?? null,
      version: st?.version ?? null,
      motd: st?.motd ?? null,
      checkedAt: iso(st?.checkedAt),
      players: Object.fromEntries(online.map((p) => [p.uuid, p.name])),
      tps: st?.tps ?? null,
      mspt: st?.mspt ?? null,
      memoryUsedMb: st?.memoryUsedMb ?? null,
      memoryMaxMb: st?.memoryMaxMb ?? null,
      lastHeartbeatAt: iso(st?.heartbeatAt),
    };
  }
}
