/**
 * A public status page of 20 servers (90 days of hourly history each, a few outages, every figure
 * shown) through the app, beside a raw Bun.serve answering the same bytes from memory with the
 * same headers; and one SVG badge beside the raw server answering a constant SVG. One run, same
 * load tool, same connections. Targets: page >= 0.8x raw with p99 < 20 ms; badge >= 0.8x raw.
 *
 *   bun bench/status-page.ts                      # PGlite in a temp dir
 *   DATABASE_URL=postgres://... bun bench/status-page.ts
 *   BENCH_SECONDS=10 BENCH_CONNECTIONS=50 bun bench/status-page.ts
 *
 * With BENCH_STATUS_RAW set to a directory, this file is the baseline server itself: it answers
 * /page and /badge with the files the benchmark saved there (the benchmark starts it so).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { sql } from "drizzle-orm";
import { openDatabase } from "../src/db/client";
import { type LoadResult, load, table } from "./lib/load";
import { benchDatabase, post, startTarget } from "./lib/targets";

if (process.env.BENCH_STATUS_RAW) {
  const dir = process.env.BENCH_STATUS_RAW;
  const page = readFileSync(join(dir, "page.html"), "utf8");
  const pageGz = gzipSync(page);
  const headers = JSON.parse(readFileSync(join(dir, "headers.json"), "utf8")) as Record<string, string>;
  const badge = readFileSync(join(dir, "badge.svg"), "utf8");
  const badgeHeaders = JSON.parse(readFileSync(join(dir, "badge-headers.json"), "utf8")) as Record<string, string>;
  Bun.serve({
    port: Number(process.env.PORT),
    hostname: "127.0.0.1",
    fetch(req) {
      const path = new URL(req.url).pathname;
      if (path === "/health") return Response.json({ status: "ok" });
      if (path === "/page") {
        // The same bytes the app sends: gzipped when the client takes it.
        if (/\bgzip\b/.test(req.headers.get("accept-encoding") ?? ""))
          return new Response(pageGz, { headers: { ...headers, "content-encoding": "gzip" } });
        return new Response(page, { headers });
      }
      if (path === "/badge") return new Response(badge, { headers: badgeHeaders });
      return new Response("not found", { status: 404 });
    },
  });
} else {
  await main();
}

async function main() {
  const seconds = Number(process.env.BENCH_SECONDS ?? 5);
  const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
  const SERVERS = 20;
  const dataDir = mkdtempSync(join(tmpdir(), "mcp-bench-status-"));
  const rawDir = mkdtempSync(join(tmpdir(), "mcp-bench-status-raw-"));
  const db = await benchDatabase();
  const env: Record<string, string> = {
    DATA_DIR: dataDir,
    HOST: "127.0.0.1",
    LOG_LEVEL: "warn",
    NODE_ENV: "production",
    DEV_IDP_ENABLED: "true",
    DATABASE_URL: db.url,
    PINGER_ENABLED: "false",
    OUTBOUND_ALLOW_PRIVATE: "true",
  };

  let app = await startTarget("src/main.ts", env);
  await post(app.url, "/auth/signup", { email: "bench@example.test", password: "bench password" });
  const { access_token: token } = await post(app.url, "/auth/login", {
    email: "bench@example.test",
    password: "bench password",
  });
  const { team_id: teamId } = await post(app.url, "/teams", { name: "bench" }, token);
  const ids: string[] = [];
  for (let i = 0; i < SERVERS; i++) {
    const s = await post(
      app.url,
      "/server/servers",
      { team_id: teamId, name: `Server ${String(i + 1).padStart(2, "0")}`, host: "127.0.0.1", port: 9, kind: "single" },
      token,
    );
    ids.push(s.server_id);
  }
  await post(
    app.url,
    `/teams/${teamId}/status-pages`,
    {
      slug: "bench",
      title: "Bench Network",
      description: "Twenty servers, ninety days",
      server_ids: ids,
      show: { players: true, version: true, motd: true, latency: true },
      published: true,
    },
    token,
  );
  await app.stop();

  // History written with the app stopped (PGlite is one process's at a time): 90 days of hourly
  // buckets per server (120 pings an hour, one hour in 97 with some down), a current status, and
  // an outage every 9 days.
  const database = await openDatabase({ url: env.DATABASE_URL || undefined, dataDir });
  const list = `{${ids.join(",")}}`;
  await database.db.execute(sql`
    insert into server_metrics_hour (server_id, bucket, up_n, down_n, latency_n, latency_sum, latency_min, latency_max,
                                     players_n, players_sum, players_min, players_max)
    select s, date_trunc('hour', now()) - make_interval(hours => h), 120 - case when h % 97 = 0 then 7 else 0 end,
           case when h % 97 = 0 then 7 else 0 end, 120, 120 * 30, 12, 80, 120, 120 * 25, 3, 60
      from unnest(${list}::uuid[]) as s, generate_series(0, 90 * 24 - 1) as h`);
  await database.db.execute(sql`
    insert into server_status (server_id, online, latency_ms, players_online, players_max, version, motd, motd_raw, checked_at, changed_at)
    select s, true, 31, 25, 100, 'Paper 1.21.1', 'Bench · join us', '§aBench §r· §6join us', now(), now() - interval '3 days'
      from unnest(${list}::uuid[]) as s`);
  await database.db.execute(sql`
    insert into server_incidents (server_id, team_id, started_at, ended_at, reason)
    select s, (select team_id from servers where id = s), now() - make_interval(days => d),
           now() - make_interval(days => d) + interval '14 minutes', 'connection_refused'
      from unnest(${list}::uuid[]) as s, generate_series(1, 89, 9) as d`);
  await database.close();

  app = await startTarget("src/main.ts", env);
  const pageUrl = `${app.url}/status/bench`;
  const first = await fetch(pageUrl, { headers: { "accept-encoding": "identity" } });
  const html = await first.text();
  if (first.status !== 200) throw new Error(`the page answered ${first.status}`);
  const headerSet = (r: Response) =>
    Object.fromEntries(
      [...r.headers].filter(([k]) => !["content-length", "date", "x-request-id", "content-encoding"].includes(k)),
    );
  writeFileSync(join(rawDir, "page.html"), html);
  writeFileSync(join(rawDir, "headers.json"), JSON.stringify(headerSet(first)));
  const badgeUrl = `${app.url}/status/bench/badges/${ids[0]}/uptime-30d.svg`;
  const b = await fetch(badgeUrl);
  writeFileSync(join(rawDir, "badge.svg"), await b.text());
  writeFileSync(join(rawDir, "badge-headers.json"), JSON.stringify(headerSet(b)));
  const raw = await startTarget("bench/status-page.ts", { BENCH_STATUS_RAW: rawDir });

  console.log(
    `database: ${process.env.DATABASE_URL ? "postgres" : "pglite"}; ${SERVERS} servers; page ${html.length} bytes (${gzipSync(html).length} gzipped); ${connections} connections, ${seconds}s per case`,
  );
  // Warm both, then alternate short rounds (which goes first too) so drifting load on a shared
  // machine falls on both alike; the median round of each is compared.
  await load({ url: pageUrl, seconds: 1, connections });
  await load({ url: `${raw.url}/page`, seconds: 1, connections });
  const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
  const o = { seconds, connections };
  const runs = {
    rawPage: [] as LoadResult[],
    appPage: [] as LoadResult[],
    rawBadge: [] as LoadResult[],
    appBadge: [] as LoadResult[],
  };
  for (let i = 0; i < rounds; i++) {
    const pages: [keyof typeof runs, string][] = [
      ["rawPage", `${raw.url}/page`],
      ["appPage", pageUrl],
    ];
    const badges: [keyof typeof runs, string][] = [
      ["rawBadge", `${raw.url}/badge`],
      ["appBadge", badgeUrl],
    ];
    for (const [k, url] of i % 2 ? pages.reverse() : pages) runs[k].push(await load({ url, ...o }));
    for (const [k, url] of i % 2 ? badges.reverse() : badges) runs[k].push(await load({ url, ...o }));
  }
  const median = (rs: LoadResult[]) => [...rs].sort((a, b) => a.rps - b.rps)[Math.floor(rs.length / 2)]!;
  const rawPage = median(runs.rawPage);
  const appPage = median(runs.appPage);
  const rawBadge = median(runs.rawBadge);
  const appBadge = median(runs.appBadge);
  await app.stop();
  await raw.stop();
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(rawDir, { recursive: true, force: true });
  await db.drop();

  table([
    { name: "raw Bun.serve  the page's HTML from memory", r: rawPage },
    { name: "app            GET /status/bench (20 servers)", r: appPage, baseline: rawPage },
    { name: "raw Bun.serve  a constant SVG", r: rawBadge },
    { name: "app            GET …/badges/{id}/uptime-30d.svg", r: appBadge, baseline: rawBadge },
  ]);
  const pageRatio = appPage.rps / rawPage.rps;
  const badgeRatio = appBadge.rps / rawBadge.rps;
  const ok = (c: boolean) => (c ? "ok" : "MISSED");
  console.log(
    `\n  page:  ${pageRatio.toFixed(2)}x raw (target >= 0.8) ${ok(pageRatio >= 0.8)}; p99 ${appPage.p99ms.toFixed(2)} ms (target < 20) ${ok(appPage.p99ms < 20)}`,
  );
  console.log(`  badge: ${badgeRatio.toFixed(2)}x raw (target >= 0.8) ${ok(badgeRatio >= 0.8)}`);
  console.log(`\nload tool: ${appPage.tool}`);
}
