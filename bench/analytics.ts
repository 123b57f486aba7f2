/**
 * Player analytics at scale: every read of src/analytics/service.ts beside a raw SQL baseline that
 * computes the same answer from the sessions, on one generated network; and the ingest of joins
 * and leaves through the agent's events route with the aggregates kept, beside plain inserts.
 *
 * A network of 20 servers, BENCH_PLAYERS players (200,000) and BENCH_SESSIONS sessions (5,000,000)
 * over a year, generated in SQL (generate_series), then the aggregates built from them
 * (`rebuildAggregates`, what the migration's backfill does). Each read runs BENCH_ITER times
 * (30) over the network for the last 30 days in Europe/Berlin, in process against the service
 * (no HTTP); its answer is checked against the baseline's.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres bun bench/analytics.ts
 *   BENCH_SESSIONS=500000 BENCH_PLAYERS=20000 bun bench/analytics.ts      # PGlite, smaller
 *   BENCH_INGEST_EVENTS=20000 ...                                          # events for the ingest part
 *   BENCH_APP=/path/to/other/checkout/src/main.ts ...                     # the ingest of another build
 *   BENCH_INGEST_EVENTS=0 BENCH_KEEP=1 ...                                 # reads only; keep the database (EXPLAIN)
 *   BENCH_REUSE=<url or PGlite dir> BENCH_INGEST_EVENTS=0 ...              # the reads again on a kept database
 *   BENCH_RAW_ITER=5 ...                                                   # fewer runs of the (slow) raw baselines
 *   BENCH_RAW_ITER=0 ...                # no raw baseline: two builds' reads side by side (answers not checked)
 *   BENCH_TO=2026-10-15T18:30:00Z ...                                      # the 30 days to another end (across a month)
 *   BENCH_DAYS=7 ...  BENCH_READS=leaderboard,editions ...                  # another window length; some reads only
 *   BENCH_TZ=Europe/Paris ...                                              # the reads in another zone than the team's
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import { indexEnd, rebuildAggregates, rebuildCohorts } from "../src/analytics/aggregates";
import { AnalyticsService } from "../src/analytics/service";
import type { Principal } from "../src/auth/principal";
import { openDatabase } from "../src/db/client";
import { rowsOf } from "../src/db/rows";
import { Clock } from "../src/lib/clock";
import { benchDatabase, post, startTarget } from "./lib/targets";

// PostgreSQL with DATABASE_URL, or when BENCH_REUSE names a PostgreSQL database (not a PGlite directory).
const pg = Boolean(process.env.DATABASE_URL) || Boolean(process.env.BENCH_REUSE?.startsWith("postgres"));
const SESSIONS = Number(process.env.BENCH_SESSIONS ?? (pg ? 5_000_000 : 500_000));
const PLAYERS = Number(process.env.BENCH_PLAYERS ?? (pg ? 200_000 : 20_000));
const ITER = Number(process.env.BENCH_ITER ?? 30);
/** The raw SQL baselines are slow at scale (seconds each): fewer runs of them. */
const RAW_ITER = Number(process.env.BENCH_RAW_ITER ?? ITER);
const INGEST_EVENTS = Number(process.env.BENCH_INGEST_EVENTS ?? 20_000);
const SERVERS = 20;
const ZONE = "Europe/Berlin";
/** The reads' zone (the team's unless BENCH_TZ names another; the raw baselines count in it too). */
const READ_ZONE = process.env.BENCH_TZ ?? ZONE;
const END = Date.parse("2026-11-01T00:00:00Z");
const START = END - 365 * 86_400_000;

// BENCH_REUSE=<url or PGlite dir> reads a database kept by an earlier run (BENCH_KEEP=1) again.
const REUSE = process.env.BENCH_REUSE;
const dataDir = REUSE && !pg ? REUSE : mkdtempSync(join(tmpdir(), "mcp-bench-analytics-"));
const database = REUSE && pg ? { url: REUSE, drop: async () => {} } : await benchDatabase();
const { db, close } = await openDatabase({ url: database.url || undefined, dataDir });
const q = async <T>(text: ReturnType<typeof sql>) => rowsOf<T>(await db.execute(text));
// The raw baselines on a plain postgres.js client with the server's defaults: PostgreSQL may run
// them in parallel (the service's own connections do not: its reads are index ranges, for which
// starting workers costs more than it saves).
const rawClient = pg ? postgres(database.url, { max: 1, onnotice: () => {} }) : undefined;
const rawDb = rawClient ? drizzle(rawClient) : db;
const rq = async <T>(text: ReturnType<typeof sql>) => rowsOf<T>(await rawDb.execute(text));
const t0 = () => performance.now();

console.log(
  `player analytics on ${pg ? "PostgreSQL" : "PGlite"}: ${SERVERS} servers, ${PLAYERS} players, ${SESSIONS} sessions over a year`,
);

// --- generate ---------------------------------------------------------------------------------
const load = () =>
  (require("node:os") as typeof import("node:os"))
    .loadavg()
    .map((x) => x.toFixed(1))
    .join(" ");
console.log(`load average at start: ${load()}`);
let t = t0();
let genMs = 0;
let buildMs = 0;
let teamId: string;
if (REUSE) {
  const [team] = await q<{ id: string; zone: string; kept: string }>(
    sql`select id::text as id, time_zone as zone, cohort_zone as kept from teams where name = 'bench'`,
  );
  teamId = team!.id;
  // A database kept before the team's zone was ZONE, or whose kept counts are in another zone (a
  // database this bench made before 2026-11-29 kept them in UTC): changed as PATCH /teams and the
  // zone's sweep do it (retention's kept counts made again in the new zone), timed.
  if (team!.zone !== ZONE || team!.kept !== ZONE) {
    const t1 = t0();
    await db.transaction(async (tx) => {
      await tx.execute(sql`update teams set time_zone = ${ZONE}, cohort_zone = ${ZONE} where id = ${teamId}`);
      await rebuildCohorts(tx, teamId);
    });
    console.log(
      `the team's zone set to ${ZONE}: retention's kept counts made again in ${((t0() - t1) / 1000).toFixed(1)} s`,
    );
  }
} else {
  const [team] = await q<{ id: string }>(
    sql`insert into teams (name, time_zone, cohort_zone) values ('bench', ${ZONE}, ${ZONE}) returning id::text as id`,
  );
  teamId = team!.id;
  await db.execute(sql`
  insert into servers (team_id, name, host, port, kind, network_name, agent_token_hash, agent_token_prefix)
  select ${teamId}::uuid, 'srv' || i, '127.0.0.1', 25565 + i, 'network', 'Realm', 'bench-' || ${teamId} || '-' || i, 'x'
    from generate_series(1, ${SERVERS}) i`);
  // Player p: every 10th a Floodgate (Bedrock) UUID. Sessions spread over the year with a daily
  // rhythm (more in the evening), lengths exponential around 40 minutes, capped at 8 hours.
  await db.execute(
    sql.raw(`
  insert into player_sessions (server_id, uuid, joined_at, left_at, seen_at, source, end_reason)
  select sv.ids[1 + (g % ${SERVERS})],
         (case when p % 10 = 0 then '00000000-0000-0000-0009-' else '0f0f0f0f-0000-4000-8000-' end || lpad(to_hex(p), 12, '0'))::uuid,
         j, j + l, j + l, 'agent', 'leave'
    from (select array_agg(id order by name) as ids from servers where team_id = '${teamId}') sv,
         generate_series(1, ${SESSIONS}) g
         cross join lateral (select (hashint4(g) & 2147483647) % ${PLAYERS} as p,
           timestamptz '${new Date(START).toISOString()}'
             + (g::float8 / ${SESSIONS}) * interval '365 days'
             + ((hashint4(g * 7) & 2147483647) % 21600) * interval '1 second' as j,
           least(interval '8 hours', (-ln(((hashint4(g * 13) & 2147483647) + 1)::float8 / 2147483648) * 2400) * interval '1 second') as l) x`),
  );
  await db.execute(sql`
  insert into players (server_id, uuid, name, online, first_seen, last_seen, play_seconds)
  select s.server_id, s.uuid, 'p' || substr(s.uuid::text, 25), false, min(s.joined_at), max(s.left_at),
         sum(round(extract(epoch from s.left_at - s.joined_at)))::bigint
    from player_sessions s where s.server_id in (select id from servers where team_id = ${teamId}::uuid)
   group by s.server_id, s.uuid`);
  if (pg) await db.execute(sql`analyze`);
  genMs = performance.now() - t;
  console.log(`generated in ${(genMs / 1000).toFixed(1)} s (load ${load()})`);
  t = t0();
  await db.transaction((tx) => rebuildAggregates(tx, teamId));
  // As autovacuum leaves tables after a bulk load: statistics, and the visibility map the reads'
  // index-only scans rely on.
  await db.execute(sql`vacuum analyze`);
  buildMs = performance.now() - t;
}
const serverIds = (
  await q<{ id: string }>(sql`select id::text as id from servers where team_id = ${teamId}::uuid order by name`)
).map((r) => r.id);
const [sizes] = await q<Record<string, number>>(sql`select
  (select count(*) from player_sessions)::int as sessions,
  (select count(*) from analytics_player_months)::int as player_months,
  (select count(*) from analytics_player_hours)::int as player_hours,
  (select count(*) from analytics_slots)::int as slots,
  (select count(*) from analytics_activity_weeks)::int as activity_weeks,
  (select count(*) from analytics_player_weeks)::int as player_weeks,
  (select count(*) from analytics_cohort_weeks)::int as cohort_weeks`);
console.log(
  `generated in ${(genMs / 1000).toFixed(1)} s; aggregates built in ${(buildMs / 1000).toFixed(1)} s (${JSON.stringify(sizes)}); load ${load()}`,
);

// --- reads ------------------------------------------------------------------------------------
const clock = new Clock();
clock.advance(END - Date.now());
const service = new AnalyticsService(db, clock);
const principal: Principal = {
  kind: "api_key",
  keyId: "bench",
  teamId,
  role: "viewer",
  scopes: null,
  serverIds: null,
  exp: null,
};
// The window: the 30 days to the data's end by default; BENCH_TO (and BENCH_FROM) another, such as
// 30 days across a month boundary (most "last 30 days" windows cut two months); BENCH_DAYS another
// length (the dashboard offers 7, 30, 90 and 365).
const to = new Date(process.env.BENCH_TO ?? END);
const from = new Date(process.env.BENCH_FROM ?? to.getTime() - Number(process.env.BENCH_DAYS ?? 30) * 86_400_000);
const input = { network: "Realm", from: from.toISOString(), to: to.toISOString(), tz: READ_ZONE };
const ids = sql.raw(serverIds.map((i) => `'${i}'::uuid`).join(", "));
const F = sql.raw(`timestamptz '${from.toISOString()}'`);
const T = sql.raw(`timestamptz '${to.toISOString()}'`);
// The activity index's end: the last Monday 00:00 UTC at or before the window's end.
const IE = sql.raw(`timestamptz '${indexEnd(to).toISOString()}'`);
const overlap = sql`s.server_id in (${ids}) and s.joined_at < ${T} and (s.left_at > ${F} or s.joined_at >= ${F})`;
const playedMs = sql`(round(extract(epoch from least(s.left_at, ${T})) * 1000) - round(extract(epoch from greatest(s.joined_at, ${F})) * 1000))`;

type Read = {
  name: string;
  service: () => Promise<unknown>;
  raw: () => Promise<unknown>;
  same: (a: any, b: any) => boolean;
};
const reads: Read[] = [
  {
    name: "leaderboard",
    service: () => service.leaderboard(principal, teamId, { ...input, limit: 10 }),
    raw: () =>
      rq(sql`select s.uuid::text as uuid, round(sum(${playedMs}) / 1000)::int as secs from player_sessions s
        where ${overlap} group by s.uuid order by sum(${playedMs}) desc, s.uuid limit 10`),
    same: (a, b) =>
      JSON.stringify(a.players.map((p: any) => [p.uuid, p.playtime_seconds])) ===
      JSON.stringify(b.map((r: any) => [r.uuid, Number(r.secs)])),
  },
  {
    name: "editions",
    service: () => service.editions(principal, teamId, input),
    raw: () =>
      rq(sql`select (uuid::text like '00000000-0000-0000-0009-%') as bedrock, count(*)::int as players, round(sum(ms) / 1000)::bigint as secs
        from (select s.uuid, sum(${playedMs}) as ms from player_sessions s where ${overlap} group by s.uuid) p group by 1 order by 1`),
    same: (a, b) =>
      a.editions[0].players === Number(b.find((r: any) => !r.bedrock)?.players ?? 0) &&
      a.editions[1].players === Number(b.find((r: any) => r.bedrock)?.players ?? 0) &&
      Math.abs(a.editions[0].playtime_seconds - Number(b.find((r: any) => !r.bedrock)?.secs ?? 0)) <= 1,
  },
  {
    name: "session-lengths",
    service: () => service.sessionLengths(principal, teamId, input),
    raw: () =>
      rq(sql`select width_bucket(extract(epoch from s.left_at - s.joined_at), array[300, 900, 1800, 3600, 7200, 14400]::float8[]) as b, count(*)::int as n
        from player_sessions s where s.server_id in (${ids}) and s.joined_at >= ${F} and s.joined_at < ${T} and s.left_at is not null group by 1 order by 1`),
    same: (a, b) =>
      a.buckets.every((x: any, i: number) => x.sessions === Number(b.find((r: any) => Number(r.b) === i)?.n ?? 0)),
  },
  {
    name: "peaks",
    service: () => service.peaks(principal, teamId, input),
    raw: () =>
      rq(sql`with ev as (
          select greatest(s.joined_at, ${F}) as at, 1 as d from player_sessions s where ${overlap} and s.left_at > s.joined_at and s.left_at > ${F}
          union all select s.left_at, -1 from player_sessions s where ${overlap} and s.left_at > s.joined_at and s.left_at > ${F} and s.left_at < ${T}),
        run as (select at, d, sum(d) over (order by at, d rows unbounded preceding) as lvl from ev)
        select max(lvl)::int as peak from run`),
    same: (a, b) => a.peak.players === Number(b[0].peak),
  },
  {
    name: "heatmap",
    service: () => service.heatmap(principal, teamId, input),
    raw: () =>
      rq(sql`with pieces as (
          select q.q, (round(extract(epoch from least(s.left_at, q.q + interval '15 minutes', ${T})) * 1000)
                     - round(extract(epoch from greatest(s.joined_at, q.q, ${F})) * 1000)) as ms
            from player_sessions s,
                 generate_series(date_bin('15 minutes', greatest(s.joined_at, ${F}), timestamptz '2000-01-01'), least(s.left_at, ${T}), interval '15 minutes') q(q)
           where ${overlap} and q.q < least(s.left_at, ${T})),
        grid as (select g from generate_series(${F}, ${T} - interval '15 minutes', interval '15 minutes') g)
        select extract(isodow from g at time zone ${READ_ZONE})::int as dow, extract(hour from g at time zone ${READ_ZONE})::int as hour,
               round((coalesce(sum(p.ms), 0) / (count(distinct g) * 900000.0))::numeric, 3)::float8 as avg
          from grid left join pieces p on p.q = grid.g group by 1, 2`),
    same: (a, b) =>
      b.every((r: any) => Math.abs(a.days[r.dow - 1].hours[r.hour].average_online - Number(r.avg)) < 0.0015),
  },
  {
    name: "activity",
    service: () => service.activity(principal, teamId, input),
    // Players seen and new, and the activity groups of the players seen: each one's playtime in the
    // three UTC weeks before the last Monday 00:00 UTC at or before the window's end, from the
    // sessions. (A window shorter than the three weeks does not see everyone who played in them.)
    raw: () =>
      rq(sql`with seen as (select distinct s.uuid from player_sessions s where ${overlap}),
        firsts as (select s.uuid, min(s.joined_at) as f from player_sessions s where s.server_id in (${ids}) and s.uuid in (select uuid from seen) group by s.uuid),
        w as (select g as ws from generate_series(${IE} - interval '21 days', ${IE} - interval '7 days', interval '7 days') g),
        pw as (
          select s.uuid, w.ws, sum(extract(epoch from least(s.left_at, w.ws + interval '7 days') - greatest(s.joined_at, w.ws)) * 1000) as ms
            from player_sessions s join w on s.joined_at < w.ws + interval '7 days' and s.left_at > w.ws
           where s.server_id in (${ids}) and s.uuid in (select uuid from seen) group by 1, 2),
        ix as (select uuid, 5 - 5 * (sum(1 / (pi() / 2 * ms / 3600000 + 1)) + (3 - count(*))) / 3 as i from pw group by uuid)
        select (select count(*) from firsts)::int as players, (select count(*) from firsts where f >= ${F})::int as fresh,
               count(*) filter (where i >= 3.75 - 1e-9)::int as very_active,
               count(*) filter (where i >= 3 - 1e-9 and i < 3.75 - 1e-9)::int as active,
               count(*) filter (where i >= 2 - 1e-9 and i < 3 - 1e-9)::int as regular,
               count(*) filter (where i >= 1 - 1e-9 and i < 2 - 1e-9)::int as irregular
          from ix`),
    same: (a, b) =>
      a.players === Number(b[0].players) &&
      a.new_players === Number(b[0].fresh) &&
      ["very_active", "active", "regular", "irregular"].every(
        (g, i) => a.activity_groups[i].group === g && a.activity_groups[i].players === Number(b[0][g]),
      ),
  },
  {
    name: "retention",
    service: () => service.retention(principal, teamId, input),
    raw: () =>
      rq(sql`with firsts as (select s.uuid, min(s.joined_at) as f from player_sessions s where s.server_id in (${ids}) group by s.uuid
                            having min(s.joined_at) >= ${F} and min(s.joined_at) < ${T})
        select to_char(date_trunc('week', f at time zone ${READ_ZONE}), 'YYYY-MM-DD') as wk, count(*)::int as n from firsts group by 1 order by 1`),
    same: (a, b) =>
      JSON.stringify(a.cohorts.map((c: any) => [c.week_start, c.players])) ===
      JSON.stringify(b.map((r: any) => [r.wk, Number(r.n)])),
  },
];

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
};
async function time(fn: () => Promise<unknown>, iter = ITER) {
  const ms: number[] = [];
  // One untimed run first: the raw baseline before it read the sessions table through (gigabytes),
  // and the first read after it paid for bringing its own pages back into shared buffers.
  let last: unknown = await fn();
  for (let i = 0; i < iter; i++) {
    const a = performance.now();
    last = await fn();
    ms.push(performance.now() - a);
  }
  return { p50: pct(ms, 50), p99: pct(ms, 99), last };
}

console.log(
  `\nwindow: ${from.toISOString()} to ${to.toISOString()} (${READ_ZONE}), the network; ${ITER} timed runs per read after one untimed`,
);
console.log("\n| read | aggregates p50 | p99 | raw SQL p50 | p99 | raw / aggregates (p50) | answers agree |");
console.log("| --- | --- | --- | --- | --- | --- | --- |");
// BENCH_READS=leaderboard,editions: only those.
const only = process.env.BENCH_READS?.split(",");
for (const r of reads.filter((x) => !only || only.includes(x.name))) {
  const a = await time(r.service);
  if (RAW_ITER === 0) {
    console.log(`| ${r.name} | ${a.p50.toFixed(1)} ms | ${a.p99.toFixed(1)} ms | - | - | - | not checked |`);
    continue;
  }
  const b = await time(r.raw, RAW_ITER);
  const agree = r.same(a.last, b.last);
  console.log(
    `| ${r.name} | ${a.p50.toFixed(1)} ms | ${a.p99.toFixed(1)} ms | ${b.p50.toFixed(1)} ms | ${b.p99.toFixed(1)} ms | ${(b.p50 / a.p50).toFixed(1)}x | ${agree ? "yes" : "NO"} |`,
  );
}
console.log(`load average after the reads: ${load()}`);
await rawClient?.end();
await close();
if (INGEST_EVENTS === 0) {
  if (process.env.BENCH_KEEP || REUSE) console.log(`\nkept the database: ${database.url || dataDir}`);
  else {
    await database.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
  process.exit(0);
}

// --- ingest -----------------------------------------------------------------------------------
const app = await startTarget(process.env.BENCH_APP ?? "src/main.ts", {
  DATA_DIR: mkdtempSync(join(tmpdir(), "mcp-bench-analytics-app-")),
  HOST: "127.0.0.1",
  LOG_LEVEL: "warn",
  NODE_ENV: "production",
  DEV_IDP_ENABLED: "true",
  DATABASE_URL: database.url,
  PINGER_ENABLED: "false",
  OUTBOUND_ALLOW_PRIVATE: "true",
  SAMPLE_RETENTION_DAYS: "30",
  PLAYER_SESSION_TIMEOUT_SECONDS: "86400",
});
await post(app.url, "/auth/signup", { email: "ingest@example.test", password: "bench password" });
const { access_token: token } = await post(app.url, "/auth/login", {
  email: "ingest@example.test",
  password: "bench password",
});
const { team_id: ingestTeam } = await post(app.url, "/teams", { name: "ingest" }, token);
const agents: string[] = [];
for (let i = 0; i < 4; i++) {
  const srv = await post(
    app.url,
    "/server/servers",
    { team_id: ingestTeam, name: `n${i}`, host: "127.0.0.1", port: 9, kind: "network", network_name: "Ingest" },
    token,
  );
  agents.push(srv.agent_token);
}
const BATCH = 100;
const base = Date.now() - 20 * 86_400_000;
let seq = 0;
/** Batches of joins and leaves (each player joins, then leaves 5 to 65 minutes later). */
function batch(server: number, n: number) {
  const events: unknown[] = [];
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
const batches = Array.from({ length: Math.ceil(INGEST_EVENTS / BATCH) }, (_, i) => batch(i % agents.length, BATCH));
t = t0();
await Promise.all(
  agents.map(async (_, a) => {
    for (const b of batches.filter((x) => x.server === a)) {
      const res = await fetch(`${app.url}/agent/events`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${agents[a]}` },
        body: JSON.stringify({ events: b.events }),
      });
      if (res.status !== 200) throw new Error(`ingest ${res.status} ${await res.text()}`);
    }
  }),
);
const ingestMs = performance.now() - t;

await app.stop();

// Baseline: the same number of sessions as plain inserts (a row per join, closed by an update per leave).
const raw = await openDatabase({
  url: database.url || undefined,
  dataDir: mkdtempSync(join(tmpdir(), "mcp-bench-analytics-raw-")),
});
const [srv] = rowsOf<{ id: string }>(await raw.db.execute(sql`select id::text as id from servers limit 1`));
let serverForRaw = srv?.id;
if (!serverForRaw) {
  const [tm] = rowsOf<{ id: string }>(
    await raw.db.execute(sql`insert into teams (name) values ('raw') returning id::text as id`),
  );
  const [s2] = rowsOf<{ id: string }>(
    await raw.db.execute(sql`insert into servers (team_id, name, host, port, kind, agent_token_hash, agent_token_prefix)
      values (${tm!.id}::uuid, 'raw', '127.0.0.1', 9, 'single', 'raw-hash', 'x') returning id::text as id`),
  );
  serverForRaw = s2!.id;
}
t = t0();
for (let i = 0; i < INGEST_EVENTS / BATCH; i++) {
  await raw.db.transaction(async (tx) => {
    const rows = Array.from({ length: BATCH / 2 }, (_, j) => {
      const k = 10_000_000 + i * BATCH + j;
      const at = base + k * 1000;
      return sql`(${serverForRaw}::uuid, ${`0d0d0d0d-0000-4000-8000-${k.toString(16).padStart(12, "0")}`}::uuid, ${new Date(at).toISOString()}::timestamptz)`;
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
await raw.close();
const ingestRate = INGEST_EVENTS / (ingestMs / 1000);
const rawRate = INGEST_EVENTS / (rawMs / 1000);
console.log(
  `\ningest: ${INGEST_EVENTS} join/leave events in batches of ${BATCH} from ${agents.length} agents: ${Math.round(ingestRate)} events/s with the aggregates kept; plain inserts of the same sessions: ${Math.round(rawRate)} events/s (${(ingestRate / rawRate).toFixed(2)}x)`,
);
await database.drop();
rmSync(dataDir, { recursive: true, force: true });
process.exit(0);
