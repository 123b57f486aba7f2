/**
 * Erasure of one player (POST /players/{uuid}/erase through the tRPC caller: every holder, the
 * daily aggregates rebuilt, the audit scrub, in one transaction) for players with thousands of
 * sessions, beside a baseline: the same player's rows deleted by three bare DELETE statements in
 * one transaction (no aggregate rebuilt, no scan of the audit log, webhooks or idempotency
 * answers), on a twin player with the same history. The history is fed through the agent's
 * ingest (AgentService.events), as the demo does: nothing is written behind the service's back.
 *
 *   node_modules/.bin/bun bench/privacy.ts                   # PGlite in a temp dir
 *   DATABASE_URL=postgres://... node_modules/.bin/bun bench/privacy.ts
 *   BENCH_SESSIONS=5000 BENCH_PLAYERS=300 BENCH_ERASED=5 node_modules/.bin/bun bench/privacy.ts
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { startServer } from "../src/app";
import { loadConfig } from "../src/config";
import { rowsOf } from "../src/db/rows";
import { createLogger } from "../src/lib/log";
import { createCallerFactory } from "../src/trpc/init";
import { appRouter } from "../src/trpc/router";
import { benchDatabase } from "./lib/targets";

/** Sessions of each erased player (and of each baseline twin), over two servers. */
const SESSIONS = Number(process.env.BENCH_SESSIONS ?? 3000);
/** Other players, each with a few sessions on the same days: the aggregates to rebuild. */
const PLAYERS = Number(process.env.BENCH_PLAYERS ?? 300);
const ERASED = Number(process.env.BENCH_ERASED ?? 5);
const DAYS = 80;

const dataDir = mkdtempSync(join(tmpdir(), "mcp-bench-privacy-"));
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
const login = async () => {
  const r = await anonymous.auth.login({ email: "bench@example.com", password: "correct horse battery" });
  if (!("access_token" in r)) throw new Error("the bench account has no second factor, yet sign-in asked for one");
  return r;
};
let signedIn = await login();
let seq = 0;
const caller = (selector: Record<string, string> = {}) =>
  createCallerFactory(appRouter)({
    requestId: `bench-${seq++}`,
    headers: new Headers({ authorization: `Bearer ${signedIn.access_token}`, ...selector }),
    ip: "127.0.0.1",
    services,
    resHeaders: {},
  });
const team = await caller().teams.create({ name: "Bench" });
const serverIds: string[] = [];
for (const name of ["survival", "lobby"])
  serverIds.push(
    (await caller().servers.create({ team_id: team.team_id, name, host: "127.0.0.1", port: 9, kind: "single" }))
      .server_id,
  );

const start = Date.now() - DAYS * 86_400_000;
let eventSeq = 0;
type Ev = Parameters<typeof services.agent.events>[1][number];
const pending = new Map<string, Ev[]>(serverIds.map((id) => [id, []]));
async function flush(serverId: string, force = false) {
  const list = pending.get(serverId)!;
  while (list.length >= 500 || (force && list.length > 0)) {
    const batch = list.splice(0, 500);
    await services.agent.events({ serverId, teamId: team.team_id }, batch);
  }
}
/** `n` sessions of one player spread over the days, alternating servers, in time order per server. */
async function history(uuid: string, name: string, n: number) {
  const step = (DAYS * 86_400_000) / n;
  for (let i = 0; i < n; i++) {
    const serverId = serverIds[i % serverIds.length]!;
    const at = start + i * step + (eventSeq % 997) * 1000;
    pending.get(serverId)!.push(
      { event_id: `e${eventSeq++}`, type: "join", uuid, name, at: new Date(at).toISOString() },
      {
        event_id: `e${eventSeq++}`,
        type: "leave",
        uuid,
        at: new Date(at + Math.min(step / 2, 1800_000)).toISOString(),
      },
    );
    await flush(serverId);
  }
  for (const id of serverIds) await flush(id, true);
}

const fed = performance.now();
for (let p = 0; p < PLAYERS; p++) await history(crypto.randomUUID(), `p${p}`, 20);
const heavy = Array.from({ length: ERASED }, () => crypto.randomUUID());
const twins = Array.from({ length: ERASED }, () => crypto.randomUUID());
for (let i = 0; i < ERASED; i++) {
  await history(heavy[i]!, `heavy${i}`, SESSIONS);
  await history(twins[i]!, `twin${i}`, SESSIONS);
  // Each has a ban (and its audit entry) naming them, as a player under moderation would.
  signedIn = await login();
  for (const uuid of [heavy[i]!, twins[i]!])
    await caller({ "x-server-id": serverIds[0]! }).servers.ban({ uuid, name: `heavy${i}`, reason: "Bench" });
}
const feedSeconds = (performance.now() - fed) / 1000;
const sessionRows = rowsOf<{ n: number }>(await db.execute(sql`select count(*)::int as n from player_sessions`))[0]!.n;

// Feeding can outlast an access token on a loaded machine: a fresh one for the erasures.
signedIn = await login();
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const erase: number[] = [];
const bare: number[] = [];
const load = () =>
  (require("node:os") as typeof import("node:os"))
    .loadavg()
    .map((x) => x.toFixed(1))
    .join(" ");
const list = sql`(${sql.join(
  serverIds.map((id) => sql`${id}::uuid`),
  sql`, `,
)})`;
for (let i = 0; i < ERASED; i++) {
  // Interleaved, so neither always runs on a warmer machine.
  let t = performance.now();
  const answer = await caller({ "x-team-id": team.team_id }).privacy.erasePlayer({ uuid: heavy[i]! });
  erase.push(performance.now() - t);
  if (answer.erased.player_sessions !== SESSIONS) throw new Error(`erased ${answer.erased.player_sessions} sessions`);
  t = performance.now();
  await db.transaction(async (tx) => {
    await tx.execute(sql`delete from player_sessions where server_id in ${list} and uuid = ${twins[i]!}`);
    await tx.execute(sql`delete from player_days where server_id in ${list} and uuid = ${twins[i]!}`);
    await tx.execute(sql`delete from players where server_id in ${list} and uuid = ${twins[i]!}`);
  });
  bare.push(performance.now() - t);
}

await services.webhooks.flush();
await app.stop();
rmSync(dataDir, { recursive: true, force: true });
await database.drop();

console.log(
  `database: ${process.env.DATABASE_URL ? "postgres" : "pglite"}; ${PLAYERS} players with 20 sessions each and ${ERASED * 2} with ${SESSIONS} each over ${DAYS} days on 2 servers (${sessionRows} sessions, fed through the ingest in ${feedSeconds.toFixed(1)} s)`,
);
console.log(
  `erase one player with ${SESSIONS} sessions: median ${median(erase).toFixed(0)} ms, max ${Math.max(...erase).toFixed(0)} ms (${ERASED} players)`,
);
console.log(
  `baseline: the same rows of a twin player by three bare DELETEs in one transaction: median ${median(bare).toFixed(0)} ms (erasure ${(median(erase) / median(bare)).toFixed(1)}x); load average ${load()}`,
);
