/**
 * "Sign in with Minecraft" (OpenID Connect) benchmark: complete OIDC flows per second beside the
 * launcher's browser flow (bench/login.ts's flow) in the same run, rounds interleaved so a burst
 * of other work on the machine weighs on both alike; then the token endpoint alone (codes
 * prepared first, each redeemed once).
 *
 *   node_modules/.bin/bun bench/oidc.ts
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres node_modules/.bin/bun bench/oidc.ts
 *
 * An OIDC flow: authorize, provider page, sign-in, callback with the chain, consent, approve,
 * token (client_secret_basic, PKCE, RS256 ID token): 7 HTTP requests; the browser flow has 6.
 */
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { hiddenFields } from "../test/shared";
import { call, launcherClient, loginFlow } from "./lib/login-flow";
import { benchDatabase, startTarget } from "./lib/targets";

const flowSeconds = Number(process.env.BENCH_FLOW_SECONDS ?? 8);
const concurrency = Number(process.env.BENCH_FLOW_CONCURRENCY ?? 8);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
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
const app = await startTarget("src/main.ts", env);
const { creds, accessToken } = await launcherClient(app.url);
const redirectUri = "http://127.0.0.1:9/cb";
await call(
  app.url,
  "POST",
  `/client/apps/${creds.client_id}/modules/oidc`,
  { redirect_uris: [redirectUri] },
  accessToken,
);
const basic = `Basic ${Buffer.from(`${creds.client_id}:${creds.client_secret}`).toString("base64")}`;

/** The browser's part up to the code: authorize, provider, callback, consent, approve. */
async function oidcCode(base: string, name: string) {
  const verifier = randomBytes(32).toString("base64url");
  const q = new URLSearchParams({
    response_type: "code",
    client_id: creds.client_id,
    redirect_uri: redirectUri,
    scope: "openid profile",
    state: randomBytes(8).toString("hex"),
    nonce: randomBytes(8).toString("hex"),
    code_challenge: createHash("sha256").update(verifier).digest("base64url"),
    code_challenge_method: "S256",
  });
  const authorized = await fetch(`${base}/oidc/authorize?${q}`, { redirect: "manual" });
  const idpUrl = authorized.headers.get("location")!;
  const page = await (await fetch(idpUrl)).text();
  const submitted = await fetch(idpUrl.split("?")[0]!, {
    method: "POST",
    body: new URLSearchParams({ ...hiddenFields(page), username: name, outcome: "success" }),
    redirect: "manual",
  });
  const callback = await fetch(submitted.headers.get("location")!, { redirect: "manual" });
  const consent = await callback.text();
  const cookie = callback.headers.get("set-cookie")!.split(";")[0]!;
  const fields = hiddenFields(consent);
  const approved = await fetch(`${base}/client/ms-auth/authorize`, {
    method: "POST",
    headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ ...fields, decision: "approve" }),
    redirect: "manual",
  });
  const code = new URL(approved.headers.get("location")!).searchParams.get("code");
  if (!code) throw new Error(`no code: ${approved.status}`);
  return { code, verifier };
}

async function redeem(base: string, c: { code: string; verifier: string }) {
  const res = await fetch(`${base}/oidc/token`, {
    method: "POST",
    headers: { authorization: basic, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "authorization_code",
      code: c.code,
      redirect_uri: redirectUri,
      code_verifier: c.verifier,
    }),
  });
  if (res.status !== 200) throw new Error(`token: ${res.status} ${await res.text()}`);
  await res.json();
}

async function run(kind: "browser" | "oidc") {
  let flows = 0;
  let errors = 0;
  const end = performance.now() + flowSeconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, w) => {
      for (let i = 0; performance.now() < end; i++) {
        const name = `${kind[0]}${w}_${i}`.slice(0, 16);
        try {
          if (kind === "browser") await loginFlow(app.url, creds, name);
          else await redeem(app.url, await oidcCode(app.url, name));
          flows++;
        } catch {
          errors++;
        }
      }
    }),
  );
  return { rate: flows / flowSeconds, errors };
}

// Warm both paths (JIT, prepared statements, the ID token keys).
await run("browser");
await run("oidc");
const browser: number[] = [];
const oidc: number[] = [];
let errors = 0;
for (let r = 0; r < rounds; r++) {
  const b = await run("browser");
  const o = await run("oidc");
  console.error(`round ${r + 1}: browser ${b.rate.toFixed(1)}/s, oidc ${o.rate.toFixed(1)}/s`);
  browser.push(b.rate);
  oidc.push(o.rate);
  errors += b.errors + o.errors;
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

// The token endpoint alone: codes prepared first, then redeemed at `concurrency`.
const codes: { code: string; verifier: string }[] = [];
const wanted = Number(process.env.BENCH_CODES ?? 400);
for (let i = 0; codes.length < wanted; i++)
  codes.push(...(await Promise.all(Array.from({ length: 8 }, (_, j) => oidcCode(app.url, `t${i}_${j}`)))));
const t0 = performance.now();
let next = 0;
await Promise.all(
  Array.from({ length: concurrency }, async () => {
    while (next < codes.length) await redeem(app.url, codes[next++]!);
  }),
);
const tokenRate = codes.length / ((performance.now() - t0) / 1000);
await app.stop();
rmSync(dataDir, { recursive: true, force: true });
await db.drop();

const b = median(browser);
const o = median(oidc);
console.log(
  `database: ${db.url ? "postgres" : "pglite"}; ${concurrency} concurrent, ${flowSeconds}s per case, median of ${rounds} interleaved rounds; errors ${errors}`,
);
console.log(
  `browser flow (launcher: start .. poll)       ${b.toFixed(1)} flows/s  [${browser.map((x) => x.toFixed(1)).join(", ")}]`,
);
console.log(
  `OIDC flow (authorize .. token, RS256)        ${o.toFixed(1)} flows/s  [${oidc.map((x) => x.toFixed(1)).join(", ")}]`,
);
console.log(`OIDC / browser: ${(o / b).toFixed(2)}x (target >= 0.8)`);
console.log(
  `token endpoint alone (${codes.length} codes, Basic + PKCE + RS256 ID token): ${tokenRate.toFixed(0)} req/s`,
);
