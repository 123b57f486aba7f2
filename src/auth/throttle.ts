import { AppError } from "../lib/errors";
import type { RateLimiter, RateLimitPolicy } from "../lib/rate-limit";
import { sha256 } from "../lib/secrets";
import type { Bus } from "../realtime/bus";

export interface LoginThrottlePolicies {
  /** Failed sign-ins per normalised email, whether or not an account has it. */
  account: RateLimitPolicy;
  /** Failed sign-ins per client address, whatever the email. */
  address: RateLimitPolicy;
}

/**
 * Limits failed sign-ins. Only failures count (through the shared rate limiter, so every
 * instance counts together); once a count goes over its limit the key is refused, right or
 * wrong password, until its window ends, and every instance hears of it on the bus. Keys are
 * hashed: no email or address is stored in the counters or sent between instances.
 */
export class LoginThrottle {
  private blocked = new Map<string, number>();

  constructor(
    private readonly limiter: RateLimiter,
    private readonly bus: Bus,
    private readonly policies: LoginThrottlePolicies,
    private readonly maxEntries = 100_000,
  ) {
    bus.onNotice((n) => {
      if (n.type === "login_blocked") this.block(n.key, n.until_ms);
    });
  }

  /** 429 when the email or the address is refused for now; nothing else is revealed. */
  check(email: string, address: string) {
    const now = Date.now();
    let until = 0;
    for (const { key } of this.keys(email, address)) {
      const u = this.blocked.get(key);
      if (u === undefined) continue;
      if (u <= now) this.blocked.delete(key);
      else until = Math.max(until, u);
    }
    if (until) throw tooMany(Math.ceil((until - now) / 1000));
  }

  /** Counts a failed sign-in; 429 (instead of the caller's 401) when it goes over a limit. */
  async failed(email: string, address: string) {
    let retryAfter = 0;
    for (const { policy, key } of this.keys(email, address)) {
      try {
        await this.limiter.enforce(policy, key, {});
      } catch (err) {
        if (!(err instanceof AppError) || err.appCode !== "rate_limited") throw err;
        const seconds = Math.max(1, Number(err.headers?.["Retry-After"]) || policy.windowSeconds);
        retryAfter = Math.max(retryAfter, seconds);
        const until = Date.now() + seconds * 1000;
        this.block(key, until);
        await this.bus.publishNotice({ type: "login_blocked", key, until_ms: until });
      }
    }
    if (retryAfter) throw tooMany(retryAfter);
  }

  private keys(email: string, address: string) {
    return [
      { policy: this.policies.account, key: sha256(`account:${email}`) },
      { policy: this.policies.address, key: sha256(`address:${address}`) },
    ];
  }

  private block(key: string, until: number) {
    if (until <= Date.now()) return;
    this.blocked.delete(key);
    if (this.blocked.size >= this.maxEntries) {
      const now = Date.now();
      for (const [k, u] of this.blocked) if (u <= now) this.blocked.delete(k);
      // Still full: the oldest block goes; its key is refused again on its next failure.
      if (this.blocked.size >= this.maxEntries) this.blocked.delete(this.blocked.keys().next().value!);
    }
    this.blocked.set(key, until);
  }
}

function tooMany(retryAfter: number) {
  return new AppError("rate_limited", `Too many failed sign-ins. Retry in ${retryAfter} s.`, {
    headers: { "Retry-After": String(retryAfter) },
    details: { retry_after: retryAfter },
  });
}
