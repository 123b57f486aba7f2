/**
 * The agent's join/leave ingest with every aggregate kept (session rollups, network sessions with
 * hops, the team player directory, the analytics aggregates), in process: `AgentService.events`
 * on one network of 4 servers, 4 agents' batches at once, beside plain inserts of the same
 * sessions into `player_sessions` (a row per join, closed by an update per leave) in the same run.
 * Also counts the database statements each event costs (every statement drizzle sends, savepoints
 * included; BEGIN and COMMIT of each batch are not counted).
 *
 *   bun bench/ingest.ts                                                       # PGlite
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres bun bench/ingest.ts
 *   BENCH_INGEST_EVENTS=4000 BENCH_BATCH=100 ...
 *   BENCH_SRC=/path/to/other/checkout/src ...   # another build's ingest, same bench
 *   BENCH_AGENTS=8 ...                          # agents (servers of the network) at once
 */
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { sql } from "drizzle-orm";
import { rowsOf } from "../src/db/rows";
import { benchDatabase } from "./lib/targets";

const pg = Boolean(process.env.DATABASE_URL);
const EVENTS = Number(process.env.BENCH_INGEST_EVENTS ?? 4_000);
const BATCH = Number(process.env.BENCH_BATCH ?? 100);
const AGENTS = Number(process.env.BENCH_AGENTS ?? 4);
const src = resolve(process.env.BENCH_SRC ?? join(import.meta.dir, "../src"));
const { openDatabase } = (await import(join(src, "db/client.ts"))) as typeof import("../src/db/client");
const { AgentService } = (await import(join(src, "agent/service.ts"))) as typeof import("../src/agent/service");

// Every statement drizzle sends, counted (and timed with BENCH_PROFILE=1) in the build measured.
let statements = 0;
const timing = new Map<string, number>();
for (const mod of ["drizzle-orm/pglite/session.js", "drizzle-orm/postgres-js/session.js"]) {
  const m = await import(join(src, "../node_modules", mod));
  const cls = m.PglitePreparedQuery ?? m.PostgresJsPreparedQuery;
  const proto = cls.prototype as Record<string, (...a: unknown[]) => Promise<unknown>>;
  for (const name of ["execute", "all"]) {
    const orig = proto[name]!;
    proto[name] = async function (this: { query?: { sql: string }; queryString?: string }, ...a: unknown[]) {
      statements++;
      if (!process.env.BENCH_PROFILE) return orig.apply(this, a);
      const t = performance.now();
      try {
        return await orig.apply(this, a);
      } finally {
        const key = (this.query?.sql ?? this.queryString ?? "?").replace(/\s+/g, " ").slice(0, 70);
        timing.set(key, (timing.get(key) ?? 0) + performance.now() - t);
      }
    };
  }
}

const database = await benchDatabase();
const dataDir = mkdtempSync(join(tmpdir(), "mcp-bench-ingest-"));
const { db, close } = await openDatabase({ url: database.url || undefined, dataDir });
const q = async <T>(text: ReturnType<typeof sql>) => rowsOf<T>(await db.execute(text));

const [team] = await q<{ id: string }>(sql`insert into teams (name) values ('ingest') returning id::text as id`);
const serverIds = (
  await q<{ id: string }>(sql`
    insert into servers (team_id, name, host, port, kind, network_name, agent_token_hash, agent_token_prefix)
    select ${team!.id}::uuid, 'n' || i, '127.0.0.1', 9, 'network', 'Ingest', 'ingest-' || i, 'x'
      from generate_series(1, ${AGENTS}) i
    returning id::text as id`)
).map((r) => r.id);

const service = new AgentService(db, undefined as never);
// A UTC midnight, so runs of two builds cut the same days and slots.
const base = Math.floor(Date.now() / 86_400_000 - 20) * 86_400_000;
let seq = 0;
/** A batch of joins and leaves: each player joins, then leaves 5 to 65 minutes later. */
function batch(server: number, n: number) {
  const events: Parameters<typeof service.events>[1] = [];
  for (let i = 0; i < n / 2; i++) {
    const k = seq++;
    const uuid = `0e0e0e0e-0000-4000-8000-${k.toString(16).padStart(12, "0")}`;
    const at = base + k * 20_000;
    events.push({ event_id: `b${k}j`, type: "join", uuid, name: `p${k}`, at: new Date(at).toISOString() });
    events.push({
      event_id: `b${k}l`,
      type: "leave",
      uuid,
      name: `p${k}`,
      at: new Date(at + (5 + (k % 60)) * 60_000).toISOString(),
    });
  }
  return { server, events };
}
const batches = Array.from({ length: Math.ceil(EVENTS / BATCH) }, (_, i) => batch(i % AGENTS, BATCH));

statements = 0;
let t = performance.now();
await Promise.all(
  serverIds.map(async (serverId, a) => {
    for (const b of batches.filter((x) => x.server === a))
      await service.events({ serverId, teamId: team!.id }, b.events);
  }),
);
const ingestMs = performance.now() - t;
const perEvent = statements / EVENTS;
// What the aggregates hold, to compare two builds' runs: the same events must give the same sums.
// Session lengths per server: their own table in builds before drizzle/0033, the server scopes'
// slot columns since.
const [lengthsTable] = await q<{ t: string | null }>(sql`select to_regclass('analytics_session_lengths')::text as t`);
const lengths = lengthsTable?.t
  ? sql`select sum(sessions * (bucket + 1)) from analytics_session_lengths`
  : sql.raw(
      `select sum(${[0, 1, 2, 3, 4, 5, 6].map((i) => `len${i} * ${i + 1}`).join(" + ")}) from analytics_slots where scope not like 'n:%'`,
    );
const [check] = await q<{ n: number; ns: number; slots: number; sums: string }>(sql`
  select (select count(*) from player_sessions where left_at is not null)::int as n,
         (select count(*) from network_sessions where left_at is not null)::int as ns,
         (select count(*) from analytics_slots)::int as slots,
         concat_ws('/',
           (select sum(players) || ',' || sum(playtime_us) || ',' || sum(peak) from server_days),
           (select count(*) || ',' || sum(playtime_us) || ',' || sum(joins) from player_days),
           (select sum(online_ms) || ',' || sum(start_level) || ',' || sum(peak) from analytics_slots),
           (select sum(q0 + q1 + q2 + q3) || ',' || sum(joins) from analytics_player_hours),
           (${lengths}),
           (select sum(play_seconds) || ',' || sum(sessions) from team_players),
           (select sum(extract(epoch from left_at - joined_at)) from network_sessions)) as sums`);

// Baseline: the same number of sessions as plain inserts, a transaction per batch.
t = performance.now();
for (let i = 0; i < EVENTS / BATCH; i++) {
  await db.transaction(async (tx) => {
    const rows = Array.from({ length: BATCH / 2 }, (_, j) => {
      const k = 10_000_000 + i * BATCH + j;
      return sql`(${serverIds[0]}::uuid, ${`0d0d0d0d-0000-4000-8000-${k.toString(16).padStart(12, "0")}`}::uuid, ${new Date(base + k * 1000).toISOString()}::timestamptz)`;
    });
    const ids = rowsOf<{ id: string }>(
      await tx.execute(
        sql`insert into player_sessions (server_id, uuid, joined_at) values ${sql.join(rows, sql`, `)} returning id::text as id`,
      ),
    );
    await tx.execute(sql`update player_sessions set left_at = joined_at + interval '10 minutes'
      where id in (${sql.join(
        ids.map((r) => sql`${r.id}::uuid`),
        sql`, `,
      )})`);
  });
}
const rawMs = performance.now() - t;
if (process.env.BENCH_PROFILE)
  for (const [k, ms] of [...timing].sort((a, b) => b[1] - a[1]).slice(0, 12)) console.log(`${ms.toFixed(0)} ms  ${k}`);
await close();
// BENCH_KEEP=1 leaves the database for a look at its plans afterwards (its URL is printed).
if (process.env.BENCH_KEEP) console.log(`kept ${database.url}`);
else await database.drop();
rmSync(dataDir, { recursive: true, force: true });

const rate = EVENTS / (ingestMs / 1000);
const rawRate = EVENTS / (rawMs / 1000);
console.log(
  `ingest (${pg ? "PostgreSQL" : "PGlite"}, ${src}): ${EVENTS} join/leave events, batches of ${BATCH}, ${AGENTS} agents at once: ` +
    `${Math.round(rate)} events/s with the aggregates kept (${perEvent.toFixed(2)} statements/event; ${check!.n} sessions, ` +
    `${check!.ns} network sessions, ${check!.slots} slots; sums ${check!.sums}); plain inserts: ${Math.round(rawRate)} events/s ` +
    `(${(rate / rawRate).toFixed(3)}x); load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}`,
);
process.exit(0);
