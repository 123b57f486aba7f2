import { AppError } from "./errors";
import type { Metrics } from "./metrics";

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until more quota is available (after a refusal: until a request is admitted). */
  resetSeconds: number;
}

export interface RateLimitPolicy {
  name: string;
  limit: number;
  windowSeconds: number;
}

/**
 * A sliding window split into `slots` counters of `slotWidthMs`, plus the one counter the window
 * partly overlaps (so `size` = slots + 1, oldest first). Fixed windows let twice the limit through
 * across a boundary; slots let a hit leave the count when it ages out, one slot at a time.
 *
 * A hit is admitted when both hold:
 * - the slots wholly inside the last window (all but the oldest) hold fewer than `limit`: no span
 *   shorter than the window by one slot holds more than `limit`, and a burst of `limit` after a
 *   quiet spell is admitted whole;
 * - all `size` slots (which cover at least the last window) hold fewer than `limit + slack`: no
 *   span of one window holds more than `limit + slack`. The slack, `ceil(limit / slots)`, is what
 *   one slot of steady traffic at exactly the limit rate adds, so such traffic is never refused.
 */
export interface SlidingWindow {
  /** Start of the slot now falls in, ms since the epoch. */
  slotMs: number;
  slotWidthMs: number;
  size: number;
  limit: number;
  slack: number;
}

export interface WindowCounts {
  allowed: boolean;
  /** Start of the newest slot in `counts` (a store may be ahead of this instance's clock). */
  slotMs: number;
  counts: ArrayLike<number>;
}

/**
 * Per key: ages the counters to the window's slot, decides with `admits`, and counts the hit
 * only when admitted, in one atomic step (hits racing on one key cannot both take the last unit).
 */
export interface RateLimitStore {
  hit(key: string, window: SlidingWindow): Promise<WindowCounts>;
  /** Forgets keys not hit since `olderThanMs`. */
  prune(olderThanMs: number): Promise<void>;
}

/** The admission rule (the database store states it in SQL). */
export function admits(counts: ArrayLike<number>, limit: number, slack: number): boolean {
  let total = 0;
  for (let i = 0; i < counts.length; i++) total += counts[i]!;
  return total - counts[0]! < limit && total < limit + slack;
}

/** One process (the PGlite default, and the general per-address limit). */
export class MemoryRateLimitStore implements RateLimitStore {
  private windows = new Map<string, { slotMs: number; counts: Int32Array }>();

  async hit(key: string, w: SlidingWindow): Promise<WindowCounts> {
    let entry = this.windows.get(key);
    if (!entry || entry.counts.length !== w.size) {
      entry = { slotMs: w.slotMs, counts: new Int32Array(w.size) };
      this.windows.set(key, entry);
    } else if (w.slotMs > entry.slotMs) {
      const shift = Math.round((w.slotMs - entry.slotMs) / w.slotWidthMs);
      if (shift >= w.size) entry.counts.fill(0);
      else {
        entry.counts.copyWithin(0, shift);
        entry.counts.fill(0, w.size - shift);
      }
      entry.slotMs = w.slotMs;
    }
    const allowed = admits(entry.counts, w.limit, w.slack);
    if (allowed) entry.counts[w.size - 1]!++;
    return { allowed, slotMs: entry.slotMs, counts: entry.counts.slice() };
  }

  async prune(olderThanMs: number) {
    for (const [key, entry] of this.windows) if (entry.slotMs < olderThanMs) this.windows.delete(key);
  }
}

const MAX_SLOTS = 60;

/** The window for a policy at `now`: up to 60 slots of whole milliseconds (1 s for a minute). */
export function slidingWindow(policy: RateLimitPolicy, now: number): SlidingWindow {
  const windowMs = policy.windowSeconds * 1000;
  let slots = MAX_SLOTS;
  while (windowMs % slots !== 0) slots--;
  const slotWidthMs = windowMs / slots;
  return {
    slotMs: Math.floor(now / slotWidthMs) * slotWidthMs,
    slotWidthMs,
    size: slots + 1,
    limit: policy.limit,
    slack: Math.ceil(policy.limit / slots),
  };
}

/** How many more hits `admits` would take right now. */
function remainingOf(total: number, oldest: number, limit: number, slack: number) {
  return Math.max(0, Math.min(limit - (total - oldest), limit + slack - total));
}

/** Remaining now, and ms until it grows: the first slot boundary at which counted hits age out. */
function quota(w: SlidingWindow, c: WindowCounts, now: number) {
  let total = 0;
  for (let i = 0; i < c.counts.length; i++) total += c.counts[i]!;
  const remaining = remainingOf(total, c.counts[0]!, w.limit, w.slack);
  let left = total;
  for (let k = 1; k <= c.counts.length; k++) {
    left -= c.counts[k - 1]!;
    if (remainingOf(left, c.counts[k] ?? 0, w.limit, w.slack) > remaining)
      return { remaining, resetMs: c.slotMs + k * w.slotWidthMs - now };
  }
  return { remaining, resetMs: c.slotMs + c.counts.length * w.slotWidthMs - now };
}

const join = (existing: string | undefined, item: string) => (existing ? `${existing}, ${item}` : item);

/** A policy's `RateLimit-Policy` item, built once per policy object (they live as long as the process). */
const policyItems = new WeakMap<RateLimitPolicy, string>();
function policyItem(policy: RateLimitPolicy): string {
  let item = policyItems.get(policy);
  if (item === undefined) {
    item = `"${policy.name}";q=${policy.limit};w=${policy.windowSeconds}`;
    policyItems.set(policy, item);
  }
  return item;
}

export class RateLimiter {
  constructor(
    private readonly store: RateLimitStore,
    private readonly now: () => number,
    private readonly metrics: Metrics | null = null,
  ) {}

  async hit(policy: RateLimitPolicy, key: string): Promise<RateDecision> {
    const now = this.now();
    const w = slidingWindow(policy, now);
    const counts = await this.store.hit(`${policy.name}:${key}`, w);
    const { remaining, resetMs } = quota(w, counts, now);
    return {
      allowed: counts.allowed,
      limit: policy.limit,
      remaining,
      resetSeconds: Math.max(1, Math.ceil(resetMs / 1000)),
    };
  }

  /**
   * Counts a request and sets the RateLimit headers (IETF httpapi-ratelimit-headers draft: `t`
   * is the seconds until more quota is available); over the limit it throws a 429 carrying them
   * and Retry-After.
   */
  async enforce(policy: RateLimitPolicy, key: string, resHeaders: Record<string, string>) {
    const d = await this.hit(policy, key);
    // Several policies can apply to one request (the general one and a route's own): the
    // structured-field headers list them all, each under its name.
    const policyHeader = join(resHeaders["ratelimit-policy"], policyItem(policy));
    const state = join(resHeaders.ratelimit, `"${policy.name}";r=${d.remaining};t=${d.resetSeconds}`);
    resHeaders["ratelimit-policy"] = policyHeader;
    resHeaders.ratelimit = state;
    if (!d.allowed) {
      this.metrics?.rateLimitRefused(policy.name);
      throw new AppError(
        "rate_limited",
        `Too many requests: at most ${policy.limit} per ${policy.windowSeconds} s. Retry in ${d.resetSeconds} s.`,
        {
          headers: { "ratelimit-policy": policyHeader, ratelimit: state, "Retry-After": String(d.resetSeconds) },
          details: {
            limit: policy.limit,
            window_seconds: policy.windowSeconds,
            retry_after: d.resetSeconds,
          },
        },
      );
    }
  }

  prune(maxWindowSeconds = 60) {
    return this.store.prune(this.now() - 2 * maxWindowSeconds * 1000);
  }
}
