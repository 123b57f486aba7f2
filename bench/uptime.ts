/**
 * GET /server/uptime-stats?window=30d over a month of 30 s samples for one server (86,400
 * samples), through the REST door (which reads the hourly metric buckets), beside a raw
 * Bun.serve answering the same path with one SQL aggregate over the raw samples (what the
 * service did before the buckets), in one run.
 *
 *   bun bench/uptime.ts                      # PGlite in a temp dir
 *   DATABASE_URL=postgres://... bun bench/uptime.ts
 *   BENCH_SECONDS=10 BENCH_CONNECTIONS=8 bun bench/uptime.ts
 *
 * With BENCH_UPTIME_RAW=1 this file is the baseline server itself (the benchmark starts it so).
 */
import { rmSync } from "node:fs";
import { monthOfHistory, SAMPLES } from "./lib/history-fixture";
import { load, table } from "./lib/load";
import { bearerPrincipal, send, serveRaw } from "./lib/raw-server";
import { rawUptime30d } from "./lib/raw-history";
import { startTarget } from "./lib/targets";
import { requireServerRole } from "../src/servers/access";

if (process.env.BENCH_UPTIME_RAW === "1") {
  await serveRaw(async (req, url, services) => {
    if (url.pathname === "/health") return send({ status: "ok" });
    if (url.pathname !== "/server/uptime-stats") return undefined;
    const principal = await bearerPrincipal(services, req);
    if (!principal) return send({ error: { code: "unauthenticated" } }, 401);
    const serverId = req.headers.get("x-server-id")!;
    await requireServerRole(services.database.db, principal, serverId, "viewer");
    return send(await rawUptime30d(services.database.db, serverId));
  });
} else {
  await main();
}

async function main() {
  const seconds = Number(process.env.BENCH_SECONDS ?? 5);
  const connections = Number(process.env.BENCH_CONNECTIONS ?? 4);
  const fx = await monthOfHistory();
  const path = "/server/uptime-stats?window=30d";
  const headers = { authorization: `Bearer ${fx.token}`, "x-server-id": fx.serverId };
  const opts = { seconds, connections, headers };

  const app = await startTarget("src/main.ts", fx.env);
  const check = (await (await fetch(app.url + path, { headers })).json()) as { samples: number };
  await load({ ...opts, url: app.url + path, seconds: 1 });
  const door = await load({ ...opts, url: app.url + path });
  await app.stop();
  const raw = await startTarget("bench/uptime.ts", { ...fx.env, BENCH_UPTIME_RAW: "1" });
  const rawCheck = (await (await fetch(raw.url + path, { headers })).json()) as { up: number; down: number };
  await load({ ...opts, url: raw.url + path, seconds: 1 });
  const base = await load({ ...opts, url: raw.url + path });
  await raw.stop();

  rmSync(fx.dataDir, { recursive: true, force: true });
  await fx.db.drop();

  console.log(
    `database: ${process.env.DATABASE_URL ? "postgres" : "pglite"}; ${connections} connections, ${seconds}s per case`,
  );
  console.log(
    `one server, ${SAMPLES} samples over 30 days; the 30d answer counted ${check.samples} from hourly buckets, the raw aggregate ${rawCheck.up + rawCheck.down} from raw rows`,
  );
  table([
    { name: "raw Bun.serve, SQL over 86,400 raw samples", r: base },
    { name: "REST door, hourly metric buckets", r: door, baseline: base },
  ]);
  console.log(`\nload tool: ${door.tool}`);
}
