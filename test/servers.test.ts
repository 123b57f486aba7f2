import { beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import type { RunningServer } from "../src/app";
import { bans, servers } from "../src/db/schema";
import { sha256 } from "../src/lib/secrets";
import { nextRun } from "../src/servers/announcements";
import { sharedServer } from "./harness";
import { addMember, api, expectError, newApiKey, newTeam, newUser, trpcClient } from "./helpers";
import { newServer } from "./servers-fixture";

let server: RunningServer;
beforeAll(async () => {
  server = await sharedServer();
});

describe("servers", () => {
  test("an admin registers a server: the record, timestamps and an agent token shown once and stored as SHA-256", async () => {
    const owner = await newUser(server);
    const admin = await newUser(server);
    const teamId = await newTeam(server, owner);
    await addMember(server, owner, teamId, admin, "admin");
    const res = await api(server, "POST", "/server/servers", {
      token: admin.token,
      body: {
        team_id: teamId,
        name: "Lobby",
        host: "Play.Example.COM",
        port: 25565,
        kind: "network",
        network_name: "Skyblock",
      },
    });
    expect(res.status).toBe(201);
    // Matchers are given a copy: Bun's toMatchObject writes its asymmetric matchers into the object.
    const body = structuredClone(res.body);
    expect(structuredClone(body)).toMatchObject({
      server_id: expect.any(String),
      team_id: teamId,
      name: "Lobby",
      host: "play.example.com",
      port: 25565,
      kind: "network",
      network_name: "Skyblock",
      created_at: expect.any(String),
      updated_at: expect.any(String),
      status: { online: null, checked_at: null },
      agent: null,
    });
    expect(body.agent_token).toMatch(/^mcp_agent_[A-Za-z0-9_-]{43}$/);
    expect(body.agent_token.startsWith(body.agent_token_prefix.replace("…", ""))).toBe(true);

    const [row] = await server.services.database.db.select().from(servers).where(eq(servers.id, body.server_id));
    expect(row!.agentTokenHash).toBe(sha256(body.agent_token));
    expect(JSON.stringify(row)).not.toContain(body.agent_token);

    const read = await api(server, "GET", `/server/servers/${body.server_id}`, { token: owner.token });
    expect(read.body).toEqual(Object.fromEntries(Object.entries(body).filter(([k]) => k !== "agent_token")));
    expect(read.text).not.toContain(body.agent_token);
  });

  test("bad input is a 400 naming the field: ports 0 and 70000, network without network_name or named . or .., single with one, a bad host", async () => {
    const owner = await newUser(server);
    const teamId = await newTeam(server, owner);
    const base = { team_id: teamId, name: "S", host: "mc.example.com", port: 25565, kind: "single" };
    const cases: [Record<string, unknown>, string][] = [
      [{ port: 0 }, "port"],
      [{ port: 70000 }, "port"],
      [{ port: 25565.5 }, "port"],
      [{ kind: "network" }, "network_name"],
      [{ kind: "network", network_name: "" }, "network_name"],
      // A URL drops these as path segments: the network's page could never be asked for.
      [{ kind: "network", network_name: "." }, "network_name"],
      [{ kind: "network", network_name: " .. " }, "network_name"],
      [{ kind: "single", network_name: "Skyblock" }, "network_name"],
      [{ kind: "proxy" }, "kind"],
      [{ host: "http://mc.example.com" }, "host"],
      [{ host: "mc.example.com:25565" }, "host"],
      [{ name: "x".repeat(101) }, "name"],
    ];
    for (const [patch, field] of cases) {
      const err = expectError(
        await api(server, "POST", "/server/servers", { token: owner.token, body: { ...base, ...patch } }),
        400,
        "validation_failed",
      );
      expect(`${JSON.stringify(patch)} -> ${err.details.issues.map((i: any) => i.path).join(",")}`).toContain(field);
    }
    const list = await api(server, "GET", "/server/servers", { token: owner.token, headers: { "x-team-id": teamId } });
    expect(list.body.servers).toEqual([]);
  });

  test("list with x-team-id; PATCH and DELETE need admin; a viewer reads; kind changes keep the network rule", async () => {
    const owner = await newUser(server);
    const viewer = await newUser(server);
    const teamId = await newTeam(server, owner);
    await addMember(server, owner, teamId, viewer, "viewer");
    const a = await newServer(server, { name: "A" }, owner);
    const b = await newServer(server, { name: "B" }, owner);
    // a and b sit in other teams of the same owner: they must not show up in this team's list.
    const c = await api(server, "POST", "/server/servers", {
      token: owner.token,
      body: { team_id: teamId, name: "C", host: "127.0.0.1", port: 9, kind: "single" },
    });
    const list = await api(server, "GET", "/server/servers", { token: viewer.token, headers: { "x-team-id": teamId } });
    expect(list.body.servers.map((s: any) => s.server_id)).toEqual([c.body.server_id]);
    expect(list.body.servers[0].status).toEqual({
      online: null,
      latency_ms: null,
      players_online: null,
      players_max: null,
      version: null,
      motd: null,
      checked_at: null,
      changed_at: null,
      down_reason: null,
      down_since: null,
    });
    expectError(
      await api(server, "GET", "/server/servers", { token: viewer.token, headers: { "x-team-id": a.teamId } }),
      403,
      "forbidden",
    );

    const id = c.body.server_id;
    expectError(
      await api(server, "PATCH", `/server/servers/${id}`, { token: viewer.token, body: { name: "nope" } }),
      403,
      "forbidden",
    );
    expectError(
      await api(server, "PATCH", `/server/servers/${id}`, { token: owner.token, body: { kind: "network" } }),
      400,
      "bad_request",
    );
    const toNetwork = await api(server, "PATCH", `/server/servers/${id}`, {
      token: owner.token,
      body: { kind: "network", network_name: "Hub", port: 25566 },
    });
    expect(toNetwork.body).toMatchObject({ kind: "network", network_name: "Hub", port: 25566 });
    const toSingle = await api(server, "PATCH", `/server/servers/${id}`, {
      token: owner.token,
      body: { kind: "single" },
    });
    expect(toSingle.body).toMatchObject({ kind: "single", network_name: null });
    expect(Date.parse(toSingle.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(c.body.updated_at));

    expectError(await api(server, "DELETE", `/server/servers/${id}`, { token: viewer.token }), 403, "forbidden");
    expect((await api(server, "DELETE", `/server/servers/${id}`, { token: owner.token })).body).toEqual({ ok: true });
    expectError(await api(server, "GET", `/server/servers/${id}`, { token: owner.token }), 404, "not_found");
    expect((await api(server, "GET", `/server/servers/${b.serverId}`, { token: owner.token })).status).toBe(200);
  });

  test("selectors: a missing or malformed x-team-id / x-server-id is a 400 that names the header", async () => {
    const s = await newServer(server);
    const token = s.owner.token;
    for (const [path, header] of [
      ["/server/servers", "x-team-id"],
      ["/server/networks", "x-team-id"],
      ["/server/players", "x-server-id"],
      ["/server/ranks", "x-server-id"],
      ["/server/announcements", "x-server-id"],
      ["/server/uptime-stats", "x-server-id"],
      ["/server/metrics", "x-server-id"],
    ] as const) {
      for (const value of [undefined, "", "not-a-uuid", "12345"]) {
        const res = await api(server, "GET", path, { token, headers: value === undefined ? {} : { [header]: value } });
        expect(expectError(res, 400, "bad_request").message).toContain(header);
      }
    }
    // The selector is checked after the credential: without one it is a 401 either way.
    expectError(await api(server, "GET", "/server/players"), 401, "unauthenticated");
  });

  test("a server outside your teams answers exactly like one that does not exist (404); a team you are not in is 403", async () => {
    const s = await newServer(server);
    const stranger = await newUser(server);
    const strangerKey = (await newApiKey(server, stranger, await newTeam(server, stranger), "admin")).key;
    const missing = crypto.randomUUID();
    for (const token of [stranger.token, strangerKey]) {
      for (const id of [s.serverId, missing]) {
        const get = expectError(await api(server, "GET", `/server/servers/${id}`, { token }), 404, "not_found");
        expect(get.message).toBe("Server not found.");
        expect(
          expectError(
            await api(server, "GET", "/server/players", { token, headers: { "x-server-id": id } }),
            404,
            "not_found",
          ).message,
        ).toBe(get.message);
        expectError(
          await api(server, "POST", "/server/ranks", { token, headers: { "x-server-id": id }, body: { name: "x" } }),
          404,
          "not_found",
        );
      }
      expectError(
        await api(server, "GET", "/server/servers", { token, headers: { "x-team-id": s.teamId } }),
        403,
        "forbidden",
      );
      expectError(
        await api(server, "POST", "/server/servers", {
          token,
          body: { team_id: s.teamId, name: "x", host: "a.example", port: 1, kind: "single" },
        }),
        403,
        "forbidden",
      );
    }
  });

  test("networks: servers grouped by network_name with combined player counts of the servers that are up", async () => {
    const owner = await newUser(server);
    const teamId = await newTeam(server, owner);
    const make = async (name: string, kind: string, network_name?: string) =>
      (
        await api(server, "POST", "/server/servers", {
          token: owner.token,
          body: { team_id: teamId, name, host: "127.0.0.1", port: 9, kind, network_name },
        })
      ).body.server_id as string;
    const lobby = await make("Lobby", "network", "Skyblock");
    const islands = await make("Islands", "network", "Skyblock");
    const hub = await make("Hub", "network", "Arcade");
    await make("Solo", "single");
    const db = server.services.database.db;
    const { serverStatus } = await import("../src/db/schema");
    await db.insert(serverStatus).values([
      { serverId: lobby, online: true, playersOnline: 12, playersMax: 100 },
      { serverId: islands, online: true, playersOnline: 30, playersMax: 200 },
      { serverId: hub, online: false },
    ]);
    const res = await api(server, "GET", "/server/networks", { token: owner.token, headers: { "x-team-id": teamId } });
    expect(res.status).toBe(200);
    const summary = res.body.networks.map((n: any) => [
      n.network_name,
      n.servers.map((s: any) => s.name),
      n.servers_online,
      n.players_online,
      n.players_max,
    ]);
    expect(summary).toEqual([
      ["Arcade", ["Hub"], 0, 0, 0],
      ["Skyblock", ["Lobby", "Islands"], 2, 42, 300],
    ]);
  });

  test("rotating the agent token: the new one works, the old one stops at once", async () => {
    const s = await newServer(server);
    const rotated = await api(server, "POST", `/server/servers/${s.serverId}/agent-token`, { token: s.owner.token });
    expect(rotated.body.agent_token).toMatch(/^mcp_agent_/);
    expect(rotated.body.agent_token).not.toBe(s.agentToken);
    expectError(await api(server, "GET", "/agent/config", { token: s.agentToken }), 401, "unauthenticated");
    expect((await api(server, "GET", "/agent/config", { token: rotated.body.agent_token })).body.server_id).toBe(
      s.serverId,
    );
  });
});

describe("players and bans", () => {
  test("admins ban and lift; bans follow banned-players.json; a lifted ban leaves the list; viewers cannot ban", async () => {
    const s = await newServer(server);
    const viewer = await newUser(server);
    await addMember(server, s.owner, s.teamId, viewer, "viewer");
    const uuid = crypto.randomUUID();
    const expires = new Date(Date.now() + 86_400_000).toISOString();
    expectError(
      await api(server, "POST", "/server/bans", { ...s.as(viewer.token), body: { uuid, name: "Griefer" } }),
      403,
      "forbidden",
    );
    const ban = await api(server, "POST", "/server/bans", {
      ...s.as(),
      body: { uuid: uuid.toUpperCase(), name: "Griefer", reason: "Griefing spawn", expires },
    });
    expect(ban.body).toEqual({
      uuid,
      name: "Griefer",
      reason: "Griefing spawn",
      source: "Dashboard",
      origin: "dashboard",
      created: expect.any(String),
      expires,
    });
    const permanent = await api(server, "POST", "/server/bans", {
      ...s.as(),
      body: { uuid: crypto.randomUUID(), name: "Cheater" },
    });
    expect(permanent.body.expires).toBe("forever");
    expectError(
      await api(server, "POST", "/server/bans", {
        ...s.as(),
        body: { uuid: crypto.randomUUID(), name: "Late", expires: "2001-01-01T00:00:00Z" },
      }),
      400,
      "bad_request",
    );
    expectError(
      await api(server, "POST", "/server/bans", { ...s.as(), body: { uuid: "nope", name: "X" } }),
      400,
      "validation_failed",
    );

    const list = await api(server, "GET", "/server/players", s.as(viewer.token));
    expect(list.body.bans.map((b: any) => b.name).sort()).toEqual(["Cheater", "Griefer"]);
    expect(list.body.bans_total).toBe(2);

    expect((await api(server, "DELETE", `/server/bans/${uuid}`, s.as())).body).toEqual({ ok: true });
    expectError(await api(server, "DELETE", `/server/bans/${uuid}`, s.as()), 404, "not_found");
    const after = await api(server, "GET", "/server/players", s.as());
    expect(after.body.bans.map((b: any) => b.name)).toEqual(["Cheater"]);
    const [row] = await server.services.database.db.select().from(bans).where(eq(bans.uuid, uuid));
    expect(row!.liftedAt).toBeInstanceOf(Date);
  });

  test("players are paged: limit, offset and totals; bad paging is a 400", async () => {
    const s = await newServer(server);
    const events = Array.from({ length: 5 }, (_, i) => ({
      event_id: `j${i}`,
      type: "join",
      uuid: crypto.randomUUID(),
      name: `Player${i}`,
      at: new Date(Date.now() - (5 - i) * 1000).toISOString(),
    }));
    expect((await api(server, "POST", "/agent/events", { token: s.agentToken, body: { events } })).body).toEqual({
      accepted: 5,
      duplicates: 0,
    });
    const page1 = await api(server, "GET", "/server/players?limit=2", s.as());
    const page3 = await api(server, "GET", "/server/players?limit=2&offset=4", s.as());
    expect(page1.body).toMatchObject({ players_total: 5, limit: 2, offset: 0 });
    expect(page1.body.players.map((p: any) => p.name)).toEqual(["Player4", "Player3"]);
    expect(page3.body.players.map((p: any) => p.name)).toEqual(["Player0"]);
    expect((await api(server, "GET", "/server/players?online=false", s.as())).body.players_total).toBe(0);
    for (const q of ["limit=0", "limit=201", "offset=-1", "limit=abc", "online=maybe"])
      expectError(await api(server, "GET", `/server/players?${q}`, s.as()), 400, "validation_failed");
  });
});

describe("ranks", () => {
  test("LuckPerms-shaped ranks: create, read heaviest first, update, delete; parents must exist", async () => {
    const s = await newServer(server);
    const post = (body: unknown) => api(server, "POST", "/server/ranks", { ...s.as(), body });
    const def = await post({ name: "default", weight: 0, permissions: ["essentials.spawn"] });
    expect(def.body).toMatchObject({
      name: "default",
      display_name: null,
      weight: 0,
      prefix: null,
      permissions: ["essentials.spawn"],
      parents: [],
    });
    await post({
      name: "vip",
      display_name: "VIP",
      weight: 10,
      prefix: "&a[VIP] ",
      permissions: ["essentials.fly", "-essentials.god"],
      parents: ["default"],
    });
    expectError(await post({ name: "vip" }), 409, "conflict");
    expectError(await post({ name: "mod", parents: ["ghost"] }), 400, "bad_request");
    expectError(await post({ name: "Has Spaces" }), 400, "validation_failed");
    expectError(await post({ name: "x", permissions: ["bad node!"] }), 400, "validation_failed");

    const list = await api(server, "GET", "/server/ranks", s.as());
    expect(list.body.ranks.map((r: any) => [r.name, r.weight, r.parents])).toEqual([
      ["vip", 10, ["default"]],
      ["default", 0, []],
    ]);

    const upd = await api(server, "PATCH", "/server/ranks/vip", { ...s.as(), body: { suffix: " ★", weight: 15 } });
    expect(upd.body).toMatchObject({ name: "vip", suffix: " ★", weight: 15, prefix: "&a[VIP] " });
    expectError(
      await api(server, "PATCH", "/server/ranks/ghost", { ...s.as(), body: { weight: 1 } }),
      404,
      "not_found",
    );
    // A rank others inherit from cannot go until they stop.
    expectError(await api(server, "DELETE", "/server/ranks/default", s.as()), 409, "conflict");
    expect((await api(server, "DELETE", "/server/ranks/vip", s.as())).body).toEqual({ ok: true });
    expect((await api(server, "DELETE", "/server/ranks/default", s.as())).body).toEqual({ ok: true });
  });

  test("inheritance cycles are refused with a 400 that shows the cycle, and nothing is written", async () => {
    const s = await newServer(server);
    const post = (body: unknown) => api(server, "POST", "/server/ranks", { ...s.as(), body });
    await post({ name: "a" });
    await post({ name: "b", parents: ["a"] });
    await post({ name: "c", parents: ["b"] });
    const cycle = expectError(
      await api(server, "PATCH", "/server/ranks/a", { ...s.as(), body: { parents: ["c"] } }),
      400,
      "bad_request",
    );
    expect(cycle.details.cycle).toEqual(["a", "c", "b", "a"]);
    expectError(
      await api(server, "PATCH", "/server/ranks/b", { ...s.as(), body: { parents: ["b"] } }),
      400,
      "bad_request",
    );
    expectError(await post({ name: "d", parents: ["d"] }), 400, "bad_request");
    const ranks = (await api(server, "GET", "/server/ranks", s.as())).body.ranks;
    expect(Object.fromEntries(ranks.map((r: any) => [r.name, r.parents]))).toEqual({ a: [], b: ["a"], c: ["b"] });
  });
});

describe("announcements", () => {
  test("interval or cron schedule (exactly one), active flag, optional start/end; admins write, viewers read", async () => {
    const s = await newServer(server);
    const viewer = await newUser(server);
    await addMember(server, s.owner, s.teamId, viewer, "viewer");
    const post = (body: unknown, token?: string) =>
      api(server, "POST", "/server/announcements", { ...s.as(token), body });
    const a = await post({ message: "Vote for us at example.com", interval_seconds: 900 });
    expect(a.body).toMatchObject({
      message: "Vote for us at example.com",
      interval_seconds: 900,
      schedule: null,
      active: true,
      starts_at: null,
      ends_at: null,
    });
    const b = await post({
      message: "Restart soon",
      schedule: "55 3 * * *",
      starts_at: "2030-01-01T00:00:00Z",
      ends_at: "2030-02-01T00:00:00Z",
    });
    expect(b.body).toMatchObject({ schedule: "55 3 * * *", starts_at: "2030-01-01T00:00:00.000Z" });

    expectError(await post({ message: "both", interval_seconds: 60, schedule: "* * * * *" }), 400, "bad_request");
    expectError(await post({ message: "neither" }), 400, "bad_request");
    expectError(await post({ message: "bad cron", schedule: "61 * * * *" }), 400, "validation_failed");
    expectError(await post({ message: "too fast", interval_seconds: 1 }), 400, "validation_failed");
    expectError(
      await post({
        message: "backwards",
        interval_seconds: 60,
        starts_at: "2030-02-01T00:00:00Z",
        ends_at: "2030-01-01T00:00:00Z",
      }),
      400,
      "bad_request",
    );
    expectError(await post({ message: "x", interval_seconds: 60 }, viewer.token), 403, "forbidden");

    const switched = await api(server, "PATCH", `/server/announcements/${a.body.announcement_id}`, {
      ...s.as(),
      body: { interval_seconds: null, schedule: "*/15 * * * *", active: false },
    });
    expect(switched.body).toMatchObject({ interval_seconds: null, schedule: "*/15 * * * *", active: false });
    expectError(
      await api(server, "PATCH", `/server/announcements/${a.body.announcement_id}`, {
        ...s.as(),
        body: { schedule: null },
      }),
      400,
      "bad_request",
    );

    const list = await api(server, "GET", "/server/announcements", s.as(viewer.token));
    expect(list.body.announcements.map((x: any) => x.message)).toEqual(["Vote for us at example.com", "Restart soon"]);
    expect((await api(server, "DELETE", `/server/announcements/${b.body.announcement_id}`, s.as())).body).toEqual({
      ok: true,
    });
    expectError(
      await api(server, "DELETE", `/server/announcements/${b.body.announcement_id}`, s.as()),
      404,
      "not_found",
    );
    // An announcement id from another server is not found through this one.
    const other = await newServer(server, {}, s.owner);
    expectError(
      await api(server, "DELETE", `/server/announcements/${a.body.announcement_id}`, other.as()),
      404,
      "not_found",
    );
  });

  test("cron schedules: out-of-range values, wrong field counts, syntax the agent does not read and schedules that never run are a 400 naming schedule", async () => {
    const s = await newServer(server);
    const post = (schedule: string) =>
      api(server, "POST", "/server/announcements", { ...s.as(), body: { message: "cron", schedule } });
    const refused: [string, RegExp][] = [
      ["61 * * * *", /invalid cron expression: .*minute.*61/i],
      ["* 24 * * *", /invalid cron expression: .*hour/i],
      ["*/0 * * * *", /invalid cron expression: .*stepping/i],
      ["5-1 * * * *", /invalid cron expression/],
      ["* * * * * *", /five-field cron expression/],
      ["* * * *", /five-field cron expression/],
      ["@daily", /five-field cron expression/],
      ["0 0 * * MON", /five-field cron expression/],
      ["0 0 L * *", /five-field cron expression/],
      ["0 0 31 2 *", /never runs/],
    ];
    for (const [schedule, why] of refused) {
      const res = await post(schedule);
      expectError(res, 400, "validation_failed");
      expect(res.body.error.details.issues).toHaveLength(1);
      expect(res.body.error.details.issues[0].path).toBe("schedule");
      expect(`${schedule}: ${res.body.error.details.issues[0].message}`).toMatch(why);
    }
    const listed = await api(server, "GET", "/server/announcements", s.as());
    expect(listed.body.announcements).toEqual([]);

    for (const schedule of ["0 12 * * 1-5", "0,30 8-18/2 1,15 */3 0", "0 0 29 2 *"]) {
      expect((await post(schedule)).status).toBe(201);
    }
  });

  test("next run of a schedule is computed in UTC", () => {
    const from = new Date("2030-01-01T10:20:30Z");
    expect(nextRun("55 3 * * *", from)?.toISOString()).toBe("2030-01-02T03:55:00.000Z");
    expect(nextRun("*/15 * * * *", from)?.toISOString()).toBe("2030-01-01T10:30:00.000Z");
    expect(nextRun("0 0 29 2 *", from)?.toISOString()).toBe("2032-02-29T00:00:00.000Z");
  });
});

describe("the typed tRPC door", () => {
  test("servers, selectors and writes through @trpc/client, with the same rules as REST", async () => {
    const owner = await newUser(server);
    const teamId = await newTeam(server, owner);
    const client = trpcClient(server, owner.token);
    const created = await client.servers.create.mutate({
      team_id: teamId,
      name: "Typed",
      host: "127.0.0.1",
      port: 9,
      kind: "single",
    });
    expect(created.agent_token).toMatch(/^mcp_agent_/);
    const listed = await trpcClient(server, owner.token, { "x-team-id": teamId }).servers.list.query();
    expect(listed.servers.map((s) => s.server_id)).toEqual([created.server_id]);

    const scoped = trpcClient(server, owner.token, { "x-server-id": created.server_id });
    await scoped.servers.createRank.mutate({ name: "default", permissions: ["minecraft.command.help"] });
    expect((await scoped.servers.ranks.query()).ranks.map((r) => r.name)).toEqual(["default"]);
    const stats = await scoped.servers.uptimeStats.query({ window: "1h" });
    expect(stats).toMatchObject({ server_id: created.server_id, window: "1h", bucket_seconds: 60 });

    const noHeader = await trpcClient(server, owner.token)
      .servers.ranks.query()
      .catch((e) => e);
    expect(noHeader.data).toMatchObject({ code: "bad_request", httpStatus: 400 });
    expect(noHeader.message).toContain("x-server-id");
    const badKind = await client.servers.create
      .mutate({ team_id: teamId, name: "N", host: "127.0.0.1", port: 9, kind: "network" })
      .catch((e) => e);
    expect(badKind.data).toMatchObject({ code: "validation_failed", httpStatus: 400 });
    const stranger = await newUser(server);
    const hidden = await trpcClient(server, stranger.token, { "x-server-id": created.server_id })
      .servers.players.query({})
      .catch((e) => e);
    expect(hidden.data).toMatchObject({ code: "not_found", httpStatus: 404 });
  });
});
