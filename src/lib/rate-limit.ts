import { lt, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { rateLimits } from "../db/schema";
import { AppError } from "./errors";

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the window resets. */
  resetSeconds: number;
}

export interface RateLimitPolicy {
  name: string;
  limit: number;
  windowSeconds: number;
}

/** Counts hits per key in fixed windows. */
export interface RateLimitStore {
  /** Adds one hit and returns the count in the current window. */
  increment(key: string, windowStart: number): Promise<number>;
  prune(olderThan: number): Promise<void>;
}

/** One process (the PGlite default). */
export class MemoryRateLimitStore implements RateLimitStore {
  private counts = new Map<string, number>();

  async increment(key: string, windowStart: number) {
    const k = `${windowStart}\0${key}`;
    const n = (this.counts.get(k) ?? 0) + 1;
    this.counts.set(k, n);
    return n;
  }

  async prune(olderThan: number) {
    for (const k of this.counts.keys()) if (Number(k.slice(0, k.indexOf("\0"))) < olderThan) this.counts.delete(k);
  }
}

/** Counters in the database: every instance on the same PostgreSQL counts together. */
export class DbRateLimitStore implements RateLimitStore {
  constructor(private readonly db: Db) {}

  async increment(key: string, windowStart: number) {
    const [row] = await this.db
      .insert(rateLimits)
      .values({ key, windowStart, count: 1 })
      .onConflictDoUpdate({
        target: [rateLimits.key, rateLimits.windowStart],
        set: { count: sql`${rateLimits.count} + 1` },
      })
      .returning({ count: rateLimits.count });
    return row!.count;
  }

  async prune(olderThan: number) {
    await this.db.delete(rateLimits).where(lt(rateLimits.windowStart, olderThan));
  }
}

const join = (existing: string | undefined, item: string) => (existing ? `${existing}, ${item}` : item);

export class RateLimiter {
  constructor(
    private readonly store: RateLimitStore,
    private readonly now: () => number,
  ) {}

  async hit(policy: RateLimitPolicy, key: string): Promise<RateDecision> {
    const nowS = Math.floor(this.now() / 1000);
    const windowStart = nowS - (nowS % policy.windowSeconds);
    const count = await this.store.increment(`${policy.name}:${key}`, windowStart);
    return {
      allowed: count <= policy.limit,
      limit: policy.limit,
      remaining: Math.max(0, policy.limit - count),
      resetSeconds: windowStart + policy.windowSeconds - nowS,
    };
  }

  /**
   * Counts a request and sets the RateLimit headers (IETF httpapi-ratelimit-headers draft);
   * over the limit it throws a 429 carrying them and Retry-After.
   */
  async enforce(policy: RateLimitPolicy, key: string, resHeaders: Record<string, string>) {
    const d = await this.hit(policy, key);
    // Several policies can apply to one request (the general one and a route's own): the
    // structured-field headers list them all, each under its name.
    const headers = {
      "ratelimit-policy": join(
        resHeaders["ratelimit-policy"],
        `"${policy.name}";q=${policy.limit};w=${policy.windowSeconds}`,
      ),
      ratelimit: join(resHeaders.ratelimit, `"${policy.name}";r=${d.remaining};t=${d.resetSeconds}`),
    };
    Object.assign(resHeaders, headers);
    if (!d.allowed) {
      throw new AppError(
        "rate_limited",
        `Too many requests: at most ${policy.limit} per ${policy.windowSeconds} s. Retry in ${d.resetSeconds} s.`,
        {
          headers: { ...headers, "Retry-After": String(Math.max(1, d.resetSeconds)) },
          details: {
            limit: policy.limit,
            window_seconds: policy.windowSeconds,
            retry_after: Math.max(1, d.resetSeconds),
          },
        },
      );
    }
  }

  prune(maxWindowSeconds = 60) {
    return this.store.prune(Math.floor(this.now() / 1000) - 2 * maxWindowSeconds);
  }
}
