/**
 * The audit log's cost per mutation: the same mutations through the tRPC caller (the procedure,
 * its middlewares and the service, no HTTP), with the audit entry and without it, in interleaved
 * rounds of the same run. "Without" is the same code path with the write skipped
 * (`withoutAudit`), so the difference is the entry alone: one INSERT inside the mutation's own
 * transaction (no transaction or commit of its own), the actor's name read by that INSERT, the
 * `audit.entry` webhook queued after the commit off the request's path. A bare single-row
 * INSERT into the log, timed alone, is the floor.
 *
 *   node_modules/.bin/bun bench/audit.ts                   # PGlite in a temp dir
 *   DATABASE_URL=postgres://... node_modules/.bin/bun bench/audit.ts
 *   BENCH_N=300 BENCH_ROUNDS=5 node_modules/.bin/bun bench/audit.ts
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { startServer } from "../src/app";
import { withoutAudit } from "../src/audit/scope";
import { loadConfig } from "../src/config";
import { createLogger } from "../src/lib/log";
import { createCallerFactory } from "../src/trpc/init";
import { appRouter } from "../src/trpc/router";
import { benchDatabase } from "./lib/targets";

const N = Number(process.env.BENCH_N ?? 200);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);

const dataDir = mkdtempSync(join(tmpdir(), "mcp-bench-audit-"));
const database = await benchDatabase();
const config = loadConfig({
  DATA_DIR: dataDir,
  DATABASE_URL: database.url,
  PORT: "0",
  HOST: "127.0.0.1",
  LOG_LEVEL: "silent",
  PINGER_ENABLED: "false",
  PASSWORD_MEMORY_KIB: "4096",
  PASSWORD_TIME_COST: "1",
});
const app = await startServer(config, createLogger("silent"));
const services = app.services;
const db = services.database.db;

const anonymous = createCallerFactory(appRouter)({
  requestId: "bench",
  headers: new Headers(),
  ip: "127.0.0.1",
  services,
  resHeaders: {},
});
await anonymous.auth.signup({ email: "bench@example.com", password: "correct horse battery" });
const signedIn = await anonymous.auth.login({ email: "bench@example.com", password: "correct horse battery" });
if (!("access_token" in signedIn)) throw new Error("the bench account has no second factor, yet sign-in asked for one");
const { access_token } = signedIn;
let seq = 0;
const caller = () =>
  createCallerFactory(appRouter)({
    requestId: `bench-${seq++}`,
    headers: new Headers({ authorization: `Bearer ${access_token}`, "user-agent": "bench/1.0" }),
    ip: "127.0.0.1",
    services,
    resHeaders: {},
  });
const team = await caller().teams.create({ name: "Bench" });
const created = await caller().servers.create({
  team_id: team.team_id,
  name: "s0",
  host: "127.0.0.1",
  port: 9,
  kind: "single",
});
const serverId = created.server_id;

type Case = { name: string; run: (i: number) => Promise<unknown> };
const cases: Case[] = [
  { name: "teams.update (rename)", run: (i) => caller().teams.update({ team_id: team.team_id, name: `Bench ${i}` }) },
  { name: "servers.update (rename)", run: (i) => caller().servers.update({ server_id: serverId, name: `s${i}` }) },
];

async function timed(run: (i: number) => Promise<unknown>, skip: boolean): Promise<number> {
  const start = performance.now();
  for (let i = 0; i < N; i++) await (skip ? withoutAudit(() => run(i)) : run(i));
  return ((performance.now() - start) / N) * 1000;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

// Warm both paths (prepared statements, JIT) before measuring.
for (const c of cases) {
  await timed(c.run, false);
  await timed(c.run, true);
}

const results: { name: string; with: number; without: number }[] = [];
for (const c of cases) {
  const w: number[] = [];
  const wo: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    // Alternating which goes first, so neither always runs on a warmer machine.
    if (r % 2) {
      wo.push(await timed(c.run, true));
      w.push(await timed(c.run, false));
    } else {
      w.push(await timed(c.run, false));
      wo.push(await timed(c.run, true));
    }
  }
  results.push({ name: c.name, with: median(w), without: median(wo) });
}

// The floor: one bare INSERT of an entry, autocommitted, timed alone.
const insertStart = performance.now();
for (let i = 0; i < N; i++)
  await db.execute(sql`
    insert into audit_log (team_id, actor_kind, actor_name, action, target_type, target_id, changes)
    values (${team.team_id}, 'system', 'bench', 'team.update', 'team', ${team.team_id}, '{}'::jsonb)`);
const bareInsert = ((performance.now() - insertStart) / N) * 1000;

await services.webhooks.flush();
await app.stop();
rmSync(dataDir, { recursive: true, force: true });
await database.drop();

console.log(
  `database: ${process.env.DATABASE_URL ? "postgres" : "pglite"}; ${N} mutations a round, median of ${ROUNDS} interleaved rounds, one at a time`,
);
for (const r of results)
  console.log(
    `${r.name.padEnd(26)} with the entry ${r.with.toFixed(0).padStart(6)} us   without ${r.without.toFixed(0).padStart(6)} us   entry costs ${(r.with - r.without).toFixed(0).padStart(5)} us (${((r.with / r.without - 1) * 100).toFixed(1)}%)`,
  );
console.log(`baseline: a bare single-row INSERT into audit_log, autocommitted: ${bareInsert.toFixed(0)} us`);
