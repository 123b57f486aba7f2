import { AppError } from "./errors";

/**
 * At most `max` calls of one kind in flight per key (a caller); one more is refused at once with
 * 429 and Retry-After rather than queued, so a caller looping an expensive read holds at most
 * `max` of the database's time, never a queue of its own behind which everyone else waits.
 * Counted per instance.
 */
export class InFlightLimit {
  private readonly running = new Map<string, number>();

  constructor(
    private readonly max: number,
    private readonly retryAfterSeconds = 1,
  ) {}

  async run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const n = this.running.get(key) ?? 0;
    if (n >= this.max) {
      const s = this.retryAfterSeconds;
      throw new AppError(
        "rate_limited",
        `Too many expensive reads in progress for this caller (at most ${this.max} at once). Retry in ${s} s.`,
        { headers: { "Retry-After": String(s) }, details: { retry_after: s, in_flight: n } },
      );
    }
    this.running.set(key, n + 1);
    try {
      return await work();
    } finally {
      const left = (this.running.get(key) ?? 1) - 1;
      if (left === 0) this.running.delete(key);
      else this.running.set(key, left);
    }
  }
}
