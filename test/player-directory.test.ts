import { beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import type { RunningServer } from "../src/app";
import { rowsOf } from "../src/db/rows";
import { sharedServer } from "./harness";
import { api, expectError } from "./helpers";
import { agentApi, eventId, newServer, type ServerFixture } from "./servers-fixture";

let server: RunningServer;
beforeAll(async () => {
  server = await sharedServer();
});

// Fixed UUIDs, so ties broken by UUID have an answer to write down. The directory is per team.
const U1 = "11111111-1111-4111-8111-111111111111";
const U2 = "22222222-2222-4222-8222-222222222222";
const U3 = "00000000-0000-0000-0009-01f2a3b4c5d6"; // a Floodgate (Bedrock) player
const U4 = "44444444-4444-4444-8444-444444444444";
const U5 = "55555555-5555-4555-8555-555555555555";

type Ev = { type: "join" | "leave"; uuid: string; name?: string; at: number };
async function send(token: string, events: Ev[]) {
  const res = await agentApi(server, token, "POST", "/agent/events", {
    events: events.map((e) => ({ event_id: eventId(), ...e, at: new Date(e.at).toISOString() })),
  });
  expect(`${res.status} ${res.text}`).toStartWith("200");
}

interface Network {
  a: ServerFixture;
  b: { serverId: string; agentToken: string };
  t0: number;
  team: (path: string) => Promise<any>;
}

/**
 * Two servers of one team and five players:
 *   U1 alpha_1  A 0..100 s, B 200..500 s            playtime 400, 2 sessions, last seen t0+500
 *   U2 alpha2   A 10..70 s, then as Bravo 1000..1100 playtime 160, 2 sessions, last seen t0+1100
 *   U3 Charlie  B 50 s.. (still online; Bedrock)     playtime 0 closed, 1 session, last seen t0+50
 *   U4 Delta    A 20..420 s                          playtime 400, 1 session, last seen t0+420
 *   U5 alpha_3  B 30..40 s                           playtime 10, 1 session, last seen t0+40
 */
async function network(): Promise<Network> {
  const a = await newServer(server);
  const created = await api(server, "POST", "/server/servers", {
    token: a.owner.token,
    body: { team_id: a.teamId, name: "Lobby", host: "127.0.0.1", port: 9, kind: "single" },
  });
  expect(created.status).toBe(201);
  const b = { serverId: created.body.server_id as string, agentToken: created.body.agent_token as string };
  const t0 = Date.now() - 3 * 3600_000;
  const s = (n: number) => t0 + n * 1000;
  await send(a.agentToken, [
    { type: "join", uuid: U1, name: "alpha_1", at: s(0) },
    { type: "join", uuid: U2, name: "alpha2", at: s(10) },
    { type: "join", uuid: U4, name: "Delta", at: s(20) },
    { type: "leave", uuid: U2, at: s(70) },
    { type: "leave", uuid: U1, at: s(100) },
    { type: "leave", uuid: U4, at: s(420) },
    { type: "join", uuid: U2, name: "Bravo", at: s(1000) },
    { type: "leave", uuid: U2, at: s(1100) },
  ]);
  await send(b.agentToken, [
    { type: "join", uuid: U5, name: "alpha_3", at: s(30) },
    { type: "leave", uuid: U5, at: s(40) },
    { type: "join", uuid: U3, name: "Charlie", at: s(50) },
    { type: "join", uuid: U1, name: "alpha_1", at: s(200) },
    { type: "leave", uuid: U1, at: s(500) },
  ]);
  const team = async (path: string) => {
    const res = await api(server, "GET", path, { token: a.owner.token, headers: { "x-team-id": a.teamId } });
    expect(`${res.status} ${res.text}`).toStartWith("200");
    return res.body;
  };
  return { a, b, t0, team };
}

/** Every page of a listing, `limit` at a time, following next_cursor to the end. */
async function allPages(n: Network, query: string, limit = 2) {
  const uuids: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const body = await n.team(`/players?${query}&limit=${limit}${cursor ? `&cursor=${cursor}` : ""}`);
    expect(body.players.length).toBeLessThanOrEqual(limit);
    uuids.push(...body.players.map((p: any) => p.uuid));
    cursor = body.next_cursor;
    pages++;
  } while (cursor && pages < 10);
  return { uuids, pages };
}

describe("the team's player directory", () => {
  let n: Network;
  beforeAll(async () => {
    n = await network();
  });

  test("a row per player across the team's servers: playtime, sessions, first and last seen, edition, online", async () => {
    const body = await n.team("/players?sort=name");
    const at = (sec: number) => new Date(n.t0 + sec * 1000).toISOString();
    expect(body.next_cursor).toBeNull();
    const rows = body.players.map((p: any) => (p.uuid === U3 ? { ...p, playtime_seconds: "running" } : p));
    expect(rows).toEqual([
      {
        uuid: U1,
        name: "alpha_1",
        edition: "java",
        first_seen: at(0),
        last_seen: at(500),
        online: false,
        playtime_seconds: 400,
        sessions: 2,
        banned: false,
      },
      {
        uuid: U5,
        name: "alpha_3",
        edition: "java",
        first_seen: at(30),
        last_seen: at(40),
        online: false,
        playtime_seconds: 10,
        sessions: 1,
        banned: false,
      },
      {
        uuid: U2,
        name: "Bravo",
        edition: "java",
        first_seen: at(10),
        last_seen: at(1100),
        online: false,
        playtime_seconds: 160,
        sessions: 2,
        banned: false,
      },
      {
        uuid: U3,
        name: "Charlie",
        edition: "bedrock",
        first_seen: at(50),
        last_seen: at(50),
        online: true,
        playtime_seconds: "running",
        sessions: 1,
        banned: false,
      },
      {
        uuid: U4,
        name: "Delta",
        edition: "java",
        first_seen: at(20),
        last_seen: at(420),
        online: false,
        playtime_seconds: 400,
        sessions: 1,
        banned: false,
      },
    ]);
    // Charlie's open session counts from his join to now (about three hours).
    const charlie = body.players.find((p: any) => p.uuid === U3);
    expect(charlie.playtime_seconds).toBeGreaterThanOrEqual(3 * 3600 - 50 - 5);
  });

  test("search: a name prefix in any letter case (an underscore is a letter, not a wildcard), or a whole UUID", async () => {
    const names = async (q: string) =>
      (await n.team(`/players?sort=name&q=${encodeURIComponent(q)}`)).players.map((p: any) => p.name);
    expect(await names("ALPHA")).toEqual(["alpha_1", "alpha_3"]);
    expect(await names("alpha_")).toEqual(["alpha_1", "alpha_3"]);
    expect(await names("alpha2")).toEqual([]); // a past name: the directory searches current names
    expect(await names("b")).toEqual(["Bravo"]);
    expect(await names("zz")).toEqual([]);
    expect(await names("%")).toEqual([]);
    expect(await names(U4.toUpperCase())).toEqual(["Delta"]);
  });

  test("each sort, both orders, pages of two by cursor: every player once, ties broken by UUID", async () => {
    const expected: Record<string, string[]> = {
      "sort=last_seen": [U2, U1, U4, U3, U5],
      "sort=last_seen&order=asc": [U5, U3, U4, U1, U2],
      "sort=playtime": [U4, U1, U2, U5, U3],
      "sort=playtime&order=asc": [U3, U5, U2, U1, U4],
      "sort=sessions": [U2, U1, U5, U4, U3],
      "sort=sessions&order=asc": [U3, U4, U5, U1, U2],
      "sort=name": [U1, U5, U2, U3, U4],
      "sort=name&order=desc": [U4, U3, U2, U5, U1],
    };
    for (const [query, want] of Object.entries(expected)) {
      const { uuids, pages } = await allPages(n, query);
      expect({ query, uuids }).toEqual({ query, uuids: want });
      expect(pages).toBe(3);
    }
    // A page size that divides the total: the last full page still says there is nothing more.
    const five = await n.team("/players?sort=playtime&limit=5");
    expect(five.players).toHaveLength(5);
    expect(five.next_cursor).toBeNull();
  });

  test("server_id keeps the players seen on that server; combined with search and cursor", async () => {
    expect((await allPages(n, `sort=name&server_id=${n.b.serverId}`)).uuids).toEqual([U1, U5, U3]);
    expect((await allPages(n, `sort=name&server_id=${n.b.serverId}&q=alpha`, 1)).uuids).toEqual([U1, U5]);
    const other = await newServer(server);
    const res = await api(server, "GET", `/players?server_id=${other.serverId}`, {
      token: n.a.owner.token,
      headers: { "x-team-id": n.a.teamId },
    });
    expectError(res, 404, "not_found");
  });

  test("a cursor from another sort, or not one we issued, is a 400", async () => {
    const first = await n.team("/players?sort=playtime&limit=2");
    const ask = (q: string) =>
      api(server, "GET", `/players?${q}`, { token: n.a.owner.token, headers: { "x-team-id": n.a.teamId } });
    expectError(await ask(`sort=name&limit=2&cursor=${first.next_cursor}`), 400, "bad_request");
    expectError(await ask(`sort=playtime&order=asc&limit=2&cursor=${first.next_cursor}`), 400, "bad_request");
    for (const bad of ["nope", Buffer.from('["d1","playtime","desc","1e9","x"]').toString("base64url"), "%00"])
      expectError(await ask(`sort=playtime&cursor=${encodeURIComponent(bad)}`), 400);
    const forged = Buffer.from(JSON.stringify(["d1", "last_seen", "desc", "2026-13-45T99:99:99.000000Z", U1])).toString(
      "base64url",
    );
    expect((await ask(`cursor=${forged}`)).status).toBe(400);
  });

  test("the team header is required, and another team's directory is refused", async () => {
    const noHeader = await api(server, "GET", "/players", { token: n.a.owner.token });
    expectError(noHeader, 400, "bad_request");
    const stranger = await newServer(server);
    const res = await api(server, "GET", "/players", {
      token: stranger.owner.token,
      headers: { "x-team-id": n.a.teamId },
    });
    expectError(res, 403, "forbidden");
  });

  test("the server's players table: search, sort and order, with limit and offset as before", async () => {
    const get = async (q: string) => {
      const res = await api(server, "GET", `/server/players?${q}`, n.a.as());
      expect(res.status).toBe(200);
      return res.body;
    };
    const byName = await get("sort=name");
    expect(byName.players.map((p: any) => p.name)).toEqual(["alpha_1", "Bravo", "Delta"]);
    // On this server: Delta 400 s, Bravo 160 s, alpha_1 100 s (its other 300 s were on the Lobby).
    expect((await get("sort=playtime&limit=1&offset=1")).players.map((p: any) => p.name)).toEqual(["Bravo"]);
    expect((await get("sort=playtime&order=asc")).players.map((p: any) => p.time_played_seconds)).toEqual([
      100, 160, 400,
    ]);
    const found = await get("q=ALPHA");
    expect(found.players.map((p: any) => p.uuid)).toEqual([U1]);
    expect(found.players_total).toBe(1);
    expect((await get(`q=${U4}`)).players.map((p: any) => p.name)).toEqual(["Delta"]);
    // No sort: online first, then last seen, as before.
    expect((await get("")).players.map((p: any) => p.name)).toEqual(["Bravo", "Delta", "alpha_1"]);
  });
});

describe("the migration's backfill", () => {
  test("rebuilds from players, sessions, bans and kicks what the ingest kept", async () => {
    const n = await network();
    // A ban made in game on A, one from the dashboard on B, and a kick.
    const game = await agentApi(server, n.a.agentToken, "POST", "/agent/events", {
      events: [{ event_id: eventId(), type: "ban", uuid: U4, name: "Delta", reason: "X-ray", source: "Console" }],
    });
    expect(game.status).toBe(200);
    const headersB = { token: n.a.owner.token, headers: { "x-server-id": n.b.serverId } };
    expect(
      (await api(server, "POST", "/server/bans", { ...headersB, body: { uuid: U5, name: "alpha_3" } })).status,
    ).toBe(201);
    expect(
      (await api(server, "POST", "/server/kicks", { ...headersB, body: { uuid: U1, name: "alpha_1" } })).status,
    ).toBe(201);
    const db = server.services.database.db;
    const team = n.a.teamId;
    const snapshot = async (tx: { execute: typeof db.execute }) => ({
      players: rowsOf(
        await tx.execute(
          sql`select uuid::text, name, first_seen, last_seen, play_seconds::text, sessions from team_players where team_id = ${team}::uuid order by uuid`,
        ),
      ),
      // Names the players hold now (the backfill cannot know a name no row keeps: U2's "alpha2").
      names: rowsOf(
        await tx.execute(
          sql`select uuid::text, name from player_names where team_id = ${team}::uuid and name <> 'alpha2' order by uuid, name`,
        ),
      ),
      moderation: rowsOf(
        await tx.execute(
          sql`select server_id::text, uuid::text, name, action, origin, actor_kind, actor_id::text, actor_name, reason, source, expires_at, at
                from moderation_events where team_id = ${team}::uuid order by at, uuid`,
        ),
      ),
    });
    const kept = await snapshot(db);
    expect(kept.players).toHaveLength(5);
    expect(kept.moderation).toHaveLength(3);
    const migration = readFileSync(join(import.meta.dir, "../drizzle/0021_player_directory.sql"), "utf8");
    const backfill = migration.slice(migration.indexOf("-- Backfill")).split("--> statement-breakpoint");
    expect(backfill).toHaveLength(5);
    let rebuilt: Awaited<ReturnType<typeof snapshot>> | undefined;
    const undo = new Error("rolled back on purpose");
    await db
      .transaction(async (tx) => {
        await tx.execute(sql`delete from team_players where team_id = ${team}::uuid`);
        await tx.execute(sql`delete from player_names where team_id = ${team}::uuid`);
        await tx.execute(sql`delete from moderation_events where team_id = ${team}::uuid`);
        // The backfill runs over every team: the others' rows go too, for the length of this transaction.
        await tx.execute(sql`delete from team_players`);
        await tx.execute(sql`delete from player_names`);
        await tx.execute(sql`delete from moderation_events`);
        for (const statement of backfill) await tx.execute(sql.raw(statement));
        rebuilt = await snapshot(tx);
        throw undo;
      })
      .catch((e) => {
        if (e !== undo) throw e;
      });
    expect(rebuilt).toEqual(kept);
  });
});
