/**
 * GET /server/uptime-stats?window=30d over a month of samples for one server (30 days at 30 s:
 * 86,400 samples), through the REST door, against a raw Bun.serve doing the same work (bearer
 * check, membership check, the same SQL), in one run. Then again after retention has folded
 * samples older than 48 h into hourly rows.
 *
 *   bun bench/uptime.ts                      # PGlite in a temp dir
 *   DATABASE_URL=postgres://... bun bench/uptime.ts
 *   BENCH_SECONDS=10 BENCH_CONNECTIONS=8 bun bench/uptime.ts
 *
 * With BENCH_UPTIME_RAW=1 this file is the baseline server itself (the benchmark starts it so).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { loadConfig } from "../src/config";
import { openDatabase } from "../src/db/client";
import { pruneAndRollUp } from "../src/monitoring/retention";
import { load, table, type LoadResult } from "./lib/load";
import { benchDatabase, startTarget } from "./lib/targets";
import { bearerPrincipal, send, serveRaw } from "./lib/raw-server";

if (process.env.BENCH_UPTIME_RAW === "1") {
  await serveRaw(async (req, url, services) => {
    if (url.pathname === "/health") return send({ status: "ok" });
    if (url.pathname !== "/server/uptime-stats") return undefined;
    const principal = await bearerPrincipal(services, req);
    if (!principal) return send({ error: { code: "unauthenticated" } }, 401);
    const window = (url.searchParams.get("window") ?? "24h") as "30d";
    return send(await services.monitoring.uptimeStats(principal, req.headers.get("x-server-id")!, window));
  });
} else {
  await main();
}

async function main() {
  const seconds = Number(process.env.BENCH_SECONDS ?? 5);
  const connections = Number(process.env.BENCH_CONNECTIONS ?? 4);
  const dataDir = mkdtempSync(join(tmpdir(), "mcp-bench-uptime-"));
  const db = await benchDatabase();
  const env = {
    DATA_DIR: dataDir,
    HOST: "127.0.0.1",
    LOG_LEVEL: "warn",
    NODE_ENV: "production",
    DEV_IDP_ENABLED: "true",
    DATABASE_URL: db.url,
    PINGER_ENABLED: "false",
    // The benchmark's server is registered on loopback.
    OUTBOUND_ALLOW_PRIVATE: "true",
  };

  const post = async (base: string, path: string, body: unknown, token?: string) => {
    const res = await fetch(base + path, {
      method: "POST",
      headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
    return res.json() as Promise<any>;
  };

  // Account, team and server through the API; a long-lived token so it outlasts every case.
  const app = await startTarget("src/main.ts", { ...env, ACCESS_TOKEN_TTL_SECONDS: "86400" });
  await post(app.url, "/auth/signup", { email: "bench@example.test", password: "bench password" });
  const { access_token: token } = await post(app.url, "/auth/login", {
    email: "bench@example.test",
    password: "bench password",
  });
  const { team_id } = await post(app.url, "/teams", { name: "bench" }, token);
  const { server_id: serverId } = await post(
    app.url,
    "/server/servers",
    { team_id, name: "month", host: "127.0.0.1", port: 9, kind: "single" },
    token,
  );
  await app.stop();

  // A month of history, written with the app stopped (PGlite is one process's at a time).
  const config = loadConfig(env);
  let database = await openDatabase({ url: config.DATABASE_URL, dataDir: config.DATA_DIR });
  const total = 30 * 2880;
  await database.db.execute(sql`
    insert into server_samples (server_id, ts, online, latency_ms, players_online, players_max)
    select ${serverId}, now() - make_interval(secs => i * 30), i % 97 <> 0,
           case when i % 97 <> 0 then 15 + (i * 7919) % 120 end, case when i % 97 <> 0 then (i / 120) % 60 end, 100
      from generate_series(1, ${total}) as i`);
  await database.close();

  const url = (base: string) => `${base}/server/uptime-stats?window=30d`;
  const headers = { authorization: `Bearer ${token}`, "x-server-id": serverId };
  const opts = { seconds, connections, headers };

  async function round() {
    const app = await startTarget("src/main.ts", env);
    const check = (await (await fetch(url(app.url), { headers })).json()) as { samples: number };
    await load({ ...opts, url: url(app.url), seconds: 1 });
    const door = await load({ ...opts, url: url(app.url) });
    await app.stop();
    const raw = await startTarget("bench/uptime.ts", { ...env, BENCH_UPTIME_RAW: "1" });
    await load({ ...opts, url: url(raw.url), seconds: 1 });
    const base = await load({ ...opts, url: url(raw.url) });
    await raw.stop();
    return { door, base, samples: check.samples };
  }

  const before = await round();
  database = await openDatabase({ url: config.DATABASE_URL, dataDir: config.DATA_DIR });
  const folded = await pruneAndRollUp(database.db, config.SAMPLE_RETENTION_DAYS);
  await database.close();
  const after = await round();

  rmSync(dataDir, { recursive: true, force: true });
  await db.drop();

  console.log(
    `database: ${process.env.DATABASE_URL ? "postgres" : "pglite"}; ${connections} connections, ${seconds}s per case`,
  );
  console.log(
    `one server, ${total} samples over 30 days; the 30d answer counted ${before.samples} before retention and ${after.samples} after (${folded.folded_raw} raw samples folded into hourly rows)`,
  );
  const rows: { name: string; r: LoadResult; baseline?: LoadResult }[] = [
    { name: "raw Bun.serve, 86,400 raw samples", r: before.base },
    { name: "REST door,     86,400 raw samples", r: before.door, baseline: before.base },
    { name: "raw Bun.serve, 48 h raw + hourly", r: after.base },
    { name: "REST door,     48 h raw + hourly", r: after.door, baseline: after.base },
  ];
  table(rows);
  console.log(`\nload tool: ${before.door.tool}`);
}
