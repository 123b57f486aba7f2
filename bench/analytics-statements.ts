/**
 * One analytics read's statements, each with its time, on a database kept by bench/analytics.ts
 * (`BENCH_KEEP=1`): where a read's milliseconds go. Runs the read BENCH_RUNS times (3; the first
 * warms the caches) and prints the statements of the slowest run after the first; `BENCH_EXPLAIN=<text>` also prints EXPLAIN
 * (ANALYZE, BUFFERS) of each statement containing that text (PostgreSQL only).
 *
 *   BENCH_REUSE=postgres://postgres@127.0.0.1:5432/mcp_bench_... BENCH_READ=activity BENCH_DAYS=365 \
 *     node_modules/.bin/bun bench/analytics-statements.ts
 *   BENCH_TO=2026-10-15T00:00:00Z BENCH_HOURS=1 ...   # another window's end; the hours-only service
 */
import { type SQL, sql } from "drizzle-orm";
import { AnalyticsService } from "../src/analytics/service";
import type { Principal } from "../src/auth/principal";
import { openDatabase } from "../src/db/client";
import { rowsOf } from "../src/db/rows";
import { Clock } from "../src/lib/clock";

const url = process.env.BENCH_REUSE;
if (!url?.startsWith("postgres")) throw new Error("BENCH_REUSE=<the PostgreSQL URL bench/analytics.ts kept>");
const { db, close } = await openDatabase({ url, dataDir: "/nonexistent" });
type Session = {
  execute: (q: SQL) => Promise<unknown>;
  dialect: { sqlToQuery: (q: SQL) => { sql: string; params: unknown[] } };
  $client: { unsafe: (text: string, params: unknown[]) => Promise<Record<string, string>[]> };
};
const raw = db as unknown as Session;
const [team] = rowsOf<{ id: string }>(await db.execute(sql`select id::text as id from teams where name = 'bench'`));
const end = Date.parse(process.env.BENCH_TO ?? "2026-11-01T00:00:00Z");
const clock = new Clock();
clock.advance(end - Date.now());
const service = new AnalyticsService(db, clock, { hoursOnly: Boolean(process.env.BENCH_HOURS) });
const principal: Principal = {
  kind: "api_key",
  keyId: "bench",
  teamId: team!.id,
  role: "viewer",
  scopes: null,
  serverIds: null,
  exp: null,
};
const days = Number(process.env.BENCH_DAYS ?? 30);
const q = {
  network: "Realm",
  from: new Date(end - days * 86_400_000).toISOString(),
  to: new Date(end).toISOString(),
  tz: "Europe/Berlin",
};

let log: [number, string][] = [];
const execute = raw.execute.bind(db);
const explain = process.env.BENCH_EXPLAIN;
raw.execute = async (x: SQL) => {
  const { sql: text, params } = raw.dialect.sqlToQuery(x);
  if (explain && text.includes(explain)) {
    const plan = await raw.$client.unsafe(`explain (analyze, buffers) ${text}`, params);
    console.log(plan.map((l) => l["QUERY PLAN"]).join("\n"));
  }
  const t = performance.now();
  try {
    return await execute(x);
  } finally {
    log.push([performance.now() - t, text.replace(/\s+/g, " ").slice(0, 160)]);
  }
};

const read = (process.env.BENCH_READ ?? "leaderboard") as
  | "leaderboard"
  | "editions"
  | "activity"
  | "retention"
  | "heatmap"
  | "peaks"
  | "sessionLengths";
// BENCH_RUNS runs (3); the statements of the slowest after the first.
let slowest: { ms: number; log: [number, string][] } = { ms: -1, log: [] };
for (let i = 0; i < Number(process.env.BENCH_RUNS ?? 3); i++) {
  log = [];
  const t = performance.now();
  await service[read](principal, team!.id, q);
  const ms = performance.now() - t;
  console.log(`${read} over ${days} days: ${ms.toFixed(1)} ms`);
  if (i > 0 && ms > slowest.ms) slowest = { ms, log };
}
for (const [ms, text] of slowest.log) console.log(`${ms.toFixed(1).padStart(8)} ms  ${text}`);
await close();
