import { beforeAll, describe, expect, onTestFinished, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import type { RunningServer } from "../src/app";
import { forgetPlayer, rebuildAggregates } from "../src/analytics/aggregates";
import { AnalyticsService } from "../src/analytics/service";
import { type Principal, principalKey } from "../src/auth/principal";
import { rowsOf } from "../src/db/rows";
import { Clock } from "../src/lib/clock";
import { AppError } from "../src/lib/errors";
import { InFlightLimit } from "../src/lib/in-flight";
import { dumpAggregates } from "./aggregates-dump";
import { holdTasks, sharedServer, usingPostgres } from "./harness";
import { api, expectError, newUser } from "./helpers";
import { agentApi, eventId, newServer, type ServerFixture } from "./servers-fixture";

let server: RunningServer;
beforeAll(async () => {
  server = await sharedServer();
});
const db = () => server.services.database.db;

type Session = [uuid: string, name: string, joined: string, left: string | null];
/** Joins and leaves through the agent's events, in time order (a session per entry; null: still open). */
async function play(s: ServerFixture, sessions: Session[]) {
  const events = sessions.flatMap(([uuid, name, a, b]) => [
    { type: "join", uuid, name, at: a },
    ...(b ? [{ type: "leave", uuid, name, at: b }] : []),
  ]);
  events.sort((x, y) => Date.parse(x.at) - Date.parse(y.at) || (x.type === "leave" ? -1 : 1));
  const res = await agentApi(server, s.agentToken, "POST", "/agent/events", {
    events: events.map((e) => ({ event_id: eventId(), ...e })),
  });
  expect(`${res.status} ${res.text}`).toStartWith("200");
}

const read = (s: ServerFixture, path: string, query: Record<string, string>) =>
  api(server, "GET", `/analytics/${path}?${new URLSearchParams(query)}`, {
    token: s.owner.token,
    headers: { "x-team-id": s.teamId },
  });
async function ok(s: ServerFixture, path: string, query: Record<string, string>) {
  const res = await read(s, path, query);
  expect(`${res.status} ${res.text}`).toStartWith("200");
  return res.body;
}
const cell = (heat: any, weekday: string, hour: number) =>
  heat.days.find((d: any) => d.weekday === weekday).hours[hour].average_online;

/** Sets the team's zone through PATCH /teams and waits for its retention counts made again in it. */
async function setZone(s: ServerFixture, zone: string) {
  const res = await api(server, "PATCH", `/teams/${s.teamId}`, { token: s.owner.token, body: { time_zone: zone } });
  expect(`${res.status} ${res.text}`).toStartWith("200");
  await server.services.cohortZones.catchUp();
}

/** A network of two servers in a new team: the first as `newServer` made it, the second added to it. */
async function networkOfTwo(network: string, first: string, second: string): Promise<[ServerFixture, ServerFixture]> {
  const a = await newServer(server, { kind: "network", network_name: network, name: first });
  const res = await api(server, "POST", "/server/servers", {
    token: a.owner.token,
    body: { team_id: a.teamId, name: second, host: "127.0.0.1", port: 9, kind: "network", network_name: network },
  });
  expect(`${res.status} ${res.text}`).toStartWith("201");
  return [a, { ...a, serverId: res.body.server_id, agentToken: res.body.agent_token }];
}

const P = (n: number) => `0f0f0f0f-0000-4000-8000-${String(n).padStart(12, "0")}`;
const BEDROCK = "00000000-0000-0000-0009-000000000001";

/**
 * A still clock at `at` (an open session counts up to the same now in every read), the service
 * over the kept aggregates, the same over the hour rows alone, and a viewer key of the team.
 */
function twoServices(at: number, teamId: string) {
  const clock = new (class extends Clock {
    override now() {
      return at;
    }
  })();
  const principal: Principal = {
    kind: "api_key",
    keyId: "test",
    teamId,
    role: "viewer",
    scopes: null,
    serverIds: null,
    exp: null,
  };
  return {
    kept: new AnalyticsService(db(), clock),
    hours: new AnalyticsService(db(), clock, { hoursOnly: true }),
    // New players counted by the long windows' join, however few; the leaderboard's candidates
    // summed two at a time; a cut month's players always as the kept count less the rest.
    // `hashed`: the new regulars joined, not probed, and a cut month's players always counted.
    joined: new AnalyticsService(db(), clock, { newListed: 0, summedPart: 2, cutSide: "rest" }),
    hashed: new AnalyticsService(db(), clock, { newListed: 0, summedPart: 2, probedNew: 0, cutSide: "direct" }),
    principal,
  };
}

/** Every aggregate row of a team, in a stable order, for comparing with a rebuild. */
const dump = (teamId: string) => dumpAggregates(db(), teamId);

/**
 * The team's aggregates kept at ingest equal a rebuild from its sessions; then `uuid` is forgotten
 * (their sessions and players deleted, as an erasure does), no aggregate names them, and a rebuild
 * still equals what is kept. Returns the aggregates as kept before the forgetting.
 */
async function keptEqualsRebuild(teamId: string, uuid: string) {
  const kept = await dump(teamId);
  await db().transaction((tx) => rebuildAggregates(tx, teamId));
  expect(await dump(teamId)).toEqual(kept);
  await db().transaction(async (tx) => {
    await forgetPlayer(tx, teamId, uuid);
    await tx.execute(sql`delete from player_sessions where uuid = ${uuid}::uuid`);
    await tx.execute(sql`delete from players where uuid = ${uuid}::uuid`);
  });
  const forgotten = await dump(teamId);
  expect(JSON.stringify(forgotten)).not.toContain(uuid);
  await db().transaction((tx) => rebuildAggregates(tx, teamId));
  expect(await dump(teamId)).toEqual(forgotten);
  return kept;
}

describe("team time zone", () => {
  test("PATCH /teams/{id} sets a valid zone, GET shows it, an unknown zone is 400 and changes nothing", async () => {
    const s = await newServer(server);
    const before = await api(server, "GET", `/teams/${s.teamId}`, { token: s.owner.token });
    expect(before.body.time_zone).toBe("UTC");
    const set = await api(server, "PATCH", `/teams/${s.teamId}`, {
      token: s.owner.token,
      body: { time_zone: "Asia/Kolkata" },
    });
    expect(`${set.status} ${set.text}`).toStartWith("200");
    expect(set.body).toMatchObject({ time_zone: "Asia/Kolkata", name: before.body.name });
    const bad = await api(server, "PATCH", `/teams/${s.teamId}`, {
      token: s.owner.token,
      body: { time_zone: "Mars/Olympus_Mons", name: "Renamed" },
    });
    expectError(bad, 400);
    const after = await api(server, "GET", `/teams/${s.teamId}`, { token: s.owner.token });
    expect(after.body).toMatchObject({ time_zone: "Asia/Kolkata", name: before.body.name });
    // The team's zone is the reads' default; `tz` overrides it; an unknown `tz` is 400.
    const heat = await ok(s, "heatmap", {
      server_id: s.serverId,
      from: "2026-03-02T00:00:00Z",
      to: "2026-03-03T00:00:00Z",
    });
    expect(heat.time_zone).toBe("Asia/Kolkata");
    expectError(await read(s, "heatmap", { server_id: s.serverId, tz: "Not/AZone" }), 400);
  });
});

describe("heatmap, peaks and session lengths across DST days (Europe/Berlin)", () => {
  let s: ServerFixture;
  beforeAll(async () => {
    s = await newServer(server);
    await play(s, [
      // 2026-03-29: clocks go from 02:00 CET to 03:00 CEST at 01:00 UTC (a 23-hour day).
      [P(1), "Ada", "2026-03-29T00:30:00Z", "2026-03-29T01:30:00Z"],
      [P(2), "Bo", "2026-03-29T00:45:00Z", "2026-03-29T01:15:00Z"],
      // 2026-10-25: from 03:00 CEST back to 02:00 CET at 01:00 UTC (a 25-hour day: 02:00-03:00 twice).
      [P(3), "Cy", "2026-10-25T00:00:00Z", "2026-10-25T01:00:00Z"],
    ]);
  });

  test("the 23-hour day: local 01:00 and 03:00 each hold 45 player-minutes, 02:00 does not exist", async () => {
    const q = { server_id: s.serverId, tz: "Europe/Berlin", from: "2026-03-28T23:00:00Z", to: "2026-03-29T22:00:00Z" };
    const heat = await ok(s, "heatmap", q);
    expect(cell(heat, "Sunday", 0)).toBe(0);
    expect(cell(heat, "Sunday", 1)).toBe(0.75);
    expect(cell(heat, "Sunday", 2)).toBeNull();
    expect(cell(heat, "Sunday", 3)).toBe(0.75);
    expect(cell(heat, "Sunday", 23)).toBe(0);
    expect(cell(heat, "Saturday", 23)).toBeNull();
    expect(
      heat.days.find((d: any) => d.weekday === "Sunday").hours.filter((h: any) => h.average_online !== null),
    ).toHaveLength(23);

    const peaks = await ok(s, "peaks", q);
    expect(peaks.peak).toEqual({ players: 2, at: "2026-03-29T00:45:00.000Z" });
    expect(peaks.most_online_ever).toEqual({ players: 2, at: "2026-03-29T00:45:00.000Z" });
    expect(peaks.online_now).toBe(0);

    const lengths = await ok(s, "session-lengths", q);
    expect(lengths.sessions).toBe(2);
    expect(lengths.buckets.filter((b: any) => b.sessions > 0).map((b: any) => [b.bucket, b.sessions, b.share])).toEqual(
      [
        ["30-60 min", 1, 0.5],
        ["1-2 h", 1, 0.5],
      ],
    );
  });

  test("the 25-hour day: local 02:00 happens twice, so one hour online in it averages 0.5", async () => {
    const q = { server_id: s.serverId, tz: "Europe/Berlin", from: "2026-10-24T22:00:00Z", to: "2026-10-25T23:00:00Z" };
    const heat = await ok(s, "heatmap", q);
    expect(cell(heat, "Sunday", 1)).toBe(0);
    expect(cell(heat, "Sunday", 2)).toBe(0.5);
    expect(cell(heat, "Sunday", 3)).toBe(0);
    const peaks = await ok(s, "peaks", q);
    expect(peaks.peak).toEqual({ players: 1, at: "2026-10-25T00:00:00.000Z" });
    // The spring peak is still the highest ever.
    expect(peaks.most_online_ever).toEqual({ players: 2, at: "2026-03-29T00:45:00.000Z" });
    // In UTC the same hour is Sunday 00:00, whole.
    const utc = await ok(s, "heatmap", { ...q, tz: "UTC" });
    expect(cell(utc, "Sunday", 0)).toBe(1);
  });
});

describe("a half-hour zone (Asia/Kolkata, UTC+05:30)", () => {
  test("a session 18:00-19:00 UTC is half in local Monday 23:00 and half in Tuesday 00:00; a local day cuts it", async () => {
    const s = await newServer(server);
    await play(s, [[P(4), "Dee", "2026-03-02T18:00:00Z", "2026-03-02T19:00:00Z"]]);
    const week = {
      server_id: s.serverId,
      tz: "Asia/Kolkata",
      from: "2026-03-01T18:30:00Z",
      to: "2026-03-08T18:30:00Z",
    };
    const heat = await ok(s, "heatmap", week);
    expect(cell(heat, "Monday", 23)).toBe(0.5);
    expect(cell(heat, "Tuesday", 0)).toBe(0.5);
    expect(cell(heat, "Monday", 22)).toBe(0);
    // Tuesday 2026-03-03 in Kolkata: 18:30 UTC the day before to 18:30 UTC that day.
    const tuesday = { ...week, from: "2026-03-02T18:30:00Z", to: "2026-03-03T18:30:00Z" };
    const board = await ok(s, "leaderboard", tuesday);
    expect(board.players).toEqual([{ rank: 1, uuid: P(4), name: "Dee", edition: "java", playtime_seconds: 1800 }]);
    const monday = await ok(s, "leaderboard", { ...week, from: "2026-03-01T18:30:00Z", to: "2026-03-02T18:30:00Z" });
    expect(monday.players[0].playtime_seconds).toBe(1800);
    const activity = await ok(s, "activity", tuesday);
    expect(activity).toMatchObject({ players: 1, new_players: 0, returning_players: 1, regular_players: 0 });
  });
});

describe("weekly retention cohorts across a year and a month boundary", () => {
  let s: ServerFixture;
  const at = (day: string): [string, string] => [`${day}T12:00:00Z`, `${day}T13:00:00Z`];
  beforeAll(async () => {
    s = await newServer(server);
    const A = P(11);
    const B = P(12);
    const C = P(13);
    const D = P(14);
    const E = P(15);
    await play(s, [
      [A, "A", ...at("2025-12-22")],
      [B, "B", ...at("2025-12-23")],
      [A, "A", ...at("2025-12-30")],
      [C, "C", ...at("2025-12-31")],
      [E, "E", ...at("2026-01-04")],
      [C, "C", ...at("2026-01-05")],
      [A, "A", ...at("2026-01-06")],
      [B, "B", ...at("2026-01-07")],
      [E, "E", ...at("2026-01-11")],
      [D, "D", ...at("2026-01-28")],
      [D, "D", ...at("2026-02-02")],
    ]);
  });
  const window = { from: "2025-12-22T00:00:00Z", to: "2026-02-09T00:00:00Z" };
  const shape = (r: any) => r.cohorts.map((c: any) => [c.week_start, c.players, c.retained.map((x: any) => x.players)]);

  test("UTC weeks: each first-week cohort and who came back in week 1..N", async () => {
    const r = await ok(s, "retention", { server_id: s.serverId, tz: "UTC", ...window });
    expect(shape(r)).toEqual([
      ["2025-12-22", 2, [1, 2, 0, 0, 0, 0]],
      // E's Sunday 2026-01-04 and Sunday 2026-01-11 are one week apart.
      ["2025-12-29", 2, [2, 0, 0, 0, 0]],
      ["2026-01-26", 1, [1]],
    ]);
    expect(r.cohorts[0].retained[1]).toEqual({ week: 2, players: 2, share: 1 });
    expect(r.cohorts[1].retained[0]).toEqual({ week: 1, players: 2, share: 1 });
    expect(r.cohorts[2].retained[0]).toEqual({ week: 1, players: 1, share: 1 });
  });

  test("Pacific/Auckland (UTC+13 in summer): Sunday noon UTC is Monday there, so E starts a later cohort", async () => {
    const r = await ok(s, "retention", { server_id: s.serverId, tz: "Pacific/Auckland", ...window });
    expect(shape(r)).toEqual([
      ["2025-12-22", 2, [1, 2, 0, 0, 0, 0, 0]],
      ["2025-12-29", 1, [1, 0, 0, 0, 0, 0]],
      ["2026-01-05", 1, [1, 0, 0, 0, 0]],
      ["2026-01-26", 1, [1, 0]],
    ]);
  });

  test("in a zone with another clock than the team's, at most EXPENSIVE_READS_PER_CREDENTIAL at once per caller (429, Retry-After); the team's zone is never held", async () => {
    const { principal } = twoServices(Date.parse("2026-03-01T00:00:00Z"), s.teamId);
    const limit = new InFlightLimit(1);
    const svc = new AnalyticsService(db(), new Clock(), { expensive: limit });
    const q = { server_id: s.serverId, ...window };
    const auckland = shape(await ok(s, "retention", { ...q, tz: "Pacific/Auckland" }));
    const utc = shape(await ok(s, "retention", { ...q, tz: "UTC" }));
    // The caller's one slot taken by a read still running.
    let finish = () => {};
    const running = limit.run(principalKey(principal), () => new Promise<void>((r) => (finish = r)));
    try {
      const refused = await svc.retention(principal, s.teamId, { ...q, tz: "Pacific/Auckland" }).catch((e) => e);
      expect(refused).toBeInstanceOf(AppError);
      expect([refused.status, refused.appCode, refused.headers]).toEqual([429, "rate_limited", { "Retry-After": "1" }]);
      // The team's zone (UTC) reads its kept counts, and another caller has slots of its own.
      expect(shape(await svc.retention(principal, s.teamId, { ...q, tz: "UTC" }))).toEqual(utc);
      const other = { ...principal, keyId: "another key" };
      expect(shape(await svc.retention(other, s.teamId, { ...q, tz: "Pacific/Auckland" }))).toEqual(auckland);
    } finally {
      finish();
      await running;
    }
    expect(shape(await svc.retention(principal, s.teamId, { ...q, tz: "Pacific/Auckland" }))).toEqual(auckland);
  });
});

describe("activity index: new, returning and regular", () => {
  test("three weeks of playtime before the window's end give each player's index and group", async () => {
    const s = await newServer(server);
    const [R, Q, S2] = [P(21), P(22), P(23)];
    await play(s, [
      [Q, "Q", "2026-06-09T12:00:00Z", "2026-06-09T13:00:00Z"],
      [R, "R", "2026-06-10T12:00:00Z", "2026-06-10T13:00:00Z"],
      [R, "R", "2026-06-17T12:00:00Z", "2026-06-17T13:00:00Z"],
      [S2, "S", "2026-06-23T12:00:00Z", "2026-06-23T13:00:00Z"],
      [R, "R", "2026-06-24T12:00:00Z", "2026-06-24T13:00:00Z"],
      [Q, "Q", "2026-06-25T12:00:00Z", "2026-06-25T12:06:00Z"],
    ]);
    // R: an hour in each week: 5 - 5/(π/2 + 1) = 3.05 (active). Q: 6 min, nothing, an hour: 1.24
    // (irregular). S: new, an hour in the last week only: 1.02 (irregular).
    const r = await ok(s, "activity", {
      server_id: s.serverId,
      tz: "UTC",
      from: "2026-06-22T00:00:00Z",
      to: "2026-06-29T00:00:00Z",
    });
    expect(r).toMatchObject({ players: 3, new_players: 1, regular_players: 1, returning_players: 1 });
    expect(r.activity_groups.map((g: any) => [g.group, g.players])).toEqual([
      ["very_active", 0],
      ["active", 1],
      ["regular", 0],
      ["irregular", 2],
      ["inactive", 0],
    ]);
  });
});

describe("a window cut mid-hour", () => {
  test("quarters before `from` and from `to` on are left out; a session across a week boundary scores in both weeks", async () => {
    const s = await newServer(server);
    const [Z, V, W] = [P(51), P(52), P(53)];
    await play(s, [
      // Across Monday 2026-06-22T00:00Z, a boundary of the index's weeks (they end on the last
      // Monday 00:00 UTC at or before `to`, 2026-06-29T00:00Z): an hour in the earlier week, two
      // in the later.
      [Z, "Z", "2026-06-21T23:00:00Z", "2026-06-22T02:00:00Z"],
      // Only in quarters before `from`: not seen in the window.
      [W, "W", "2026-06-22T00:00:00Z", "2026-06-22T00:20:00Z"],
      // New; 15 minutes before `to`, 15 after, all after the index's end.
      [V, "V", "2026-06-29T00:15:00Z", "2026-06-29T00:45:00Z"],
    ]);
    const q = { server_id: s.serverId, tz: "UTC", from: "2026-06-22T00:30:00Z", to: "2026-06-29T00:30:00Z" };
    // Z: 5 - 5/3 (1/(π/2 + 1) + 1/(π/2 · 2 + 1) + 1) = 2.28 (regular; the three hours in one week
    // would give 1.37). V: no time before the index's end, 0 (inactive).
    const r = await ok(s, "activity", q);
    expect(r).toMatchObject({
      players: 2,
      new_players: 1,
      regular_players: 1,
      returning_players: 0,
      index_at: "2026-06-29T00:00:00.000Z",
    });
    expect(r.activity_groups.map((g: any) => [g.group, g.players])).toEqual([
      ["very_active", 0],
      ["active", 0],
      ["regular", 1],
      ["irregular", 0],
      ["inactive", 1],
    ]);
    const board = await ok(s, "leaderboard", q);
    expect(board.players.map((p: any) => [p.name, p.playtime_seconds])).toEqual([
      ["Z", 5400],
      ["V", 900],
    ]);
    const editions = await ok(s, "editions", q);
    expect(editions.editions[0]).toMatchObject({ edition: "java", players: 2, playtime_seconds: 6300 });
  });
});

describe("a network: players counted once across its servers", () => {
  let n1: ServerFixture;
  let n2: ServerFixture;
  const [X, Y] = [P(31), P(32)];
  const day = { network: "Realm", tz: "UTC", from: "2026-05-04T00:00:00Z", to: "2026-05-05T00:00:00Z" };
  const lobbyDay = () => ({ server_id: n1.serverId, tz: "UTC", from: day.from, to: day.to });
  beforeAll(async () => {
    [n1, n2] = await networkOfTwo("Realm", "Lobby", "Survival");
    await play(n1, [
      [X, "X", "2026-05-04T10:00:00Z", "2026-05-04T11:00:00Z"],
      [Y, "Y", "2026-05-04T10:30:00Z", "2026-05-04T11:30:00Z"],
    ]);
    await play(n2, [
      [BEDROCK, ".Zed", "2026-05-04T10:00:00Z", "2026-05-04T10:30:00Z"],
      [X, "X", "2026-05-04T11:00:00Z", "2026-05-04T12:00:00Z"],
    ]);
  });

  test("each read over the network, against the hand count", async () => {
    expect(await ok(n1, "activity", day)).toMatchObject({ players: 3, new_players: 3, returning_players: 0 });
    expect((await ok(n1, "activity", lobbyDay())).players).toBe(2);
    const board = await ok(n1, "leaderboard", day);
    expect(board.players.map((p: any) => [p.uuid, p.name, p.edition, p.playtime_seconds])).toEqual([
      [X, "X", "java", 7200],
      [Y, "Y", "java", 3600],
      [BEDROCK, ".Zed", "bedrock", 1800],
    ]);
    const ed = await ok(n1, "editions", day);
    expect(ed.editions).toEqual([
      { edition: "java", players: 2, player_share: 0.6667, playtime_seconds: 10800, playtime_share: 0.8571 },
      { edition: "bedrock", players: 1, player_share: 0.3333, playtime_seconds: 1800, playtime_share: 0.1429 },
    ]);
    // X hops from the lobby to survival at 11:00 (the leave first): never two at once for X.
    const peaks = await ok(n1, "peaks", day);
    expect(peaks.peak).toEqual({ players: 2, at: "2026-05-04T10:00:00.000Z" });
    const lobby = await ok(n1, "peaks", lobbyDay());
    expect(lobby.peak).toEqual({ players: 2, at: "2026-05-04T10:30:00.000Z" });
    const heat = await ok(n1, "heatmap", day);
    expect(cell(heat, "Monday", 10)).toBe(2);
    expect(cell(heat, "Monday", 11)).toBe(1.5);
    expect(cell(heat, "Monday", 12)).toBe(0);
    const lengths = await ok(n1, "session-lengths", day);
    expect(lengths.buckets.map((b: any) => b.sessions)).toEqual([0, 0, 0, 1, 3, 0, 0]);
    const cohorts = await ok(n1, "retention", day);
    expect(cohorts.cohorts).toEqual([{ week_start: "2026-05-04", players: 3, retained: [] }]);
  });

  test("the aggregates kept at ingest equal a rebuild from the sessions", async () => {
    const kept = await dump(n1.teamId);
    expect(kept.hours.length).toBeGreaterThan(0);
    await db().transaction((tx) => rebuildAggregates(tx, n1.teamId));
    expect(await dump(n1.teamId)).toEqual(kept);
  });

  test("forgetPlayer removes one player's share: the reads answer as if they never played", async () => {
    await db().transaction(async (tx) => {
      await forgetPlayer(tx, n1.teamId, Y);
      await tx.execute(sql`delete from player_sessions where uuid = ${Y}::uuid`);
      await tx.execute(sql`delete from players where uuid = ${Y}::uuid`);
    });
    const forgotten = await dump(n1.teamId);
    expect(JSON.stringify(forgotten)).not.toContain(Y);
    await db().transaction((tx) => rebuildAggregates(tx, n1.teamId));
    expect(await dump(n1.teamId)).toEqual(forgotten);

    expect(await ok(n1, "activity", day)).toMatchObject({ players: 2, new_players: 2 });
    const board = await ok(n1, "leaderboard", day);
    expect(board.players.map((p: any) => p.uuid)).toEqual([X, BEDROCK]);
    const lobby = await ok(n1, "peaks", lobbyDay());
    expect(lobby.peak).toEqual({ players: 1, at: "2026-05-04T10:00:00.000Z" });
    const heat = await ok(n1, "heatmap", day);
    expect(cell(heat, "Monday", 10)).toBe(1.5);
    expect(cell(heat, "Monday", 11)).toBe(1);
    const lengths = await ok(n1, "session-lengths", day);
    expect(lengths.buckets.map((b: any) => b.sessions)).toEqual([0, 0, 0, 1, 2, 0, 0]);
  });
});

describe("new to a network, not to its server", () => {
  test("a player first seen on one server before the window and on another inside it is not new to the network", async () => {
    const [a, b] = await networkOfTwo("Isles", "Hub", "Farm");
    const [K, L] = [P(61), P(62)];
    await play(a, [[K, "K", "2026-07-01T10:00:00Z", "2026-07-01T11:00:00Z"]]);
    await play(b, [
      [K, "K", "2026-07-08T10:00:00Z", "2026-07-08T11:00:00Z"],
      [L, "L", "2026-07-09T10:00:00Z", "2026-07-09T11:00:00Z"],
    ]);
    const week = { tz: "UTC", from: "2026-07-06T00:00:00Z", to: "2026-07-13T00:00:00Z" };
    const network = { ...week, network: "Isles" };
    const farm = { ...week, server_id: b.serverId };
    // K played an hour in each of the last two weeks (index 2.04): regular, not new.
    expect(await ok(a, "activity", network)).toMatchObject({
      players: 2,
      new_players: 1,
      regular_players: 1,
      returning_players: 0,
    });
    expect(await ok(a, "activity", farm)).toMatchObject({ players: 2, new_players: 2, returning_players: 0 });
    expect((await ok(a, "retention", network)).cohorts).toEqual([
      { week_start: "2026-07-06", players: 1, retained: [] },
    ]);
    expect((await ok(a, "retention", farm)).cohorts).toEqual([{ week_start: "2026-07-06", players: 2, retained: [] }]);
  });
});

describe("open sessions and bad input", () => {
  test("an open session counts up to now: online now, the peak and the leaderboard", async () => {
    const s = await newServer(server);
    const now = server.services.clock.now();
    const iso = (ms: number) => new Date(ms).toISOString();
    await play(s, [
      [P(41), "Open", iso(now - 20 * 60_000), null],
      [P(42), "Closed", iso(now - 15 * 60_000), iso(now - 10 * 60_000)],
    ]);
    const peaks = await ok(s, "peaks", { server_id: s.serverId });
    expect(peaks.online_now).toBe(1);
    expect(peaks.peak).toEqual({ players: 2, at: iso(now - 15 * 60_000) });
    expect(peaks.most_online_ever).toEqual(peaks.peak);
    const board = await ok(s, "leaderboard", { server_id: s.serverId });
    expect(board.players.map((p: any) => p.name)).toEqual(["Open", "Closed"]);
    expect(board.players[0].playtime_seconds).toBeGreaterThanOrEqual(20 * 60 - 1);
    expect(board.players[1].playtime_seconds).toBe(300);
  });

  test("bad scopes and windows are 4xx; another team's server is 404", async () => {
    const s = await newServer(server);
    const other = await newServer(server);
    expectError(await read(s, "peaks", {}), 400);
    expectError(await read(s, "peaks", { server_id: s.serverId, network: "x" }), 400);
    expectError(await read(s, "peaks", { server_id: other.serverId }), 404);
    expectError(await read(s, "peaks", { network: "Nowhere" }), 404);
    expectError(
      await read(s, "peaks", { server_id: s.serverId, from: "2026-01-02T00:00:00Z", to: "2026-01-01T00:00:00Z" }),
      400,
    );
    expectError(
      await read(s, "peaks", { server_id: s.serverId, from: "2024-01-01T00:00:00Z", to: "2026-01-01T00:00:00Z" }),
      400,
    );
    expectError(await read(s, "leaderboard", { server_id: s.serverId, limit: "1000" }), 400);
    const stranger = await newUser(server, "stranger");
    const res = await api(server, "GET", `/analytics/peaks?server_id=${s.serverId}`, {
      token: stranger.token,
      headers: { "x-team-id": s.teamId },
    });
    expectError(res, 403);
  });
});

describe("month rows: whole months from them, the cut edges from the hours, the same answers", () => {
  let n1: ServerFixture;
  let n2: ServerFixture;
  const [A, B, C, D, E] = [P(61), P(62), P(63), P(64), P(65)];
  const BR = "00000000-0000-0000-0009-000000000061";
  // A still clock: the open session counts up to the same now in both services.
  const frozen = Date.now();
  let months: AnalyticsService;
  let hours: AnalyticsService;
  let joined: AnalyticsService;
  let hashed: AnalyticsService;
  let principal: Principal;
  beforeAll(async () => {
    [n1, n2] = await networkOfTwo("Atlas", "Lobby", "Mines");
    // Later months first: the earlier sessions arrive afterwards (prev_at of later months moves).
    await play(n1, [
      [A, "A", "2026-09-03T10:00:00Z", "2026-09-03T12:10:00Z"],
      [B, "B", "2026-09-20T08:05:00Z", "2026-09-20T08:50:00Z"],
      [BR, ".Br", "2026-09-30T23:20:00Z", "2026-10-01T01:40:00Z"],
      [C, "C", "2026-10-02T18:00:00Z", "2026-10-02T18:00:00Z"],
      [A, "A", "2026-10-14T20:45:00Z", "2026-10-14T23:15:00Z"],
      [D, "D", "2026-10-31T22:50:00Z", "2026-11-01T00:20:00Z"],
      [E, "E", "2026-11-02T07:00:00Z", null],
    ]);
    await play(n2, [
      [A, "A", "2026-08-30T21:00:00Z", "2026-09-01T01:00:00Z"],
      [C, "C", "2026-08-12T09:00:00Z", "2026-08-12T09:40:00Z"],
      [B, "B", "2026-10-09T12:00:00Z", "2026-10-09T15:30:00Z"],
      [BR, ".Br", "2026-10-20T06:00:00Z", "2026-10-20T06:30:00Z"],
      [D, "D", "2026-09-25T17:00:00Z", "2026-09-25T19:00:00Z"],
      [E, "E", "2026-10-25T00:30:00Z", "2026-10-25T02:30:00Z"],
    ]);
    await play(n1, [[B, "B", "2026-07-31T23:00:00Z", "2026-08-01T00:30:00Z"]]);
    ({ kept: months, hours, joined, hashed, principal } = twoServices(frozen, n1.teamId));
  });

  const windows = [
    ["2026-08-01T00:00:00Z", "2026-11-01T00:00:00Z"],
    ["2026-09-01T00:00:00Z", "2026-10-01T00:00:00Z"],
    ["2026-09-02T00:00:00Z", "2026-10-01T00:00:00Z"],
    ["2026-09-21T00:00:00Z", "2026-10-15T00:00:00Z"],
    ["2026-09-03T11:15:00Z", "2026-10-14T21:45:00Z"],
    ["2026-08-12T09:30:00Z", "2026-11-30T00:00:00Z"],
    ["2026-09-30T23:45:00Z", "2026-10-31T22:30:00Z"],
    ["2026-07-15T00:00:00Z", "2026-12-01T00:00:00Z"],
    ["2026-10-01T00:00:00Z", "2026-10-31T00:00:00Z"],
    ["2026-10-05T00:00:00Z", "2026-11-10T06:15:00Z"],
  ];

  test("each window: leaderboard, editions, activity and retention as from the hours alone", async () => {
    let scored = 0;
    for (const [from, to] of windows)
      for (const scope of [{ network: "Atlas" }, { server_id: n1.serverId }, { server_id: n2.serverId }])
        for (const tz of ["UTC", "Asia/Kolkata"]) {
          const q = { ...scope, from, to, tz };
          const label = JSON.stringify(q);
          const m = await months.leaderboard(principal, n1.teamId, { ...q, limit: 3 });
          const h = await hours.leaderboard(principal, n1.teamId, { ...q, limit: 3 });
          expect([label, m]).toEqual([label, h]);
          expect([label, await joined.leaderboard(principal, n1.teamId, { ...q, limit: 3 })]).toEqual([label, h]);
          const editions = await months.editions(principal, n1.teamId, q);
          expect([label, editions]).toEqual([label, await hours.editions(principal, n1.teamId, q)]);
          expect([label, await joined.editions(principal, n1.teamId, q)]).toEqual([label, editions]);
          expect([label, await hashed.editions(principal, n1.teamId, q)]).toEqual([label, editions]);
          const activity = await months.activity(principal, n1.teamId, q);
          expect([label, activity]).toEqual([label, await hours.activity(principal, n1.teamId, q)]);
          expect([label, await joined.activity(principal, n1.teamId, q)]).toEqual([label, activity]);
          expect([label, await hashed.activity(principal, n1.teamId, q)]).toEqual([label, activity]);
          scored += activity.activity_groups.filter((g) => g.group !== "inactive").reduce((a, g) => a + g.players, 0);
          const cohorts = await months.retention(principal, n1.teamId, q);
          expect([label, cohorts]).toEqual([label, await hours.retention(principal, n1.teamId, q)]);
          expect([label, await joined.retention(principal, n1.teamId, q)]).toEqual([label, cohorts]);
        }
    // Players in groups above inactive were compared, not only empty groups.
    expect(scored).toBeGreaterThan(10);
  });

  test("activity over three weeks ending on a Monday: the groups from the week's counts, by hand", async () => {
    // [2026-09-28, 2026-10-19): .Br 2 h 20 min in the first week (new), B 3 h 30 min in the second,
    // A 2 h 30 min in the third: one week of play each, 5 - 5/3 (1/(π/2 · p/1h + 1) + 2) = 1.31,
    // 1.41, 1.33 (irregular). C's leave and join at one instant (the leave first) left a session
    // open since 2026-10-02T18:00: 54, 168 and 168 hours, 4.97 (very active, counted at read time).
    const q = { network: "Atlas", from: "2026-09-28T00:00:00Z", to: "2026-10-19T00:00:00Z", tz: "UTC" };
    const r = await months.activity(principal, n1.teamId, q);
    expect(await hours.activity(principal, n1.teamId, q)).toEqual(r);
    expect(r).toMatchObject({
      players: 4,
      new_players: 1,
      regular_players: 1,
      returning_players: 2,
      index_at: "2026-10-19T00:00:00.000Z",
    });
    expect(r.activity_groups.map((g) => [g.group, g.players])).toEqual([
      ["very_active", 1],
      ["active", 0],
      ["regular", 0],
      ["irregular", 3],
      ["inactive", 0],
    ]);
    // The week's kept counts hold closed sessions only: the three irregular players.
    const [kept] = rowsOf<Record<string, number>>(
      await db().execute(sql`select very_active, active, regular, irregular from analytics_activity_weeks
        where team_id = ${n1.teamId} and scope like 'n:%' and week = '2026-10-19T00:00:00Z'`),
    );
    expect(kept).toEqual({ very_active: 0, active: 0, regular: 0, irregular: 3 });
  });

  test("a hand count across a month boundary: September 2 to October 1 on the network", async () => {
    const q = { network: "Atlas", from: "2026-09-02T00:00:00Z", to: "2026-10-01T00:00:00Z", tz: "UTC" };
    const ed = await months.editions(principal, n1.teamId, q);
    // Java: A (2 h 10 min), B (45 min), D (2 h); Bedrock: .Br (40 min before midnight).
    expect(ed.editions.map((e) => [e.edition, e.players, e.playtime_seconds])).toEqual([
      ["java", 3, (130 + 45 + 120) * 60],
      ["bedrock", 1, 40 * 60],
    ]);
    const board = await months.leaderboard(principal, n1.teamId, { ...q, limit: 2 });
    expect(board.players.map((p) => [p.uuid, p.playtime_seconds])).toEqual([
      [A, 130 * 60],
      [D, 120 * 60],
    ]);
  });

  test("the month rows kept at ingest (late sessions included) equal a rebuild; forgetting a player keeps them equal", async () => {
    const kept = await keptEqualsRebuild(n1.teamId, A);
    expect(kept.months.length).toBeGreaterThan(0);
    expect(kept.months.some((r) => r.prev_at !== null)).toBe(true);
    // A's August (on Mines, before September's rows arrived) is in September's prev_ms.
    expect(kept.months.some((r) => r.prev_ms !== "0" && r.pair_ms !== r.ms)).toBe(true);
    const q = { network: "Atlas", from: windows[0]![0]!, to: windows[0]![1]!, tz: "UTC" };
    expect(await months.leaderboard(principal, n1.teamId, q)).toEqual(await hours.leaderboard(principal, n1.teamId, q));
    expect(await months.editions(principal, n1.teamId, q)).toEqual(await hours.editions(principal, n1.teamId, q));
  });
});

describe("week rows: windows shorter than the index's three weeks, each player once, at the latest week", () => {
  let a: ServerFixture;
  let b: ServerFixture;
  const [REG, HOP, LATE, ON, ONCE] = [P(81), P(82), P(83), P(84), P(85)];
  const BR = "00000000-0000-0000-0009-000000000081";
  const frozen = Date.parse("2026-11-12T12:00:00Z");
  let weeks: AnalyticsService;
  let hours: AnalyticsService;
  let joined: AnalyticsService;
  let hashed: AnalyticsService;
  let principal: Principal;
  beforeAll(async () => {
    [a, b] = await networkOfTwo("Weekly", "Hub", "Arena");
    // The later weeks first: the earlier sessions arrive afterwards and move the later weeks'
    // copies and the earlier weeks' next_at.
    await play(a, [
      [REG, "Reg", "2026-10-27T20:00:00Z", "2026-10-27T23:00:00Z"],
      [REG, "Reg", "2026-11-03T20:00:00Z", "2026-11-03T23:00:00Z"],
      [REG, "Reg", "2026-11-10T20:00:00Z", "2026-11-10T23:00:00Z"],
      [LATE, "Late", "2026-11-09T06:00:00Z", "2026-11-09T06:45:00Z"],
      [BR, ".Br", "2026-11-02T12:00:00Z", "2026-11-02T12:20:00Z"],
      [BR, ".Br", "2026-11-04T12:00:00Z", "2026-11-04T12:20:00Z"],
      [BR, ".Br", "2026-11-07T12:00:00Z", "2026-11-07T12:20:00Z"],
    ]);
    await play(b, [
      // Across a week's end: Sunday night into Monday.
      [HOP, "Hop", "2026-11-01T22:00:00Z", "2026-11-02T03:00:00Z"],
      [ON, "On", "2026-10-28T10:00:00Z", "2026-10-28T11:30:00Z"],
      [ON, "On", "2026-11-10T10:00:00Z", null],
      [ONCE, "Once", "2026-10-06T18:00:00Z", "2026-10-06T19:00:00Z"],
    ]);
    await play(a, [
      [REG, "Reg", "2026-10-13T20:00:00Z", "2026-10-13T23:00:00Z"],
      [REG, "Reg", "2026-10-20T20:00:00Z", "2026-10-20T23:00:00Z"],
      [HOP, "Hop", "2026-10-14T09:00:00Z", "2026-10-14T11:00:00Z"],
      [LATE, "Late", "2026-10-19T06:00:00Z", "2026-10-19T09:00:00Z"],
      [LATE, "Late", "2026-11-05T23:00:00Z", "2026-11-06T00:10:00Z"],
    ]);
    ({ kept: weeks, hours, joined, hashed, principal } = twoServices(frozen, a.teamId));
  });

  test("every short window (7 h 12 min to 20 days), sliding by 17 hours over six weeks, answers as the hours do", async () => {
    const start = Date.parse("2026-10-05T00:00:00Z");
    let compared = 0;
    for (const days of [0.3, 1, 7, 20])
      for (let t = start; t + days * 86_400_000 <= Date.parse("2026-11-13T00:00:00Z"); t += 17 * 3_600_000) {
        const from = new Date(t).toISOString();
        const to = new Date(t + days * 86_400_000).toISOString();
        for (const scope of [{ network: "Weekly" }, { server_id: a.serverId }, { server_id: b.serverId }]) {
          const q = { ...scope, from, to, tz: "UTC" };
          const label = JSON.stringify(q);
          const w = await weeks.activity(principal, a.teamId, q);
          expect([label, w]).toEqual([label, await hours.activity(principal, a.teamId, q)]);
          expect([label, await joined.activity(principal, a.teamId, q)]).toEqual([label, w]);
          expect([label, await hashed.activity(principal, a.teamId, q)]).toEqual([label, w]);
          compared += w.players;
        }
      }
    expect(compared).toBeGreaterThan(200);
  });

  test("a hand count: November 2 06:00 to November 10 12:00 on the network", async () => {
    // The index at Monday November 9 (the three weeks from October 19). Seen in the window:
    // Reg (3 h each week: 5 - 5/(1 + 3π/2) = 4.12, very active); Late (3 h, none, 1 h 10 min:
    // 5 - 5/3 (1/(1 + 3π/2) + 1 + 1/(1 + 7π/12)) = 2.45, regular; seen on the 5th and again on the
    // 9th, counted once); .Br (1 h: 5 - 5/3 (1/(1 + π/2) + 2) = 1.02, irregular, first seen on the
    // 2nd at noon: new); On (1 h 30 min: 1.17, irregular; seen by the session open since the
    // 10th, which counts for a later Monday's index only). Hop left at 03:00, Once played in October.
    const q = { network: "Weekly", from: "2026-11-02T06:00:00Z", to: "2026-11-10T12:00:00Z", tz: "UTC" };
    const r = await weeks.activity(principal, a.teamId, q);
    expect(await hours.activity(principal, a.teamId, q)).toEqual(r);
    expect(r).toMatchObject({ players: 4, new_players: 1, regular_players: 2, returning_players: 1 });
    expect(r.activity_groups.map((g) => [g.group, g.players])).toEqual([
      ["very_active", 1],
      ["active", 0],
      ["regular", 1],
      ["irregular", 2],
      ["inactive", 0],
    ]);
  });

  test("the week rows kept at ingest (late sessions included) equal a rebuild; forgetting a player keeps them equal", async () => {
    const kept = await keptEqualsRebuild(a.teamId, LATE);
    // Links were moved by the late sessions: a copy of an earlier week and a later next_at.
    expect(kept.weeks.some((r) => r.uuid === LATE && r.ms3 !== "0")).toBe(true);
    expect(kept.weeks.some((r) => r.uuid === REG && r.next_at !== null)).toBe(true);
    const q = { network: "Weekly", from: "2026-11-02T06:00:00Z", to: "2026-11-10T12:00:00Z", tz: "UTC" };
    expect(await weeks.activity(principal, a.teamId, q)).toEqual(await hours.activity(principal, a.teamId, q));
  });
});

describe("a window inside one week: players seen before and after it", () => {
  let a: ServerFixture;
  const [X, Y] = [P(91), P(92)];
  beforeAll(async () => {
    [a] = await networkOfTwo("Daily", "D1", "D2");
    await play(a, [
      // X plays on Monday, on Wednesday from 14:40 (the window's last hour, after its end) and on Thursday.
      [X, "X", "2026-11-02T10:00:00Z", "2026-11-02T10:30:00Z"],
      [X, "X", "2026-11-04T14:40:00Z", "2026-11-04T14:55:00Z"],
      [X, "X", "2026-11-05T10:00:00Z", "2026-11-05T10:30:00Z"],
      // Y on Monday, on Tuesday inside the window, and on Friday.
      [Y, "Y", "2026-11-02T09:00:00Z", "2026-11-02T09:30:00Z"],
      [Y, "Y", "2026-11-03T12:00:00Z", "2026-11-03T12:15:00Z"],
      [Y, "Y", "2026-11-06T09:00:00Z", "2026-11-06T09:30:00Z"],
    ]);
  });

  test("each is seen only by a quarter inside the window: Y counts, X does not", async () => {
    const { kept, hours, principal } = twoServices(Date.parse("2026-11-20T00:00:00Z"), a.teamId);
    const q = { network: "Daily", from: "2026-11-03T00:00:00Z", to: "2026-11-04T14:30:00Z", tz: "UTC" };
    const r = await kept.activity(principal, a.teamId, q);
    expect(r).toEqual(await hours.activity(principal, a.teamId, q));
    expect(r).toMatchObject({ players: 1, new_players: 0 });
    // A quarter later, X's Wednesday session is in the window too.
    const later = { ...q, to: "2026-11-04T14:45:00Z" };
    const r2 = await kept.activity(principal, a.teamId, later);
    expect(r2).toEqual(await hours.activity(principal, a.teamId, later));
    expect(r2.players).toBe(2);
  });
});

describe("a window holding the scope's whole history: every regular is new", () => {
  test("a regular player online now is counted once, as the hours count them (the join path's shortcut)", async () => {
    const [a] = await networkOfTwo("Young", "Y1", "Y2");
    const [R, Q] = [P(95), P(96)];
    const frozen = Date.parse("2026-10-01T12:00:00Z");
    await play(a, [
      // R: three hours in each of the index's three weeks (before Monday September 28), then online since 10:00.
      [R, "R", "2026-09-07T10:00:00Z", "2026-09-07T13:00:00Z"],
      [R, "R", "2026-09-14T10:00:00Z", "2026-09-14T13:00:00Z"],
      [R, "R", "2026-09-21T10:00:00Z", "2026-09-21T13:00:00Z"],
      [Q, "Q", "2026-09-22T10:00:00Z", "2026-09-22T11:00:00Z"],
      [R, "R", "2026-10-01T10:00:00Z", null],
    ]);
    const { kept, hours, joined, hashed, principal } = twoServices(frozen, a.teamId);
    const q = { network: "Young", from: "2026-09-01T00:00:00Z", to: "2026-10-01T12:00:00Z", tz: "UTC" };
    const h = await hours.activity(principal, a.teamId, q);
    expect(await joined.activity(principal, a.teamId, q)).toEqual(h);
    expect(await hashed.activity(principal, a.teamId, q)).toEqual(h);
    expect(await kept.activity(principal, a.teamId, q)).toEqual(h);
    // Both new; R regular or more (a new player is counted new, not regular), Q irregular.
    expect(h).toMatchObject({ players: 2, new_players: 2, regular_players: 0, returning_players: 0 });
    expect(h.activity_groups.find((g) => g.group === "very_active")!.players).toBe(1);
  });
});

/**
 * A network of two servers (`first`, `second`), closed sessions from the rows `sessions` selects
 * (given the two server ids: a server id, a player, a join and a length each), their players,
 * and the aggregates rebuilt from them; the services over the kept
 * aggregates, over the hours alone and over the kept ones in parts of two candidates, at a clock
 * of 2026-12-01; and a viewer key of the team.
 */
async function generatedNetwork(
  network: string,
  [first, second]: [string, string],
  sessions: (firstId: string, secondId: string) => ReturnType<typeof sql>,
) {
  const [w1, w2] = await networkOfTwo(network, first, second);
  await db().execute(sql`
    insert into player_sessions (server_id, uuid, joined_at, left_at, seen_at, source, end_reason)
    select r.server_id, r.uuid, r.joined_at, r.joined_at + r.length, r.joined_at + r.length, 'agent', 'leave'
      from (${sessions(w1.serverId, w2.serverId)}) r(server_id, uuid, joined_at, length)`);
  await db().execute(sql`
    insert into players (server_id, uuid, name, online, first_seen, last_seen, play_seconds)
    select server_id, uuid, 'g' || substr(uuid::text, 30), false, min(joined_at), max(left_at), 0
      from player_sessions where server_id in (${w1.serverId}::uuid, ${w2.serverId}::uuid) group by 1, 2`);
  await db().transaction((tx) => rebuildAggregates(tx, w1.teamId));
  const clock = new Clock();
  clock.advance(Date.parse("2026-12-01T00:00:00Z") - Date.now());
  const principal: Principal = {
    kind: "api_key",
    keyId: network,
    teamId: w1.teamId,
    role: "viewer",
    scopes: null,
    serverIds: null,
    exp: null,
  };
  return {
    w1,
    w2,
    months: new AnalyticsService(db(), clock),
    hours: new AnalyticsService(db(), clock, { hoursOnly: true }),
    joined: new AnalyticsService(db(), clock, { newListed: 0, summedPart: 2 }),
    principal,
  };
}

/**
 * Over each window, the network and its second server, and limits 1, 5 and 25: the leaderboard
 * from the month rows equals summing every player's hours, and the same in parts of two.
 */
async function sameTops(f: Awaited<ReturnType<typeof generatedNetwork>>, network: string, windows: string[][]) {
  for (const [from, to] of windows)
    for (const scope of [{ network }, { server_id: f.w2.serverId }])
      for (const limit of [1, 5, 25]) {
        const q = { ...scope, from: from!, to: to!, tz: "UTC", limit };
        const m = await f.months.leaderboard(f.principal, f.w1.teamId, q);
        expect([JSON.stringify(q), m]).toEqual([
          JSON.stringify(q),
          await f.hours.leaderboard(f.principal, f.w1.teamId, q),
        ]);
        expect([JSON.stringify(q), await f.joined.leaderboard(f.principal, f.w1.teamId, q)]).toEqual([
          JSON.stringify(q),
          m,
        ]);
        expect(m.players).toHaveLength(limit);
      }
}

describe("the leaderboard past its first candidates: 400 players over four months", () => {
  let w1: ServerFixture;
  let w2: ServerFixture;
  let months: AnalyticsService;
  let hours: AnalyticsService;
  let joined: AnalyticsService;
  let principal: Principal;
  let fixture: Awaited<ReturnType<typeof generatedNetwork>>;

  beforeAll(async () => {
    // 6,000 sessions of 400 players from August to November: player p plays more the lower p is
    // (so a month's top players are mostly a window's, as on a real server), lengths up to 4 hours.
    fixture = await generatedNetwork(
      "Wide",
      ["W1", "W2"],
      (a, b) => sql`
      select case when g % 2 = 0 then ${a}::uuid else ${b}::uuid end,
             ('0f0f0f0f-0000-4000-8000-' || lpad(to_hex(1000 + x.p), 12, '0'))::uuid, x.j, x.l
        from generate_series(1, 6000) g
        cross join lateral (select
          ((hashint4(g) & 2147483647) % 400) * ((hashint4(g * 3) & 2147483647) % 400) / 400 as p,
          timestamptz '2026-08-01T00:00:00Z' + (g::float8 / 6000) * interval '122 days' as j,
          ((hashint4(g * 13) & 2147483647) % 14400) * interval '1 second' as l) x`,
    );
    ({ w1, w2, months, hours, joined, principal } = fixture);
  });

  const windows = [
    ["2026-09-15T18:30:00Z", "2026-10-15T18:30:00Z"],
    ["2026-08-20T00:00:00Z", "2026-10-10T00:00:00Z"],
    ["2026-08-31T12:00:00Z", "2026-11-02T00:00:00Z"],
    ["2026-08-05T00:00:00Z", "2026-11-25T00:00:00Z"],
    ["2026-10-03T00:00:00Z", "2026-10-10T00:00:00Z"],
    ["2026-09-01T00:00:00Z", "2026-11-01T00:00:00Z"],
  ];

  const compare = () => sameTops(fixture, "Wide", windows);

  test("each window and limit: the same top as summing every player's hours", async () => {
    await compare();
  });

  test("retention over each window, in zones with DST, half and quarter hours: the same cohorts as from the hours", async () => {
    let returned = 0;
    // A month across a month's end and almost four months (both ends cut), a week, and the whole
    // history; UTC and Asia/Kolkata are compared over more windows above.
    const some = [windows[0]!, windows[3]!, windows[4]!, ["2026-08-01T00:00:00Z", "2026-12-01T00:00:00Z"]];
    for (const [from, to] of some)
      for (const scope of [{ network: "Wide" }, { server_id: w2.serverId }])
        for (const tz of ["America/New_York", "Pacific/Chatham", "Australia/Lord_Howe"]) {
          const q = { ...scope, from: from!, to: to!, tz };
          const m = await months.retention(principal, w1.teamId, q);
          expect([JSON.stringify(q), m]).toEqual([JSON.stringify(q), await hours.retention(principal, w1.teamId, q)]);
          // The same through the join of the scope's week rows (the path of many new players).
          expect([JSON.stringify(q), await joined.retention(principal, w1.teamId, q)]).toEqual([JSON.stringify(q), m]);
          returned += m.cohorts.reduce((a, c) => a + c.retained.reduce((b, r) => b + r.players, 0), 0);
        }
    // Cohorts with players seen again were compared, not only empty ones.
    expect(returned).toBeGreaterThan(1000);
  }, 180_000);

  test("retention kept in the team's zone (set through PATCH /teams): the same cohorts as from the hours, windows cut anywhere in a day", async () => {
    let returned = 0;
    // Ends early and late in a local day (each side of the last day's cut is read), starts inside a
    // day (the first day's players before the start are taken out), a week, and the whole history.
    const cut = [
      windows[0]!,
      windows[3]!,
      windows[4]!,
      ["2026-08-01T00:00:00Z", "2026-12-01T00:00:00Z"],
      ["2026-08-03T11:15:00Z", "2026-10-14T21:45:00Z"],
      ["2026-09-09T03:00:00Z", "2026-11-10T06:15:00Z"],
      ["2026-10-12T16:45:00Z", "2026-10-19T02:30:00Z"],
    ];
    for (const zone of ["Europe/Berlin", "Pacific/Chatham", "Asia/Kolkata"]) {
      // The counts are made again after the answer: `setZone` waits for them.
      await setZone(w1, zone);
      // What the zone change made equals a rebuild in that zone.
      const kept = await dump(w1.teamId);
      expect(kept.cohorts.length).toBeGreaterThan(10);
      await db().transaction((tx) => rebuildAggregates(tx, w1.teamId));
      expect(await dump(w1.teamId)).toEqual(kept);
      for (const [from, to] of cut)
        for (const scope of [{ network: "Wide" }, { server_id: w2.serverId }]) {
          const q = { ...scope, from: from!, to: to! };
          // `joined` reads the kept counts whenever the window has a new player; `months` the week
          // rows up to 2,000 of them (all here).
          const m = await joined.retention(principal, w1.teamId, q);
          expect([zone, JSON.stringify(q), await months.retention(principal, w1.teamId, q)]).toEqual([
            zone,
            JSON.stringify(q),
            m,
          ]);
          expect([zone, JSON.stringify(q), m]).toEqual([
            zone,
            JSON.stringify(q),
            await hours.retention(principal, w1.teamId, { ...q, tz: zone }),
          ]);
          expect(m.time_zone).toBe(zone);
          returned += m.cohorts.reduce((a, c) => a + c.retained.reduce((b, r) => b + r.players, 0), 0);
        }
    }
    expect(returned).toBeGreaterThan(1000);
    await setZone(w1, "UTC");
  }, 300_000);

  test("retention in a zone whose clock agrees with the team's over the window reads the kept counts", async () => {
    await setZone(w1, "Europe/Berlin");
    const q = { network: "Wide", from: "2026-08-03T11:15:00Z", to: "2026-11-10T06:15:00Z" };
    // Paris and Amsterdam keep Berlin's clock: their answers are Berlin's, as from the hours.
    for (const tz of ["Europe/Paris", "Europe/Amsterdam"]) {
      const m = await joined.retention(principal, w1.teamId, { ...q, tz });
      expect([tz, m]).toEqual([tz, await hours.retention(principal, w1.teamId, { ...q, tz })]);
      expect(m.cohorts.length).toBeGreaterThan(10);
    }
    // Read from the kept counts: a count changed there shows in Paris, not in London (another clock).
    const paris = await joined.retention(principal, w1.teamId, { ...q, tz: "Europe/Paris" });
    const london = await joined.retention(principal, w1.teamId, { ...q, tz: "Europe/London" });
    await db().execute(sql`update analytics_cohort_weeks set c00 = c00 + 1000, c11 = c11 + 1000, c22 = c22 + 1000
      where scope = ${`n:${w1.teamId}:Wide`}`);
    try {
      expect(await joined.retention(principal, w1.teamId, { ...q, tz: "Europe/Paris" })).not.toEqual(paris);
      expect(await joined.retention(principal, w1.teamId, { ...q, tz: "Europe/London" })).toEqual(london);
    } finally {
      await db().transaction((tx) => rebuildAggregates(tx, w1.teamId));
    }
    expect(await joined.retention(principal, w1.teamId, { ...q, tz: "Europe/Paris" })).toEqual(paris);
    await setZone(w1, "UTC");
  }, 120_000);

  test("until a zone change's counts are made again, the ingest adds to them in the old zone and reads in the new one answer without them", async () => {
    const zones = async () =>
      rowsOf<{ time_zone: string; cohort_zone: string }>(
        await db().execute(sql`select time_zone, cohort_zone from teams where id = ${w1.teamId}`),
      );
    expect(await zones()).toEqual([{ time_zone: "UTC", cohort_zone: "UTC" }]);
    // The state between a change's answer and the counts made in the new zone, held: every
    // instance's minute sweep would make them (it did, mid-test, in a slow CI run).
    const release = await holdTasks("cohort-zones");
    onTestFinished(release);
    await db().execute(sql`update teams set time_zone = 'Asia/Kolkata' where id = ${w1.teamId}`);
    const q = { network: "Wide", from: windows[3]![0]!, to: windows[3]![1]! };
    const inKolkata = () => hours.retention(principal, w1.teamId, { ...q, tz: "Asia/Kolkata" });
    // `joined` reads the kept counts whenever they are in the window's zone.
    const meanwhile = await joined.retention(principal, w1.teamId, q);
    expect(meanwhile.time_zone).toBe("Asia/Kolkata");
    expect(meanwhile).toEqual(await inKolkata());
    // A session closed meanwhile (across midnight in UTC and in Kolkata) is counted in the old zone.
    await play(w1, [[P(1398), "Between", "2026-11-20T17:00:00Z", "2026-11-21T01:00:00Z"]]);
    const before = await dump(w1.teamId);
    await db().transaction((tx) => rebuildAggregates(tx, w1.teamId));
    expect(await dump(w1.teamId)).toEqual(before);
    // Made again in the new zone: as a rebuild there makes them, and read again.
    release();
    await server.services.cohortZones.catchUp();
    expect(await zones()).toEqual([{ time_zone: "Asia/Kolkata", cohort_zone: "Asia/Kolkata" }]);
    const made = await dump(w1.teamId);
    expect(made.cohorts).not.toEqual(before.cohorts);
    await db().transaction((tx) => rebuildAggregates(tx, w1.teamId));
    expect(await dump(w1.teamId)).toEqual(made);
    expect(await joined.retention(principal, w1.teamId, q)).toEqual(await inKolkata());
    await setZone(w1, "UTC");
    expect(await zones()).toEqual([{ time_zone: "UTC", cohort_zone: "UTC" }]);
  }, 120_000);

  test("the heatmap in zones with DST, half and quarter hours: the same cells as converting every quarter in SQL", async () => {
    // The reference: every quarter of the window placed by PostgreSQL's own zone data.
    const reference = async (scope: string, from: string, to: string, zone: string) => {
      const rows = rowsOf<{ dow: number; hour: number; ms: number; quarters: number }>(
        await db().execute(sql`
          select extract(isodow from g at time zone ${zone})::int as dow, extract(hour from g at time zone ${zone})::int as hour,
                 coalesce(sum(a.online_ms), 0)::float8 as ms, count(*)::int as quarters
            from generate_series(${from}::timestamptz, ${to}::timestamptz - interval '15 minutes', interval '15 minutes') g
            left join analytics_slots a on a.scope = ${scope} and a.slot = g
           group by 1, 2`),
      );
      const days = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"];
      return days.map((weekday, d) => ({
        weekday,
        hours: Array.from({ length: 24 }, (_, hour) => {
          const c = rows.find((r) => r.dow === d + 1 && r.hour === hour);
          const avg = c ? Number(c.ms) / (c.quarters * 900_000) : null;
          return { hour, average_online: avg === null ? null : Math.round(avg * 1000) / 1000 };
        }),
      }));
    };
    let cells = 0;
    for (const zone of [
      "Europe/Berlin",
      "America/New_York",
      "Australia/Lord_Howe",
      "Asia/Kathmandu",
      "Pacific/Chatham",
    ])
      for (const [from, to] of windows)
        for (const [scope, key] of [
          [{ network: "Wide" }, `n:${w1.teamId}:Wide`],
          [{ server_id: w2.serverId }, w2.serverId],
        ] as const) {
          const heat = await months.heatmap(principal, w1.teamId, { ...scope, from: from!, to: to!, tz: zone });
          const want = await reference(key, from!, to!, zone);
          expect([zone, from, key, heat.days]).toEqual([zone, from, key, want]);
          cells += want.flatMap((d) => d.hours).filter((h) => (h.average_online ?? 0) > 0).length;
        }
    expect(cells).toBeGreaterThan(5 * 6 * 2 * 100);
  });

  test("sessions closed across a month's end through the agent move the later month's bound; still the same top", async () => {
    const top = await months.leaderboard(principal, w1.teamId, {
      network: "Wide",
      from: windows[0]![0]!,
      to: windows[0]![1]!,
      tz: "UTC",
      limit: 1,
    });
    // A new player plays long across the end of September, then a late session in September
    // arrives after October's rows exist: both raise October's pair_ms for them.
    const late = P(1399);
    await play(w1, [
      [late, "Late", "2026-09-30T14:00:00Z", "2026-10-01T06:00:00Z"],
      [late, "Late", "2026-10-02T00:00:00Z", "2026-10-02T23:00:00Z"],
    ]);
    await play(w2, [[late, "Late", "2026-09-18T00:00:00Z", "2026-09-20T20:00:00Z"]]);
    const [row] = rowsOf<{ prev_ms: string; pair_ms: string; ms: string }>(
      await db().execute(sql`select prev_ms::text, pair_ms::text, ms::text from analytics_player_months
        where scope = ${`n:${w1.teamId}:Wide`} and month = '2026-10-01T00:00:00Z' and uuid = ${late}::uuid`),
    );
    expect(Number(row!.prev_ms)).toBe((10 + 68) * 3_600_000);
    expect(Number(row!.pair_ms)).toBe(Number(row!.ms) + Number(row!.prev_ms));
    const after = await months.leaderboard(principal, w1.teamId, {
      network: "Wide",
      from: windows[0]![0]!,
      to: windows[0]![1]!,
      tz: "UTC",
      limit: 1,
    });
    expect(after.players[0]!.uuid).toBe(late);
    expect(after.players[0]!.uuid).not.toBe(top.players[0]!.uuid);
    await compare();
    const kept = await dump(w1.teamId);
    await db().transaction((tx) => rebuildAggregates(tx, w1.teamId));
    expect(await dump(w1.teamId)).toEqual(kept);
  });
});

describe("the leaderboard over five months and more: 300 players over fourteen months", () => {
  let w1: ServerFixture;
  let w2: ServerFixture;
  let fixture: Awaited<ReturnType<typeof generatedNetwork>>;

  beforeAll(async () => {
    // 9,000 sessions of 300 players from October 2025 to November 2026: player p plays more the
    // lower p is, and each player's play drifts over the months (p's share peaks in a month of its
    // own), so a window's top differs from each month's; lengths up to 5 hours.
    fixture = await generatedNetwork(
      "Long",
      ["L1", "L2"],
      (a, b) => sql`
      select case when g % 3 = 0 then ${a}::uuid else ${b}::uuid end,
             ('0f0f0f0f-0000-4000-8000-' || lpad(to_hex(3000 + x.p), 12, '0'))::uuid, x.j, x.l
        from generate_series(1, 9000) g
        cross join lateral (select timestamptz '2025-10-01T00:00:00Z' + (g::float8 / 9000) * interval '426 days' as j) t
        cross join lateral (select
          (((hashint4(g) & 2147483647) % 300) * ((hashint4(g * 7) & 2147483647) % 300) / 300
            + extract(month from t.j)::int * 23) % 300 as p,
          t.j,
          ((hashint4(g * 11) & 2147483647) % 18000) * interval '1 second' as l) x`,
    );
    ({ w1, w2 } = fixture);
  });

  // Five months cut at both ends (one list of `quint_ms`), six whole and cut (`sext_ms`), seven
  // (two groups), nine, twelve and fourteen months (two and three groups), none holding the
  // whole history.
  const windows = [
    ["2026-05-17T06:00:00Z", "2026-10-10T00:00:00Z"],
    ["2026-04-01T00:00:00Z", "2026-10-01T00:00:00Z"],
    ["2026-03-20T00:00:00Z", "2026-09-05T12:00:00Z"],
    ["2026-02-11T00:00:00Z", "2026-09-14T00:00:00Z"],
    ["2025-12-15T00:00:00Z", "2026-09-20T00:00:00Z"],
    ["2025-11-01T00:00:00Z", "2026-11-01T00:00:00Z"],
    ["2025-10-28T00:00:00Z", "2026-11-25T00:00:00Z"],
  ];

  const compare = () => sameTops(fixture, "Long", windows);

  test("each window and limit: the same top as summing every player's hours", async () => {
    // The month rows hold the four and five months before each (what the five- and six-month keys add).
    const [held] = rowsOf<{ n: number }>(
      await db().execute(sql`select count(*)::int as n from analytics_player_months
        where team_id = ${w1.teamId} and prev5_ms > prev4_ms and prev4_ms > prev3_ms`),
    );
    expect(held!.n).toBeGreaterThan(500);
    await compare();
  });

  test("migration 0046's backfill makes the months before as the ingest and a rebuild do", async () => {
    const kept = await dump(w1.teamId);
    await db().execute(sql`update analytics_player_months set prev4_ms = 0, prev5_ms = 0 where team_id = ${w1.teamId}`);
    expect(await dump(w1.teamId)).not.toEqual(kept);
    const [, backfill] = readFileSync(join(import.meta.dir, "../drizzle/0046_months_quint_sext.sql"), "utf8").split(
      "--> statement-breakpoint",
    );
    expect(backfill).toContain("UPDATE");
    await db().execute(sql.raw(backfill!));
    expect(await dump(w1.teamId)).toEqual(kept);
  });

  test("a late session through the agent moves the rows four and five months later; still the same top", async () => {
    // A new player plays in July and August, then a session in March arrives: July's row holds it
    // four months before (prev4_ms and prev5_ms), August's five (prev5_ms only).
    const late = P(3999);
    const rows = async () =>
      rowsOf<{ prev3_ms: string; prev4_ms: string; prev5_ms: string }>(
        await db().execute(sql`select prev3_ms::text, prev4_ms::text, prev5_ms::text from analytics_player_months
          where scope = ${`n:${w1.teamId}:Long`} and uuid = ${late}::uuid order by month`),
      ).map((r) => [Number(r.prev3_ms), Number(r.prev4_ms), Number(r.prev5_ms)]);
    await play(w1, [
      [late, "Late", "2026-07-05T00:00:00Z", "2026-07-05T10:00:00Z"],
      [late, "Late", "2026-08-05T00:00:00Z", "2026-08-05T10:00:00Z"],
    ]);
    // [prev3_ms, prev4_ms, prev5_ms] of July's row, then August's (July's 10 hours are three months back and more).
    const h10 = 10 * 3_600_000;
    expect(await rows()).toEqual([
      [0, 0, 0],
      [h10, h10, h10],
    ]);
    await play(w2, [[late, "Late", "2026-03-10T00:00:00Z", "2026-03-12T00:00:00Z"]]);
    const h48 = 48 * 3_600_000;
    expect(await rows()).toEqual([
      [0, 0, 0],
      [0, h48, h48],
      [h10, h10, h10 + h48],
    ]);
    await compare();
    const kept = await dump(w1.teamId);
    await db().transaction((tx) => rebuildAggregates(tx, w1.teamId));
    expect(await dump(w1.teamId)).toEqual(kept);
  });

  test("a window over seven months and more with its top player online: their open time counts", async () => {
    // The player with the most playtime of all is among the first floor's players (the seeds),
    // summed over closed sessions; online, they are summed again with their open time. The session
    // is opened days before the wall clock (test servers run no session sweep: testEnv).
    const [best] = rowsOf<{ uuid: string }>(
      await db().execute(sql`select uuid::text as uuid from analytics_player_totals
        where scope = ${`n:${w1.teamId}:Long`} order by ms desc, uuid limit 1`),
    );
    await play(w1, [[best!.uuid, "Best", "2026-11-20T00:00:00Z", null]]);
    const at = Date.parse("2026-11-24T00:00:00Z");
    const { kept, hours, joined, principal } = twoServices(at, w1.teamId);
    try {
      for (const from of ["2026-04-20T00:00:00Z", "2025-12-01T00:00:00Z"])
        for (const scope of [{ network: "Long" }, { server_id: w1.serverId }])
          for (const limit of [1, 5]) {
            const q = { ...scope, from, to: new Date(at).toISOString(), tz: "UTC", limit };
            const top = await kept.leaderboard(principal, w1.teamId, q);
            expect([JSON.stringify(q), top]).toEqual([
              JSON.stringify(q),
              await hours.leaderboard(principal, w1.teamId, q),
            ]);
            expect([JSON.stringify(q), await joined.leaderboard(principal, w1.teamId, q)]).toEqual([
              JSON.stringify(q),
              top,
            ]);
            // Four days online (96 hours) put them first.
            expect(top.players[0]!.uuid).toBe(best!.uuid);
          }
    } finally {
      await play(w1, [[best!.uuid, "Best", "2026-11-20T00:00:00Z", "2026-11-20T00:00:01Z"]]);
    }
  });
});

describe.skipIf(!usingPostgres())("the service's PostgreSQL connections", () => {
  test("plan without parallel workers: the reads are index ranges, which a Gather only slows", async () => {
    const [row] = rowsOf<{ max_parallel_workers_per_gather: string }>(
      await db().execute(sql`show max_parallel_workers_per_gather`),
    );
    expect(row!.max_parallel_workers_per_gather).toBe("0");
  });

  test("nor JIT compilation: compiling cost a year's editions read more than the read itself", async () => {
    const [row] = rowsOf<{ jit: string }>(await db().execute(sql`show jit`));
    expect(row!.jit).toBe("off");
  });

  test("in UTC whatever the server's default zone: the month before March is February", async () => {
    // The aggregates add months and days to instants, which PostgreSQL does in the session's
    // zone: with the server's default at America/New_York these tests failed before the service
    // set its own.
    const [row] = rowsOf<{ zone: string; before: string }>(
      await db().execute(
        sql`select current_setting('TimeZone') as zone, (timestamptz '2026-03-01 00:00:00+00' - interval '1 month')::text as before`,
      ),
    );
    expect(row).toEqual({ zone: "UTC", before: "2026-02-01 00:00:00+00" });
  });
});
