/**
 * The peer benchmark: this service's browser flow (the launcher's: start .. poll) and its OpenID
 * Connect flow (authorize .. token) against the `oidc-provider` package's authorization code +
 * PKCE flow (bench/peer/oidc-provider.mjs: its in-memory adapter, a minimal interaction that
 * signs in and consents, on Node 22), each driven by the same loop of concurrent user agents
 * (8 by default) for the same time, in alternating phases so load from other work on the
 * machine weighs on all alike. Every flow is 6 HTTP requests.
 *
 *   node_modules/.bin/bun bench/oidc-peer.ts                 # the embedded default (PGlite)
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres node_modules/.bin/bun bench/oidc-peer.ts
 *
 * Node 22 comes from the npm registry (`npx -y node@22`, the `node` package's binary); the bench
 * asks it for its own path once and starts the peer with it directly.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../test/shared";
import { launcherClient, loginFlow } from "./lib/login-flow";
import { enableOidc, oidcFlow, peerFlow } from "./lib/oidc-flow";
import { benchDatabase, startTarget } from "./lib/targets";

const phaseSeconds = Number(process.env.BENCH_FLOW_SECONDS ?? 10);
const concurrency = Number(process.env.BENCH_FLOW_CONCURRENCY ?? 8);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const withOidc = process.env.BENCH_PEER_OIDC !== "0";

const node22 = Bun.spawnSync(["npx", "-y", "node@22", "-p", "process.execPath + ' ' + process.version"], {
  stderr: "inherit",
});
const [nodePath, nodeVersion] = node22.stdout.toString().trim().split(" ") as [string, string];
if (!nodeVersion?.startsWith("v22.")) throw new Error(`npx -y node@22 gave ${node22.stdout}`);

const dataDir = mkdtempSync(join(tmpdir(), "mcp-bench-"));
const db = await benchDatabase();
const app = await startTarget("src/main.ts", {
  DATA_DIR: dataDir,
  HOST: "127.0.0.1",
  LOG_LEVEL: "warn",
  DATABASE_URL: db.url,
  RATE_LIMIT_START_PER_MIN: "100000000",
  RATE_LIMIT_POLL_PER_MIN: "100000000",
  RATE_LIMIT_VALIDATE_PER_MIN: "100000000",
  PASSWORD_MEMORY_KIB: "4096",
  PASSWORD_TIME_COST: "1",
});
const { creds, accessToken } = await launcherClient(app.url);
const oidcClient = await enableOidc(app.url, creds, accessToken);

const peerPort = freePort();
const peerUrl = `http://127.0.0.1:${peerPort}`;
const peer = Bun.spawn([nodePath, "bench/peer/oidc-provider.mjs"], {
  env: { ...process.env, PORT: String(peerPort), NODE_ENV: "production" },
  stdout: "ignore",
  stderr: "pipe",
});
for (let i = 0; ; i++) {
  if (
    await fetch(`${peerUrl}/health`).then(
      (r) => r.ok,
      () => false,
    )
  )
    break;
  if (i > 300) throw new Error("the oidc-provider peer did not start");
  await Bun.sleep(100);
}

const ticks = (pid: number) => {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return Number(f[11]) + Number(f[12]);
};
interface Stats {
  flows: number;
  errors: number;
  seconds: number;
  cpuMs: number;
  lastError?: string;
}
type Case = "browser" | "oidc" | "peer";
const stats: Record<Case, Stats> = {
  browser: { flows: 0, errors: 0, seconds: 0, cpuMs: 0 },
  oidc: { flows: 0, errors: 0, seconds: 0, cpuMs: 0 },
  peer: { flows: 0, errors: 0, seconds: 0, cpuMs: 0 },
};
const perRound: Record<Case, number[]> = { browser: [], oidc: [], peer: [] };
const flowOf: Record<Case, (name: string) => Promise<unknown>> = {
  browser: (name) => loginFlow(app.url, creds, name),
  oidc: (name) => oidcFlow(app.url, oidcClient, name),
  peer: (name) => peerFlow(peerUrl, name),
};

async function phase(kind: Case, seconds: number, tag: string, into?: Stats) {
  const pid = kind === "peer" ? peer.pid : app.pid;
  const t0 = ticks(pid);
  let flows = 0;
  let errors = 0;
  const end = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, w) => {
      for (let i = 0; performance.now() < end; i++) {
        try {
          await flowOf[kind](`${tag}${w}_${i}`.slice(0, 16));
          flows++;
        } catch (err) {
          errors++;
          if (into) into.lastError = String(err);
        }
      }
    }),
  );
  if (!into) return;
  into.flows += flows;
  into.errors += errors;
  into.seconds += seconds;
  into.cpuMs += (ticks(pid) - t0) * 10;
  perRound[kind].push(flows / seconds);
}

const cases: Case[] = withOidc ? ["browser", "peer", "oidc"] : ["browser", "peer"];
const load0 = loadavg();
// Warm-up: JIT, prepared statements, caches, the ID token keys, on every side.
for (const c of cases) await phase(c, 2, `W${c[0]}`);
for (let r = 0; r < rounds; r++) {
  // Alternate the order too, so neither side always follows the other.
  const order = r % 2 ? [...cases].reverse() : cases;
  for (const c of order) await phase(c, phaseSeconds, `${c[0]}${r}_`, stats[c]);
  console.error(
    `round ${r + 1}: ${cases.map((c) => `${c} ${perRound[c].at(-1)!.toFixed(1)}/s`).join(", ")}; load ${loadavg()[0]!.toFixed(1)}`,
  );
}
const load1 = loadavg();
peer.kill("SIGTERM");
await peer.exited;
await app.stop();
rmSync(dataDir, { recursive: true, force: true });
await db.drop();

const rate = (s: Stats) => s.flows / s.seconds;
const line = (label: string, s: Stats, rs: number[]) =>
  `${label} ${rate(s).toFixed(1).padStart(6)} flows/s  [${rs.map((x) => x.toFixed(1)).join(", ")}]  server CPU per flow ${(s.cpuMs / s.flows).toFixed(2)} ms, errors ${s.errors}${s.lastError ? ` (${s.lastError.slice(0, 120)})` : ""}`;
console.log(
  `database: ${db.url ? "postgres" : "pglite (embedded default)"}; peer: oidc-provider ${JSON.parse(readFileSync("node_modules/oidc-provider/package.json", "utf8")).version} on Node ${nodeVersion}, in-memory adapter; ${concurrency} concurrent, ${rounds} alternating rounds of ${phaseSeconds}s per case; load average ${load0[0]!.toFixed(1)} -> ${load1[0]!.toFixed(1)} (1 min)`,
);
console.log(line("our browser flow (start .. poll)        ", stats.browser, perRound.browser));
if (withOidc) console.log(line("our OIDC flow (authorize .. token)      ", stats.oidc, perRound.oidc));
console.log(line("oidc-provider code + PKCE (auth .. token)", stats.peer, perRound.peer));
console.log(`browser flow / peer: ${(rate(stats.browser) / rate(stats.peer)).toFixed(2)}x (target >= 1.0)`);
if (withOidc) console.log(`OIDC flow / peer:    ${(rate(stats.oidc) / rate(stats.peer)).toFixed(2)}x`);
const stderr = await new Response(peer.stderr).text();
const problems = stderr.split("\n").filter((l) => l && !/oidc-provider (WARNING|NOTICE)/.test(l) && !/^\s/.test(l));
if (problems.length) console.log(`peer stderr: ${problems.slice(0, 5).join(" | ")}`);
process.exit(0);
