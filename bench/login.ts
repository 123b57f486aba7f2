/**
 * ms_auth benchmark: POST /client/ms-auth/session/validate and /poll through the REST door and
 * /trpc, against a raw Bun.serve baseline (bench/raw-login-baseline.ts) that does the same work
 * with one joined, prepared query and nothing of the app, on the same database in the same run;
 * then complete login flows per second against the development identity provider (start,
 * provider page, sign-in, callback with the chain, consent, approve, poll).
 *
 *   node_modules/.bin/bun bench/login.ts
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres node_modules/.bin/bun bench/login.ts
 *   REDIS_URL=redis://127.0.0.1:6379 DATABASE_URL=... node_modules/.bin/bun bench/login.ts   # counters in Redis
 *   BENCH_ONLY=flows ...   # the complete flows alone (e.g. with BENCH_PROFILE, so the profile is theirs only)
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { load, table, type LoadResult } from "./lib/load";
import { deviceLoginFlow, launcherClient, loginFlow } from "./lib/login-flow";
import { benchDatabase, startTarget } from "./lib/targets";

const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
const flowSeconds = Number(process.env.BENCH_FLOW_SECONDS ?? 10);
const flowConcurrency = Number(process.env.BENCH_FLOW_CONCURRENCY ?? 8);
const dataDir = mkdtempSync(join(tmpdir(), "mcp-bench-"));
const db = await benchDatabase();
const env = {
  DATA_DIR: dataDir,
  HOST: "127.0.0.1",
  LOG_LEVEL: "warn",
  DATABASE_URL: db.url,
  // The limiter still counts every request; the limits are raised so the load is not refused.
  RATE_LIMIT_START_PER_MIN: "100000000",
  RATE_LIMIT_POLL_PER_MIN: "100000000",
  RATE_LIMIT_VALIDATE_PER_MIN: "100000000",
  PASSWORD_MEMORY_KIB: "4096",
  PASSWORD_TIME_COST: "1",
};

// BENCH_PROFILE=<dir>: the app writes a CPU profile there (bun --cpu-prof) when it stops.
const profile = process.env.BENCH_PROFILE;
const app = await startTarget(
  "src/main.ts",
  env,
  profile ? ["--cpu-prof", `--cpu-prof-dir=${profile}`, "--cpu-prof-md"] : [],
);
const { creds } = await launcherClient(app.url);
const { token, requestId } = await loginFlow(app.url, creds, "BenchPlayer");

const validateBody = { ...creds, svc_session_token: token };
const assertionBody = { ...validateBody, assertion: true };
const pollBody = { ...creds, auth_request_id: requestId };
const opts = { seconds, connections, method: "POST" as const };
const flowsOnly = process.env.BENCH_ONLY === "flows";
const rounds = flowsOnly ? 0 : Number(process.env.BENCH_ROUNDS ?? 3);
console.log(
  `database: ${db.url ? "postgres" : "pglite"}; rate-limit counters: ${process.env.REDIS_URL ? "redis" : db.url ? "database, batched" : "memory"}; ${connections} connections, ${seconds}s per case, median of ${rounds} interleaved rounds`,
);

// On PostgreSQL the raw baseline runs beside the app, and the cases alternate round by round,
// so a burst of other work on the machine weighs on both sides alike. PGlite is one process
// per data directory: there the baseline runs after the app has stopped.
let raw = db.url && !flowsOnly ? await startTarget("bench/raw-login-baseline.ts", env) : undefined;
const cases = {
  rawValidate: [] as LoadResult[],
  appValidate: [] as LoadResult[],
  trpcValidate: [] as LoadResult[],
  assertValidate: [] as LoadResult[],
  rawPoll: [] as LoadResult[],
  appPoll: [] as LoadResult[],
  trpcPoll: [] as LoadResult[],
};
const median = (rs: LoadResult[]) => [...rs].sort((a, b) => a.rps - b.rps)[Math.floor(rs.length / 2)]!;
const measureRaw = async (base: string) => {
  cases.rawValidate.push(await load({ url: `${base}/client/ms-auth/session/validate`, body: validateBody, ...opts }));
  cases.rawPoll.push(await load({ url: `${base}/client/ms-auth/poll`, body: pollBody, ...opts }));
};
if (!flowsOnly)
  await load({ url: `${app.url}/client/ms-auth/session/validate`, body: validateBody, ...opts, seconds: 1 });
if (raw) await load({ url: `${raw.url}/client/ms-auth/session/validate`, body: validateBody, ...opts, seconds: 1 });
for (let r = 0; r < rounds; r++) {
  if (raw) await measureRaw(raw.url);
  cases.appValidate.push(
    await load({ url: `${app.url}/client/ms-auth/session/validate`, body: validateBody, ...opts }),
  );
  cases.trpcValidate.push(await load({ url: `${app.url}/trpc/msAuth.validate`, body: validateBody, ...opts }));
  cases.assertValidate.push(
    await load({ url: `${app.url}/client/ms-auth/session/validate`, body: assertionBody, ...opts }),
  );
  cases.appPoll.push(await load({ url: `${app.url}/client/ms-auth/poll`, body: pollBody, ...opts }));
  cases.trpcPoll.push(await load({ url: `${app.url}/trpc/msAuth.poll`, body: pollBody, ...opts }));
}

// Complete flows: concurrent loops of the whole login for a fixed time. The browser flow and
// the device flow run in alternating phases (BENCH_FLOW_ROUNDS of each), so a burst of other
// work on the machine weighs on both alike; their ratio is the device flow's figure.
// CPU per flow, so runs on a busy machine compare: the app's process, this load generator, and
// (PostgreSQL) the server backends of the bench's database.
const ticks = (pid: number) => {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    return Number(f[11]) + Number(f[12]);
  } catch {
    return 0;
  }
};
const backendPids = async () => {
  if (!db.url) return [];
  const sql = postgres(db.url, { max: 1, onnotice: () => {} });
  const rows = await sql<
    { pid: number }[]
  >`select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`;
  await sql.end();
  return rows.map((r) => r.pid);
};
interface FlowStats {
  flows: number;
  errors: number;
  lat: number[];
  seconds: number;
  appCpuMs: number;
  selfCpuMs: number;
  pgCpuMs: number;
}
const newStats = (): FlowStats => ({ flows: 0, errors: 0, lat: [], seconds: 0, appCpuMs: 0, selfCpuMs: 0, pgCpuMs: 0 });
const TICK_MS = 1000 / 100;
async function flowPhase(run: typeof loginFlow, seconds: number, into: FlowStats, tag: string) {
  const before = {
    app: ticks(app.pid),
    self: process.cpuUsage(),
    pg: new Map((await backendPids()).map((p) => [p, ticks(p)])),
  };
  const end = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: flowConcurrency }, async (_, w) => {
      for (let i = 0; performance.now() < end; i++) {
        const t = performance.now();
        try {
          await run(app.url, creds, `${tag}${w}_${i}`.slice(0, 16));
          into.flows++;
          into.lat.push(performance.now() - t);
        } catch {
          into.errors++;
        }
      }
    }),
  );
  into.seconds += seconds;
  into.appCpuMs += (ticks(app.pid) - before.app) * TICK_MS;
  const u = process.cpuUsage(before.self);
  into.selfCpuMs += (u.user + u.system) / 1000;
  for (const pid of await backendPids()) into.pgCpuMs += (ticks(pid) - (before.pg.get(pid) ?? 0)) * TICK_MS;
}
const flowRounds = Number(process.env.BENCH_FLOW_ROUNDS ?? 2);
const browserFlows = newStats();
const deviceFlows = newStats();
// A short warm-up of the device flow's own code (the QR code library is loaded on first use).
await flowPhase(deviceLoginFlow, 1, newStats(), "W");
for (let r = 0; r < flowRounds; r++) {
  await flowPhase(loginFlow, flowSeconds / flowRounds, browserFlows, `B${r}_`);
  await flowPhase(deviceLoginFlow, flowSeconds / flowRounds, deviceFlows, `D${r}_`);
}
await app.stop();

const rate = (s: FlowStats) => s.flows / s.seconds;
const describeFlows = (s: FlowStats) => {
  s.lat.sort((a, b) => a - b);
  return (
    `${rate(s).toFixed(1)} flows/s, p50 ${s.lat[Math.floor(s.lat.length / 2)]?.toFixed(1)} ms, p99 ${s.lat[Math.floor(s.lat.length * 0.99)]?.toFixed(1)} ms, errors ${s.errors}` +
    `; CPU per flow: app ${(s.appCpuMs / s.flows).toFixed(2)} ms, load generator ${(s.selfCpuMs / s.flows).toFixed(2)} ms${db.url ? `, postgres backends ${(s.pgCpuMs / s.flows).toFixed(2)} ms` : ""}`
  );
};
const printFlows = () =>
  console.log(
    `\ncomplete login flows, ${flowConcurrency} concurrent, ${flowRounds} alternating phases of each, ${flowSeconds}s each in all (the chain's 5 calls to the built-in development provider ${process.env.DEV_IDP_CHAIN_IN_PROCESS === "false" ? "over HTTP through the app" : "in process"}):` +
      `\n  browser flow (start, provider page, sign-in, callback with the chain, consent, approve, poll): ${describeFlows(browserFlows)}` +
      `\n  device flow  (start with a code and its QR code, code page, code entry, then the same): ${describeFlows(deviceFlows)}` +
      `\n  device / browser: ${(rate(deviceFlows) / rate(browserFlows)).toFixed(2)} (target >= 0.8)`,
  );
if (flowsOnly) {
  rmSync(dataDir, { recursive: true, force: true });
  await db.drop();
  printFlows();
  process.exit(0);
}
if (!raw) {
  raw = await startTarget("bench/raw-login-baseline.ts", env);
  await load({ url: `${raw.url}/client/ms-auth/session/validate`, body: validateBody, ...opts, seconds: 1 });
  for (let r = 0; r < rounds; r++) await measureRaw(raw.url);
}
await raw.stop();
rmSync(dataDir, { recursive: true, force: true });
await db.drop();

const [rawValidate, appValidate, trpcValidate, rawPoll, appPoll, trpcPoll] = [
  cases.rawValidate,
  cases.appValidate,
  cases.trpcValidate,
  cases.rawPoll,
  cases.appPoll,
  cases.trpcPoll,
].map(median) as [LoadResult, LoadResult, LoadResult, LoadResult, LoadResult, LoadResult];
const assertValidate = median(cases.assertValidate);
const rows: { name: string; r: LoadResult; baseline?: LoadResult }[] = [
  { name: "raw Bun.serve  session/validate", r: rawValidate },
  { name: "REST door      session/validate", r: appValidate, baseline: rawValidate },
  { name: "tRPC door      msAuth.validate", r: trpcValidate, baseline: rawValidate },
  { name: "REST door      validate + assertion", r: assertValidate, baseline: rawValidate },
  { name: "raw Bun.serve  poll (authorized)", r: rawPoll },
  { name: "REST door      poll (authorized)", r: appPoll, baseline: rawPoll },
  { name: "tRPC door      msAuth.poll (authorized)", r: trpcPoll, baseline: rawPoll },
];
table(rows);
console.log(
  `\ntargets: REST/raw >= 1.0 (validate ${(appValidate.rps / rawValidate.rps).toFixed(2)}, poll ${(appPoll.rps / rawPoll.rps).toFixed(2)}); ` +
    `tRPC/REST >= 0.9 (validate ${(trpcValidate.rps / appValidate.rps).toFixed(2)}, poll ${(trpcPoll.rps / appPoll.rps).toFixed(2)}); ` +
    `flows >= 300/s (${rate(browserFlows).toFixed(1)}); ` +
    `validate with assertion / without >= 0.9 (${(assertValidate.rps / appValidate.rps).toFixed(2)}: the session's assertion is reused, not signed per call)`,
);
printFlows();
console.log(`load tool: ${appValidate.tool}`);
