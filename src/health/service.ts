import pkg from "../../package.json";
import { AppError } from "../lib/errors";

const STARTED = Date.now();

export class HealthService {
  constructor(private readonly ping: () => Promise<void>) {}

  async check() {
    try {
      await Promise.race([
        this.ping(),
        new Promise((_, reject) => setTimeout(() => reject(new Error("timeout")), 2000).unref?.()),
      ]);
    } catch {
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
}
