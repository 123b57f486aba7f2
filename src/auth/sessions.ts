import { and, eq, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { loginSessions } from "../db/schema";
import type { Bus } from "../realtime/bus";

interface Entry {
  live: boolean;
  /** Whose session it is, when live. */
  userId?: string;
  checkedAt: number;
}

/**
 * Whether a login session (a refresh-token family) still stands, for access-token checks.
 * The answer is cached in memory so an authenticated request costs no query; logout and
 * refresh-token reuse publish the session's end on the bus, and every instance marks it dead
 * at once. A live answer is looked at again after `recheckMs`, so a notification lost in a
 * reconnect cannot keep a revoked session alive for longer than that. That same read, once a
 * minute at most, is when the session's `last_used_at` moves (refreshes move it too), so the
 * account page's "last used" costs no write on an ordinary request.
 */
export class LoginSessions {
  private cache = new Map<string, Entry>();

  constructor(
    private readonly db: Db,
    private readonly bus: Bus,
    private readonly maxEntries = 100_000,
    private readonly recheckMs = 60_000,
  ) {
    bus.onNotice((n) => {
      if (n.type === "session_revoked") this.remember(n.session_id, { live: false, checkedAt: Date.now() });
    });
  }

  /** True while the session exists for this user and has not been revoked. */
  async isLive(sessionId: string, userId: string): Promise<boolean> {
    const hit = this.cache.get(sessionId);
    if (hit && !hit.live) return false;
    if (hit && Date.now() - hit.checkedAt < this.recheckMs) return hit.userId === userId;
    const [row] = await this.db
      .select({ revokedAt: loginSessions.revokedAt, lastUsedAt: loginSessions.lastUsedAt })
      .from(loginSessions)
      .where(and(eq(loginSessions.id, sessionId), eq(loginSessions.userId, userId)))
      .limit(1);
    const live = row !== undefined && row.revokedAt === null;
    if (live && Date.now() - row.lastUsedAt.getTime() >= this.recheckMs)
      await this.db
        .update(loginSessions)
        .set({ lastUsedAt: sql`now()` })
        .where(eq(loginSessions.id, sessionId))
        .catch(() => undefined);
    // A revocation heard while the query ran wins over what the query saw.
    if (this.cache.get(sessionId)?.live === false) return false;
    this.remember(sessionId, { live, userId, checkedAt: Date.now() });
    return live;
  }

  /** Tells every instance (this one included) that the session has ended. */
  async revoked(sessionId: string) {
    this.remember(sessionId, { live: false, checkedAt: Date.now() });
    // The revocation is already stored: a lost notice only delays other instances until their
    // cached entry is re-read, so it must not turn a completed logout into an error.
    await this.bus.publishNotice({ type: "session_revoked", session_id: sessionId }).catch(() => undefined);
  }

  private remember(key: string, entry: Entry) {
    this.cache.delete(key);
    // Bounded: the oldest entry goes first. A forgotten session is simply read again.
    if (this.cache.size >= this.maxEntries) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(key, entry);
  }
}
