import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { and, asc, eq, sql } from "drizzle-orm";
import type { RunningServer } from "../src/app";
import { playerDays, players, playerSessions, serverDays } from "../src/db/schema";
import { playerSummary } from "../src/player-history/summary";
import { until } from "../packages/agent/test/support";
import { startStatusResponder, type Responder } from "../scripts/demo-mc-server";
import { devIdp, sharedServer, startTestServer, stopTestServer } from "./harness";
import { api, expectError, trpcClient } from "./helpers";
import { agentApi, eventId, newServer, type ServerFixture } from "./servers-fixture";

let server: RunningServer;
const responders: Responder[] = [];
beforeAll(async () => {
  server = await sharedServer();
});
afterAll(async () => {
  await Promise.all(responders.map((r) => r.close().catch(() => {})));
});

const db = () => server.services.database.db;
const TIMEOUT_MS = () => server.services.config.PLAYER_SESSION_TIMEOUT_SECONDS * 1000;

const sessionsOf = (serverId: string) =>
  db()
    .select()
    .from(playerSessions)
    .where(eq(playerSessions.serverId, serverId))
    .orderBy(asc(playerSessions.joinedAt), asc(playerSessions.id));
const playerRow = async (serverId: string, uuid: string) =>
  (
    await db()
      .select()
      .from(players)
      .where(and(eq(players.serverId, serverId), eq(players.uuid, uuid)))
  )[0]!;

type Ev = { type: "join" | "leave"; uuid: string; name?: string; at: Date };
const send = async (s: ServerFixture, events: Ev[]) => {
  const res = await agentApi(server, s.agentToken, "POST", "/agent/events", {
    events: events.map((e) => ({ event_id: eventId(), ...e, name: e.name, at: e.at.toISOString() })),
  });
  expect(`${res.status} ${res.text}`).toStartWith("200");
};
const get = (s: ServerFixture, path: string) => api(server, "GET", path, s.as());

describe("player sessions from agent events", () => {
  test("join and leave: start, end, duration; the profile adds sessions up and shows the ban", async () => {
    const s = await newServer(server);
    const steve = crypto.randomUUID();
    const t0 = Date.now() - 7200_000;
    await send(s, [
      { type: "join", uuid: steve, name: "Steve", at: new Date(t0) },
      { type: "leave", uuid: steve, at: new Date(t0 + 600_000) },
      { type: "join", uuid: steve, name: "Steve2", at: new Date(t0 + 1000_000) },
      { type: "leave", uuid: steve, at: new Date(t0 + 1300_000) },
    ]);
    await api(server, "POST", "/server/bans", { ...s.as(), body: { uuid: steve, name: "Steve2", reason: "Grief" } });

    const rows = await sessionsOf(s.serverId);
    expect(rows.map((r) => [r.joinedAt.getTime(), r.leftAt!.getTime(), r.source, r.endReason])).toEqual([
      [t0, t0 + 600_000, "agent", "leave"],
      [t0 + 1000_000, t0 + 1300_000, "agent", "leave"],
    ]);

    const profile = await get(s, `/server/players/${steve.toUpperCase()}`);
    expect(profile.status).toBe(200);
    expect(profile.body).toMatchObject({
      uuid: steve,
      name: "Steve2",
      online: false,
      first_seen: new Date(t0).toISOString(),
      last_seen: new Date(t0 + 1300_000).toISOString(),
      time_played_seconds: 900,
      session_count: 2,
      banned: true,
      ban: { uuid: steve, reason: "Grief", origin: "dashboard" },
    });
    expect(profile.body.recent_sessions.map((x: any) => [x.duration_seconds, x.end_reason, x.online])).toEqual([
      [300, "leave", false],
      [600, "leave", false],
    ]);

    // The typed door answers the same.
    const typed = await trpcClient(server, s.owner.token, { "x-server-id": s.serverId }).playerHistory.profile.query({
      uuid: steve,
    });
    expect(typed).toEqual(profile.body);
  });

  test("a restart (a join without a leave) closes the old session at the last heartbeat before it", async () => {
    const s = await newServer(server);
    const alex = crypto.randomUUID();
    const t0 = Date.now() - 3600_000;
    await send(s, [{ type: "join", uuid: alex, name: "Alex", at: new Date(t0) }]);
    const hb = await agentApi(server, s.agentToken, "POST", "/agent/heartbeat", { players_online: 1 });
    const heartbeatAt = Date.parse(hb.body.received_at);
    // The server restarts: its plugin reports a fresh join and never a leave for the old session.
    const rejoin = Date.now() + 20_000;
    await send(s, [{ type: "join", uuid: alex, name: "Alex", at: new Date(rejoin) }]);

    const rows = await sessionsOf(s.serverId);
    expect(rows.map((r) => [r.joinedAt.getTime(), r.leftAt?.getTime() ?? null, r.endReason])).toEqual([
      [t0, heartbeatAt, "rejoin"],
      [rejoin, null, null],
    ]);
    const p = await playerRow(s.serverId, alex);
    expect(p.playSeconds).toBe(Math.round((heartbeatAt - t0) / 1000));
    expect(p.online).toBe(true);
  });

  test("an agent outage: silent past the timeout, the sweep closes sessions at the last heartbeat; a late leave adds nothing", async () => {
    const s = await newServer(server);
    const [a, b] = [crypto.randomUUID(), crypto.randomUUID()];
    const t0 = Date.now() - 1800_000;
    await send(s, [
      { type: "join", uuid: a, name: "A", at: new Date(t0) },
      { type: "join", uuid: b, name: "B", at: new Date(t0 + 60_000) },
    ]);
    const hb = await agentApi(server, s.agentToken, "POST", "/agent/heartbeat", { players_online: 2 });
    const heartbeatAt = Date.parse(hb.body.received_at);

    // Inside the timeout the agent still vouches for them.
    await server.services.playerHistory.sweep(new Date(heartbeatAt + TIMEOUT_MS() - 1000));
    expect((await sessionsOf(s.serverId)).every((r) => r.leftAt === null)).toBe(true);

    await server.services.playerHistory.sweep(new Date(heartbeatAt + TIMEOUT_MS() + 1000));
    const rows = await sessionsOf(s.serverId);
    expect(rows.map((r) => [r.uuid, r.leftAt?.getTime(), r.endReason])).toEqual([
      [a, heartbeatAt, "agent_silent"],
      [b, heartbeatAt, "agent_silent"],
    ]);
    const pa = await playerRow(s.serverId, a);
    expect(pa.online).toBe(false);
    expect(pa.playSeconds).toBe(Math.round((heartbeatAt - t0) / 1000));

    // The agent comes back with its queued leave: the session is already closed, nothing is counted twice.
    await send(s, [{ type: "leave", uuid: a, at: new Date() }]);
    expect((await playerRow(s.serverId, a)).playSeconds).toBe(pa.playSeconds);
    const profile = await get(s, `/server/players/${a}`);
    expect(profile.body).toMatchObject({ online: false, session_count: 1, time_played_seconds: pa.playSeconds });
    expect(profile.body.recent_sessions[0]).toMatchObject({ end_reason: "agent_silent", source: "agent" });
  });

  test("the sweep runs by itself every PLAYER_SESSION_SWEEP_SECONDS: a silent agent's session closes without a request", async () => {
    // The test servers run no sweep (testEnv); this one sweeps each second with the shortest
    // timeout. (On PostgreSQL it closes every stale session of the run's database meanwhile.)
    const own = await startTestServer({
      DEV_IDP_URL: (await devIdp()).url,
      PLAYER_SESSION_SWEEP_SECONDS: "1",
      PLAYER_SESSION_TIMEOUT_SECONDS: "60",
    });
    try {
      const s = await newServer(own);
      const [silent, fresh] = [crypto.randomUUID(), crypto.randomUUID()];
      const joinedAt = Date.now() - 90_000;
      for (const [uuid, at] of [
        [silent, joinedAt],
        [fresh, Date.now()],
      ] as const) {
        const res = await agentApi(own, s.agentToken, "POST", "/agent/events", {
          events: [{ event_id: eventId(), type: "join", uuid, name: "P", at: new Date(at).toISOString() }],
        });
        expect(res.status).toBe(200);
      }
      const ownSessions = () =>
        own.services.database.db.select().from(playerSessions).where(eq(playerSessions.serverId, s.serverId));
      // No request meanwhile: only the timer can close it.
      await until("the sweep to close the silent session", async () =>
        (await ownSessions()).some((r) => r.uuid === silent && r.leftAt),
      );
      const rows = await ownSessions();
      // Closed at its last news (the join), as silent; the one joined just now stays open.
      expect(rows.map((r) => [r.uuid, r.leftAt?.getTime() ?? null, r.endReason]).sort()).toEqual(
        [
          [silent, joinedAt, "agent_silent"],
          [fresh, null, null],
        ].sort(),
      );
    } finally {
      await stopTestServer(own);
    }
  });
});

describe("player sessions from ping samples (no agent)", () => {
  const STEVE = { name: "Steve", id: "11111111-2222-4333-8444-555555555555" };
  const ALEX = { name: "Alex", id: "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee" };

  test("a listed player opens a session; absent from a full list or the server down, it closes at the last sample that listed them", async () => {
    const mc = await startStatusResponder({ players: 2 });
    responders.push(mc);
    const s = await newServer(server, { port: mc.port });
    const monitoring = server.services.monitoring;

    mc.sample = [STEVE, ALEX];
    await monitoring.checkNow(s.serverId);
    let rows = await sessionsOf(s.serverId);
    expect(rows.map((r) => [r.uuid, r.source, r.leftAt])).toEqual(
      expect.arrayContaining([
        [STEVE.id, "ping", null],
        [ALEX.id, "ping", null],
      ]),
    );
    expect(rows).toHaveLength(2);
    const firstSeen = rows[0]!.seenAt!.getTime();

    // A partial list (5 online, 1 listed) proves nothing about Alex: still open.
    mc.players = 5;
    mc.sample = [STEVE];
    await monitoring.checkNow(s.serverId);
    expect((await sessionsOf(s.serverId)).every((r) => r.leftAt === null)).toBe(true);

    // The full list without Alex: Alex left, at the last sample that listed him.
    mc.players = 1;
    await monitoring.checkNow(s.serverId);
    rows = await sessionsOf(s.serverId);
    const alex = rows.find((r) => r.uuid === ALEX.id)!;
    expect([alex.leftAt?.getTime(), alex.endReason]).toEqual([firstSeen, "not_seen"]);
    const steve = rows.find((r) => r.uuid === STEVE.id)!;
    expect(steve.leftAt).toBeNull();
    const steveSeen = steve.seenAt!.getTime();
    expect(steveSeen).toBeGreaterThan(firstSeen);

    // The server goes down: Steve's session ends at the last sample that listed him.
    await mc.close();
    const down = await monitoring.checkNow(s.serverId);
    expect(down?.online).toBe(false);
    rows = await sessionsOf(s.serverId);
    const closed = rows.find((r) => r.uuid === STEVE.id)!;
    expect([closed.leftAt?.getTime(), closed.endReason]).toEqual([steveSeen, "server_offline"]);
    const p = await playerRow(s.serverId, STEVE.id);
    expect(p.online).toBe(false);
    expect(p.playSeconds).toBe(Math.round((steveSeen - closed.joinedAt.getTime()) / 1000));

    const page = await get(s, "/server/players/sessions");
    expect(page.body.sessions.map((x: any) => [x.name, x.source, x.end_reason]).sort()).toEqual([
      ["Alex", "ping", "not_seen"],
      ["Steve", "ping", "server_offline"],
    ]);
  });

  test("while an agent is running, sample lists are ignored: its events are the record", async () => {
    const mc = await startStatusResponder({ players: 1 });
    responders.push(mc);
    const s = await newServer(server, { port: mc.port });
    await agentApi(server, s.agentToken, "POST", "/agent/heartbeat", { players_online: 1 });
    mc.sample = [STEVE];
    await server.services.monitoring.checkNow(s.serverId);
    expect(await sessionsOf(s.serverId)).toEqual([]);
  });
});

describe("player history reads", () => {
  test("summary: unique, new, returning, peak concurrent and time played per UTC day, top players", async () => {
    const s = await newServer(server);
    const [A, B, C] = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];
    const today = new Date();
    today.setUTCHours(0, 0, 0, 0);
    const D = today.getTime();
    const day = 86_400_000;
    const h = 3600_000;
    const at = (dayOffset: number, hours: number) => new Date(D + dayOffset * day + hours * h);
    await send(s, [
      { type: "join", uuid: A, name: "A", at: at(-3, 10) },
      { type: "join", uuid: B, name: "B", at: at(-3, 11) },
      { type: "leave", uuid: B, at: at(-3, 11.5) },
      { type: "leave", uuid: A, at: at(-3, 12) },
      { type: "join", uuid: A, name: "A", at: at(-2, 23) },
      { type: "join", uuid: C, name: "C", at: at(-2, 23.5) },
      { type: "leave", uuid: C, at: at(-2, 23.75) },
      { type: "join", uuid: B, name: "B", at: at(-1, 0.5) },
      // A leaves as C joins: never three at once.
      { type: "leave", uuid: A, at: at(-1, 1) },
      { type: "join", uuid: C, name: "C", at: at(-1, 1) },
      { type: "leave", uuid: B, at: at(-1, 2) },
      { type: "leave", uuid: C, at: at(-1, 3) },
    ]);

    const res = await get(s, "/server/players/summary?window=7d");
    expect(res.status).toBe(200);
    const byDate = Object.fromEntries(res.body.days.map((d: any) => [d.date, d]));
    const date = (offset: number) => new Date(D + offset * day).toISOString().slice(0, 10);
    const figures = (d: any) =>
      d && [d.unique_players, d.new_players, d.returning_players, d.peak_concurrent, d.playtime_seconds];
    expect(figures(byDate[date(-3)])).toEqual([2, 2, 0, 2, 9000]);
    expect(figures(byDate[date(-2)])).toEqual([2, 1, 1, 2, 4500]);
    expect(figures(byDate[date(-1)])).toEqual([3, 0, 3, 2, 16200]);
    expect(figures(byDate[date(0)])).toEqual([0, 0, 0, 0, 0]);
    expect(res.body.days).toHaveLength(8);
    expect(res.body.days[0].from).toBe(res.body.from);
    expect(res.body.days.at(-1).to).toBe(res.body.to);
    expect(res.body.totals).toEqual({
      unique_players: 3,
      new_players: 3,
      returning_players: 0,
      peak_concurrent: 2,
      playtime_seconds: 29700,
    });
    expect(res.body.top_players).toEqual([
      { uuid: A, name: "A", playtime_seconds: 14400, sessions: 2 },
      { uuid: C, name: "C", playtime_seconds: 8100, sessions: 2 },
      { uuid: B, name: "B", playtime_seconds: 7200, sessions: 2 },
    ]);

    const month = await get(s, "/server/players/summary?window=30d");
    expect(month.body.totals).toEqual(res.body.totals);
    expect(month.body.days).toHaveLength(31);
    const typed = await trpcClient(server, s.owner.token, { "x-server-id": s.serverId }).playerHistory.summary.query({
      window: "7d",
    });
    expect(typed.totals).toEqual(res.body.totals);

    for (const bad of ["1h", "365d", "7", ""]) {
      expectError(await get(s, `/server/players/summary?window=${bad}`), 400, "validation_failed");
    }
  });

  test("sessions: newest first, every session exactly once across cursor pages, filter by player, bad cursors are 400", async () => {
    const s = await newServer(server);
    const uuids = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];
    const t0 = Date.now() - 10 * 3600_000;
    const events: Ev[] = [];
    for (let i = 0; i < 9; i++) {
      // Three players join at the same instant each round: the id breaks the tie.
      for (const [k, uuid] of uuids.entries())
        events.push({ type: "join", uuid, name: `P${k}`, at: new Date(t0 + i * 60_000) });
      for (const uuid of uuids) events.push({ type: "leave", uuid, at: new Date(t0 + i * 60_000 + 30_000) });
    }
    await send(s, events);
    const all = await sessionsOf(s.serverId);
    expect(all).toHaveLength(27);

    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res: any = await get(s, `/server/players/sessions?limit=4${cursor ? `&cursor=${cursor}` : ""}`);
      expect(res.status).toBe(200);
      expect(res.body.sessions.length).toBeLessThanOrEqual(4);
      seen.push(...res.body.sessions.map((x: any) => x.session_id));
      cursor = res.body.next_cursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(7);
    expect(new Set(seen).size).toBe(27);
    const expected = [...all].sort((x, y) => y.joinedAt.getTime() - x.joinedAt.getTime() || (y.id < x.id ? -1 : 1));
    expect(seen).toEqual(expected.map((x) => x.id));

    const mine = await get(s, `/server/players/sessions?uuid=${uuids[1]}&limit=200`);
    expect(mine.body.sessions).toHaveLength(9);
    expect(mine.body.sessions.every((x: any) => x.uuid === uuids[1] && x.duration_seconds === 30)).toBe(true);
    expect(mine.body.next_cursor).toBeNull();

    const other = await newServer(server);
    await send(other, [
      { type: "join", uuid: uuids[0]!, name: "P0", at: new Date(t0) },
      { type: "join", uuid: uuids[1]!, name: "P1", at: new Date(t0 + 1000) },
    ]);
    const otherPage = (await get(other, "/server/players/sessions?limit=1")).body;
    expect(otherPage.next_cursor).not.toBeNull();
    // Garbage, a well-formed text that is no cursor, a bare session id, too long, and a cursor issued for another server.
    for (const bad of [
      "garbage!",
      "bm90LWEtY3Vyc29y",
      otherPage.sessions[0].session_id,
      "x".repeat(201),
      otherPage.next_cursor,
    ]) {
      expectError(await get(s, `/server/players/sessions?cursor=${encodeURIComponent(bad)}`), 400);
    }
    for (const bad of ["0", "201", "x"]) expectError(await get(s, `/server/players/sessions?limit=${bad}`), 400);
  });

  test("another team's server is 404 on every read; an unknown player is 404; a missing x-server-id is 400", async () => {
    const mine = await newServer(server);
    const theirs = await newServer(server);
    const uuid = crypto.randomUUID();
    await send(theirs, [{ type: "join", uuid, name: "Theirs", at: new Date(Date.now() - 60_000) }]);
    const asMeOnTheirs = { token: mine.owner.token, headers: { "x-server-id": theirs.serverId } };
    for (const path of ["/server/players/sessions", "/server/players/summary?window=24h", `/server/players/${uuid}`]) {
      expectError(await api(server, "GET", path, asMeOnTheirs), 404, "not_found");
      expectError(await api(server, "GET", path, { token: mine.owner.token }), 400);
    }
    expectError(await get(mine, `/server/players/${uuid}`), 404, "not_found");
    expectError(await get(mine, "/server/players/not-a-uuid"), 400, "validation_failed");
    // The existing list at /server/players is unchanged beside the new paths.
    expect((await get(theirs, "/server/players")).body.players_total).toBe(1);
  });
});

/** The documented definitions (docs/history.md, "Player summary"), counted directly over the sessions. */
async function bruteForceSummary(serverId: string, lo: number, hi: number) {
  const DAY = 86_400_000_000;
  const rows = (await db().execute(sql`
    select s.uuid, (extract(epoch from s.joined_at) * 1000000)::float8 as j,
           (extract(epoch from s.left_at) * 1000000)::float8 as l,
           (extract(epoch from p.first_seen) * 1000000)::float8 as f, p.name
      from player_sessions s join players p on p.server_id = s.server_id and p.uuid = s.uuid
     where s.server_id = ${serverId}`)) as unknown;
  const list = ((Array.isArray(rows) ? rows : (rows as { rows: unknown[] }).rows) as any[]).map((r) => ({
    uuid: r.uuid as string,
    name: r.name as string,
    a: Number(r.j),
    b: Math.min(r.l === null ? hi : Number(r.l), hi),
    f: Number(r.f),
  }));
  const touches = (s: (typeof list)[number], d: number, e: number) => s.a < e && (s.b > d || s.a >= d);
  const days = [];
  const all = new Set<string>();
  const per = new Map<string, { name: string; t: number; n: number }>();
  for (const s of list) {
    if (!touches(s, lo, hi)) continue;
    const p = per.get(s.uuid) ?? { name: s.name, t: 0, n: 0 };
    p.t += Math.max(0, Math.min(s.b, hi) - Math.max(s.a, lo));
    p.n++;
    per.set(s.uuid, p);
  }
  let total = 0;
  for (let d0 = Math.floor(lo / DAY) * DAY; d0 < hi; d0 += DAY) {
    const d = Math.max(d0, lo);
    const e = Math.min(d0 + DAY, hi);
    const inDay = list.filter((s) => touches(s, d, e));
    const players = new Map(inDay.map((s) => [s.uuid, s.f]));
    for (const u of players.keys()) all.add(u);
    const fresh = [...players.values()].filter((f) => f >= d && f < e).length;
    const t = inDay.reduce((sum, s) => sum + Math.max(0, Math.min(s.b, e) - Math.max(s.a, d)), 0);
    total += t;
    // Every instant that can be a peak: the day's start and each start inside it.
    let peak = 0;
    for (const at of [d, ...inDay.map((s) => s.a).filter((a) => a >= d && a < e)])
      peak = Math.max(peak, list.filter((s) => s.a <= at && at < s.b).length);
    days.push({
      date: new Date(d / 1000).toISOString().slice(0, 10),
      from: new Date(d / 1000).toISOString(),
      to: new Date(e / 1000).toISOString(),
      unique_players: players.size,
      new_players: fresh,
      returning_players: players.size - fresh,
      peak_concurrent: peak,
      playtime_seconds: Math.round(t / 1e6),
    });
  }
  const firstSeen = new Map(list.map((s) => [s.uuid, s.f]));
  const fresh = [...all].filter((u) => firstSeen.get(u)! >= lo).length;
  return {
    totals: {
      unique_players: all.size,
      new_players: fresh,
      returning_players: all.size - fresh,
      peak_concurrent: Math.max(0, ...days.map((d) => d.peak_concurrent)),
      playtime_seconds: Math.round(total / 1e6),
    },
    days,
    top_players: [...per]
      .sort(([u, x], [v, y]) => y.t - x.t || (u < v ? -1 : 1))
      .slice(0, 10)
      .map(([uuid, p]) => ({ uuid, name: p.name, playtime_seconds: Math.round(p.t / 1e6), sessions: p.n })),
  };
}

/** A seeded random history: sessions across midnight, ending or starting exactly at midnight, lasting no time, still open. */
function randomHistory(seed: number, players: string[], days: number): Ev[] {
  let x = seed;
  const rand = () => {
    x = (x * 1_103_515_245 + 12_345) % 2 ** 31;
    return x / 2 ** 31;
  };
  const midnight = new Date();
  midnight.setUTCHours(0, 0, 0, 0);
  const M = midnight.getTime();
  const now = Date.now() - 60_000;
  const events: Ev[] = [];
  players.forEach((uuid, p) => {
    let t = M - days * 86_400_000 + Math.floor(rand() * 6) * 3600_000;
    for (;;) {
      // Starts: a random instant, or exactly a midnight or an hour (ties with other players).
      const r = rand();
      t +=
        r < 0.2
          ? 86_400_000 - (t % 86_400_000)
          : r < 0.4
            ? 3600_000 - (t % 3600_000)
            : Math.floor(rand() * 20 * 3600_000);
      if (t >= now) break;
      events.push({ type: "join", uuid, name: `R${p}`, at: new Date(t) });
      const q = rand();
      const len =
        q < 0.1
          ? 0
          : q < 0.25
            ? 86_400_000 - (t % 86_400_000)
            : q < 0.35
              ? rand() * 3 * 86_400_000
              : rand() * 4 * 3600_000;
      const end = t + Math.floor(len);
      // Some players stay on: their last session is open.
      if (end >= now) {
        if (p % 3 !== 0) events.push({ type: "leave", uuid, at: new Date(now) });
        break;
      }
      events.push({ type: "leave", uuid, at: new Date(end) });
      t = end;
    }
  });
  return events.sort((a, b) => a.at.getTime() - b.at.getTime() || (a.type === "leave" ? -1 : 1));
}

describe("player summary from daily rollups", () => {
  test("equals a brute-force count over the raw sessions: random history, midnight-spanning and open sessions, any window", async () => {
    const s = await newServer(server);
    const players = Array.from({ length: 14 }, () => crypto.randomUUID());
    const events = randomHistory(2024, players, 12);
    for (let i = 0; i < events.length; i += 200) await send(s, events.slice(i, i + 200));
    // Two players open since days ago: whole days they cover, and the days they started on.
    await send(s, [
      { type: "join", uuid: players[0]!, name: "R0", at: new Date(Date.now() - 3.5 * 86_400_000) },
      { type: "join", uuid: players[1]!, name: "R1", at: new Date(Date.now() - 1.2 * 86_400_000) },
    ]);
    // A heartbeat: the agent runs, so the sweep leaves the open sessions open during the test.
    expect((await agentApi(server, s.agentToken, "POST", "/agent/heartbeat", { tps: 20 })).status).toBe(200);
    expect((await sessionsOf(s.serverId)).filter((x) => x.leftAt === null).length).toBeGreaterThanOrEqual(2);

    for (const window of ["24h", "7d", "30d"]) {
      const res = await get(s, `/server/players/summary?window=${window}`);
      expect(res.status).toBe(200);
      const lo = Date.parse(res.body.from) * 1000;
      const hi = Date.parse(res.body.to) * 1000;
      const { server_id, window: w, from, to, ...figures } = res.body;
      expect(figures).toEqual(await bruteForceSummary(s.serverId, lo, hi));
    }
    // Windows with edges at and just past midnight, and at random instants in the past.
    const midnight = new Date();
    midnight.setUTCHours(0, 0, 0, 0);
    const M = midnight.getTime();
    const ends = [
      M,
      M + 1,
      M - 86_400_000,
      M - 2 * 86_400_000 + 1,
      M - 5 * 86_400_000 + 37_123,
      Date.now() - 7_777_777,
    ];
    for (const to of ends)
      for (const spanDays of [1, 3, 7]) {
        const from = to - spanDays * 86_400_000;
        const got = await playerSummary(db(), s.serverId, new Date(from), new Date(to));
        expect(got).toEqual(await bruteForceSummary(s.serverId, from * 1000, to * 1000));
      }
  });

  test("closing a session adds to the rollups of each day it touched; migration 0017's backfill rebuilds the same rows", async () => {
    const s = await newServer(server);
    const A = crypto.randomUUID();
    const midnight = new Date();
    midnight.setUTCHours(0, 0, 0, 0);
    const M = midnight.getTime() - 3 * 86_400_000;
    // 22:00 on day -4 to 01:30 on day -2: three days touched, one of them whole.
    await send(s, [
      { type: "join", uuid: A, name: "A", at: new Date(M - 2 * 3600_000) },
      { type: "leave", uuid: A, at: new Date(M + 86_400_000 + 1.5 * 3600_000) },
    ]);
    const rollups = async () => {
      const pd = await db()
        .select()
        .from(playerDays)
        .where(eq(playerDays.serverId, s.serverId))
        .orderBy(asc(playerDays.day), asc(playerDays.uuid));
      const sd = await db()
        .select()
        .from(serverDays)
        .where(eq(serverDays.serverId, s.serverId))
        .orderBy(asc(serverDays.day));
      return { pd, sd };
    };
    const incremental = await rollups();
    expect(
      incremental.pd.map((r) => [r.day.getTime() - M, r.playtimeUs, r.joins, r.carriedFrom?.getTime() ?? null]),
    ).toEqual([
      [-86_400_000, 2 * 3600e6, 1, null],
      [0, 86_400e6, 0, M - 2 * 3600_000],
      [86_400_000, 1.5 * 3600e6, 0, M - 2 * 3600_000],
    ]);
    expect(incremental.sd.map((r) => [r.players, r.playtimeUs, r.peak])).toEqual([
      [1, 2 * 3600e6, 1],
      [1, 86_400e6, 1],
      [1, 1.5 * 3600e6, 1],
    ]);
    // More history, then the migration's backfill run over the same sessions with the rollups emptied.
    await send(s, randomHistory(7, [A, crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()], 6));
    const before = await rollups();
    const migration = readFileSync(join(import.meta.dir, "../drizzle/0017_player_day_rollups.sql"), "utf8");
    const backfill = migration
      .split("--> statement-breakpoint")
      .map((x) => x.trim())
      .filter((x) => !/^(CREATE TABLE|ALTER TABLE|CREATE INDEX)/.test(x));
    expect(backfill.length).toBe(4);
    let rebuilt: Awaited<ReturnType<typeof rollups>> | undefined;
    await db()
      .transaction(async (tx) => {
        // The tables are held first: the run's live pingers and sweeps close sessions meanwhile,
        // and a backfill that takes its locks row by row among them deadlocks (only a test reruns it live).
        await tx.execute(sql`lock table servers, player_sessions, player_days, server_days in exclusive mode`);
        await tx.execute(sql`delete from player_days`);
        await tx.execute(sql`delete from server_days`);
        for (const statement of backfill) await tx.execute(sql.raw(statement));
        const pd = await tx
          .select()
          .from(playerDays)
          .where(eq(playerDays.serverId, s.serverId))
          .orderBy(asc(playerDays.day), asc(playerDays.uuid));
        const sd = await tx
          .select()
          .from(serverDays)
          .where(eq(serverDays.serverId, s.serverId))
          .orderBy(asc(serverDays.day));
        rebuilt = { pd, sd };
        tx.rollback();
      })
      .catch((e) => {
        if (!String(e).includes("Rollback")) throw e;
      });
    expect(rebuilt).toEqual(before);
  });

  test("at most EXPENSIVE_READS_PER_CREDENTIAL summaries in flight per credential: more are 429 with Retry-After; another credential is unaffected", async () => {
    const bound = server.services.config.EXPENSIVE_READS_PER_CREDENTIAL;
    const mine = await newServer(server);
    const theirs = await newServer(server);
    const path = "/server/players/summary?window=90d";
    // Warm: each credential's session is known, so the only thing left to wait on is the summary's own reads.
    expect((await get(mine, path)).status).toBe(200);
    expect((await get(theirs, path)).status).toBe(200);

    // Hold the summary's reads: the whole embedded database, or the sessions table on PostgreSQL.
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let locked!: () => void;
    const holding = new Promise<void>((r) => (locked = r));
    const hold = db()
      .transaction(async (tx) => {
        if (server.services.database.kind === "postgres")
          await tx.execute(sql`lock table player_sessions in access exclusive mode`);
        locked();
        await released;
      })
      .catch(() => {});
    await holding;
    const n = bound + 4;
    const answers = Array.from({ length: n }, () => get(mine, path));
    const others = Array.from({ length: bound }, () => get(theirs, path));
    // The ones past the bound are answered at once, while the first ones wait.
    const settled: Awaited<ReturnType<typeof get>>[] = [];
    for (const a of answers) a.then((r) => settled.push(r));
    while (settled.length < n - bound) await Bun.sleep(10);
    for (const r of settled) {
      expectError(r, 429, "rate_limited");
      expect(r.headers.get("retry-after")).toBe("1");
    }
    expect(settled).toHaveLength(n - bound);
    release();
    await hold;
    expect((await Promise.all(answers)).filter((r) => r.status === 200)).toHaveLength(bound);
    expect((await Promise.all(others)).map((r) => r.status)).toEqual(Array(bound).fill(200));
    // Once they are done, the credential has its slots back.
    expect((await get(mine, path)).status).toBe(200);
  });
});
