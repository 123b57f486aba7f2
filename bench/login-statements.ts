/**
 * Database statements per complete login flow (PostgreSQL only): the app talks to PostgreSQL
 * through a counting TCP relay that reads the frontend protocol (simple queries, and each
 * extended-protocol Execute with the statement it was bound to). Flows run one at a time; an
 * idle window of the same length is measured after them and subtracted, so the background
 * tasks (counter flushes, queue polls) are not charged to the flows.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres node_modules/.bin/bun bench/login-statements.ts
 *   BENCH_FLOW=oidc DATABASE_URL=... node_modules/.bin/bun bench/login-statements.ts   # the OIDC flow (authorize .. token)
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Socket } from "bun";
import { freePort } from "../test/shared";
import { launcherClient, loginFlow } from "./lib/login-flow";
import { enableOidc, oidcFlow } from "./lib/oidc-flow";
import { benchDatabase, startTarget } from "./lib/targets";

if (!process.env.DATABASE_URL) throw new Error("set DATABASE_URL: this counts PostgreSQL statements");
const FLOWS = Number(process.env.BENCH_FLOWS ?? 50);

const counts = new Map<string, number>();
let transactions = 0;
const bump = (sql: string) => {
  const key = sql.replace(/\s+/g, " ").trim().slice(0, 140);
  counts.set(key, (counts.get(key) ?? 0) + 1);
  if (/^(begin|commit)\b/i.test(key)) transactions += key.toLowerCase().startsWith("begin") ? 1 : 0;
};

/** One client connection's frontend stream: named statements, the portal's statement, partial frames. */
interface Conn {
  upstream?: Socket<undefined>;
  pending: Buffer[];
  buf: Buffer;
  started: boolean;
  statements: Map<string, string>;
  unnamed: string;
  bound: string;
}

const cstring = (b: Buffer, at: number): [string, number] => {
  const end = b.indexOf(0, at);
  return [b.toString("utf8", at, end), end + 1];
};

function readFrontend(c: Conn) {
  for (;;) {
    if (!c.started) {
      if (c.buf.length < 8) return;
      const len = c.buf.readInt32BE(0);
      if (c.buf.length < len) return;
      // SSLRequest (80877103) is followed by the real startup message.
      if (c.buf.readInt32BE(4) !== 80877103) c.started = true;
      c.buf = c.buf.subarray(len);
      continue;
    }
    if (c.buf.length < 5) return;
    const type = String.fromCharCode(c.buf[0]!);
    const len = c.buf.readInt32BE(1);
    if (c.buf.length < 1 + len) return;
    const body = c.buf.subarray(5, 1 + len);
    if (type === "Q") bump(cstring(body, 0)[0]);
    else if (type === "P") {
      const [name, at] = cstring(body, 0);
      const [text] = cstring(body, at);
      if (name) c.statements.set(name, text);
      else c.unnamed = text;
    } else if (type === "B") {
      const [, at] = cstring(body, 0);
      const [stmt] = cstring(body, at);
      c.bound = stmt ? (c.statements.get(stmt) ?? `?${stmt}`) : c.unnamed;
    } else if (type === "E") bump(c.bound);
    c.buf = c.buf.subarray(1 + len);
  }
}

const target = new URL(process.env.DATABASE_URL);
const relayPort = freePort();
Bun.listen<Conn>({
  hostname: "127.0.0.1",
  port: relayPort,
  socket: {
    async open(client) {
      const c: Conn = {
        pending: [],
        buf: Buffer.alloc(0),
        started: false,
        statements: new Map(),
        unnamed: "",
        bound: "",
      };
      client.data = c;
      c.upstream = await Bun.connect({
        hostname: target.hostname,
        port: Number(target.port || 5432),
        socket: {
          data: (_s, d) => void client.write(d),
          close: () => void client.end(),
          error: () => void client.end(),
        },
      });
      for (const p of c.pending) c.upstream.write(p);
      c.pending = [];
    },
    data(client, d) {
      const c = client.data;
      c.buf = c.buf.length ? Buffer.concat([c.buf, d]) : Buffer.from(d);
      readFrontend(c);
      if (c.upstream) c.upstream.write(d);
      else c.pending.push(Buffer.from(d));
    },
    close: (client) => void client.data.upstream?.end(),
  },
});

const db = await benchDatabase();
const relayed = new URL(db.url);
relayed.host = `127.0.0.1:${relayPort}`;
const dataDir = mkdtempSync(join(tmpdir(), "mcp-bench-"));
const app = await startTarget("src/main.ts", {
  DATA_DIR: dataDir,
  HOST: "127.0.0.1",
  LOG_LEVEL: "warn",
  DATABASE_URL: relayed.toString(),
  RATE_LIMIT_START_PER_MIN: "100000000",
  RATE_LIMIT_POLL_PER_MIN: "100000000",
  PASSWORD_MEMORY_KIB: "4096",
  PASSWORD_TIME_COST: "1",
});
const { creds, accessToken } = await launcherClient(app.url);
const oidcClient = process.env.BENCH_FLOW === "oidc" ? await enableOidc(app.url, creds, accessToken) : undefined;
const flow = (name: string) => (oidcClient ? oidcFlow(app.url, oidcClient, name) : loginFlow(app.url, creds, name));
// Warm: prepared statements, caches.
for (let i = 0; i < 3; i++) await flow(`Warm${i}`);
await Bun.sleep(500);

const snapshot = () => new Map(counts);
const diff = (a: Map<string, number>, b: Map<string, number>) => {
  const out = new Map<string, number>();
  for (const [k, v] of b) if (v - (a.get(k) ?? 0) > 0) out.set(k, v - (a.get(k) ?? 0));
  return out;
};
const t0 = performance.now();
const before = snapshot();
const tx0 = transactions;
for (let i = 0; i < FLOWS; i++) await flow(`Player${i}`);
await Bun.sleep(300);
const during = diff(before, snapshot());
const txFlows = transactions - tx0;
const elapsed = performance.now() - t0;
const idleStart = snapshot();
await Bun.sleep(elapsed);
const idle = diff(idleStart, snapshot());

await app.stop();
rmSync(dataDir, { recursive: true, force: true });
await db.drop();

let total = 0;
const rows: [string, number][] = [];
for (const [k, v] of during) {
  const net = v - (idle.get(k) ?? 0);
  if (net <= 0) continue;
  total += net;
  rows.push([k, net / FLOWS]);
}
rows.sort((a, b) => b[1] - a[1]);
for (const [k, per] of rows) console.log(`${per.toFixed(2).padStart(6)}  ${k}`);
console.log(
  `\n${FLOWS} ${oidcClient ? "OIDC" : "browser"} flows: ${(total / FLOWS).toFixed(2)} statements per flow (idle window subtracted), ${(txFlows / FLOWS).toFixed(2)} explicit transactions per flow`,
);
process.exit(0);
