import { beforeAll, describe, expect, test } from "bun:test";
import { and, eq } from "drizzle-orm";
import type { RunningServer } from "../src/app";
import { auditLog } from "../src/db/schema";
import { sharedServer } from "./harness";
import { addMember, api, expectError, newApiKey, newUser, type TestUser } from "./helpers";
import { agentApi, eventId, newServer, type ServerFixture } from "./servers-fixture";

let server: RunningServer;
beforeAll(async () => {
  server = await sharedServer();
});

const STEVE = "11111111-1111-4111-8111-111111111111";
const ALEX = "22222222-2222-4222-8222-222222222222";
const HEROBRINE = "33333333-3333-4333-8333-333333333333";

async function send(token: string, events: Record<string, unknown>[]) {
  const res = await agentApi(server, token, "POST", "/agent/events", {
    events: events.map((e) => ({ event_id: eventId(), ...e })),
  });
  expect(`${res.status} ${res.text}`).toStartWith("200");
}
const iso = (ms: number) => new Date(ms).toISOString();

describe("a player page", () => {
  let s: ServerFixture;
  let lobby: { serverId: string; agentToken: string };
  let t0: number;
  const team = (path: string, init: { token?: string; method?: string; body?: unknown } = {}) =>
    api(server, init.method ?? "GET", path, {
      token: init.token ?? s.owner.token,
      headers: { "x-team-id": s.teamId },
      body: init.body,
    });

  beforeAll(async () => {
    s = await newServer(server);
    const created = await api(server, "POST", "/server/servers", {
      token: s.owner.token,
      body: { team_id: s.teamId, name: "Lobby", host: "127.0.0.1", port: 9, kind: "single" },
    });
    lobby = { serverId: created.body.server_id, agentToken: created.body.agent_token };
    t0 = Date.now() - 86_400_000;
    // Steve plays on Survival as Steve, renames to Steve_MC, plays the Lobby, then Survival again.
    await send(s.agentToken, [
      { type: "join", uuid: STEVE, name: "Steve", at: iso(t0) },
      { type: "leave", uuid: STEVE, at: iso(t0 + 600_000) },
    ]);
    await send(lobby.agentToken, [
      { type: "join", uuid: STEVE, name: "Steve_MC", at: iso(t0 + 3_600_000) },
      { type: "leave", uuid: STEVE, at: iso(t0 + 3_660_000) },
    ]);
    await send(s.agentToken, [
      { type: "join", uuid: STEVE, name: "Steve_MC", at: iso(t0 + 7_200_000) },
      { type: "leave", uuid: STEVE, at: iso(t0 + 7_500_000) },
      // An operator bans him in game.
      { type: "ban", uuid: STEVE, name: "Steve_MC", reason: "X-ray", source: "Console", at: iso(t0 + 7_600_000) },
    ]);
  });

  test("names used, playtime per server, sessions across servers, and the game's ban in the history", async () => {
    const res = await team(`/players/${STEVE}`);
    expect(res.status).toBe(200);
    const p = res.body;
    expect(p).toMatchObject({
      uuid: STEVE,
      name: "Steve_MC",
      edition: "java",
      first_seen: iso(t0),
      last_seen: iso(t0 + 7_500_000),
      online: false,
      playtime_seconds: 600 + 60 + 300,
      sessions: 3,
      banned: true,
    });
    expect(p.names).toEqual([
      { name: "Steve_MC", first_used: iso(t0 + 3_600_000), last_used: iso(t0 + 7_200_000), current: true },
      { name: "Steve", first_used: iso(t0), last_used: iso(t0), current: false },
    ]);
    expect(p.servers.map((x: any) => [x.server_name, x.playtime_seconds, x.sessions, x.online])).toEqual([
      ["Survival", 900, 2, false],
      ["Lobby", 60, 1, false],
    ]);
    expect(p.recent_sessions.map((x: any) => [x.server_name, x.duration_seconds, x.name])).toEqual([
      ["Survival", 300, "Steve_MC"],
      ["Lobby", 60, "Steve_MC"],
      ["Survival", 600, "Steve_MC"],
    ]);
    expect(p.bans_in_force).toEqual([
      expect.objectContaining({ server_id: s.serverId, server_name: "Survival", reason: "X-ray", origin: "game" }),
    ]);
    expect(p.moderation).toEqual([
      {
        event_id: expect.any(String),
        action: "ban",
        server_id: s.serverId,
        server_name: "Survival",
        name: "Steve_MC",
        origin: "game",
        actor: { kind: "agent", id: s.serverId, name: "game" },
        reason: "X-ray",
        source: "Console",
        expires: "forever",
        at: iso(t0 + 7_600_000),
      },
    ]);
    expect(p.notes).toEqual([]);
    // The directory row says the same.
    const dir = await team(`/players?q=${STEVE}`);
    expect(dir.body.players).toEqual([
      {
        uuid: STEVE,
        name: "Steve_MC",
        edition: "java",
        first_seen: iso(t0),
        last_seen: iso(t0 + 7_500_000),
        online: false,
        playtime_seconds: 960,
        sessions: 3,
        banned: true,
      },
    ]);
  });

  test("sessions across the team's servers, paged by cursor", async () => {
    const first = await team(`/players/${STEVE}/sessions?limit=2`);
    expect(first.status).toBe(200);
    expect(first.body.sessions.map((x: any) => x.server_name)).toEqual(["Survival", "Lobby"]);
    const second = await team(`/players/${STEVE}/sessions?limit=2&cursor=${first.body.next_cursor}`);
    expect(second.body.sessions.map((x: any) => [x.server_name, x.joined_at])).toEqual([["Survival", iso(t0)]]);
    expect(second.body.next_cursor).toBeNull();
    expectError(await team(`/players/${ALEX}/sessions?cursor=${first.body.next_cursor}`), 400, "bad_request");
    expectError(await team(`/players/${STEVE}/sessions?cursor=zzz`), 400, "bad_request");
  });

  test("lift, ban and kick by name from the dashboard join the history, with who and why", async () => {
    const lift = await api(server, "DELETE", `/server/bans/${STEVE}`, s.as());
    expect(lift.status).toBe(200);
    // By a past name: the only player who ever used it.
    const ban = await api(server, "POST", "/server/bans", { ...s.as(), body: { name: "steve", reason: "Again" } });
    expect(`${ban.status} ${ban.text}`).toStartWith("201");
    expect(ban.body).toMatchObject({ uuid: STEVE, name: "Steve_MC", reason: "Again", origin: "dashboard" });
    const kick = await api(server, "POST", "/server/kicks", {
      token: s.owner.token,
      headers: { "x-server-id": lobby.serverId },
      body: { name: "STEVE_MC", reason: "Out" },
    });
    expect(`${kick.status} ${kick.text}`).toStartWith("201");
    expect(kick.body).toMatchObject({ uuid: STEVE, name: "Steve_MC" });

    const p = (await team(`/players/${STEVE}`)).body;
    const owner = { kind: "user", id: s.owner.id, name: s.owner.email };
    expect(p.moderation.map((m: any) => [m.action, m.server_name, m.origin, m.actor, m.reason])).toEqual([
      ["kick", "Lobby", "dashboard", owner, "Out"],
      ["ban", "Survival", "dashboard", owner, "Again"],
      ["unban", "Survival", "dashboard", owner, null],
      ["ban", "Survival", "game", { kind: "agent", id: s.serverId, name: "game" }, "X-ray"],
    ]);
    // A pardon in game is history too.
    await send(s.agentToken, [{ type: "unban", uuid: STEVE }]);
    const after = (await team(`/players/${STEVE}`)).body;
    expect(after.banned).toBe(false);
    expect(after.moderation[0]).toMatchObject({ action: "unban", origin: "game", actor: { name: "game" } });
  });

  test("a player the team never saw is a 404", async () => {
    expectError(await team(`/players/${HEROBRINE}`), 404, "not_found");
  });
});

describe("resolving a name and acting by it", () => {
  test("current names win over past ones; several players answer 409 with the candidates; unknown is 404", async () => {
    const s = await newServer(server);
    const t0 = Date.now() - 3_600_000;
    // Alex used to be "Notch"; Herobrine is "Notch" now. Steve and Alex are both "Twin" (neither joined since).
    await send(s.agentToken, [
      { type: "join", uuid: ALEX, name: "Notch", at: iso(t0) },
      { type: "leave", uuid: ALEX, at: iso(t0 + 1000) },
      { type: "join", uuid: ALEX, name: "Twin", at: iso(t0 + 2000) },
      { type: "leave", uuid: ALEX, at: iso(t0 + 3000) },
      { type: "join", uuid: HEROBRINE, name: "Notch", at: iso(t0 + 4000) },
      { type: "leave", uuid: HEROBRINE, at: iso(t0 + 5000) },
      { type: "join", uuid: STEVE, name: "twin", at: iso(t0 + 6000) },
      { type: "leave", uuid: STEVE, at: iso(t0 + 7000) },
    ]);
    const resolve = (name: string) =>
      api(server, "GET", `/players/resolve?name=${encodeURIComponent(name)}`, {
        token: s.owner.token,
        headers: { "x-team-id": s.teamId },
      });
    const notch = await resolve("notch");
    expect(notch.status).toBe(200);
    expect(notch.body).toEqual({
      name: "notch",
      match: "current",
      players: [{ uuid: HEROBRINE, name: "Notch", edition: "java", last_seen: iso(t0 + 5000) }],
    });
    const twin = await resolve("TWIN");
    expect(twin.body.match).toBe("current");
    expect(twin.body.players.map((p: any) => p.uuid)).toEqual([STEVE, ALEX]);
    expectError(await resolve("Nobody"), 404, "not_found");

    const ambiguous = await api(server, "POST", "/server/bans", { ...s.as(), body: { name: "Twin" } });
    const error = expectError(ambiguous, 409, "conflict");
    expect(error.details.candidates.map((c: any) => c.uuid)).toEqual([STEVE, ALEX]);
    const unknown = await api(server, "POST", "/server/kicks", { ...s.as(), body: { name: "Nobody" } });
    expect(expectError(unknown, 404, "not_found").message).toContain("Nobody");
    // Nothing was written by the refusals.
    const list = await api(server, "GET", "/server/players", s.as());
    expect(list.body.bans_total).toBe(0);

    // The shape with a uuid works exactly as before, the name taken as given.
    const given = await api(server, "POST", "/server/bans", { ...s.as(), body: { uuid: ALEX, name: "Twin" } });
    expect(given.status).toBe(201);
    expect(given.body).toMatchObject({ uuid: ALEX, name: "Twin" });
    // A name that is nobody's current name resolves by the past: Alex, once Notch, is not Herobrine's "Notch".
    const byCurrent = await api(server, "POST", "/server/bans", { ...s.as(), body: { name: "Notch" } });
    expect(byCurrent.body.uuid).toBe(HEROBRINE);
  });
});

describe("notes", () => {
  let s: ServerFixture;
  let people: Record<"admin" | "moderator" | "moderator2" | "viewer", TestUser>;
  beforeAll(async () => {
    s = await newServer(server);
    people = {
      admin: await newUser(server, "adm"),
      moderator: await newUser(server, "mod"),
      moderator2: await newUser(server, "mod2"),
      viewer: await newUser(server, "view"),
    };
    await addMember(server, s.owner, s.teamId, people.admin, "admin");
    await addMember(server, s.owner, s.teamId, people.moderator, "moderator");
    await addMember(server, s.owner, s.teamId, people.moderator2, "moderator");
    await addMember(server, s.owner, s.teamId, people.viewer, "viewer");
    await send(s.agentToken, [{ type: "join", uuid: STEVE, name: "Steve" }]);
  });
  const as = (user: TestUser, method: string, path: string, body?: unknown) =>
    api(server, method, path, { token: user.token, headers: { "x-team-id": s.teamId }, body });

  test("a moderator adds, a viewer cannot; the author or an admin deletes; each is audited", async () => {
    expectError(await as(people.viewer, "POST", `/players/${STEVE}/notes`, { text: "hi" }), 403, "forbidden");
    const added = await as(people.moderator, "POST", `/players/${STEVE}/notes`, { text: "  Warned about spawn TNT  " });
    expect(`${added.status} ${added.text}`).toStartWith("201");
    expect(added.body).toMatchObject({
      text: "Warned about spawn TNT",
      author: { kind: "user", id: people.moderator.id, name: people.moderator.email },
    });
    const second = await as(people.moderator, "POST", `/players/${STEVE}/notes`, { text: "Second" });
    const page = await as(people.viewer, "GET", `/players/${STEVE}`);
    expect(page.body.notes.map((n: any) => n.text)).toEqual(["Second", "Warned about spawn TNT"]);

    const path = (id: string) => `/players/${STEVE}/notes/${id}`;
    expectError(await as(people.moderator2, "DELETE", path(added.body.note_id)), 403, "forbidden");
    expectError(await as(people.viewer, "DELETE", path(added.body.note_id)), 403, "forbidden");
    expect((await as(people.moderator, "DELETE", path(added.body.note_id))).status).toBe(200);
    expect((await as(people.admin, "DELETE", path(second.body.note_id))).status).toBe(200);
    expectError(await as(people.admin, "DELETE", path(second.body.note_id)), 404, "not_found");
    expect((await as(people.viewer, "GET", `/players/${STEVE}`)).body.notes).toEqual([]);

    const entries = await server.services.database.db
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.teamId, s.teamId), eq(auditLog.targetId, STEVE)));
    expect(entries.map((e) => [e.action, e.actorId]).sort()).toEqual(
      [
        ["player.note_add", people.moderator.id],
        ["player.note_add", people.moderator.id],
        ["player.note_delete", people.admin.id],
        ["player.note_delete", people.moderator.id],
      ].sort(),
    );
  });

  test("limits: text length, a player never seen, another team's note id", async () => {
    expectError(
      await as(people.moderator, "POST", `/players/${STEVE}/notes`, { text: "x".repeat(2001) }),
      400,
      "validation_failed",
    );
    expectError(await as(people.moderator, "POST", `/players/${STEVE}/notes`, { text: "   " }), 400);
    expectError(await as(people.moderator, "POST", `/players/${HEROBRINE}/notes`, { text: "who" }), 404, "not_found");
    const other = await newServer(server);
    await send(other.agentToken, [{ type: "join", uuid: STEVE, name: "Steve" }]);
    const theirs = await api(server, "POST", `/players/${STEVE}/notes`, {
      token: other.owner.token,
      headers: { "x-team-id": other.teamId },
      body: { text: "theirs" },
    });
    expect(theirs.status).toBe(201);
    expectError(await as(s.owner, "DELETE", `/players/${STEVE}/notes/${theirs.body.note_id}`), 404, "not_found");
  });

  test("an API key limited to some servers cannot read the team-wide directory", async () => {
    const key = await newApiKey(server, s.owner, s.teamId, { scopes: ["servers:read"], server_ids: [s.serverId] });
    const res = await api(server, "GET", "/players", { token: key.key, headers: { "x-team-id": s.teamId } });
    expectError(res, 403, "forbidden");
    const full = await newApiKey(server, s.owner, s.teamId, { scopes: ["servers:read"] });
    const ok = await api(server, "GET", "/players", { token: full.key, headers: { "x-team-id": s.teamId } });
    expect(ok.status).toBe(200);
  });
});
