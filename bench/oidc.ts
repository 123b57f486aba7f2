/**
 * "Sign in with Minecraft" (OpenID Connect) benchmark: complete OIDC flows per second beside the
 * launcher's browser flow (bench/login.ts's flow) in the same run, phases alternating (and their
 * order too) so a burst of other work on the machine weighs on both alike; the app's CPU per
 * flow beside each. Then the token endpoint alone against a raw Bun.serve doing the same work
 * (bench/raw-oidc-token.ts: one prepared UPDATE of the grant by code hash, the same RS256
 * signature with jose), each redeeming codes prepared first, once each.
 *
 *   node_modules/.bin/bun bench/oidc.ts
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres node_modules/.bin/bun bench/oidc.ts
 *   BENCH_ONLY=flows | BENCH_ONLY=token ...
 *
 * Both flows are 6 HTTP requests: OIDC is authorize, provider page, sign-in, callback with the
 * chain (the consent page), approve, token (client_secret_basic, PKCE, RS256 ID token); the
 * browser flow has start where authorize is and poll where token is.
 *
 * On PostgreSQL the raw baseline runs beside the app and the token rounds alternate. PGlite is
 * one process per data directory: there the raw baseline opens it after the app has stopped,
 * on codes the app made just before (a code lives 60 s).
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { launcherClient, loginFlow } from "./lib/login-flow";
import { enableOidc, oidcCode, oidcFlow, redeem } from "./lib/oidc-flow";
import { benchDatabase, startTarget } from "./lib/targets";

const flowSeconds = Number(process.env.BENCH_FLOW_SECONDS ?? 10);
const concurrency = Number(process.env.BENCH_FLOW_CONCURRENCY ?? 8);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const wanted = Number(process.env.BENCH_CODES ?? 400);
const only = process.env.BENCH_ONLY;
const dataDir = mkdtempSync(join(tmpdir(), "mcp-bench-"));
const db = await benchDatabase();
const env = {
  DATA_DIR: dataDir,
  HOST: "127.0.0.1",
  LOG_LEVEL: "warn",
  DATABASE_URL: db.url,
  RATE_LIMIT_START_PER_MIN: "100000000",
  RATE_LIMIT_POLL_PER_MIN: "100000000",
  RATE_LIMIT_VALIDATE_PER_MIN: "100000000",
  RATE_LIMIT_GENERAL_PER_MIN: "100000000",
  PASSWORD_MEMORY_KIB: "4096",
  PASSWORD_TIME_COST: "1",
};
const profile = process.env.BENCH_PROFILE;
let app = await startTarget(
  "src/main.ts",
  env,
  profile ? ["--cpu-prof", `--cpu-prof-dir=${profile}`, "--cpu-prof-md"] : [],
);
const { creds, accessToken } = await launcherClient(app.url);
// BENCH_ALG=EdDSA: the client asks for EdDSA ID tokens (id_token_signed_response_alg) instead of RS256.
const alg = process.env.BENCH_ALG === "EdDSA" ? "EdDSA" : "RS256";
if (alg === "EdDSA" && only !== "flows")
  throw new Error("BENCH_ALG=EdDSA measures the flows only: set BENCH_ONLY=flows");
const client = await enableOidc(app.url, creds, accessToken, alg);
const load0 = loadavg()[0]!;

const ticks = (pid: number) => {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return Number(f[11]) + Number(f[12]);
};
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function run(kind: "browser" | "oidc", seconds: number) {
  let flows = 0;
  let errors = 0;
  const t0 = ticks(app.pid);
  const end = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, w) => {
      for (let i = 0; performance.now() < end; i++) {
        const name = `${kind[0]}${w}_${i}`.slice(0, 16);
        try {
          if (kind === "browser") await loginFlow(app.url, creds, name);
          else await oidcFlow(app.url, client, name);
          flows++;
        } catch {
          errors++;
        }
      }
    }),
  );
  return { rate: flows / seconds, errors, flows, cpuMs: (ticks(app.pid) - t0) * 10 };
}

const browser: number[] = [];
const oidc: number[] = [];
const cpu = { browser: { ms: 0, flows: 0 }, oidc: { ms: 0, flows: 0 } };
let errors = 0;
if (only !== "token") {
  // Warm both paths (JIT, prepared statements, the ID token keys).
  await run("browser", 2);
  await run("oidc", 2);
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 ? (["oidc", "browser"] as const) : (["browser", "oidc"] as const);
    const got: Record<string, Awaited<ReturnType<typeof run>>> = {};
    for (const k of order) got[k] = await run(k, flowSeconds);
    const b = got.browser!;
    const o = got.oidc!;
    console.error(
      `round ${r + 1}: browser ${b.rate.toFixed(1)}/s, oidc ${o.rate.toFixed(1)}/s; load ${loadavg()[0]!.toFixed(1)}`,
    );
    browser.push(b.rate);
    oidc.push(o.rate);
    cpu.browser.ms += b.cpuMs;
    cpu.browser.flows += b.flows;
    cpu.oidc.ms += o.cpuMs;
    cpu.oidc.flows += o.flows;
    errors += b.errors + o.errors;
  }
}

// The token endpoint alone: codes prepared first, then redeemed at `concurrency`, once each.
async function prepare(n: number) {
  const codes: { code: string; verifier: string }[] = [];
  while (codes.length < n)
    codes.push(
      ...(await Promise.all(
        Array.from({ length: concurrency }, (_, j) => oidcCode(app.url, client, `t${codes.length}_${j}`)),
      )),
    );
  return codes;
}
async function redeemAll(base: string, codes: { code: string; verifier: string }[]) {
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < codes.length) await redeem(`${base}/oidc/token`, client.basic, codes[next++]!);
    }),
  );
  return codes.length / ((performance.now() - t0) / 1000);
}
const appToken: number[] = [];
const rawToken: number[] = [];
if (only !== "flows") {
  if (db.url) {
    const raw = await startTarget("bench/raw-oidc-token.ts", env);
    await redeemAll(raw.url, await prepare(concurrency * 4));
    await redeemAll(app.url, await prepare(concurrency * 4));
    for (let r = 0; r < rounds; r++) {
      const forApp = await prepare(wanted);
      const forRaw = await prepare(wanted);
      if (r % 2) rawToken.push(await redeemAll(raw.url, forRaw));
      appToken.push(await redeemAll(app.url, forApp));
      if (!(r % 2)) rawToken.push(await redeemAll(raw.url, forRaw));
      console.error(`token round ${r + 1}: app ${appToken.at(-1)!.toFixed(0)}/s, raw ${rawToken.at(-1)!.toFixed(0)}/s`);
    }
    await raw.stop();
  } else {
    await redeemAll(app.url, await prepare(concurrency * 4));
    for (let r = 0; r < rounds; r++) appToken.push(await redeemAll(app.url, await prepare(wanted)));
    const warm = await prepare(concurrency * 4);
    const forRaw: { code: string; verifier: string }[][] = [];
    for (let r = 0; r < rounds; r++) forRaw.push(await prepare(wanted));
    await app.stop();
    const raw = await startTarget("bench/raw-oidc-token.ts", env);
    await redeemAll(raw.url, warm);
    for (const codes of forRaw) rawToken.push(await redeemAll(raw.url, codes));
    await raw.stop();
    app = { ...app, stop: async () => {} };
  }
}
await app.stop();
rmSync(dataDir, { recursive: true, force: true });
await db.drop();

console.log(
  `database: ${db.url ? "postgres" : "pglite"}; ${concurrency} concurrent; load average (1 min) ${load0.toFixed(1)} -> ${loadavg()[0]!.toFixed(1)}`,
);
if (only !== "token") {
  const b = median(browser);
  const o = median(oidc);
  console.log(`flows: ${flowSeconds}s per case, median of ${rounds} alternating rounds; errors ${errors}`);
  console.log(
    `  browser flow (launcher: start .. poll)   ${b.toFixed(1)} flows/s  [${browser.map((x) => x.toFixed(1)).join(", ")}]  app CPU per flow ${(cpu.browser.ms / cpu.browser.flows).toFixed(2)} ms`,
  );
  console.log(
    `  OIDC flow (authorize .. token, ${alg.padEnd(6)})   ${o.toFixed(1)} flows/s  [${oidc.map((x) => x.toFixed(1)).join(", ")}]  app CPU per flow ${(cpu.oidc.ms / cpu.oidc.flows).toFixed(2)} ms`,
  );
  console.log(
    `  OIDC / browser: ${(o / b).toFixed(2)}x (target >= 0.8); by CPU per flow ${(cpu.browser.ms / cpu.browser.flows / (cpu.oidc.ms / cpu.oidc.flows)).toFixed(2)}x`,
  );
}
if (only !== "flows") {
  const a = median(appToken);
  const r = median(rawToken);
  console.log(
    `token endpoint alone (${wanted} codes per round, Basic + PKCE + RS256 ID token), median of ${rounds}${db.url ? " alternating rounds" : "; raw after the app (PGlite: one process per data directory)"}:`,
  );
  console.log(
    `  raw Bun.serve (one prepared UPDATE + jose)  ${r.toFixed(0)} req/s  [${rawToken.map((x) => x.toFixed(0)).join(", ")}]`,
  );
  console.log(
    `  /oidc/token                                  ${a.toFixed(0)} req/s  [${appToken.map((x) => x.toFixed(0)).join(", ")}]`,
  );
  console.log(`  app / raw: ${(a / r).toFixed(2)}x`);
}
process.exit(0);
