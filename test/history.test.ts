import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq, inArray } from "drizzle-orm";
import { startStatusResponder, type Responder } from "../scripts/demo-mc-server";
import type { RunningServer } from "../src/app";
import { serverMetricsHour, serverMetricsMinute, serverSamples, servers } from "../src/db/schema";
import { HOUR_TIER_EVERY_MS } from "../src/monitoring/buffer";
import { startTestServer, tempDir, usingPostgres } from "./harness";
import { api, expectError } from "./helpers";
import { agentApi, newServer, type ServerFixture } from "./servers-fixture";
import { WsClient } from "./ws-helpers";

/** Its own server: these tests move the service clock by minutes and hours. */
let srv: RunningServer;
const responders: Responder[] = [];
beforeAll(async () => {
  srv = await startTestServer();
});
afterAll(async () => {
  await Promise.all(responders.map((r) => r.close().catch(() => {})));
});

const MIN = 60_000;
/** Moves the service clock to `ms` past the start of the next period of `periodMs`. */
function alignClock(periodMs: number, ms = 1000) {
  const clock = srv.services.clock;
  clock.advance(periodMs - (clock.now() % periodMs) + ms);
}

/** Heartbeats reach the buckets with the next flush (every METRICS_FLUSH_MS); tests flush at once. */
const flush = (s: RunningServer = srv) => s.services.monitoring.buffer.flush();
const metrics = (f: ServerFixture, query: string) =>
  api(srv, "GET", `/server/metrics?${query}`, { token: f.owner.token, headers: { "x-server-id": f.serverId } });
const heartbeat = (f: ServerFixture, body: Record<string, number>) =>
  agentApi(srv, f.agentToken, "POST", "/agent/heartbeat", body).then((r) => {
    expect(r.status).toBe(200);
  });

/** What a bucket should say for a list of values: exact extremes, the mean. */
function expected(values: number[]) {
  if (values.length === 0) return { min: null, avg: null, max: null };
  return {
    min: Math.min(...values),
    avg: values.reduce((a, b) => a + b, 0) / values.length,
    max: Math.max(...values),
  };
}
function expectStat(got: { min: number | null; avg: number | null; max: number | null }, values: number[]) {
  const want = expected(values);
  expect(got.min).toBe(want.min);
  expect(got.max).toBe(want.max);
  if (want.avg === null) expect(got.avg).toBeNull();
  else expect(got.avg!).toBeCloseTo(want.avg, 3);
}

describe("metric history", () => {
  test("buckets match the heartbeats and pings they came from: exact per minute, merged in the hourly tier", async () => {
    const mc = await startStatusResponder({ players: 7 });
    responders.push(mc);
    const f = await newServer(srv, { host: "127.0.0.1", port: mc.port });
    const db = srv.services.database.db;
    // Both minutes inside one hour, so the hourly bucket holds them all.
    alignClock(3600_000);
    const minuteA = Math.floor(srv.services.clock.now() / MIN) * MIN;

    const a = [
      { tps: 20, mspt: 10, players_online: 3, memory_used_mb: 1000, memory_max_mb: 4096 },
      { tps: 18.5, mspt: 30, players_online: 5, memory_used_mb: 1500, memory_max_mb: 4096 },
      { tps: 19.25, mspt: 20.5, players_online: 4, memory_used_mb: 1200, memory_max_mb: 4096 },
    ];
    for (const hb of a) await heartbeat(f, hb);
    expect((await srv.services.monitoring.checkNow(f.serverId))?.online).toBe(true);

    srv.services.clock.advance(MIN);
    const b = [{ tps: 12, mspt: 80, players_online: 2, memory_used_mb: 3000, memory_max_mb: 8192 }];
    for (const hb of b) await heartbeat(f, hb);
    await mc.close();
    expect((await srv.services.monitoring.checkNow(f.serverId))?.online).toBe(false);

    // The pings' own figures, as stored, are what the latency and player series must agree with.
    const samples = (await db.select().from(serverSamples).where(eq(serverSamples.serverId, f.serverId))).sort(
      (x, y) => x.ts.getTime() - y.ts.getTime(),
    );
    expect(samples.map((s) => s.online)).toEqual([true, false]);
    const pingA = samples[0]!;
    const series = (hbs: typeof a, key: keyof (typeof a)[number]) => hbs.map((h) => h[key]);

    const res = await metrics(f, "window=1h");
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ window: "1h", bucket_seconds: 60, tier: "minute", server_id: f.serverId });
    const m = res.body.metrics;
    expect(Object.keys(m).sort()).toEqual(["latency", "memory", "memory_max", "mspt", "online", "players", "tps"]);
    const at = (name: string, ms: number) => m[name].find((p: any) => Date.parse(p.ts) === ms);
    const minuteB = minuteA + MIN;
    for (const [ms, hbs, pingLatency, pingPlayers, online] of [
      [minuteA, a, [pingA.latencyMs!], [pingA.playersOnline!], [1]],
      [minuteB, b, [], [], [0]],
    ] as const) {
      expectStat(at("tps", ms), series(hbs, "tps"));
      expectStat(at("mspt", ms), series(hbs, "mspt"));
      expectStat(at("memory", ms), series(hbs, "memory_used_mb"));
      expectStat(at("memory_max", ms), series(hbs, "memory_max_mb"));
      // Players counted by the agent and by the ping are both samples of one quantity.
      expectStat(at("players", ms), [...series(hbs, "players_online"), ...pingPlayers]);
      expectStat(at("latency", ms), [...pingLatency]);
      expectStat(at("online", ms), [...online]);
    }
    expect(pingA.playersOnline).toBe(7);
    // Every other minute of the hour is there, empty.
    expect(m.tps.length).toBeGreaterThanOrEqual(60);
    expect(m.tps.filter((p: any) => p.avg !== null).length).toBe(2);
    for (const p of m.tps) expect(Date.parse(p.ts) % MIN).toBe(0);

    const minuteRows = await db.select().from(serverMetricsMinute).where(eq(serverMetricsMinute.serverId, f.serverId));
    expect(minuteRows.map((r) => r.bucket.getTime()).sort()).toEqual([minuteA, minuteB]);
    const hourRows = await db.select().from(serverMetricsHour).where(eq(serverMetricsHour.serverId, f.serverId));
    expect(hourRows.length).toBe(1);
    expect(hourRows[0]).toMatchObject({ upN: 1, downN: 1, tpsN: 4, playersN: 5, latencyN: 1 });

    // The hourly tier holds both minutes in one bucket.
    const week = await metrics(f, "window=7d&metrics=tps,players,online,memory");
    expect(week.status).toBe(200);
    expect(week.body).toMatchObject({ bucket_seconds: 3600, tier: "hour" });
    expect(Object.keys(week.body.metrics).sort()).toEqual(["memory", "memory_max", "online", "players", "tps"]);
    const hour = Math.floor(minuteA / 3600_000) * 3600_000;
    const inHour = (name: string) => week.body.metrics[name].find((p: any) => Date.parse(p.ts) === hour);
    const both = [...a, ...b];
    expectStat(inHour("tps"), series(both, "tps"));
    expectStat(inHour("memory"), series(both, "memory_used_mb"));
    expectStat(inHour("players"), [...series(both, "players_online"), 7]);
    expect(inHour("online")).toEqual({ ts: new Date(hour).toISOString(), min: 0, avg: 0.5, max: 1 });
    expect(week.body.metrics.tps.filter((p: any) => p.avg !== null).length).toBe(1);

    // uptime-stats reads the same buckets.
    const uptime = await api(srv, "GET", "/server/uptime-stats?window=1h", {
      token: f.owner.token,
      headers: { "x-server-id": f.serverId },
    });
    expect(uptime.body).toMatchObject({ samples: 2, up: 1, down: 1, uptime: 0.5 });
    expect(uptime.body.latency_ms).toMatchObject({ min: pingA.latencyMs, max: pingA.latencyMs });
  }, 30_000);

  test("each window has its own aligned bucket size; windows and metric names outside the sets answer 400", async () => {
    const f = await newServer(srv);
    const sizes: [string, number, number][] = [
      ["1h", 60, 60],
      ["24h", 300, 288],
      ["7d", 3600, 168],
      ["30d", 21_600, 120],
      ["90d", 86_400, 90],
    ];
    for (const [window, size, count] of sizes) {
      const res = await metrics(f, `window=${window}&metrics=online`);
      expect(res.status).toBe(200);
      expect(res.body.bucket_seconds).toBe(size);
      const points = res.body.metrics.online;
      expect(points.length).toBeGreaterThanOrEqual(count);
      expect(points.length).toBeLessThanOrEqual(count + 1);
      for (const p of points) {
        expect(Date.parse(p.ts) % (size * 1000)).toBe(0);
        expect(p).toMatchObject({ min: null, avg: null, max: null });
      }
    }
    expect((await metrics(f, "")).body.window).toBe("24h");
    for (const window of ["2h", "1d", "30D", "all", "365d", "%20"])
      expectError(await metrics(f, `window=${window}`), 400, "validation_failed");
    for (const list of ["cpu", "players,", "players,,tps", "PLAYERS", "%20"])
      expectError(await metrics(f, `window=1h&metrics=${list}`), 400, "validation_failed");
    // A viewer of another team sees nothing of this server.
    const other = await newServer(srv);
    const res = await api(srv, "GET", "/server/metrics?window=1h", {
      token: other.owner.token,
      headers: { "x-server-id": f.serverId },
    });
    expectError(res, 404);
  });

  test("the analytics socket sends a `metrics` message when a one-minute bucket closes, once a minute", async () => {
    const f = await newServer(srv);
    alignClock(MIN);
    const minute = Math.floor(srv.services.clock.now() / MIN) * MIN;
    const ws = await WsClient.connect(srv, f.serverId, { authorization: `Bearer ${f.owner.token}` });
    await ws.until("snapshot");

    await heartbeat(f, { tps: 19, players_online: 2, memory_used_mb: 900 });
    await heartbeat(f, { tps: 17, players_online: 4, memory_used_mb: 1100 });
    // The live heartbeat does not wait for the buckets' flush.
    expect((await ws.until("heartbeat")).length).toBe(1);
    expect((await ws.next()).type).toBe("heartbeat");
    await flush();

    srv.services.clock.advance(MIN);
    await heartbeat(f, { tps: 20, players_online: 3 });
    await flush();
    const got = await ws.until("metrics");
    const closed = got.at(-1)!;
    expect(closed).toMatchObject({ type: "metrics", server_id: f.serverId, ts: new Date(minute).toISOString() });
    expect(closed.data).toMatchObject({
      bucket_seconds: 60,
      start: new Date(minute).toISOString(),
      tps: { min: 17, avg: 18, max: 19 },
      players: { min: 2, avg: 3, max: 4 },
      memory: { min: 900, avg: 1000, max: 1100 },
      online: { min: null, avg: null, max: null },
    });
    // It is the same figure the read gives for that minute.
    const read = (await metrics(f, "window=1h&metrics=tps")).body.metrics.tps.find(
      (p: any) => Date.parse(p.ts) === minute,
    );
    expect(read).toEqual({ ts: new Date(minute).toISOString(), ...closed.data.tps });

    // More data in the open minute announces nothing; the next minute's first sample does.
    // The end of one minute and the start of the next in one flush: the announcement reads both merged.
    await heartbeat(f, { tps: 10, players_online: 3 });
    srv.services.clock.advance(MIN);
    await heartbeat(f, { tps: 20 });
    await flush();
    const next = await ws.until("metrics");
    expect(next.filter((m) => m.type === "metrics").length).toBe(1);
    expect(next.at(-1)!.data).toMatchObject({
      start: new Date(minute + MIN).toISOString(),
      tps: { min: 10, avg: 15, max: 20 },
    });
    ws.close();
  });

  /** The stored minute rows of a server, as numbers per column. */
  const minuteRows = (s: RunningServer, serverId: string) =>
    s.services.database.db.select().from(serverMetricsMinute).where(eq(serverMetricsMinute.serverId, serverId));
  /** What a bucket row must hold for a list of values of one series: count, sum, least, greatest. */
  const sums = (values: number[]) => ({
    n: values.length,
    sum: values.reduce((a, b) => a + b, 0),
    min: values.length ? Math.min(...values) : null,
    max: values.length ? Math.max(...values) : null,
  });

  test("a flush writes many servers' minutes at once; flushes of the same minute merge into exactly the sums of the heartbeats", async () => {
    const [f1, f2] = await Promise.all([newServer(srv), newServer(srv)]);
    alignClock(MIN);
    const tps1 = [20, 18.5, 19.25, 7.125];
    const tps2 = [12, 15.5];
    await heartbeat(f1, { tps: tps1[0]!, players_online: 3 });
    await heartbeat(f1, { tps: tps1[1]!, players_online: 9 });
    await heartbeat(f2, { tps: tps2[0]!, memory_used_mb: 800 });
    // Nothing reaches the buckets before the flush.
    expect(await minuteRows(srv, f1.serverId)).toEqual([]);
    await flush();
    await heartbeat(f1, { tps: tps1[2]!, players_online: 1 });
    await heartbeat(f1, { tps: tps1[3]!, players_online: 4 });
    await heartbeat(f2, { tps: tps2[1]!, memory_used_mb: 1200 });
    await flush();

    const [r1] = await minuteRows(srv, f1.serverId);
    expect(r1).toMatchObject({ tpsN: 4, tpsSum: sums(tps1).sum, tpsMin: 7.125, tpsMax: 20 });
    expect(r1).toMatchObject({ playersN: 4, playersSum: 17, playersMin: 1, playersMax: 9, memUsedN: 0 });
    expect(r1).toMatchObject({ upN: 0, downN: 0, latencyN: 0 });
    const [r2] = await minuteRows(srv, f2.serverId);
    expect(r2).toMatchObject({ tpsN: 2, tpsSum: 27.5, tpsMin: 12, tpsMax: 15.5, memUsedN: 2, memUsedSum: 2000 });
    expect(r2).toMatchObject({ memUsedMin: 800, memUsedMax: 1200, playersN: 0 });
    const [h1] = await srv.services.database.db
      .select()
      .from(serverMetricsHour)
      .where(eq(serverMetricsHour.serverId, f1.serverId));
    expect(h1).toMatchObject({ tpsN: 4, tpsSum: sums(tps1).sum, tpsMin: 7.125, tpsMax: 20, playersSum: 17 });
  });

  test("the periodic flush writes the minute tier every time, and the hourly tier with an hour's first readings and then every HOUR_TIER_EVERY_MS, with exactly the same sums", async () => {
    const f = await newServer(srv);
    alignClock(3600_000);
    const buffer = srv.services.monitoring.buffer;
    // Whatever earlier tests left is written first, and the hourly tier's turn starts now.
    await buffer.flush();
    const hourRows = () =>
      srv.services.database.db.select().from(serverMetricsHour).where(eq(serverMetricsHour.serverId, f.serverId));
    // The hour's first readings of this server go to the hourly tier at once: a 7d view of a
    // server checked a moment ago shows the check.
    await heartbeat(f, { tps: 20, players_online: 2 });
    await buffer.flush(false);
    expect(await hourRows()).toMatchObject([{ tpsN: 1, tpsSum: 20, playersSum: 2 }]);
    // Later ones of the same hour wait for the hourly tier's turn.
    await heartbeat(f, { tps: 10, players_online: 6 });
    await buffer.flush(false);
    await heartbeat(f, { tps: 12, players_online: 3 });
    await buffer.flush(false);
    expect(await minuteRows(srv, f.serverId)).toMatchObject([{ tpsN: 3, tpsSum: 42, playersSum: 11 }]);
    expect(await hourRows()).toMatchObject([{ tpsN: 1, tpsSum: 20 }]);
    srv.services.clock.advance(HOUR_TIER_EVERY_MS);
    await heartbeat(f, { tps: 15, players_online: 1 });
    await buffer.flush(false);
    expect(await hourRows()).toMatchObject([{ tpsN: 4, tpsSum: 57, tpsMin: 10, tpsMax: 20, playersSum: 12 }]);
    const minutes = await minuteRows(srv, f.serverId);
    expect(minutes.reduce((a, r) => a + Number(r.tpsSum), 0)).toBe(57);
    // A full flush (a graceful stop, pingDue) sends what the hourly tier holds back at once.
    await heartbeat(f, { tps: 5 });
    await buffer.flush(false);
    expect(await hourRows()).toMatchObject([{ tpsN: 4 }]);
    await buffer.flush();
    expect(await hourRows()).toMatchObject([{ tpsN: 5, tpsSum: 62, tpsMin: 5 }]);
  });

  test("ping results stored together land in the buckets: per server, the minute sums are those of its samples", async () => {
    const mcs = await Promise.all([3, 11, 0].map((players) => startStatusResponder({ players })));
    responders.push(...mcs);
    const fs = await Promise.all(mcs.map((mc) => newServer(srv, { host: "127.0.0.1", port: mc.port })));
    const db = srv.services.database.db;
    const due = () =>
      db
        .update(servers)
        .set({ nextCheckAt: new Date(0) })
        .where(
          inArray(
            servers.id,
            fs.map((f) => f.serverId),
          ),
        );
    // Two rounds: the second one's results merge into the rows the first one's opened.
    for (let round = 0; round < 2; round++) {
      await due();
      expect(await srv.services.monitoring.pingDue()).toBeGreaterThanOrEqual(fs.length);
    }
    for (const [i, f] of fs.entries()) {
      const samples = await db.select().from(serverSamples).where(eq(serverSamples.serverId, f.serverId));
      expect(samples.length).toBe(2);
      expect(samples.every((x) => x.online && x.playersOnline === [3, 11, 0][i])).toBe(true);
      const rows = await minuteRows(srv, f.serverId);
      const total = (k: keyof (typeof rows)[number]) => rows.reduce((a, r) => a + Number(r[k]), 0);
      expect(total("upN")).toBe(2);
      expect(total("downN")).toBe(0);
      const latency = sums(samples.map((x) => x.latencyMs!));
      expect(total("latencyN")).toBe(2);
      expect(total("latencySum")).toBe(latency.sum);
      expect(Math.min(...rows.map((r) => r.latencyMin!))).toBe(latency.min!);
      expect(Math.max(...rows.map((r) => r.latencyMax!))).toBe(latency.max!);
      expect(total("playersSum")).toBe(2 * [3, 11, 0][i]!);
    }
  });

  test("a graceful stop flushes what was summed: the buckets lose no heartbeat", async () => {
    const dir = tempDir();
    // A flush interval longer than the test: only the stop can write the buckets.
    const a = await startTestServer({ DATA_DIR: dir, METRICS_FLUSH_MS: "60000" });
    const f = await newServer(a);
    const tps = [20, 19.5, 18, 17.25, 16];
    for (const t of tps)
      expect((await agentApi(a, f.agentToken, "POST", "/agent/heartbeat", { tps: t })).status).toBe(200);
    expect(a.services.monitoring.buffer.size).toBeGreaterThan(0);
    await a.stop();

    const b = await startTestServer({ DATA_DIR: dir });
    const rows = await minuteRows(b, f.serverId);
    const total = (k: keyof (typeof rows)[number]) => rows.reduce((x, r) => x + Number(r[k]), 0);
    expect(total("tpsN")).toBe(tps.length);
    expect(total("tpsSum")).toBe(sums(tps).sum);
    expect(Math.min(...rows.map((r) => r.tpsMin!))).toBe(16);
    expect(Math.max(...rows.map((r) => r.tpsMax!))).toBe(20);
  });

  test.skipIf(!usingPostgres())(
    "heartbeats of one minute sent to two instances, flushed by both at once, merge exactly in both tiers",
    async () => {
      const other = await startTestServer();
      const f = await newServer(srv);
      alignClock(MIN);
      // The same minute on both instances' clocks.
      other.services.clock.advance(srv.services.clock.now() - other.services.clock.now());
      const onA = [20, 18.5, 12.25];
      const onB = [19, 3.5, 17.75, 20];
      for (let i = 0; i < Math.max(onA.length, onB.length); i++) {
        if (onA[i] !== undefined) await heartbeat(f, { tps: onA[i]!, players_online: i });
        if (onB[i] !== undefined)
          expect(
            (await agentApi(other, f.agentToken, "POST", "/agent/heartbeat", { tps: onB[i]!, players_online: 10 + i }))
              .status,
          ).toBe(200);
      }
      // Both insert-or-merge the same new minute row concurrently.
      await Promise.all([flush(srv), flush(other)]);
      const all = [...onA, ...onB];
      const players = [0, 1, 2, 10, 11, 12, 13];
      const [m] = await minuteRows(srv, f.serverId);
      expect(m).toMatchObject({ tpsN: 7, tpsSum: sums(all).sum, tpsMin: 3.5, tpsMax: 20 });
      expect(m).toMatchObject({ playersN: 7, playersSum: sums(players).sum, playersMin: 0, playersMax: 13 });
      const [h] = await srv.services.database.db
        .select()
        .from(serverMetricsHour)
        .where(eq(serverMetricsHour.serverId, f.serverId));
      expect(h).toMatchObject({
        tpsN: 7,
        tpsSum: sums(all).sum,
        tpsMin: 3.5,
        tpsMax: 20,
        playersSum: sums(players).sum,
      });
      await other.stop();
    },
  );
});

describe("backfilled heartbeats (a past `at`)", () => {
  const DAY = 86_400_000;
  const hourRows = (serverId: string) =>
    srv.services.database.db.select().from(serverMetricsHour).where(eq(serverMetricsHour.serverId, serverId));
  const minuteRowsOf = (serverId: string) =>
    srv.services.database.db.select().from(serverMetricsMinute).where(eq(serverMetricsMinute.serverId, serverId));
  /** The read's point whose bucket holds `at`. */
  const pointAt = (points: { ts: string }[], at: number, bucketMs: number) =>
    points.find((p) => Date.parse(p.ts) <= at && at < Date.parse(p.ts) + bucketMs);

  test("reach the buckets at their own time, so every window's read and uptime-stats show them; the status and live views are untouched", async () => {
    const f = await newServer(srv);
    const ws = await WsClient.connect(srv, f.serverId, { authorization: `Bearer ${f.owner.token}` });
    await ws.until("snapshot");
    const now = srv.services.clock.now();
    const readings = [
      { ago: 10 * DAY, tps: 18, players_online: 5 },
      { ago: 3 * 3600_000, tps: 19, players_online: 8 },
      { ago: 10 * MIN, tps: 17, players_online: 3, mspt: 40 },
    ];
    for (const { ago, ...r } of readings) {
      const res = await agentApi(srv, f.agentToken, "POST", "/agent/heartbeat", {
        at: new Date(now - ago).toISOString(),
        ...r,
      });
      expect(res.status).toBe(200);
    }
    // Not news: no heartbeat message, and the record's latest reading is still none.
    expect(await ws.quiet(200)).toEqual([]);
    ws.close();
    const record = await api(srv, "GET", `/server/servers/${f.serverId}`, { token: f.owner.token });
    expect(record.body.agent).toBeNull();
    await flush();

    const series = async (window: string) => (await metrics(f, `window=${window}&metrics=players,tps`)).body;
    const month = await series("30d");
    expect(pointAt(month.metrics.players, now - 10 * DAY, 6 * 3600_000)).toMatchObject({ avg: 5 });
    const week = await series("7d");
    expect(pointAt(week.metrics.tps, now - 3 * 3600_000, 3600_000)).toMatchObject({ avg: 19 });
    const day = await series("24h");
    expect(pointAt(day.metrics.players, now - 3 * 3600_000, 300_000)).toMatchObject({ min: 8, max: 8 });
    const hour = await series("1h");
    expect(pointAt(hour.metrics.tps, now - 10 * MIN, MIN)).toMatchObject({ min: 17, max: 17 });
    const uptime = await api(srv, "GET", "/server/uptime-stats?window=30d", {
      token: f.owner.token,
      headers: { "x-server-id": f.serverId },
    });
    // Players reach the uptime buckets; up and down are the pinger's alone.
    expect(
      pointAt(
        uptime.body.buckets.map((b: any) => ({ ...b, ts: b.start })),
        now - 10 * DAY,
        6 * 3600_000,
      ),
    ).toMatchObject({ players_avg: 5, up: 0, down: 0 });
    expect(uptime.body.samples).toBe(0);

    // Older than the one-minute tier keeps: the hourly tier only.
    const minutes = await minuteRowsOf(f.serverId);
    expect(minutes.map((m) => m.bucket.getTime()).sort()).toEqual(
      [now - 3 * 3600_000, now - 10 * MIN].map((t) => Math.floor(t / MIN) * MIN).sort(),
    );
    expect((await hourRows(f.serverId)).length).toBe(3);

    // A current reading is the record's latest, as before.
    const live = await agentApi(srv, f.agentToken, "POST", "/agent/heartbeat", { tps: 20, players_online: 4 });
    const after = await api(srv, "GET", `/server/servers/${f.serverId}`, { token: f.owner.token });
    expect(after.body.agent).toMatchObject({ tps: 20, players_online: 4, reported_at: live.body.received_at });
  });

  test("bounds: older than SAMPLE_RETENTION_DAYS is a 400 naming `at` with nothing stored; a future time is arrival time; not a time is a 400", async () => {
    const f = await newServer(srv);
    const now = srv.services.clock.now();
    const tooOld = await agentApi(srv, f.agentToken, "POST", "/agent/heartbeat", {
      at: new Date(now - 91 * DAY).toISOString(),
      tps: 20,
    });
    expectError(tooOld, 400, "validation_failed");
    expect(tooOld.body.error.details.issues[0]).toMatchObject({ path: "at" });
    expect(tooOld.body.error.details.issues[0].message).toContain("90 days");
    for (const at of ["yesterday", "2026-11-25", "2026-11-25T10:00:00"]) {
      expectError(
        await agentApi(srv, f.agentToken, "POST", "/agent/heartbeat", { at, tps: 20 }),
        400,
        "validation_failed",
      );
    }
    await flush();
    expect(await hourRows(f.serverId)).toEqual([]);

    const future = await agentApi(srv, f.agentToken, "POST", "/agent/heartbeat", {
      at: new Date(now + 3600_000).toISOString(),
      tps: 19.5,
    });
    expect(future.status).toBe(200);
    const record = await api(srv, "GET", `/server/servers/${f.serverId}`, { token: f.owner.token });
    expect(record.body.agent).toMatchObject({ tps: 19.5, reported_at: future.body.received_at });
  });
});
