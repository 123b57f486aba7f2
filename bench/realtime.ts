/**
 * Realtime benchmark: broadcast fan-out on one server topic to thousands of subscribers,
 * against a raw Bun.serve pub/sub baseline in the same run; memory per idle socket; and, with
 * DATABASE_URL, cross-instance delivery latency (agent heartbeat on one instance, socket on
 * another).
 *
 *   node_modules/.bin/bun bench/realtime.ts
 *   BENCH_SUBSCRIBERS=2000 BENCH_RATE=100 BENCH_SECONDS=5 node_modules/.bin/bun bench/realtime.ts
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres node_modules/.bin/bun bench/realtime.ts
 *   BENCH_PROFILE=/tmp/rt node_modules/.bin/bun bench/realtime.ts   # the app's CPU profile, written when it stops
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cpuSeconds, postgresCpuSeconds } from "./lib/cpu";
import { benchDatabase, collectSettled, startTarget } from "./lib/targets";

const subscribers = Number(process.env.BENCH_SUBSCRIBERS ?? 2000);
const rate = Number(process.env.BENCH_RATE ?? 100);
const seconds = Number(process.env.BENCH_SECONDS ?? 5);

/**
 * Memory per idle socket: RSS and JS heap in use after `n` sockets minus before, over n, each
 * sampled after full collections in the target (bench/lib/gc-on-signal.ts) once RSS stops
 * moving between them (`collectSettled`, the same for the app and the raw baseline), so the
 * garbage the sockets' authentication left is not counted. RSS also holds what the allocator
 * keeps after a collection; the heap figure is what the sockets' objects hold. A first round
 * of sockets (opened and closed) warms allocators and caches so they are not counted.
 */
async function socketMemory(pid: number, open: () => Promise<WebSocket[]>) {
  for (const s of await open()) s.close();
  await Bun.sleep(1500);
  const before = await collectSettled(pid);
  const sockets = await open();
  await Bun.sleep(1500);
  const after = await collectSettled(pid);
  return {
    before,
    sockets,
    perSocket: (after.rss - before.rss) / sockets.length,
    heapPerSocket: (after.heapUsed - before.heapUsed) / sockets.length,
  };
}

async function post(url: string, body: unknown, token?: string) {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...(token && { authorization: `Bearer ${token}` }) },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${url}: ${res.status} ${await res.text()}`);
  return res.json() as Promise<any>;
}

interface Fanout {
  delivered: number;
  lat: number[];
}

/** Opens `n` sockets that count heartbeats and record delivery latency (receive - ts). */
async function openSockets(wsUrl: string, n: number, headers: Record<string, string>, f: Fanout) {
  const sockets: WebSocket[] = [];
  for (let i = 0; i < n; i += 200) {
    await Promise.all(
      Array.from({ length: Math.min(200, n - i) }, () => {
        const ws = new WebSocket(wsUrl, { headers } as never);
        sockets.push(ws);
        return new Promise<void>((resolve, reject) => {
          ws.onmessage = (ev) => {
            const m = JSON.parse(String(ev.data));
            if (m.type === "snapshot") return resolve();
            if (m.type === "heartbeat") {
              f.delivered++;
              if ((f.delivered & 7) === 0) f.lat.push(Date.now() - Date.parse(m.ts));
            }
          };
          ws.onerror = () => reject(new Error("socket error"));
          ws.onclose = (ev) => reject(new Error(`closed ${ev.code}`));
        });
      }),
    );
  }
  return sockets;
}

/**
 * Publishes at a fixed rate for the duration, then waits for stragglers. CPU seconds over the
 * run: the target's process, the bench database's PostgreSQL backends, and this process (the
 * clients receiving every copy), which share the machine's cores.
 */
async function drive(publish: () => Promise<unknown>, f: Fanout, pid: number) {
  const cpu0 = { target: cpuSeconds(pid), pg: pgCpu(), clients: ownCpu() };
  const start = performance.now();
  let sent = 0;
  while (performance.now() - start < seconds * 1000) {
    const due = Math.floor(((performance.now() - start) / 1000) * rate);
    const batch: Promise<unknown>[] = [];
    while (sent < due) {
      batch.push(publish());
      sent++;
    }
    await Promise.all(batch);
    await Bun.sleep(2);
  }
  const expected = sent * subscribers;
  const deadline = performance.now() + 10_000;
  while (f.delivered < expected && performance.now() < deadline) await Bun.sleep(20);
  const elapsed = (performance.now() - start) / 1000;
  f.lat.sort((x, y) => x - y);
  return {
    cpu: { target: cpuSeconds(pid) - cpu0.target, pg: pgCpu() - cpu0.pg, clients: ownCpu() - cpu0.clients, elapsed },
    sent,
    expected,
    delivered: f.delivered,
    perSecond: f.delivered / elapsed,
    p50: f.lat[Math.floor(f.lat.length / 2)] ?? NaN,
    p99: f.lat[Math.floor(f.lat.length * 0.99)] ?? NaN,
  };
}

const ownCpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};
let pgCpu = () => 0;

const dataDir = mkdtempSync(join(tmpdir(), "mcp-bench-"));
const db = await benchDatabase();
if (db.url) {
  const name = decodeURIComponent(new URL(db.url).pathname.slice(1));
  pgCpu = () => postgresCpuSeconds(name);
}
const env = {
  DATA_DIR: dataDir,
  HOST: "127.0.0.1",
  LOG_LEVEL: "warn",
  DATABASE_URL: db.url,
  PINGER_ENABLED: "false",
  // Its server is registered on loopback.
  OUTBOUND_ALLOW_PRIVATE: "true",
  PASSWORD_MEMORY_KIB: "4096",
  PASSWORD_TIME_COST: "1",
};

// --- the app ---
// BENCH_PROFILE=<dir>: the app writes a CPU profile there (bun --cpu-prof) when it stops.
const profile = process.env.BENCH_PROFILE;
const app = await startTarget(
  "bench/lib/app-gc.ts",
  env,
  profile ? ["--cpu-prof", `--cpu-prof-dir=${profile}`, "--cpu-prof-md"] : [],
);
await post(`${app.url}/auth/signup`, { email: "rt@example.test", password: "bench password" });
const { access_token } = await post(`${app.url}/auth/login`, { email: "rt@example.test", password: "bench password" });
const { team_id } = await post(`${app.url}/teams`, { name: "rt" }, access_token);
const srv = await post(
  `${app.url}/server/servers`,
  { team_id, name: "bench", host: "127.0.0.1", port: 9, kind: "single" },
  access_token,
);
const appFan: Fanout = { delivered: 0, lat: [] };
const appMem = await socketMemory(app.pid, () =>
  openSockets(
    `${app.url.replace("http", "ws")}/ws/server/${srv.server_id}/analytics`,
    subscribers,
    { authorization: `Bearer ${access_token}` },
    appFan,
  ),
);
const appSockets = appMem.sockets;
const hb = { tps: 20, mspt: 12.5, players_online: 10, memory_used_mb: 2048, memory_max_mb: 4096 };
const appResult = await drive(() => post(`${app.url}/agent/heartbeat`, hb, srv.agent_token), appFan, app.pid);
for (const s of appSockets) s.close();
// With the sockets closed again, what RSS stays above the level before them is memory the
// allocator kept from their setup (upgrades, authentications), not state the sockets hold.
await Bun.sleep(1500);
const appKeptAfterClose = ((await collectSettled(app.pid)).rss - appMem.before.rss) / subscribers;

// Cross-instance: a second instance on the same PostgreSQL, socket there, heartbeats to the first.
let cross: { p50: number; p99: number; n: number } | undefined;
if (db.url) {
  const second = await startTarget("src/main.ts", env);
  const f: Fanout = { delivered: 0, lat: [] };
  const [sock] = await openSockets(
    `${second.url.replace("http", "ws")}/ws/server/${srv.server_id}/analytics`,
    1,
    { authorization: `Bearer ${access_token}` },
    f,
  );
  for (let i = 0; i < 400; i++) {
    await post(`${app.url}/agent/heartbeat`, hb, srv.agent_token);
    await Bun.sleep(5);
  }
  await Bun.sleep(300);
  // Every heartbeat is timed here, not a sample of them.
  const lat: number[] = [];
  f.lat.length = 0;
  f.delivered = 0;
  const done = new Promise<void>((resolve) => {
    sock!.onmessage = (ev) => {
      const m = JSON.parse(String(ev.data));
      if (m.type === "heartbeat") lat.push(Date.now() - Date.parse(m.ts));
      if (lat.length === 200) resolve();
    };
  });
  for (let i = 0; i < 200; i++) {
    await post(`${app.url}/agent/heartbeat`, hb, srv.agent_token);
    await Bun.sleep(5);
  }
  await Promise.race([done, Bun.sleep(5000)]);
  lat.sort((x, y) => x - y);
  cross = { p50: lat[Math.floor(lat.length / 2)]!, p99: lat[Math.floor(lat.length * 0.99)]!, n: lat.length };
  sock!.close();
  await second.stop();
}
await app.stop();

// --- the raw baseline ---
const raw = await startTarget("bench/raw-pubsub.ts", {});
const rawFan: Fanout = { delivered: 0, lat: [] };
const rawMem = await socketMemory(raw.pid, () =>
  openSockets(`${raw.url.replace("http", "ws")}/ws/bench`, subscribers, {}, rawFan),
);
const rawSockets = rawMem.sockets;
const rawResult = await drive(() => post(`${raw.url}/publish`, hb), rawFan, raw.pid);
for (const s of rawSockets) s.close();
await raw.stop();
rmSync(dataDir, { recursive: true, force: true });
await db.drop();

type Memory = typeof appMem;
const kib = (bytes: number) => (bytes / 1024).toFixed(1);
const line = (name: string, r: typeof appResult, mem: Memory, base?: typeof appResult) =>
  console.log(
    `${name.padEnd(34)}${r.perSecond.toFixed(0).padEnd(14)}${r.p50.toFixed(0).padEnd(9)}${r.p99.toFixed(0).padEnd(9)}${`${r.delivered}/${r.expected}`.padEnd(18)}${`${kib(mem.perSocket)} / ${kib(mem.heapPerSocket)}`.padEnd(20)}${base ? (r.perSecond / base.perSecond).toFixed(2) : ""}`,
  );
console.log(
  `database: ${db.url ? "postgres" : "pglite"}; ${subscribers} subscribers on one server topic; ${rate} events/s for ${seconds}s`,
);
console.log(
  "latency: socket receive time minus the event's ts; the app stamps ts when it accepts the heartbeat (after authenticating the agent), the raw baseline when it publishes",
);
console.log(
  `\n${"case".padEnd(34)}${"delivered/s".padEnd(14)}${"p50 ms".padEnd(9)}${"p99 ms".padEnd(9)}${"delivered".padEnd(18)}${"KiB/socket rss/heap".padEnd(20)}ratio to raw`,
);
line("raw Bun.serve pub/sub", rawResult, rawMem);
line("app (heartbeat -> actor -> ws)", appResult, appMem, rawResult);
const cores = (r: typeof appResult) =>
  `target ${(r.cpu.target / r.cpu.elapsed).toFixed(2)}, postgres ${(r.cpu.pg / r.cpu.elapsed).toFixed(2)}, clients ${(r.cpu.clients / r.cpu.elapsed).toFixed(2)}`;
console.log(
  `\ncores busy during the fan-out (CPU seconds / wall seconds): raw: ${cores(rawResult)}; app: ${cores(appResult)}`,
);
const p99Ratio = appResult.p99 / rawResult.p99;
console.log(
  `\ntargets: delivery p99 within 1.5x raw: ${p99Ratio.toFixed(2)}x (${p99Ratio <= 1.5 ? "met" : "not met"}); ` +
    `under 4 KiB per idle socket (after collections, once RSS settles): RSS ${kib(appMem.perSocket)} KiB (${appMem.perSocket < 4096 ? "met" : "not met"}), ` +
    `JS heap ${kib(appMem.heapPerSocket)} KiB (${appMem.heapPerSocket < 4096 ? "met" : "not met"})`,
);
console.log(
  `app RSS still above the pre-socket level per socket after all ${subscribers} closed again (and the fan-out run): ${kib(appKeptAfterClose)} KiB (allocator retention, not socket state)`,
);
if (cross)
  console.log(
    `\ncross-instance delivery (heartbeat on instance A, socket on instance B, via LISTEN/NOTIFY): p50 ${cross.p50} ms, p99 ${cross.p99} ms over ${cross.n} events`,
  );
