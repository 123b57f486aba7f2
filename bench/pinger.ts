/**
 * Pinger throughput: servers checked per second by the platform's pinger (claim due rows,
 * Server List Ping, results written in shared batches of samples and statuses, alert state and
 * player sessions fed per batch, summed in memory for the metric buckets) against many real
 * status responders on loopback, next to a bare loop of the pinger's Server List Ping client
 * (`serverListPing()`, src/monitoring/slp.ts) at the same concurrency over the same responders,
 * and a bare loop of gamedig's, in one run. Targets: >= 0.9x the bare loop and
 * >= 1,000 servers/s.
 *
 * Two methods, both printed:
 *
 * - Steady state (the target is judged on it): the pinger runs as in production, its own loop
 *   (`start()`) leasing due servers every tick and as slots free and checking the servers it holds
 *   every interval from memory; between its windows it is paused (`pause()`, leases kept), as a
 *   running instance would not hand them back. There are many more server rows than responders
 *   (BENCH_STEADY_SERVERS, several rows per responder) with a 1 s interval, so more servers are
 *   always due than the pinger can check: what is measured is its capacity, the checks stored
 *   (consumers and listeners done) per second over a window of BENCH_WINDOW_MS. The metric sums
 *   are flushed once at the end of each window, and the background flush is pushed out of the
 *   windows (METRICS_FLUSH_MS=60000 here): with the default 5 s windows that is production's one
 *   flush per METRICS_FLUSH_MS (5 s), counted in the window's CPU. The bare loop runs the same
 *   serverListPing() call in the same N workers over the same responders for a window of the same
 *   length; bare and pinger windows alternate (BENCH_WINDOWS each, medians), so load from
 *   elsewhere weighs on both alike.
 * - A third window per round runs gamedig's TCP status in the same N workers over the same
 *   responders (BENCH_GAMEDIG=0 leaves it out): the baseline the issue names. The bare loop of
 *   the pinger's own client stays the like-for-like one (until 2026-11-27 that client was
 *   minecraft-server-util's status(), which cost 30-35% more CPU a check than gamedig's).
 * - Per round (the earlier method, kept for comparison): make all 200 rows due with one UPDATE,
 *   then `pingDue()` and a bucket flush, both timed; 200 checks against a fixed cost per round
 *   (the UPDATE, the tail of the round with slots idle, the flush), which production pays once
 *   per METRICS_FLUSH_MS over thousands of checks, not once per 200.
 *
 * A check writes its status row and sample only when it found something new, or every
 * PING_STATUS_REFRESH_SECONDS (docs/monitoring.md); `PING_STATUS_REFRESH_SECONDS=0` writes every
 * check, as before that rule, for a same-machine comparison. Every check is counted in the
 * buckets either way. On a machine far slower than the 5,000 checks/s these defaults were sized
 * for, most of 20,000 rows are only ever checked once (each tick leases more while held ones
 * wait), so the windows measure first checks; BENCH_STEADY_SERVERS=2000 keeps more due than can
 * be checked there and measures the held servers' checks, as a running instance makes them.
 *
 *   bun bench/pinger.ts                      # PGlite in a temp dir
 *   DATABASE_URL=postgres://... bun bench/pinger.ts
 *   BENCH_RESPONDERS=200 BENCH_ROUNDS=5 BENCH_STEADY_SERVERS=20000 BENCH_WINDOW_MS=5000 BENCH_WINDOWS=3 \
 *     PING_CONCURRENCY=32 bun bench/pinger.ts
 */
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { GameDig } from "gamedig";
import { servers } from "../src/db/schema";
import { sha256 } from "../src/lib/secrets";
import { rowsOf } from "../src/db/rows";
import { serverListPing } from "../src/monitoring/slp";
import { cpuSeconds, postgresCpuSeconds } from "./lib/cpu";
import { pingerApp } from "./lib/pinger-app";
import { benchDatabase } from "./lib/targets";

const count = Number(process.env.BENCH_RESPONDERS ?? 200);
const rounds = Number(process.env.BENCH_ROUNDS ?? 5);
const concurrency = Number(process.env.PING_CONCURRENCY ?? 32);
const timeoutMs = 5000;
// Many more rows than a window can check: on a fast machine 5,000 rows due every second left the
// pinger waiting for due servers (3,069/s there against 4,828/s with 20,000 rows, same run).
const steadyServers = Number(process.env.BENCH_STEADY_SERVERS ?? 20000);
const windowMs = Number(process.env.BENCH_WINDOW_MS ?? 5000);
const windows = Number(process.env.BENCH_WINDOWS ?? 3);

// The responders run in a process of their own, so they do not share an event loop with the pinger.
const host = Bun.spawn(
  [
    process.execPath,
    "-e",
    `import { startStatusResponder } from "${join(import.meta.dir, "../scripts/demo-mc-server.ts")}";
     const rs = await Promise.all(Array.from({ length: ${count} }, (_, i) => startStatusResponder({ players: i % 50, maxPlayers: 100 })));
     console.log(JSON.stringify(rs.map((r) => r.port)));`,
  ],
  { stdout: "pipe", stderr: "inherit" },
);
const reader = host.stdout.getReader();
let line = "";
while (!line.includes("\n")) {
  const { value, done } = await reader.read();
  if (done) throw new Error("responder host exited");
  line += new TextDecoder().decode(value);
}
const ports: number[] = JSON.parse(line);

/** N workers over the targets: the same shape of concurrency the pinger uses. */
async function bareRound(): Promise<number> {
  let next = 0;
  let ok = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < ports.length) {
        const port = ports[next++]!;
        const r = await serverListPing("127.0.0.1", port, timeoutMs).then(
          () => true,
          () => false,
        );
        if (r) ok++;
      }
    }),
  );
  return ok;
}

const db = await benchDatabase();
// Every row is due again a second after its check: more due than any pinger here can check.
const { app, teamId, stop } = await pingerApp(db.url, {
  PING_CONCURRENCY: String(concurrency),
  PING_TIMEOUT_MS: String(timeoutMs),
  // The window's end flushes; none in between (see the steady state above).
  METRICS_FLUSH_MS: "60000",
  // 0 writes the status row and a sample for every check, as before that rule.
  ...(process.env.PING_STATUS_REFRESH_SECONDS && {
    PING_STATUS_REFRESH_SECONDS: process.env.PING_STATUS_REFRESH_SECONDS,
  }),
});
const d = app.services.database.db;
const serverRow = (i: number, nextCheckAt?: Date) => ({
  teamId,
  name: `r${i}`,
  host: "127.0.0.1",
  port: ports[i % ports.length]!,
  kind: "single" as const,
  agentTokenHash: sha256(`bench-${i}`),
  agentTokenPrefix: "x",
  ...(nextCheckAt ? { nextCheckAt } : {}),
});
await d.insert(servers).values(ports.map((_, i) => serverRow(i)));

async function pingerRound(): Promise<number> {
  await d.execute(sql`update servers set next_check_at = now()`);
  return app.services.monitoring.pingDue();
}

async function measure(name: string, round: () => Promise<number>) {
  await round(); // warm-up
  const rates: number[] = [];
  let checked = 0;
  for (let i = 0; i < rounds; i++) {
    const t = performance.now();
    checked = await round();
    rates.push((ports.length / (performance.now() - t)) * 1000);
  }
  rates.sort((a, b) => a - b);
  return { name, median: rates[Math.floor(rates.length / 2)]!, best: rates[rates.length - 1]!, checked };
}

const bare = await measure("bare client loop", bareRound);
const pinger = await measure("pinger (claim + ping + store)", pingerRound);

// Steady state. The extra rows wait an hour until their first window.
const later = new Date(Date.now() + 3600_000);
for (let i = ports.length; i < steadyServers; i += 1000)
  await d
    .insert(servers)
    .values(Array.from({ length: Math.min(1000, steadyServers - i) }, (_, k) => serverRow(i + k, later)));
const monitoring = app.services.monitoring;
let stored = 0;
monitoring.onSample(() => {
  stored++;
});
// Every row due now: the first window claims its leases, and later ones go on with them.
await d.execute(sql`update servers set next_check_at = now()`);

/**
 * CPU seconds spent over a window, per part: this process (the bare loop, or the app with its
 * pinger; on PGlite the database too), the responders' process, and on PostgreSQL the backends
 * of the bench's own database (not the rest of the server, nor its WAL writer and checkpointer).
 */
const dbName = db.url ? decodeURIComponent(new URL(db.url).pathname.slice(1)) : "";
const cpuNow = () => {
  const u = process.cpuUsage();
  return {
    self: (u.user + u.system) / 1e6,
    responders: cpuSeconds(host.pid),
    pg: dbName ? postgresCpuSeconds(dbName) : 0,
  };
};
type Cpu = ReturnType<typeof cpuNow>;
const cpuSince = (from: Cpu): Cpu => {
  const to = cpuNow();
  return { self: to.self - from.self, responders: to.responders - from.responders, pg: to.pg - from.pg };
};
/** CPU per check of each window, in microseconds. */
const bareCpu: Cpu[] = [];
const gamedigCpu: Cpu[] = [];
const pingerCpu: Cpu[] = [];
const perCheck = (c: Cpu, n: number): Cpu => ({
  self: (c.self / n) * 1e6,
  responders: (c.responders / n) * 1e6,
  pg: (c.pg / n) * 1e6,
});

/** The bare loop for one window: N workers, each pinging the responders in turn until time is up. */
async function bareWindow(): Promise<number> {
  let next = 0;
  let ok = 0;
  const end = performance.now() + windowMs;
  const cpu0 = cpuNow();
  const t = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        const port = ports[next++ % ports.length]!;
        if (
          await serverListPing("127.0.0.1", port, timeoutMs).then(
            () => true,
            () => false,
          )
        )
          ok++;
      }
    }),
  );
  const rate = (ok / (performance.now() - t)) * 1000;
  bareCpu.push(perCheck(cpuSince(cpu0), ok));
  return rate;
}

/**
 * The same window with gamedig's TCP status (`protocol-minecraftvanilla`: the Server List Ping
 * over TCP only; its `minecraft` type also waits on two UDP queries), one attempt, the given port
 * only: the baseline the issue names. Both time the latency by the TCP connection, neither sends
 * a ping/pong after the status: the same exchange.
 */
async function gamedigWindow(): Promise<number> {
  let next = 0;
  let ok = 0;
  const end = performance.now() + windowMs;
  const cpu0 = cpuNow();
  const t = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        const port = ports[next++ % ports.length]!;
        if (
          await GameDig.query({
            type: "protocol-minecraftvanilla",
            host: "127.0.0.1",
            port,
            socketTimeout: timeoutMs,
            attemptTimeout: timeoutMs,
            maxRetries: 1,
            givenPortOnly: true,
          }).then(
            () => true,
            () => false,
          )
        )
          ok++;
      }
    }),
  );
  const rate = (ok / (performance.now() - t)) * 1000;
  gamedigCpu.push(perCheck(cpuSince(cpu0), ok));
  return rate;
}

/**
 * The pinger's own loop for one window, resumed where the last window paused it: it keeps its
 * leases across windows (paused during the bare loop's), as a running instance would.
 */
async function pingerWindow(): Promise<number> {
  monitoring.start();
  const first = stored;
  while (stored === first) await Bun.sleep(5);
  const from = stored;
  const cpu0 = cpuNow();
  const t = performance.now();
  await Bun.sleep(windowMs);
  const rate = ((stored - from) / (performance.now() - t)) * 1000;
  // The window's checks under way finish and are written; the next window starts from there.
  await monitoring.pause();
  // The window's sums reach the buckets now rather than in the next (bare) window: CPU per
  // check counts the window, the drain and this flush over every check stored in them. It is the
  // periodic task's flush (the minute tier now, the hourly one every HOUR_TIER_EVERY_MS), as in
  // production, where a flush every METRICS_FLUSH_MS (5 s, a window) is the one the task makes.
  await monitoring.buffer.flush(false);
  pingerCpu.push(perCheck(cpuSince(cpu0), stored - from));
  return rate;
}

await pingerWindow(); // warm-up
const withGamedig = process.env.BENCH_GAMEDIG !== "0";
const bareRates: number[] = [];
const gamedigRates: number[] = [];
const pingerRates: number[] = [];
for (let i = 0; i < windows; i++) {
  bareRates.push(await bareWindow());
  if (withGamedig) gamedigRates.push(await gamedigWindow());
  pingerRates.push(await pingerWindow());
}
await monitoring.stop();
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const steadyBare = median(bareRates);
const steadyPinger = median(pingerRates);
const steadyGamedig = withGamedig ? median(gamedigRates) : Number.NaN;
const loadAverage = (
  await Bun.file("/proc/loadavg")
    .text()
    .catch(() => "?")
)
  .split(" ")
  .slice(0, 3)
  .join(" ");
const [{ up, checked, samples, bucketed }] = rowsOf<{ up: number; checked: number; samples: number; bucketed: number }>(
  await d.execute(
    sql`select (select count(*) from server_status where online)::int as up, (select count(*) from server_status)::int as checked,
               (select count(*) from server_samples)::int as samples,
               (select coalesce(sum(up_n + down_n), 0) from server_metrics_minute)::int as bucketed`,
  ),
) as [{ up: number; checked: number; samples: number; bucketed: number }];

await stop();
host.kill();
await host.exited;
await db.drop();

console.log(
  `database: ${process.env.DATABASE_URL ? "postgres" : "pglite"}; ${ports.length} responders on loopback, concurrency ${concurrency}; ` +
    `status row and sample written on a change or every ${app.services.config.PING_STATUS_REFRESH_SECONDS} s`,
);
console.log(
  `\nsteady state: ${steadyServers} server rows due every 1 s, ${windows} alternating windows of ${windowMs} ms each (median; all)`,
);
const all = (xs: number[]) => xs.map((x) => x.toFixed(0)).join(" ");
console.log(`${"case".padEnd(36)}${"servers/s".padEnd(12)}${"windows".padEnd(30)}ratio to bare`);
console.log(`${"bare client loop".padEnd(36)}${steadyBare.toFixed(0).padEnd(12)}${all(bareRates).padEnd(30)}`);
if (withGamedig)
  console.log(
    `${"bare gamedig TCP status loop".padEnd(36)}${steadyGamedig.toFixed(0).padEnd(12)}${all(gamedigRates).padEnd(30)}`,
  );
console.log(
  `${"pinger (own loop, as in production)".padEnd(36)}${steadyPinger.toFixed(0).padEnd(12)}${all(pingerRates).padEnd(30)}${(steadyPinger / steadyBare).toFixed(2)}` +
    (withGamedig ? ` (to gamedig: ${(steadyPinger / steadyGamedig).toFixed(2)})` : ""),
);
console.log(`load average at the end: ${loadAverage}`);
const cpuMedian = (xs: Cpu[]): Cpu => ({
  self: median(xs.map((x) => x.self)),
  responders: median(xs.map((x) => x.responders)),
  pg: median(xs.map((x) => x.pg)),
});
const bc = cpuMedian(bareCpu);
const pc = cpuMedian(pingerCpu);
const us = (x: number) => x.toFixed(0);
// With every core busy, checks per second go as 1 / CPU per check: the pinger's extra (app
// bookkeeping and database work beyond the client's exchange) must stay under ~11% of a bare check.
console.log("\nCPU per check, microseconds (median of the windows)");
console.log(`${"case".padEnd(36)}${"own process".padEnd(14)}${"postgres".padEnd(12)}${"responders".padEnd(12)}total`);
const cpuRow = (name: string, c: Cpu) =>
  console.log(
    `${name.padEnd(36)}${us(c.self).padEnd(14)}${(dbName ? us(c.pg) : "-").padEnd(12)}${us(c.responders).padEnd(12)}${us(c.self + c.pg + c.responders)}`,
  );
cpuRow("bare client loop", bc);
if (withGamedig) cpuRow("bare gamedig TCP status loop", cpuMedian(gamedigCpu));
cpuRow(dbName ? "pinger (app)" : "pinger (app + PGlite)", pc);
console.log(
  `extra per check over the bare loop: ${us(pc.self + pc.pg - bc.self)} us ` +
    `(${(((pc.self + pc.pg - bc.self) / (bc.self + bc.responders)) * 100).toFixed(0)}% of a bare check's ${us(bc.self + bc.responders)} us); ` +
    `ratio if CPU-bound: ${((bc.self + bc.responders) / (pc.self + pc.pg + pc.responders)).toFixed(2)}x`,
);
console.log(`\nper round (earlier method): ${ports.length} rows due, ${rounds} rounds each (median, best)`);
console.log(`\n${"case".padEnd(36)}${"servers/s".padEnd(12)}${"best".padEnd(10)}${"checked".padEnd(10)}ratio to bare`);
for (const r of [bare, pinger]) {
  const ratio = r === bare ? "" : (r.median / bare.median).toFixed(2);
  console.log(
    `${r.name.padEnd(36)}${r.median.toFixed(0).padEnd(12)}${r.best.toFixed(0).padEnd(10)}${String(r.checked).padEnd(10)}${ratio}`,
  );
}
const ratio = steadyPinger / steadyBare;
// Each row is due a second after its check started: a pinger checking more than a fraction of
// the rows per second spends part of its windows waiting for due servers, not at capacity.
if (steadyPinger > steadyServers * 0.4)
  console.log(
    `\nWARNING: ${steadyPinger.toFixed(0)} checks/s over ${steadyServers} rows due every second: the pinger may have ` +
      "waited for due servers; raise BENCH_STEADY_SERVERS for a measure of its capacity",
  );
console.log(
  `\ntarget (steady state): >= 0.9x the bare loop and >= 1,000 servers/s: ${ratio.toFixed(2)}x, ${steadyPinger.toFixed(0)}/s ` +
    `(${ratio >= 0.9 && steadyPinger >= 1000 ? "met" : "NOT met"})`,
);
if (withGamedig) {
  const g = steadyPinger / steadyGamedig;
  console.log(
    `target against the bare gamedig loop (the issue's wording): ${g.toFixed(2)}x (${g >= 0.9 ? "met" : "NOT met"})`,
  );
}
console.log(
  `servers up: ${up} of ${checked} checked (${steadyServers} rows); checks counted in the minute buckets: ${bucketed}; ` +
    `samples stored (a check that changed something, or the refresh): ${samples}` +
    // Every check is in the buckets; with no refresh interval, every check is a sample too.
    `${samples > bucketed || (app.services.config.PING_STATUS_REFRESH_SECONDS === 0 && samples !== bucketed) ? " (MISMATCH)" : ""}`,
);
