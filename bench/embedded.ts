/**
 * The embedded default (PGlite), side by side in one run:
 * - idle RSS of a bare PGlite in Bun (PostgreSQL's default 128 MB shared buffers, then the
 *   app's setting) and of the app itself, on a first start (initdb) and on a restart;
 * - session/validate through the REST door against a raw Bun.serve doing the same work with
 *   one hand-written joined PGlite query (bench/raw-embedded.ts), and /health against a raw
 *   constant answer.
 *
 *   node_modules/.bin/bun bench/embedded.ts
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PGLITE_SHARED_BUFFERS } from "../src/db/client";
import { load, table } from "./lib/load";
import { launcherClient, loginFlow } from "./lib/login-flow";
import { startTarget } from "./lib/targets";

const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
const IDLE_MS = 3000;
const mib = (kib: number) => (kib / 1024).toFixed(0);
const rssKiB = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]);

/** A bare PGlite in its own Bun process on an initialised directory: RSS after a few queries and an idle pause. */
async function barePglite(dir: string, sharedBuffers?: string) {
  const script = `
    import { PGlite } from "@electric-sql/pglite";
    const opts = ${sharedBuffers ? `{ startParams: [...PGlite.defaultStartParams, "-c", "shared_buffers=${sharedBuffers}"] }` : "{}"};
    const db = await PGlite.create(${JSON.stringify(dir)}, opts);
    for (let i = 0; i < 100; i++) await db.query("select $1::int + 1", [i]);
    Bun.gc(true);
    await Bun.sleep(${IDLE_MS});
    console.log(/VmRSS:\\s+(\\d+)/.exec(await Bun.file("/proc/self/status").text())[1]);
    await db.close();`;
  const proc = Bun.spawn([process.execPath, "-e", script], {
    cwd: join(import.meta.dir, ".."),
    stdout: "pipe",
    stderr: "inherit",
  });
  const out = await new Response(proc.stdout).text();
  await proc.exited;
  return Number(out.trim());
}

const bareDir = mkdtempSync(join(tmpdir(), "mcp-bench-bare-"));
await barePglite(bareDir); // initdb, not measured
const bareDefault = await barePglite(bareDir);
const bareSmall = await barePglite(bareDir, PGLITE_SHARED_BUFFERS);
rmSync(bareDir, { recursive: true, force: true });

const dataDir = mkdtempSync(join(tmpdir(), "mcp-bench-embedded-"));
const env = {
  DATA_DIR: dataDir,
  HOST: "127.0.0.1",
  LOG_LEVEL: "warn",
  DATABASE_URL: "",
  RATE_LIMIT_START_PER_MIN: "100000000",
  RATE_LIMIT_POLL_PER_MIN: "100000000",
  RATE_LIMIT_VALIDATE_PER_MIN: "100000000",
  PASSWORD_MEMORY_KIB: "4096",
  PASSWORD_TIME_COST: "1",
};

let app = await startTarget("src/main.ts", env);
await Bun.sleep(IDLE_MS);
const appFirst = rssKiB(app.pid);
const { creds } = await launcherClient(app.url);
const { token } = await loginFlow(app.url, creds, "EmbeddedBench");
await app.stop();
app = await startTarget("src/main.ts", env);
await Bun.sleep(IDLE_MS);
const appIdle = rssKiB(app.pid);

const body = { ...creds, svc_session_token: token };
const opts = { seconds, connections, method: "POST" as const, body };
await load({ ...opts, url: `${app.url}/client/ms-auth/session/validate`, seconds: 1 });
const appValidate = await load({ ...opts, url: `${app.url}/client/ms-auth/session/validate` });
const appHealth = await load({ seconds, connections, url: `${app.url}/health` });
const appAfter = rssKiB(app.pid);
await app.stop();

const raw = await startTarget("bench/raw-embedded.ts", env);
await load({ ...opts, url: `${raw.url}/client/ms-auth/session/validate`, seconds: 1 });
const rawValidate = await load({ ...opts, url: `${raw.url}/client/ms-auth/session/validate` });
const rawHealth = await load({ seconds, connections, url: `${raw.url}/health` });
await raw.stop();
rmSync(dataDir, { recursive: true, force: true });

console.log(`PGlite; ${connections} connections, ${seconds}s per case; RSS after ${IDLE_MS / 1000} s idle\n`);
console.log(`bare PGlite in Bun, default shared_buffers (128MB)   ${mib(bareDefault)} MiB`);
console.log(`bare PGlite in Bun, shared_buffers=${PGLITE_SHARED_BUFFERS}            ${mib(bareSmall)} MiB`);
console.log(`app, first start on an empty DATA_DIR (initdb)     ${mib(appFirst)} MiB`);
console.log(`app, restarted on its DATA_DIR (target < 200)      ${mib(appIdle)} MiB`);
console.log(`app, after the load below                          ${mib(appAfter)} MiB\n`);
table([
  { name: "raw Bun.serve + 1 PGlite query  validate", r: rawValidate },
  { name: "REST door  session/validate (target 0.8)", r: appValidate, baseline: rawValidate },
  { name: "raw Bun.serve  constant /health", r: rawHealth },
  { name: "REST door  GET /health", r: appHealth, baseline: rawHealth },
]);
console.log(`load tool: ${appValidate.tool}`);
const verdict = (ok: boolean) => (ok ? "met" : "not met");
const validateRatio = appValidate.rps / rawValidate.rps;
console.log(
  `\ntargets: idle RSS under 200 MiB: first start ${mib(appFirst)} MiB (${verdict(appFirst < 200 * 1024)}), ` +
    `restart ${mib(appIdle)} MiB (${verdict(appIdle < 200 * 1024)}); ` +
    `validate at least 0.8x the raw baseline: ${validateRatio.toFixed(2)}x (${verdict(validateRatio >= 0.8)})`,
);
