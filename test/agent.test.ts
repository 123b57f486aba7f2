import { beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import type { RunningServer } from "../src/app";
import { agentEvents, playerSessions } from "../src/db/schema";
import { restRoutes } from "../src/trpc/rest";
import { appRouter } from "../src/trpc/router";
import { sharedServer } from "./harness";
import { api, expectError, newApiKey, trpcClient } from "./helpers";
import { SECURITY_CASES } from "./security/cases";
import { makePeople, makeTeam } from "./security/fixture";
import { agentApi, eventId, newServer } from "./servers-fixture";

let server: RunningServer;
beforeAll(async () => {
  server = await sharedServer();
});

const iso = (msAgo: number) => new Date(Date.now() - msAgo).toISOString();

describe("agent API", () => {
  test("heartbeat: TPS, MSPT, players and memory show on the server record", async () => {
    const s = await newServer(server);
    const res = await agentApi(server, s.agentToken, "POST", "/agent/heartbeat", {
      tps: 19.8,
      mspt: 23.5,
      players_online: 12,
      memory_used_mb: 2048,
      memory_max_mb: 4096,
    });
    expect(res.status).toBe(200);
    expect(res.body.server_id).toBe(s.serverId);
    const read = await api(server, "GET", `/server/servers/${s.serverId}`, { token: s.owner.token });
    expect(read.body.agent).toEqual({
      tps: expect.closeTo(19.8, 3),
      mspt: 23.5,
      players_online: 12,
      memory_used_mb: 2048,
      memory_max_mb: 4096,
      reported_at: res.body.received_at,
    });
    expectError(
      await agentApi(server, s.agentToken, "POST", "/agent/heartbeat", { tps: -1 }),
      400,
      "validation_failed",
    );
    expectError(
      await agentApi(server, s.agentToken, "POST", "/agent/heartbeat", { players_online: 1.5 }),
      400,
      "validation_failed",
    );
  });

  test("join and leave make sessions and time played; a retried batch is not counted twice", async () => {
    const s = await newServer(server);
    const steve = crypto.randomUUID();
    const alex = crypto.randomUUID();
    const batch = {
      events: [
        { event_id: eventId(), type: "join", uuid: steve, name: "Steve", at: iso(3600_000) },
        { event_id: eventId(), type: "leave", uuid: steve, at: iso(1800_000) },
        { event_id: eventId(), type: "join", uuid: steve, name: "Steve2", at: iso(600_000) },
        { event_id: eventId(), type: "join", uuid: alex, name: "Alex", at: iso(120_000) },
      ],
    };
    expect((await agentApi(server, s.agentToken, "POST", "/agent/events", batch)).body).toEqual({
      accepted: 4,
      duplicates: 0,
    });
    // The agent did not hear our answer and sends the same batch again.
    expect((await agentApi(server, s.agentToken, "POST", "/agent/events", batch)).body).toEqual({
      accepted: 0,
      duplicates: 4,
    });

    const players = (await api(server, "GET", "/server/players", s.as())).body;
    const byName = Object.fromEntries(players.players.map((p: any) => [p.name, p]));
    expect(Object.keys(byName).sort()).toEqual(["Alex", "Steve2"]);
    expect(byName.Steve2).toMatchObject({ uuid: steve, online: true, first_seen: batch.events[0]!.at });
    // 30 closed minutes plus the open session of about 10 minutes.
    expect(byName.Steve2.time_played_seconds).toBeGreaterThanOrEqual(1800 + 598);
    expect(byName.Steve2.time_played_seconds).toBeLessThanOrEqual(1800 + 615);

    const leave = { events: [{ event_id: eventId(), type: "leave", uuid: steve, at: iso(0) }] };
    await agentApi(server, s.agentToken, "POST", "/agent/events", leave);
    const after = (await api(server, "GET", "/server/players?online=false", s.as())).body.players;
    expect(after).toHaveLength(1);
    expect(after[0]).toMatchObject({ name: "Steve2", online: false });
    expect(after[0].time_played_seconds).toBeGreaterThanOrEqual(2398);
    expect(after[0].time_played_seconds).toBeLessThanOrEqual(2402);

    const sessions = await server.services.database.db
      .select()
      .from(playerSessions)
      .where(eq(playerSessions.serverId, s.serverId));
    expect(sessions.filter((x) => x.uuid === steve).map((x) => x.leftAt !== null)).toEqual([true, true]);
    expect(sessions.filter((x) => x.uuid === alex).map((x) => x.leftAt)).toEqual([null]);
  });

  test("a session lasts at most 31 days: a join stamped years back with a leave now ends 31 days after the join", async () => {
    const s = await newServer(server, { kind: "network", network_name: "Clockwork" });
    const [stale, long, short] = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];
    const day = 86_400_000;
    const res = await agentApi(server, s.agentToken, "POST", "/agent/events", {
      events: [
        { event_id: eventId(), type: "join", uuid: stale, name: "Stale", at: iso(3649 * day) },
        { event_id: eventId(), type: "join", uuid: long, name: "Long", at: iso(40 * day) },
        { event_id: eventId(), type: "join", uuid: short, name: "Short", at: iso(30 * day) },
        { event_id: eventId(), type: "leave", uuid: short, at: iso(day) },
        { event_id: eventId(), type: "leave", uuid: stale, at: iso(0) },
        { event_id: eventId(), type: "leave", uuid: long, at: iso(0) },
      ],
    });
    expect(`${res.status} ${res.text}`).toStartWith("200");
    const sessions = await server.services.database.db
      .select()
      .from(playerSessions)
      .where(eq(playerSessions.serverId, s.serverId));
    const length = (uuid: string) => {
      const x = sessions.find((r) => r.uuid === uuid)!;
      return x.leftAt!.getTime() - x.joinedAt.getTime();
    };
    expect(length(stale)).toBe(31 * day);
    expect(length(long)).toBe(31 * day);
    // A session under the bound keeps its length.
    expect(length(short)).toBe(29 * day);
    // Erasing the player whose join was years back answers as any other.
    const erased = await api(server, "POST", `/players/${stale}/erase`, {
      token: s.owner.token,
      headers: { "x-team-id": s.teamId },
    });
    expect(`${erased.status} ${erased.text}`).toStartWith("200");
    expect(erased.body.erased.player_sessions).toBe(1);
  });

  test("a join while a session is open closes it (a missed leave); repeated ids inside one batch count once", async () => {
    const s = await newServer(server);
    const uuid = crypto.randomUUID();
    const id = eventId();
    const res = await agentApi(server, s.agentToken, "POST", "/agent/events", {
      events: [
        { event_id: id, type: "join", uuid, name: "Herobrine", at: iso(600_000) },
        { event_id: id, type: "join", uuid, name: "Herobrine", at: iso(600_000) },
        { event_id: eventId(), type: "join", uuid, name: "Herobrine", at: iso(300_000) },
      ],
    });
    expect(res.body).toEqual({ accepted: 2, duplicates: 1 });
    const sessions = await server.services.database.db
      .select()
      .from(playerSessions)
      .where(eq(playerSessions.serverId, s.serverId));
    expect(sessions.map((x) => x.leftAt === null).sort()).toEqual([false, true]);
  });

  test("bans made in game show on the dashboard; dashboard bans and lifts reach the agent's config", async () => {
    const s = await newServer(server);
    const griefer = crypto.randomUUID();
    const cheater = crypto.randomUUID();
    const pardoned = crypto.randomUUID();
    await agentApi(server, s.agentToken, "POST", "/agent/events", {
      events: [
        { event_id: eventId(), type: "ban", uuid: griefer, name: "Griefer", reason: "Griefing", source: "Notch" },
        { event_id: eventId(), type: "ban", uuid: pardoned, name: "Oops", reason: "mistake" },
        { event_id: eventId(), type: "unban", uuid: pardoned },
      ],
    });
    const bans = (await api(server, "GET", "/server/players", s.as())).body.bans;
    expect(bans.map((b: any) => [b.name, b.origin, b.source, b.reason, b.expires])).toEqual([
      ["Griefer", "game", "Notch", "Griefing", "forever"],
    ]);

    await api(server, "POST", "/server/bans", {
      ...s.as(),
      body: { uuid: cheater, name: "Cheater", reason: "Fly hacks" },
    });
    expect((await api(server, "DELETE", `/server/bans/${griefer}`, s.as())).status).toBe(200);
    await api(server, "POST", "/server/ranks", {
      ...s.as(),
      body: { name: "default", permissions: ["essentials.spawn"] },
    });
    await api(server, "POST", "/server/ranks", {
      ...s.as(),
      body: { name: "vip", weight: 10, prefix: "[VIP] ", parents: ["default"] },
    });
    await api(server, "POST", "/server/announcements", { ...s.as(), body: { message: "Live", interval_seconds: 300 } });
    await api(server, "POST", "/server/announcements", {
      ...s.as(),
      body: { message: "Paused", interval_seconds: 300, active: false },
    });
    await api(server, "POST", "/server/announcements", {
      ...s.as(),
      body: { message: "Later", interval_seconds: 300, starts_at: "2099-01-01T00:00:00Z" },
    });
    await api(server, "POST", "/server/announcements", {
      ...s.as(),
      body: { message: "Over", schedule: "0 12 * * *", ends_at: "2001-01-01T00:00:00Z" },
    });

    const config = await agentApi(server, s.agentToken, "GET", "/agent/config");
    expect(config.status).toBe(200);
    expect(config.body.server_id).toBe(s.serverId);
    expect(config.body.ranks.map((r: any) => [r.name, r.parents])).toEqual([
      ["vip", ["default"]],
      ["default", []],
    ]);
    expect(config.body.announcements.map((a: any) => a.message)).toEqual(["Live"]);
    expect(config.body.bans.map((b: any) => [b.uuid, b.name, b.reason, b.origin])).toEqual([
      [cheater, "Cheater", "Fly hacks", "dashboard"],
    ]);
    // The dashboard lifted Griefer's in-game ban: the plugin must pardon them. Oops was pardoned in game already.
    expect(config.body.pardons.map((p: any) => p.uuid)).toEqual([griefer]);

    // Pulled again with its ETag: unchanged is a 304 with no body; a change gives a new version.
    const etag = config.headers.get("etag")!;
    expect(etag).toMatch(/^"[0-9a-f]{32}"$/);
    const unchanged = await api(server, "GET", "/agent/config", {
      headers: { authorization: `Bearer ${s.agentToken}`, "if-none-match": etag },
    });
    expect(unchanged.status).toBe(304);
    expect(unchanged.text).toBe("");
    await api(server, "POST", "/server/announcements", {
      ...s.as(),
      body: { message: "Fresh", interval_seconds: 600 },
    });
    const changed = await api(server, "GET", "/agent/config", {
      headers: { authorization: `Bearer ${s.agentToken}`, "if-none-match": etag },
    });
    expect(changed.status).toBe(200);
    expect(changed.headers.get("etag")).not.toBe(etag);
  });

  test("limits: more than 500 events, oversize strings, unknown types and bad uuids are refused whole, with nothing written", async () => {
    const s = await newServer(server);
    const join = (i: number) => ({ event_id: `big-${i}`, type: "join", uuid: crypto.randomUUID(), name: `P${i}` });
    const tooMany = await agentApi(server, s.agentToken, "POST", "/agent/events", {
      events: Array.from({ length: 501 }, (_, i) => ({
        event_id: `b${i}`,
        type: "unban",
        uuid: "00000000-0000-0000-0009-01f2e3d4c5b6",
      })),
    });
    expectError(tooMany, 400, "validation_failed");
    const bad = [
      { events: [] },
      { events: [{ ...join(1), name: "x".repeat(33) }] },
      { events: [{ ...join(2), event_id: "x".repeat(101) }] },
      { events: [{ ...join(3), event_id: "has space" }] },
      { events: [{ ...join(4), type: "teleport" }] },
      { events: [{ ...join(5), uuid: "steve" }] },
      { events: [join(6), { ...join(7), at: "yesterday" }] },
    ];
    for (const body of bad)
      expectError(await agentApi(server, s.agentToken, "POST", "/agent/events", body), 400, "validation_failed");
    // A join from decades ago would open a session of that many quarter hours: refused, named.
    const ancient = await agentApi(server, s.agentToken, "POST", "/agent/events", {
      events: [join(8), { ...join(9), at: "1990-01-01T00:00:00Z" }],
    });
    expectError(ancient, 400, "validation_failed");
    expect(ancient.body.error.details.issues.map((i: any) => i.path)).toEqual(["events.1.at"]);
    expectError(
      await api(server, "POST", "/agent/events", {
        token: s.agentToken,
        rawBody: "x".repeat(70_000),
        headers: { "content-type": "application/json" },
      }),
      413,
      "payload_too_large",
    );
    const stored = await server.services.database.db
      .select()
      .from(agentEvents)
      .where(eq(agentEvents.serverId, s.serverId));
    expect(stored).toEqual([]);
    // A Bedrock (Floodgate) uuid is not RFC version 4 but is accepted.
    const ok = await agentApi(server, s.agentToken, "POST", "/agent/events", {
      events: [{ event_id: "fg-1", type: "join", uuid: "00000000-0000-0000-0009-01F2E3D4C5B6", name: ".BedrockSteve" }],
    });
    expect(ok.body).toEqual({ accepted: 1, duplicates: 0 });
  });

  test("the typed door speaks the agent API too", async () => {
    const s = await newServer(server);
    const agent = trpcClient(server, s.agentToken);
    expect((await agent.agent.heartbeat.mutate({ tps: 20 })).server_id).toBe(s.serverId);
    expect(
      await agent.agent.events.mutate({
        events: [{ event_id: "t-1", type: "join", uuid: crypto.randomUUID(), name: "Typed" }],
      }),
    ).toEqual({ accepted: 1, duplicates: 0 });
    expect((await agent.agent.config.query()).server_id).toBe(s.serverId);
  });
});

describe("agent security", () => {
  test("agent routes refuse no token, malformed ones, user tokens, API keys, and a rotated agent token: 401", async () => {
    const s = await newServer(server);
    const key = (await newApiKey(server, s.owner, s.teamId, "admin")).key;
    const old = s.agentToken;
    const rotated = (await api(server, "POST", `/server/servers/${s.serverId}/agent-token`, { token: s.owner.token }))
      .body.agent_token;
    const routes: [string, string, unknown][] = [
      ["POST", "/agent/heartbeat", { tps: 20 }],
      ["POST", "/agent/events", { events: [{ event_id: "x", type: "unban", uuid: crypto.randomUUID() }] }],
      ["GET", "/agent/config", undefined],
    ];
    expect(routes.map(([m, p]) => `${m} ${p}`).sort()).toEqual(
      restRoutes(appRouter)
        .filter((r) => r.access === "agent")
        .map((r) => `${r.method} ${r.path}`)
        .sort(),
    );
    for (const [method, path, body] of routes) {
      expectError(await api(server, method, path, { body }), 401, "unauthenticated");
      for (const auth of [
        "Basic dXNlcjpwYXNz",
        "Bearer",
        "Bearer not-a-token",
        `Bearer mcp_agent_${"A".repeat(43)}`,
        `Bearer ${s.owner.token}`,
        `Bearer ${key}`,
        `Bearer ${old}`,
      ]) {
        expectError(
          await api(server, method, path, { body, headers: { authorization: auth } }),
          401,
          "unauthenticated",
        );
      }
      expect((await agentApi(server, rotated, method, path, body)).status).toBe(200);
    }
  });

  test("an agent token is refused on every dashboard route: 401", async () => {
    const people = await makePeople(server);
    const team = await makeTeam(server, people);
    const s = await newServer(server, {}, people.owner);
    for (const [name, c] of Object.entries(SECURITY_CASES)) {
      const req = await c.request({ server, people, team });
      const res = await api(server, req.method, req.path, {
        body: req.body,
        headers: { ...req.headers, authorization: `Bearer ${s.agentToken}` },
      });
      expect(`${name} -> ${res.status} ${res.body?.error?.code}`).toBe(`${name} -> 401 unauthenticated`);
    }
  }, 60_000);

  test("another server's token only ever touches its own server", async () => {
    const a = await newServer(server);
    const b = await newServer(server);
    const uuid = crypto.randomUUID();
    // The same event id on two servers is two events.
    const batch = { events: [{ event_id: "shared-1", type: "join", uuid, name: "Wanderer" }] };
    expect((await agentApi(server, b.agentToken, "POST", "/agent/events", batch)).body).toEqual({
      accepted: 1,
      duplicates: 0,
    });
    expect((await agentApi(server, a.agentToken, "POST", "/agent/events", batch)).body).toEqual({
      accepted: 1,
      duplicates: 0,
    });
    await agentApi(server, b.agentToken, "POST", "/agent/heartbeat", { tps: 5 });
    await api(server, "POST", "/server/bans", { ...a.as(), body: { uuid: crypto.randomUUID(), name: "OnlyOnA" } });

    expect((await agentApi(server, b.agentToken, "GET", "/agent/config")).body).toMatchObject({
      server_id: b.serverId,
      bans: [],
    });
    expect((await api(server, "GET", `/server/servers/${a.serverId}`, { token: a.owner.token })).body.agent).toBeNull();
    expect((await api(server, "GET", `/server/servers/${b.serverId}`, { token: b.owner.token })).body.agent.tps).toBe(
      5,
    );
    // A selector header means nothing to the agent API: the token alone picks the server.
    const sneaky = await api(server, "GET", "/agent/config", {
      headers: { authorization: `Bearer ${b.agentToken}`, "x-server-id": a.serverId },
    });
    expect(sneaky.body.server_id).toBe(b.serverId);
  });
});
