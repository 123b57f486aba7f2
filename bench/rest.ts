/**
 * REST door benchmark: GET /health and an authenticated read (GET /teams/{id}) through the
 * REST door, the same read through /trpc, and both against a raw Bun.serve baseline doing
 * the same work, all in one run on the same database. Then the same two REST cases with
 * METRICS_TOKEN set (/metrics on), against the run without it: the cost of counting every request.
 *
 *   bun bench/rest.ts                 # PGlite in a temp dir
 *   DATABASE_URL=postgres://... bun bench/rest.ts
 *   BENCH_SECONDS=10 BENCH_CONNECTIONS=64 bun bench/rest.ts
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { load, table, type LoadResult } from "./lib/load";
import { benchDatabase, post, startTarget } from "./lib/targets";

const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
const dataDir = mkdtempSync(join(tmpdir(), "mcp-bench-"));
const db = await benchDatabase();
const env = {
  DATA_DIR: dataDir,
  HOST: "127.0.0.1",
  LOG_LEVEL: "warn",
  NODE_ENV: "production",
  DEV_IDP_ENABLED: "true",
  PINGER_ENABLED: "false",
  DATABASE_URL: db.url,
};

const app = await startTarget("src/main.ts", env);
await post(app.url, "/auth/signup", { email: "bench@example.test", password: "bench password" });
const { access_token: token } = await post(app.url, "/auth/login", {
  email: "bench@example.test",
  password: "bench password",
});
const { team_id: teamId } = await post(app.url, "/teams", { name: "bench" }, token);
const auth = { authorization: `Bearer ${token}` };
const trpcInput = encodeURIComponent(JSON.stringify({ team_id: teamId }));
const opts = { seconds, connections };

console.log(
  `database: ${process.env.DATABASE_URL ? "postgres" : "pglite"}; ${connections} connections, ${seconds}s per case`,
);
await load({ url: `${app.url}/health`, seconds: 1, connections }); // warm-up
const appHealth = await load({ url: `${app.url}/health`, ...opts });
const appRead = await load({ url: `${app.url}/teams/${teamId}`, headers: auth, ...opts });
const appTrpc = await load({ url: `${app.url}/trpc/teams.get?input=${trpcInput}`, headers: auth, ...opts });
await app.stop();

const METRICS_TOKEN = "bench-metrics-token-0123456789";
const metered = await startTarget("src/main.ts", { ...env, METRICS_TOKEN });
await load({ url: `${metered.url}/health`, seconds: 1, connections });
const meteredHealth = await load({ url: `${metered.url}/health`, ...opts });
const meteredRead = await load({ url: `${metered.url}/teams/${teamId}`, headers: auth, ...opts });
const scraped = await fetch(`${metered.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
const series = (await scraped.text()).split("\n").filter((l) => l.startsWith("http_requests_total{")).length;
await metered.stop();

const raw = await startTarget("bench/raw-baseline.ts", env);
await load({ url: `${raw.url}/health`, seconds: 1, connections });
const rawHealth = await load({ url: `${raw.url}/health`, ...opts });
const rawRead = await load({ url: `${raw.url}/teams/${teamId}`, headers: auth, ...opts });
await raw.stop();
rmSync(dataDir, { recursive: true, force: true });
await db.drop();

const rows: { name: string; r: LoadResult; baseline?: LoadResult }[] = [
  { name: "raw Bun.serve  GET /health", r: rawHealth },
  { name: "REST door      GET /health", r: appHealth, baseline: rawHealth },
  { name: "raw Bun.serve  GET /teams/{id} (bearer)", r: rawRead },
  { name: "REST door      GET /teams/{id} (bearer)", r: appRead, baseline: rawRead },
  { name: "tRPC door      teams.get (bearer)", r: appTrpc, baseline: rawRead },
];
table(rows);

/** Counting a request (two label lookups in a map, a counter and a histogram) should not show. */
const METRICS_TARGET = 0.95;
console.log(`\nmetrics on (METRICS_TOKEN set) against off, same cases; target ratio >= ${METRICS_TARGET}`);
table([
  { name: "REST door      GET /health, metrics off", r: appHealth },
  { name: "REST door      GET /health, metrics on", r: meteredHealth, baseline: appHealth },
  { name: "REST door      GET /teams/{id}, metrics off", r: appRead },
  { name: "REST door      GET /teams/{id}, metrics on", r: meteredRead, baseline: appRead },
]);
for (const [name, on, off] of [
  ["GET /health", meteredHealth, appHealth],
  ["GET /teams/{id}", meteredRead, appRead],
] as const) {
  const ratio = on.rps / off.rps;
  console.log(
    `  ${name}: on/off ${ratio.toFixed(2)}   target >= ${METRICS_TARGET}   ${ratio >= METRICS_TARGET ? "ok" : "MISSED"}`,
  );
}
console.log(`  /metrics answered ${scraped.status} with ${series} http_requests_total series`);
console.log(`\nload tool: ${appRead.tool}`);
