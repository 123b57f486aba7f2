/**
 * Metric history on a month of 30 s samples, in one run:
 *  - reads: `uptime-stats?window=30d` and `metrics?window=30d` through the REST door (hourly
 *    metric buckets) beside a raw Bun.serve answering each with one SQL aggregate over the raw
 *    samples of the window (what a service without buckets does); target p99 under 20 ms;
 *  - ingest: exactly 1,000 servers each sending an agent heartbeat every second for 60 s
 *    (BENCH_INGEST_SECONDS shortens it while developing), through the REST door, where each
 *    heartbeat updates the latest status at once and is summed in memory for the metric
 *    buckets (flushed every METRICS_FLUSH_MS in one statement); beside a raw Bun.serve doing
 *    only the status upsert. Errors (target: none), achieved rate, p50/p99 latency, and the CPU
 *    the app (and, on PostgreSQL, the postgres processes) used per heartbeat. The app is stopped
 *    gracefully before the buckets are counted, so its last flush is in them.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres bun bench/history.ts
 *   BENCH_INGEST_SECONDS=10 BENCH_SECONDS=5 BENCH_CONNECTIONS=4 bun bench/history.ts
 *
 * With BENCH_HISTORY_RAW=1 this file is the baseline server itself (the benchmark starts it so).
 */
import { rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { loadConfig } from "../src/config";
import { openDatabase } from "../src/db/client";
import { servers, serverStatus } from "../src/db/schema";
import type { Services } from "../src/trpc/context";
import { newSecret, sha256 } from "../src/lib/secrets";
import { rowsOf } from "../src/db/rows";
import { requireServerRole } from "../src/servers/access";
import { cpuSeconds, postgresCpuSeconds } from "./lib/cpu";
import { monthOfHistory, SAMPLES } from "./lib/history-fixture";
import { load, table } from "./lib/load";
import { rawMetrics30d, rawUptime30d } from "./lib/raw-history";
import { bearerPrincipal, send, serveRaw } from "./lib/raw-server";
import { startTarget } from "./lib/targets";

if (process.env.BENCH_HISTORY_RAW === "1") {
  await serveRaw(async (req, url, services) => {
    if (url.pathname === "/health") return send({ status: "ok" });
    if (url.pathname === "/agent/heartbeat") return rawHeartbeat(req, services);
    const read = { "/server/uptime-stats": rawUptime30d, "/server/metrics": rawMetrics30d }[url.pathname];
    if (!read) return undefined;
    const principal = await bearerPrincipal(services, req);
    if (!principal) return send({ error: { code: "unauthenticated" } }, 401);
    const serverId = req.headers.get("x-server-id")!;
    await requireServerRole(services.database.db, principal, serverId, "viewer");
    return send(await read(services.database.db, serverId));
  });
} else {
  await main();
}

/** The ingest baseline: the same credential lookup and the latest-status upsert alone, with no buckets. */
async function rawHeartbeat(req: Request, services: Services) {
  const token = /^Bearer\s+(\S+)$/i.exec(req.headers.get("authorization") ?? "")?.[1];
  const agent = token ? await services.agent.authenticate(token) : null;
  if (!agent) return send({ error: { code: "unauthenticated" } }, 401);
  const hb = (await req.json()) as Record<string, number>;
  const values = {
    tps: hb.tps ?? null,
    mspt: hb.mspt ?? null,
    agentPlayersOnline: hb.players_online ?? null,
    memoryUsedMb: hb.memory_used_mb ?? null,
    memoryMaxMb: hb.memory_max_mb ?? null,
    heartbeatAt: new Date(),
  };
  await services.database.db
    .insert(serverStatus)
    .values({ serverId: agent.serverId, ...values })
    .onConflictDoUpdate({ target: serverStatus.serverId, set: values });
  return send({ server_id: agent.serverId, received_at: values.heartbeatAt.toISOString() });
}

interface IngestResult {
  sent: number;
  errors: number;
  errorSamples: string[];
  seconds: number;
  rate: number;
  p50ms: number;
  p99ms: number;
  maxms: number;
  maxLagMs: number;
  maxInflight: number;
}

async function main() {
  const seconds = Number(process.env.BENCH_SECONDS ?? 5);
  const connections = Number(process.env.BENCH_CONNECTIONS ?? 4);
  const ingestSeconds = Number(process.env.BENCH_INGEST_SECONDS ?? 60);
  // The stated load, not a knob: 1,000 servers, one heartbeat a second each.
  const fleet = 1000;
  const onPostgres = Boolean(process.env.DATABASE_URL);
  const fx = await monthOfHistory();

  // The fleet: servers written straight to the database (a team's API limit is 500), each with an agent token.
  const tokens = Array.from({ length: fleet }, () => newSecret("agent"));
  const database = await openDatabase({ url: loadConfig(fx.env).DATABASE_URL, dataDir: fx.env.DATA_DIR! });
  for (let i = 0; i < fleet; i += 500)
    await database.db.insert(servers).values(
      tokens.slice(i, i + 500).map((t, j) => ({
        teamId: fx.teamId,
        name: `fleet-${i + j}`,
        host: "127.0.0.1",
        port: 9,
        kind: "single" as const,
        agentTokenHash: sha256(t),
        agentTokenPrefix: t.slice(0, 12),
        nextCheckAt: new Date("2999-01-01T00:00:00Z"),
      })),
    );
  await database.close();
  const tokenFile = join(tmpdir(), `mcp-bench-tokens-${process.pid}.json`);
  writeFileSync(tokenFile, JSON.stringify(tokens));

  const headers = { authorization: `Bearer ${fx.token}`, "x-server-id": fx.serverId };
  const opts = { seconds, connections, headers };
  const paths = { uptime: "/server/uptime-stats?window=30d", metrics: "/server/metrics?window=30d" };
  const reads = async (base: string) => {
    const out: Record<string, Awaited<ReturnType<typeof load>>> = {};
    for (const [k, p] of Object.entries(paths)) {
      const res = await fetch(base + p, { headers });
      if (!res.ok) throw new Error(`${p}: ${res.status} ${await res.text()}`);
      await load({ ...opts, url: base + p, seconds: 1 });
      out[k] = await load({ ...opts, url: base + p });
    }
    return out;
  };

  const app = await startTarget("src/main.ts", fx.env);
  const door = await reads(app.url);
  await app.stop();
  const raw = await startTarget("bench/history.ts", { ...fx.env, BENCH_HISTORY_RAW: "1" });
  const base = await reads(raw.url);
  await raw.stop();

  // Ingest on a fresh process each, so its CPU counter covers only this load.
  const ingestRun = async (target: { url: string; pid: number; stop(): Promise<void> }) => {
    const appCpu0 = cpuSeconds(target.pid);
    const pgCpu0 = onPostgres ? postgresCpuSeconds() : 0;
    const driver = Bun.spawn([process.execPath, "bench/lib/heartbeats.ts"], {
      env: {
        ...process.env,
        HEARTBEAT_URL: target.url,
        HEARTBEAT_TOKENS: tokenFile,
        HEARTBEAT_SECONDS: String(ingestSeconds),
      },
      stdout: "pipe",
      stderr: "inherit",
    });
    const result = JSON.parse(await new Response(driver.stdout).text()) as IngestResult;
    await driver.exited;
    const cpu = { app: cpuSeconds(target.pid) - appCpu0, pg: onPostgres ? postgresCpuSeconds() - pgCpu0 : 0 };
    await target.stop();
    return { ...result, cpu };
  };
  const ingestBase = await ingestRun(await startTarget("bench/history.ts", { ...fx.env, BENCH_HISTORY_RAW: "1" }));
  const ingest = await ingestRun(await startTarget("src/main.ts", fx.env));

  // What the heartbeats left: one minute row per server per minute, one hour row per server per hour.
  const after = await openDatabase({ url: loadConfig(fx.env).DATABASE_URL, dataDir: fx.env.DATA_DIR! });
  const [minuteRows, hourRows, beats] = await Promise.all(
    [
      sql`select count(*)::int as n from server_metrics_minute where tps_n > 0 and bucket > now() - interval '1 hour'`,
      sql`select count(*)::int as n from server_metrics_hour where tps_n > 0 and bucket > now() - interval '2 hours'`,
      sql`select coalesce(sum(tps_n), 0)::int as n from server_metrics_minute where bucket > now() - interval '1 hour'`,
    ].map(async (q) =>
      // The month's server has heartbeats in its buckets too: only the fleet's count.
      Number(rowsOf<{ n: number }>(await after.db.execute(sql`${q} and server_id <> ${fx.serverId}`))[0]!.n),
    ),
  );
  await after.close();
  rmSync(tokenFile, { force: true });
  rmSync(fx.dataDir, { recursive: true, force: true });
  await fx.db.drop();

  console.log(`database: ${onPostgres ? "postgres" : "pglite"}; ${connections} connections, ${seconds}s per read case`);
  console.log(`reads: one server, ${SAMPLES} samples (30 days at 30 s); buckets: 48 h of minutes, 30 days of hours`);
  table([
    { name: "uptime-stats 30d: raw SQL over raw samples", r: base.uptime! },
    { name: "uptime-stats 30d: REST door, buckets", r: door.uptime!, baseline: base.uptime },
    { name: "metrics 30d: raw SQL over raw samples", r: base.metrics! },
    { name: "metrics 30d: REST door, buckets", r: door.metrics!, baseline: base.metrics },
  ]);
  console.log(`\nload tool: ${door.uptime!.tool}`);
  const readP99 = Math.max(door.uptime!.p99ms, door.metrics!.p99ms);
  console.log(
    `target: reads p99 < 20 ms on PostgreSQL: ${readP99.toFixed(1)} ms (${readP99 < 20 ? "met" : "NOT met"}${onPostgres ? "" : "; this run is PGlite"})`,
  );
  const flushMs = Number(fx.env.METRICS_FLUSH_MS ?? process.env.METRICS_FLUSH_MS ?? 5000);
  console.log(
    `\ningest: ${fleet} servers x 1 heartbeat/s for ${ingestSeconds}s offered (${fleet * ingestSeconds} heartbeats, POST /agent/heartbeat) by a separate driver process` +
      (ingestSeconds === 60 ? "" : " (shortened: the target is 60 s)"),
  );
  const line = (name: string, r: typeof ingest) =>
    console.log(
      `  ${name.padEnd(52)}sent ${r.sent} in ${r.seconds.toFixed(1)}s (achieved ${r.rate.toFixed(0)}/s), errors ${r.errors}, ` +
        `p50 ${r.p50ms.toFixed(1)} ms, p99 ${r.p99ms.toFixed(1)} ms, max ${r.maxms.toFixed(0)} ms, ${r.maxInflight} in flight at most, ` +
        `driver lag ${r.maxLagMs.toFixed(0)} ms\n  ${"".padEnd(52)}CPU per heartbeat: app ${((r.cpu.app / r.sent) * 1000).toFixed(3)} ms` +
        (onPostgres ? `, postgres ${((r.cpu.pg / r.sent) * 1000).toFixed(3)} ms` : "") +
        ` (app ${r.cpu.app.toFixed(1)} s = ${((r.cpu.app / r.seconds) * 100).toFixed(0)}% of a core` +
        (onPostgres ? `, postgres ${r.cpu.pg.toFixed(1)} s = ${((r.cpu.pg / r.seconds) * 100).toFixed(0)}%` : "") +
        ")",
    );
  line("raw Bun.serve, status upsert only (baseline)", ingestBase);
  line(`REST door, status + buckets (flush every ${flushMs} ms)`, ingest);
  if (onPostgres) console.log("  (postgres CPU counts every postgres process on the machine, other work included)");
  console.log(
    `  target: ${fleet}/s offered for ${ingestSeconds}s with 0 errors: achieved ${ingest.rate.toFixed(0)}/s, errors ${ingest.errors} ` +
      `(${ingest.errors === 0 && ingest.rate >= fleet * 0.98 ? "met" : "NOT met"}); ` +
      `p99 ${ingest.p99ms.toFixed(1)} ms (baseline ${ingestBase.p99ms.toFixed(1)} ms)`,
  );
  console.log(
    `  buckets written: ${minuteRows} minute rows, ${hourRows} hour rows, ${beats} heartbeats counted in them ` +
      `(${beats === ingest.sent - ingest.errors ? "every accepted heartbeat" : `MISMATCH: ${ingest.sent - ingest.errors} accepted`})`,
  );
  for (const r of [ingestBase, ingest])
    if (r.errors > 0) {
      console.log(`INVALID RUN: ${r.errors} heartbeat errors, e.g. ${r.errorSamples.join(" | ")}`);
      process.exitCode = 1;
    }
}
