/**
 * One tenant's player-history summaries against another tenant's simple read, in one run.
 *
 * Team A's server gets 90 days of player sessions (BENCH_SESSIONS, 10,000 by default, about 300
 * players, some sessions spanning midnight, a few still open) through the agent ingest, as an
 * agent backfilling would send them. Team B's server gets a few sessions. Then, each for
 * BENCH_SECONDS:
 *  - baseline: team B reads its sessions page (`GET /server/players/sessions?limit=10`), one
 *    request after another, with nothing else running;
 *  - the same read while team A's viewer loops `GET /server/players/summary?window=90d`, first in
 *    one loop, then in three loops at once (a viewer with three dashboard tabs). A loop answered
 *    429 waits the Retry-After it was given, as a client should.
 * Printed: team B's p50 and p99 in each case, the summaries answered per second and the 429s,
 * and the summary's own p50 with nothing else running. Target: team B's p99 under 20 ms on PGlite.
 *
 *   bun bench/summaries.ts                                   # PGlite in a temp dir
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres bun bench/summaries.ts
 *   BENCH_SECONDS=5 BENCH_SESSIONS=2000 bun bench/summaries.ts
 *   BENCH_APP=/path/to/other/checkout/src/main.ts bun bench/summaries.ts   # the same run against another build
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { benchDatabase, post, startTarget } from "./lib/targets";

const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const sessionCount = Number(process.env.BENCH_SESSIONS ?? 10_000);
const PLAYERS = 300;
const DAY = 86_400_000;

const dataDir = mkdtempSync(join(tmpdir(), "mcp-bench-summaries-"));
const database = await benchDatabase();
const env: Record<string, string> = {
  DATA_DIR: dataDir,
  HOST: "127.0.0.1",
  LOG_LEVEL: "warn",
  NODE_ENV: "production",
  DEV_IDP_ENABLED: "true",
  DATABASE_URL: database.url,
  PINGER_ENABLED: "false",
  OUTBOUND_ALLOW_PRIVATE: "true",
  ACCESS_TOKEN_TTL_SECONDS: "86400",
  // The history is 90 days deep and closed sessions older than retention would be pruned.
  SAMPLE_RETENTION_DAYS: "90",
  // Every session is closed by its leave; the sweep must not close the open ones during the run.
  PLAYER_SESSION_TIMEOUT_SECONDS: "86400",
};
const app = await startTarget(process.env.BENCH_APP ?? "src/main.ts", env);

async function tenant(name: string) {
  const email = `${name}@example.test`;
  await post(app.url, "/auth/signup", { email, password: "bench password" });
  const { access_token: token } = await post(app.url, "/auth/login", { email, password: "bench password" });
  const { team_id: teamId } = await post(app.url, "/teams", { name }, token);
  const srv = await post(
    app.url,
    "/server/servers",
    { team_id: teamId, name, host: "127.0.0.1", port: 9, kind: "single" },
    token,
  );
  return {
    headers: { authorization: `Bearer ${token}`, "x-server-id": srv.server_id as string },
    agent: srv.agent_token as string,
  };
}

/** Deterministic, so two runs (or two builds) see the same history. */
function rng(seed: number) {
  return () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return seed / 2 ** 31;
  };
}

type Ev = { type: "join" | "leave"; uuid: string; name: string; at: number };
/** `n` sessions of `players` players over the last 90 days; each player's sessions never overlap. */
function history(n: number, players: number, seed: number): Ev[] {
  const rand = rng(seed);
  const now = Date.now();
  const start = now - 90 * DAY + 3600_000;
  const per = Array.from({ length: players }, () => [] as number[]);
  for (let i = 0; i < n; i++) per[Math.floor(rand() * players)]!.push(start + rand() * (now - start - 600_000));
  const events: Ev[] = [];
  per.forEach((joins, p) => {
    joins.sort((a, b) => a - b);
    const uuid = `00000000-0000-4000-8000-${String(p).padStart(12, "0")}`;
    const name = `player${p}`;
    joins.forEach((j, k) => {
      const next = joins[k + 1] ?? now;
      // Mostly under an hour, some of several hours (across midnight, often).
      const want = rand() < 0.1 ? rand() * 8 * 3600_000 : rand() * 3600_000;
      events.push({ type: "join", uuid, name, at: j });
      // The newest session of every tenth player is still open.
      if (k === joins.length - 1 && p % 10 === 0) return;
      events.push({ type: "leave", uuid, name, at: Math.min(j + want, next - 1000, now - 1000) });
    });
  });
  return events.sort((a, b) => a.at - b.at);
}

let seq = 0;
async function ingest(agent: string, events: Ev[]) {
  for (let i = 0; i < events.length; i += 200) {
    // 200 events stay under the 64 KiB body limit.
    const batch = events
      .slice(i, i + 200)
      .map((e) => ({ ...e, event_id: `b-${seq++}`, at: new Date(e.at).toISOString() }));
    const res = await fetch(`${app.url}/agent/events`, {
      method: "POST",
      headers: { authorization: `Bearer ${agent}`, "content-type": "application/json" },
      body: JSON.stringify({ events: batch }),
    });
    if (!res.ok) throw new Error(`/agent/events: ${res.status} ${await res.text()}`);
  }
}

const summaryUrl = `${app.url}/server/players/summary?window=90d`;
const simpleUrl = `${app.url}/server/players/sessions?limit=10`;
const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? NaN;

/** One request after another for `ms`; latencies sorted, and errors. */
async function sequential(url: string, headers: Record<string, string>, ms: number) {
  const lat: number[] = [];
  let errors = 0;
  const end = performance.now() + ms;
  while (performance.now() < end) {
    const t = performance.now();
    const res = await fetch(url, { headers });
    await res.arrayBuffer();
    lat.push(performance.now() - t);
    if (res.status !== 200) errors++;
  }
  return { lat: lat.sort((x, y) => x - y), errors };
}

/** The other team's read while `loops` summary loops run; what the loops got. */
async function contended(loops: number, viewer: Record<string, string>, other: Record<string, string>) {
  let stop = false;
  let answered = 0;
  let limited = 0;
  let failed = 0;
  const looping = Array.from({ length: loops }, async () => {
    while (!stop) {
      const res = await fetch(summaryUrl, { headers: viewer });
      await res.arrayBuffer();
      if (res.status === 200) answered++;
      else if (res.status === 429) {
        limited++;
        await Bun.sleep(Number(res.headers.get("retry-after") ?? 1) * 1000);
      } else failed++;
    }
  });
  await Bun.sleep(500);
  const read = await sequential(simpleUrl, other, seconds * 1000);
  stop = true;
  await Promise.all(looping);
  return { ...read, answered, limited, failed };
}

async function run() {
  const a = await tenant("viewer");
  const b = await tenant("other");
  const ingestStart = performance.now();
  await ingest(a.agent, history(sessionCount, PLAYERS, 42));
  const ingestSeconds = (performance.now() - ingestStart) / 1000;
  await ingest(b.agent, history(50, 5, 7));

  const check = await fetch(summaryUrl, { headers: a.headers });
  if (!check.ok) throw new Error(`summary: ${check.status} ${await check.text()}`);
  const summary = (await check.json()) as { totals: { unique_players: number; playtime_seconds: number } };

  await sequential(simpleUrl, b.headers, 1000);
  const baseline = await sequential(simpleUrl, b.headers, seconds * 1000);
  const alone = await sequential(summaryUrl, a.headers, Math.min(seconds, 5) * 1000);
  const one = await contended(1, a.headers, b.headers);
  const three = await contended(3, a.headers, b.headers);
  return { ingestSeconds, summary, baseline, alone, one, three };
}

let result: Awaited<ReturnType<typeof run>>;
try {
  result = await run();
} finally {
  await app.stop();
  rmSync(dataDir, { recursive: true, force: true });
  await database.drop();
}
const { ingestSeconds, summary, baseline, alone, one, three } = result;

console.log(`database: ${process.env.DATABASE_URL ? "postgres" : "pglite"}; ${seconds}s per case`);
console.log(
  `team A: ${sessionCount} sessions of ${PLAYERS} players over 90 days, ingested in ${ingestSeconds.toFixed(1)} s; ` +
    `its 90d summary: ${summary.totals.unique_players} players, ${summary.totals.playtime_seconds} s played; ` +
    `alone p50 ${pct(alone.lat, 0.5).toFixed(2)} ms, p99 ${pct(alone.lat, 0.99).toFixed(2)} ms`,
);
const pad = (s: string, n: number) => s.padEnd(n);
console.log(
  `\n${pad("team B's sessions page", 44)}${pad("reads", 8)}${pad("p50 ms", 10)}${pad("p99 ms", 10)}${pad("summaries/s", 13)}429s`,
);
const rows = [
  { name: "baseline: nothing else running", r: baseline },
  { name: "while A's viewer loops summaries (1 loop)", r: one },
  { name: "while A's viewer loops summaries (3 loops)", r: three },
] as const;
for (const { name, r } of rows) {
  const extra = "answered" in r ? `${pad((r.answered / seconds).toFixed(1), 13)}${r.limited}` : "";
  console.log(
    `${pad(name, 44)}${pad(String(r.lat.length), 8)}${pad(pct(r.lat, 0.5).toFixed(2), 10)}${pad(pct(r.lat, 0.99).toFixed(2), 10)}${extra}`,
  );
}
const bad = rows.reduce((n, { r }) => n + r.errors + ("failed" in r ? r.failed : 0), 0) + alone.errors;
if (bad > 0) {
  console.log(`\nINVALID RUN: ${bad} answers other than 200 (or 429 to the viewer)`);
  process.exitCode = 1;
}
