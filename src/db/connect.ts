import type { Logger } from "../lib/log";
import { StartupError } from "../lib/startup";

/** Where a database URL points, without its password: safe to log. */
export function describeTarget(url: string) {
  const u = new URL(url);
  return {
    host: u.hostname,
    port: Number(u.port || 5432),
    database: decodeURIComponent(u.pathname.slice(1)) || undefined,
    user: decodeURIComponent(u.username) || undefined,
  };
}

/** The server answered and said no: waiting does not change a wrong password or a missing database. */
const PERMANENT = new Set(["28P01", "28000", "3D000"]);

const BACKOFF_FIRST_MS = 250;
const BACKOFF_MAX_MS = 5000;

/**
 * Waits until PostgreSQL accepts a connection, for at most `timeoutSeconds`: a service started
 * beside its database (compose, systemd, a restarting cluster) must not die on the first
 * refused connection. Each failed attempt is one log line; giving up is a StartupError.
 */
export async function waitForPostgres(url: string, opts: { timeoutSeconds: number; log: Logger }) {
  const target = describeTarget(url);
  const password = decodeURIComponent(new URL(url).password);
  const scrub = (s: string) => (password ? s.split(password).join("***") : s);
  const started = Date.now();
  const deadline = started + opts.timeoutSeconds * 1000;
  let backoff = BACKOFF_FIRST_MS;
  const { default: postgres } = await import("postgres");
  for (let attempt = 1; ; attempt++) {
    const remainingSeconds = Math.ceil((deadline - Date.now()) / 1000);
    const conn = postgres(url, {
      max: 1,
      onnotice: () => {},
      connect_timeout: Math.min(10, Math.max(1, remainingSeconds)),
    });
    try {
      await conn`select 1`;
      if (attempt > 1) opts.log.info("database reachable", { ...target, attempt });
      return;
    } catch (err) {
      const e = err as { code?: string; message?: string };
      const reason = scrub(String(e.message ?? err));
      const code = e.code;
      if (code && PERMANENT.has(code))
        throw new StartupError(`database refused the connection: ${reason}`, { ...target, code, attempt });
      const wait = Math.min(backoff, deadline - Date.now());
      if (wait <= 0)
        throw new StartupError(`database unreachable after ${opts.timeoutSeconds} s, giving up`, {
          ...target,
          attempts: attempt,
          error: reason,
          code,
        });
      opts.log.warn("database unreachable, retrying", { ...target, attempt, error: reason, code, retry_in_ms: wait });
      await Bun.sleep(wait);
      backoff = Math.min(backoff * 2, BACKOFF_MAX_MS);
    } finally {
      await conn.end({ timeout: 0 }).catch(() => {});
    }
  }
}
