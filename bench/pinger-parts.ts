/**
 * Where the pinger's database time goes, per row: each statement the pinger runs in production
 * (claim, shared sample and status write, the lease check of results with nothing new to write,
 * the consumers, the bucket flush, a status event on the bus), run 20 times over a bench
 * database of 5,000 servers. On PostgreSQL, the CPU seconds of
 * that database's backends (from /proc) and of this process over the rows they handled; on
 * PGlite, which runs on this process's thread, its wall time per row (the thread is busy for all
 * of it) and its CPU (which also counts the runtime's helper threads). A breakdown for
 * bench/pinger.ts's "CPU per check", not a target: no baseline.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres node_modules/.bin/bun bench/pinger-parts.ts
 *   node_modules/.bin/bun bench/pinger-parts.ts      # PGlite in a temp dir
 */
import { sql } from "drizzle-orm";
import { servers } from "../src/db/schema";
import { sha256 } from "../src/lib/secrets";
import { postgresCpuSeconds } from "./lib/cpu";
import { pingerApp } from "./lib/pinger-app";
import { benchDatabase } from "./lib/targets";

const db = await benchDatabase();
const { app, teamId, stop } = await pingerApp(db.url);
const d = app.services.database.db;
// Private members: the statements the pinger runs, called one by one.
const m = app.services.monitoring as any;
const N = 5000;
for (let i = 0; i < N; i += 1000)
  await d.insert(servers).values(
    Array.from({ length: 1000 }, (_, k) => ({
      teamId,
      name: `r${i + k}`,
      host: "127.0.0.1",
      port: 25565,
      kind: "single" as const,
      agentTokenHash: sha256(`b-${i + k}`),
      agentTokenPrefix: "x",
    })),
  );
const dbName = db.url ? decodeURIComponent(new URL(db.url).pathname.slice(1)) : "";
console.log(`database: ${dbName ? "postgres" : "pglite (in this process: app includes it)"}`);
async function part(name: string, rows: number, fn: () => Promise<unknown>) {
  await fn();
  const c0 = dbName ? postgresCpuSeconds(dbName) : 0;
  const u0 = process.cpuUsage();
  const t0 = performance.now();
  const reps = 20;
  for (let i = 0; i < reps; i++) await fn();
  const wall = performance.now() - t0;
  const pg = dbName ? postgresCpuSeconds(dbName) - c0 : 0;
  const u = process.cpuUsage(u0);
  const perRow = (seconds: number) => ((seconds / (reps * rows)) * 1e6).toFixed(1);
  console.log(
    `${name.padEnd(48)} ${dbName ? `pg ${perRow(pg)} us/row  ` : ""}app ${perRow((u.user + u.system) / 1e6)} us/row  ` +
      `wall ${perRow(wall / 1000)} us/row (${(wall / reps).toFixed(1)} ms/stmt)`,
  );
}
const ids = (await d.select({ id: servers.id }).from(servers)).map((r) => r.id);
// All due, on a freshly vacuumed table: the warm-up and 20 claims of 128 take 2,688 of the 5,000 rows.
await d.execute(sql`update servers set next_check_at = now() - interval '1 hour'`);
await d.execute(sql`vacuum analyze servers`);
await part("claim 128 (leased: next_check_at pushed on)", 128, () => m.claim(128));
const result = {
  online: true,
  latencyMs: 1,
  playersOnline: 3,
  playersMax: 100,
  version: "1.21",
  motd: "hi",
  error: null,
  sample: null,
};
// The write stores a result only under its server's lease: lease 128 of the rows still due.
const leases: { id: string; token: string }[] = await m.claim(128);
const written: (boolean | null)[] = await m.storeMany(
  leases.map(({ id: serverId, token }) => ({ serverId, token, result, at: 1, status: true, done() {}, failed() {} })),
);
if (leases.length !== 128 || written.some((c) => c === null)) throw new Error("the write refused leased servers");
// Each batch a millisecond later than the last: a new sample row each time, as the pinger writes.
let t = Date.now();
const batch = (status = true) => {
  t += 1;
  return leases.map(({ id: serverId, token }) => ({ serverId, token, result, at: t, status, done() {}, failed() {} }));
};
await part("storeMany 128 (samples + status)", 128, () => m.storeMany(batch()));
// Most checks find what the status row already shows: no sample, no status, only the lease verified.
await part("storeMany 128 (nothing new: lease verified)", 128, () => m.storeMany(batch(false)));
await part("feed 128 (consumers)", 128, () =>
  m.feed(batch().map((b) => ({ serverId: b.serverId, result, changed: false }))),
);
for (const id of ids) m.buffer.add(id, Date.now(), { online: true, latency: 1, players: 3 });
await part("buffer flush 5000 servers (1 minute + 1 hour row each)", N, async () => {
  for (const id of ids) m.buffer.add(id, Date.now(), { online: true, latency: 1, players: 3 });
  await m.buffer.flush();
});
await part("buffer flush 5000 servers, periodic (minute tier only)", N, async () => {
  for (const id of ids) m.buffer.add(id, Date.now(), { online: true, latency: 1, players: 3 });
  await m.buffer.flush(false);
});
await part(
  dbName ? "publish 128 status events (NOTIFY, heard back)" : "publish 128 status events (in process)",
  128,
  async () => {
    for (const id of ids.slice(0, 128))
      app.services.realtime.publish(id, "status", {
        online: true,
        latency_ms: 1,
        players_online: 3,
        players_max: 100,
        version: "1.21",
        motd: "hi",
        changed: false,
      });
    await Bun.sleep(20);
  },
);
await stop();
await db.drop();
process.exit(0);
