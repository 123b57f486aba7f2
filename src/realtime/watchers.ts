import type { Bus } from "./bus";

/** How often each instance repeats the servers it watches, and how long others believe it. */
export const WATCH_ANNOUNCE_MS = 10_000;
const WATCH_TTL_MS = 3 * WATCH_ANNOUNCE_MS;
/** After start, until the others have answered its query, an instance treats every server as watched. */
const STARTUP_OPEN_MS = 2_000;
/** Server ids per notice: 36 characters and a separator each, under the 8000-byte NOTIFY payload. */
const IDS_PER_NOTICE = 150;

/**
 * Which servers have a live view (an actor with sockets) on some instance. A ping result that
 * changes nothing a viewer needs at once (no up/down flip) and a closed minute's figures are
 * published only for watched servers: at 1,000 checks a second every result was a NOTIFY that
 * every instance read and parsed, for servers nobody was looking at.
 *
 * Each instance announces the servers it has actors for when an actor starts and every
 * WATCH_ANNOUNCE_MS, and others keep an announcement for three periods; a starting instance asks
 * the others to announce and, until they have (STARTUP_OPEN_MS), treats every server as watched.
 * Announcements are not ordered with the events they gate: a result published just before an
 * instance hears a new watcher is skipped, and the watcher's snapshot (read from the database
 * after its announcement) or the next ping result (a `status` carries the whole state) brings
 * the view up to date. Flips are always published.
 */
export class Watchers {
  private remote = new Map<string, number>();
  private openUntil: number;

  constructor(
    private readonly bus: Bus,
    /** The servers this instance has actors for (ServerActors). */
    private readonly local: { has(serverId: string): boolean; servers(): Iterable<string> },
    private readonly now: () => number = Date.now,
  ) {
    this.openUntil = now() + STARTUP_OPEN_MS;
    bus.onNotice((n) => {
      if (n.type === "watching") {
        const until = this.now() + WATCH_TTL_MS;
        for (const id of n.server_ids) this.remote.set(id, until);
      } else if (n.type === "watching_query") void this.announce();
    });
    void bus.publishNotice({ type: "watching_query" }).catch(() => undefined);
  }

  watched(serverId: string): boolean {
    if (this.local.has(serverId)) return true;
    const now = this.now();
    if (now < this.openUntil) return true;
    const until = this.remote.get(serverId);
    if (until === undefined) return false;
    if (until > now) return true;
    this.remote.delete(serverId);
    return false;
  }

  /** An actor started here: tell the others at once rather than at the next period. */
  started(serverId: string) {
    return this.bus.publishNotice({ type: "watching", server_ids: [serverId] }).catch(() => undefined);
  }

  /** Every server this instance watches, in as many notices as they need; expired entries go. */
  async announce() {
    const now = this.now();
    for (const [id, until] of this.remote) if (until <= now) this.remote.delete(id);
    const ids = [...this.local.servers()];
    for (let i = 0; i < ids.length; i += IDS_PER_NOTICE)
      await this.bus.publishNotice({ type: "watching", server_ids: ids.slice(i, i + IDS_PER_NOTICE) });
  }
}
