/**
 * Webhook delivery: events emitted at a steady rate (default 1,000 a second), each fanned out
 * to 10 endpoints on loopback, delivered by the platform (queue rows, claim with SKIP LOCKED,
 * sign, POST, record), next to a baseline in the same run: a bare loop that signs the same
 * bodies and POSTs them with fetch at the same rate and concurrency, no database.
 * Latency is from the moment the event is emitted to its arrival at the receiver.
 *
 *   bun bench/webhooks.ts                     # PGlite in a temp dir
 *   DATABASE_URL=postgres://... bun bench/webhooks.ts
 *   BENCH_SECONDS=10 BENCH_RATE=1000 BENCH_ENDPOINTS=10 WEBHOOK_CONCURRENCY=64 bun bench/webhooks.ts
 *   WEBHOOK_ENDPOINT_CONCURRENCY=16 bun bench/webhooks.ts   # each endpoint's share (default 4)
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServer } from "../src/app";
import { auditAs } from "../src/audit/scope";
import { loadConfig } from "../src/config";
import { teams } from "../src/db/schema";
import { createLogger } from "../src/lib/log";
import { newWebhookSecret, signedHeaders } from "../src/webhooks/signing";
import { benchDatabase } from "./lib/targets";

const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const rate = Number(process.env.BENCH_RATE ?? 1000);
const endpoints = Number(process.env.BENCH_ENDPOINTS ?? 10);
const concurrency = Number(process.env.WEBHOOK_CONCURRENCY ?? 64);
const TARGET = { deliveriesPerSecond: rate * endpoints, p99Ms: 1000 };

// The receivers run in a process of their own, so they do not share an event loop with the sender.
const receiverHost = Bun.spawn(
  [
    process.execPath,
    "-e",
    `let lat = [], ids = new Set(), count = 0, last = 0;
     const servers = Array.from({ length: ${endpoints} }, () => Bun.serve({ port: 0, hostname: "127.0.0.1", async fetch(req) {
       const body = JSON.parse(await req.text());
       const now = Date.now();
       lat.push(now - body.data.sent_at); ids.add(req.headers.get("webhook-id") + " " + req.url); count++; last = now;
       return new Response("ok");
     } }));
     const control = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch(req) {
       if (new URL(req.url).pathname === "/reset") { lat = []; ids = new Set(); count = 0; last = 0; return new Response("ok"); }
       lat.sort((a, b) => a - b);
       const q = (p) => lat.length ? lat[Math.min(lat.length - 1, Math.floor(p * lat.length))] : null;
       return Response.json({ count, distinct: ids.size, p50: q(0.5), p99: q(0.99), max: lat.at(-1) ?? null, last });
     } });
     console.log(JSON.stringify({ ports: servers.map((s) => s.port), control: control.port }));`,
  ],
  { stdout: "pipe", stderr: "inherit" },
);
const reader = receiverHost.stdout.getReader();
let line = "";
while (!line.includes("\n")) {
  const { value, done } = await reader.read();
  if (done) throw new Error("receiver host exited");
  line += new TextDecoder().decode(value);
}
const { ports, control } = JSON.parse(line) as { ports: number[]; control: number };
const urls = ports.map((p) => `http://127.0.0.1:${p}/hook`);
const stats = () =>
  fetch(`http://127.0.0.1:${control}/stats`).then(
    (r) =>
      r.json() as Promise<{ count: number; distinct: number; p50: number; p99: number; max: number; last: number }>,
  );
const reset = () => fetch(`http://127.0.0.1:${control}/reset`);

/** Calls `emit(i)` `rate` times a second for `seconds`, in 10 ms ticks; returns when the last is emitted. */
async function paced(emit: (i: number) => Promise<unknown>) {
  const total = Math.round(rate * seconds);
  const perTick = rate / 100;
  const start = performance.now();
  let sent = 0;
  const pending: Promise<unknown>[] = [];
  while (sent < total) {
    const due = Math.min(total, Math.floor(((performance.now() - start) / 10 + 1) * perTick));
    while (sent < due) pending.push(emit(sent++));
    await Bun.sleep(Math.max(0, start + (sent / perTick) * 10 - performance.now()));
  }
  await Promise.all(pending);
  return { total, emitSeconds: (performance.now() - start) / 1000 };
}

/** Waits for `n` receipts (or for arrivals to stop for 10 s) and reports the run. */
async function finish(name: string, n: number, startedAt: number) {
  let s = await stats();
  let lastCount = -1;
  let still = Date.now();
  while (s.count < n) {
    if (s.count !== lastCount) {
      lastCount = s.count;
      still = Date.now();
    } else if (Date.now() - still > 10_000) break;
    await Bun.sleep(100);
    s = await stats();
  }
  const wall = (s.last - startedAt) / 1000;
  return {
    name,
    delivered: s.count,
    expected: n,
    distinct: s.distinct,
    perSecond: s.count / wall,
    p50: s.p50,
    p99: s.p99,
  };
}

// --- baseline: sign and POST with fetch, same rate, same concurrency, no database ---
const secret = newWebhookSecret();
let inflight = 0;
const waiters: (() => void)[] = [];
async function slot<T>(fn: () => Promise<T>): Promise<T> {
  while (inflight >= concurrency) await new Promise<void>((r) => waiters.push(r));
  inflight++;
  try {
    return await fn();
  } finally {
    inflight--;
    waiters.shift()?.();
  }
}
await reset();
const baseStart = Date.now();
await paced(async (i) => {
  const id = `msg_base_${i}`;
  const body = JSON.stringify({
    type: "webhook.test",
    timestamp: new Date().toISOString(),
    data: { i, sent_at: Date.now() },
  });
  const headers = {
    ...signedHeaders([secret], id, Math.floor(Date.now() / 1000), body),
    "content-type": "application/json",
  };
  await Promise.all(
    urls.map((url) =>
      slot(() => fetch(url, { method: "POST", body, headers, redirect: "manual" }).then((r) => r.text())),
    ),
  );
});
const baseline = await finish("bare fetch loop (sign + POST)", rate * seconds * endpoints, baseStart);

// --- the platform ---
const dataDir = mkdtempSync(join(tmpdir(), "mcp-bench-webhooks-"));
const db = await benchDatabase();
const config = loadConfig({
  DATA_DIR: dataDir,
  DATABASE_URL: db.url,
  PORT: "0",
  HOST: "127.0.0.1",
  LOG_LEVEL: "silent",
  PINGER_ENABLED: "false",
  WEBHOOK_ALLOW_PRIVATE: "true",
  WEBHOOK_CONCURRENCY: String(concurrency),
  WEBHOOK_POLL_MS: "50",
  // One team sends everything here: its budget is set above what is offered, so the figure is
  // the delivery path's own (the budget's bookkeeping is still done on every batch).
  WEBHOOK_TEAM_EVENTS_PER_MIN: String(rate * 60 * 2),
  WEBHOOK_TEAM_DELIVERIES_PER_MIN: String(rate * endpoints * 60 * 2),
  ...(process.env.WEBHOOK_ENDPOINT_CONCURRENCY
    ? { WEBHOOK_ENDPOINT_CONCURRENCY: process.env.WEBHOOK_ENDPOINT_CONCURRENCY }
    : {}),
});
const app = await startServer(config, createLogger("silent"));
const d = app.services.database.db;
const [team] = await d.insert(teams).values({ name: "bench" }).returning();
const owner = {
  kind: "api_key",
  keyId: "bench",
  teamId: team!.id,
  role: "admin",
  scopes: null,
  serverIds: null,
  exp: null,
} as const;
// Outside a request: the endpoints' audit entries name the benchmark as the actor.
await auditAs({ kind: "system", name: "bench" }, async () => {
  for (const url of urls) await app.services.webhooks.create(owner as never, team!.id, { url });
});
await reset();
const platformStart = Date.now();
await paced((i) => app.services.webhooks.enqueue({ teamId: team!.id }, "webhook.test", { i, sent_at: Date.now() }));
const platform = await finish(
  "platform (queue + claim + sign + POST + record)",
  rate * seconds * endpoints,
  platformStart,
);

await app.stop();
receiverHost.kill();
await receiverHost.exited;
rmSync(dataDir, { recursive: true, force: true });
await db.drop();

console.log(
  `database: ${process.env.DATABASE_URL ? "postgres" : "pglite"}; ${rate} events/s for ${seconds} s, each to ${endpoints} endpoints on loopback (${rate * endpoints} deliveries/s offered), concurrency ${concurrency}, at most ${config.WEBHOOK_ENDPOINT_CONCURRENCY} in flight per endpoint`,
);
console.log(
  `target: ${TARGET.deliveriesPerSecond} deliveries/s sustained, p99 emit-to-receipt under ${TARGET.p99Ms} ms\n`,
);
console.log(
  `${"case".padEnd(50)}${"deliveries/s".padEnd(14)}${"p50 ms".padEnd(9)}${"p99 ms".padEnd(9)}${"delivered".padEnd(18)}ratio to bare`,
);
for (const r of [baseline, platform]) {
  const ratio = r === baseline ? "" : (r.perSecond / baseline.perSecond).toFixed(2);
  console.log(
    `${r.name.padEnd(50)}${r.perSecond.toFixed(0).padEnd(14)}${String(r.p50).padEnd(9)}${String(r.p99).padEnd(9)}${`${r.delivered}/${r.expected}`.padEnd(18)}${ratio}`,
  );
}
console.log(`\nplatform: ${platform.distinct} distinct (event, endpoint) pairs received of ${platform.expected}`);
