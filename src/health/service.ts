import pkg from "../../package.json";
import { AppError } from "../lib/errors";

const STARTED = Date.now();

/** What health needs of the database: a real round trip, and what is known without one. */
export interface DatabaseProbe {
  ping(): Promise<void>;
  /** False once the database has been closed: no query needed to know that. */
  alive(): boolean;
}

export interface HealthOptions {
  /** A probe's answer stands this long; calls in between cost no query. */
  ttlMs?: number;
  timeoutMs?: number;
}

/**
 * `/health` is polled by load balancers and orchestrators, sometimes many times a second; on
 * the embedded database each probe query competed with real traffic for the one connection.
 * One probe runs at a time and its answer is reused for `ttlMs`, so a dead database is
 * reported within `ttlMs` plus the probe's timeout, and a closed one at once.
 */
export class HealthService {
  private readonly ttlMs: number;
  private readonly timeoutMs: number;
  private last: { at: number; ok: boolean } | undefined;
  private inFlight: Promise<boolean> | undefined;

  constructor(
    private readonly database: DatabaseProbe,
    opts: HealthOptions = {},
  ) {
    this.ttlMs = opts.ttlMs ?? 1000;
    this.timeoutMs = opts.timeoutMs ?? 2000;
  }

  async check() {
    if (!this.database.alive() || !(await this.reachable())) {
      throw new AppError("unavailable", "The database is unreachable.", {
        details: { status: "unavailable", database: "unreachable" },
      });
    }
    return {
      status: "ok" as const,
      database: "ok" as const,
      version: pkg.version,
      uptime_s: Math.floor((Date.now() - STARTED) / 1000),
    };
  }

  private async reachable(): Promise<boolean> {
    const last = this.last;
    if (last && Date.now() - last.at < this.ttlMs) return last.ok;
    this.inFlight ??= this.probe().finally(() => {
      this.inFlight = undefined;
    });
    return this.inFlight;
  }

  private async probe(): Promise<boolean> {
    let timer: Timer | undefined;
    let ok: boolean;
    try {
      await Promise.race([
        this.database.ping(),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error("timeout")), this.timeoutMs);
        }),
      ]);
      ok = true;
    } catch {
      ok = false;
    } finally {
      clearTimeout(timer);
    }
    this.last = { at: Date.now(), ok };
    return ok;
  }
}
