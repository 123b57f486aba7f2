import { existsSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, freshDatabase } from "../../test/shared";

/**
 * With DATABASE_URL set, a database of the bench's own on that server, dropped afterwards;
 * otherwise none (the targets use PGlite in their DATA_DIR).
 */
export async function benchDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const admin = process.env.DATABASE_URL;
  if (!admin) return { url: "", drop: async () => {} };
  return freshDatabase(admin, "mcp_bench");
}

/**
 * Benchmarks drive far more than a client may send in production: the general per-address
 * limit still counts every request (its cost is measured) but never refuses one.
 */
const BENCH_GENERAL_LIMIT = 1_000_000_000;

/**
 * Starts a benchmark target (the app, or the raw baseline) as its own process; waits for /health.
 * `runtimeArgs` go to bun before the script (`--cpu-prof` and the like).
 */
export async function startTarget(script: string, env: Record<string, string>, runtimeArgs: string[] = []) {
  const port = freePort();
  const proc = Bun.spawn([process.execPath, ...runtimeArgs, script], {
    env: {
      ...process.env,
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      RATE_LIMIT_GENERAL_PER_MIN: String(BENCH_GENERAL_LIMIT),
      // Benchmarks open many sockets on one account and sign up tenants in bursts, all from loopback.
      WS_MAX_SOCKETS_PER_CREDENTIAL: "100000",
      WS_MAX_SOCKETS_PER_ADDRESS: "100000",
      SIGNUPS_PER_ADDRESS_PER_HOUR: String(BENCH_GENERAL_LIMIT),
      SIGNUPS_PER_HOUR: String(BENCH_GENERAL_LIMIT),
      ...env,
      PORT: String(port),
    },
    stdout: "ignore",
    stderr: "inherit",
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if (proc.exitCode !== null) throw new Error(`${script} exited with ${proc.exitCode}`);
    const ok = await fetch(`${url}/health`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    // BENCH_START_SECONDS: a first PGlite start (initdb, migrations) on a loaded machine can take longer.
    if (i > Number(process.env.BENCH_START_SECONDS ?? 30) * 10) throw new Error(`${script} did not answer /health`);
    await Bun.sleep(100);
  }
  return {
    url,
    pid: proc.pid,
    async stop() {
      proc.kill("SIGTERM");
      await proc.exited;
    },
  };
}

/** A JSON POST to a target that must succeed; its parsed answer. */
export async function post(base: string, path: string, body: unknown, token?: string) {
  const res = await fetch(base + path, {
    method: "POST",
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return res.json() as Promise<any>;
}

/**
 * Asks a target that imports bench/lib/gc-on-signal.ts for a full collection; its RSS and
 * JS heap in use right after, in bytes.
 */
export async function collect(pid: number): Promise<{ rss: number; heapUsed: number }> {
  const file = join(tmpdir(), `mcp-gc-${pid}.json`);
  rmSync(file, { force: true });
  process.kill(pid, "SIGUSR2");
  for (let i = 0; i < 200 && !existsSync(file); i++) await Bun.sleep(25);
  await Bun.sleep(25);
  const figures = JSON.parse(readFileSync(file, "utf8"));
  rmSync(file, { force: true });
  return figures;
}

/**
 * Memory figures once they stop moving: a collection every 500 ms until two readings in a row
 * differ by under 256 KiB of RSS (at most 8). One collection is not a stable reading: the
 * allocator returns pages over the following seconds, and successive collections of an
 * unchanged process were seen to move RSS by megabytes, several KiB per socket at 2,000 sockets.
 */
export async function collectSettled(pid: number): Promise<{ rss: number; heapUsed: number; readings: number }> {
  let last = await collect(pid);
  for (let i = 2; i <= 8; i++) {
    await Bun.sleep(500);
    const next = await collect(pid);
    if (Math.abs(next.rss - last.rss) < 256 * 1024) return { ...next, readings: i };
    last = next;
  }
  return { ...last, readings: 8 };
}
