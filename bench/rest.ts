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
import { Metrics } from "../src/lib/metrics";
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

// Metrics on against off: two instances side by side (each its own PGlite dir or the same
// PostgreSQL database), measured in alternating short rounds so drifting load on a shared
// machine falls on both alike; the median round of each is compared.
const METRICS_TOKEN = "bench-metrics-token-0123456789";
const rounds = Number(process.env.BENCH_METRICS_ROUNDS ?? 5);
const roundSeconds = Math.max(1, Math.round(seconds / 2));
const side = async (extra: Record<string, string>, tag: string) => {
  const dir = mkdtempSync(join(tmpdir(), "mcp-bench-"));
  const t = await startTarget("src/main.ts", { ...env, DATA_DIR: dir, ...extra });
  const email = `bench-${tag}@example.test`;
  await post(t.url, "/auth/signup", { email, password: "bench password" });
  const { access_token } = await post(t.url, "/auth/login", { email, password: "bench password" });
  const { team_id } = await post(t.url, "/teams", { name: "bench" }, access_token);
  await load({ url: `${t.url}/health`, seconds: 1, connections });
  return { t, dir, headers: { authorization: `Bearer ${access_token}` }, read: `${t.url}/teams/${team_id}` };
};
const off = await side({}, "off");
const on = await side({ METRICS_TOKEN }, "on");
const runs = {
  offHealth: [] as LoadResult[],
  onHealth: [] as LoadResult[],
  offRead: [] as LoadResult[],
  onRead: [] as LoadResult[],
};
const o = { seconds: roundSeconds, connections };
for (let i = 0; i < rounds; i++) {
  // Alternate which goes first, too.
  const pair = i % 2 ? [on, off] : [off, on];
  for (const x of pair)
    (x === on ? runs.onHealth : runs.offHealth).push(await load({ url: `${x.t.url}/health`, ...o }));
  for (const x of pair)
    (x === on ? runs.onRead : runs.offRead).push(await load({ url: x.read, headers: x.headers, ...o }));
}
const scraped = await fetch(`${on.t.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
const series = (await scraped.text()).split("\n").filter((l) => l.startsWith("http_requests_total{")).length;
for (const x of [off, on]) {
  await x.t.stop();
  rmSync(x.dir, { recursive: true, force: true });
}
const median = (rs: LoadResult[]) => [...rs].sort((a, b) => a.rps - b.rps)[Math.floor(rs.length / 2)]!;
const meteredHealth = median(runs.onHealth);
const unmeteredHealth = median(runs.offHealth);
const meteredRead = median(runs.onRead);
const unmeteredRead = median(runs.offRead);

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
console.log(
  `\nmetrics on (METRICS_TOKEN set) against off: median of ${rounds} alternating ${roundSeconds}s rounds each; target ratio >= ${METRICS_TARGET}`,
);
table([
  { name: "REST door      GET /health, metrics off", r: unmeteredHealth },
  { name: "REST door      GET /health, metrics on", r: meteredHealth, baseline: unmeteredHealth },
  { name: "REST door      GET /teams/{id}, metrics off", r: unmeteredRead },
  { name: "REST door      GET /teams/{id}, metrics on", r: meteredRead, baseline: unmeteredRead },
]);
for (const [name, on, off] of [
  ["GET /health", meteredHealth, unmeteredHealth],
  ["GET /teams/{id}", meteredRead, unmeteredRead],
] as const) {
  const ratio = on.rps / off.rps;
  console.log(
    `  ${name}: on/off ${ratio.toFixed(2)}   target >= ${METRICS_TARGET}   ${ratio >= METRICS_TARGET ? "ok" : "MISSED"}`,
  );
}
console.log(`  /metrics answered ${scraped.status} with ${series} http_requests_total series`);
// What the edge adds per request with metrics on, measured alone (steadier than req/s here).
const counting = new Metrics();
const calls = 1_000_000;
const started = performance.now();
for (let i = 0; i < calls; i++) counting.request("rest", "/health", "GET", 200, (i % 100) / 10_000);
const perCallNs = ((performance.now() - started) * 1e6) / calls;
console.log(
  `  counting one request (in process): ${perCallNs.toFixed(0)} ns   target < 500 ns   ${perCallNs < 500 ? "ok" : "MISSED"}`,
);

console.log(`\nload tool: ${appRead.tool}`);
