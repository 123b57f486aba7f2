import { afterEach, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { and, eq } from "drizzle-orm";
import type { RunningServer } from "../src/app";
import { auditLog, networkSessions } from "../src/db/schema";
import { type FakeRcon, startFakeRcon } from "../packages/agent/test/fake-rcon";
import { type AgentProcess, serverDir, spawnAgent, trackPlayers, until } from "../packages/agent/test/support";
import { sharedServer } from "./harness";
import { addMember, api, expectError, newApiKey, newUser, type TestUser } from "./helpers";
import { agentApi, eventId, newServer } from "./servers-fixture";

let service: RunningServer;
beforeAll(async () => {
  service = await sharedServer();
});

const running: AgentProcess[] = [];
const fakes: FakeRcon[] = [];
afterEach(() => {
  for (const a of running.splice(0)) a.proc.kill("SIGKILL");
  for (const f of fakes.splice(0)) f.stop();
});

interface Net {
  owner: TestUser;
  teamId: string;
  name: string;
  servers: { id: string; token: string; name: string }[];
  /** Options for a team-selected request as the owner (or `token`). */
  as(token?: string): { token: string; headers: Record<string, string> };
  path(rest?: string): string;
}

/** A team with a network of servers named `names` (and one single server outside it). */
async function newNetwork(names: string[], name = `Blockworks ${crypto.randomUUID().slice(0, 8)}`): Promise<Net> {
  const first = await newServer(service, { name: names[0], kind: "network", network_name: name });
  const servers = [{ id: first.serverId, token: first.agentToken, name: names[0]! }];
  for (const n of names.slice(1)) servers.push(await addServer(first.owner, first.teamId, n, name));
  await addServer(first.owner, first.teamId, "Standalone", null);
  return {
    owner: first.owner,
    teamId: first.teamId,
    name,
    servers,
    as: (token = first.owner.token) => ({ token, headers: { "x-team-id": first.teamId } }),
    path: (rest = "") => `/server/networks/${encodeURIComponent(name)}${rest}`,
  };
}

async function addServer(owner: TestUser, teamId: string, name: string, network: string | null) {
  const res = await api(service, "POST", "/server/servers", {
    token: owner.token,
    body: {
      team_id: teamId,
      name,
      host: "127.0.0.1",
      port: 9,
      kind: network ? "network" : "single",
      ...(network && { network_name: network }),
    },
  });
  expect(`${res.status} ${res.text}`).toStartWith("201");
  return { id: res.body.server_id as string, token: res.body.agent_token as string, name };
}

const at = (base: number, seconds: number) => new Date(base + seconds * 1000).toISOString();

async function send(token: string, events: Record<string, unknown>[]) {
  const res = await agentApi(service, token, "POST", "/agent/events", {
    events: events.map((e) => ({ event_id: eventId(), ...e })),
  });
  expect(`${res.status} ${res.text}`).toStartWith("200");
}
const join_ = (token: string, uuid: string, name: string, when: string) =>
  send(token, [{ type: "join", uuid, name, at: when }]);
const leave = (token: string, uuid: string, when: string) => send(token, [{ type: "leave", uuid, at: when }]);

describe("network sessions", () => {
  test("a transfer that overlaps, or joins within NETWORK_HOP_GAP_SECONDS of the leave, continues the network session; a longer gap starts a new one", async () => {
    const net = await newNetwork(["Lobby", "Survival"]);
    const [lobby, survival] = net.servers as [Net["servers"][0], Net["servers"][0]];
    const t0 = Date.now() - 2 * 3600_000;
    const overlap = crypto.randomUUID();
    const withinGap = crypto.randomUUID();
    const beyondGap = crypto.randomUUID();
    // Overlap: the proxy joins Survival before Lobby's leave is written.
    await join_(lobby.token, overlap, "Overlap", at(t0, 0));
    await join_(survival.token, overlap, "Overlap", at(t0, 60));
    await leave(lobby.token, overlap, at(t0, 61));
    await leave(survival.token, overlap, at(t0, 600));
    // Within the gap: 20 s between the leave and the next join.
    await join_(lobby.token, withinGap, "Within", at(t0, 0));
    await leave(lobby.token, withinGap, at(t0, 100));
    await join_(survival.token, withinGap, "Within", at(t0, 120));
    await leave(survival.token, withinGap, at(t0, 200));
    // Beyond the gap: 100 s.
    await join_(lobby.token, beyondGap, "Beyond", at(t0, 0));
    await leave(lobby.token, beyondGap, at(t0, 100));
    await join_(survival.token, beyondGap, "Beyond", at(t0, 200));
    await leave(survival.token, beyondGap, at(t0, 300));

    const res = await api(service, "GET", net.path("/sessions"), net.as());
    expect(`${res.status} ${res.text}`).toStartWith("200");
    const of = (uuid: string) => res.body.sessions.filter((s: any) => s.uuid === uuid);
    expect(of(overlap)).toEqual([
      {
        network_session_id: expect.any(String),
        uuid: overlap,
        name: "Overlap",
        joined_at: at(t0, 0),
        left_at: at(t0, 600),
        duration_seconds: 600,
        online: false,
        hops: [
          { server_id: lobby.id, server_name: "Lobby", joined_at: at(t0, 0), left_at: at(t0, 61) },
          { server_id: survival.id, server_name: "Survival", joined_at: at(t0, 60), left_at: at(t0, 600) },
        ],
      },
    ]);
    expect(of(withinGap)).toHaveLength(1);
    expect(of(withinGap)[0]).toMatchObject({ joined_at: at(t0, 0), left_at: at(t0, 200), duration_seconds: 200 });
    expect(of(withinGap)[0].hops.map((h: any) => h.server_name)).toEqual(["Lobby", "Survival"]);
    // Two sessions, newest first.
    expect(of(beyondGap).map((s: any) => [s.joined_at, s.left_at, s.hops.length])).toEqual([
      [at(t0, 200), at(t0, 300), 1],
      [at(t0, 0), at(t0, 100), 1],
    ]);
    expect(res.body.sessions).toHaveLength(4);

    // The uuid filter and the cursor walk the same list, one at a time.
    const mine = await api(service, "GET", `${net.path("/sessions")}?uuid=${beyondGap}&limit=1`, net.as());
    expect(mine.body.sessions.map((s: any) => s.joined_at)).toEqual([at(t0, 200)]);
    const next = await api(
      service,
      "GET",
      `${net.path("/sessions")}?uuid=${beyondGap}&limit=1&cursor=${mine.body.next_cursor}`,
      net.as(),
    );
    expect(next.body.sessions.map((s: any) => s.joined_at)).toEqual([at(t0, 0)]);
    expect(next.body.next_cursor).toBeNull();
    expectError(await api(service, "GET", `${net.path("/sessions")}?cursor=bm9wZQ`, net.as()), 400, "bad_request");
  });

  test("a player on two servers of the network at once is online once, on the server joined last; the session stays open until both hops close", async () => {
    const net = await newNetwork(["Lobby", "Survival"]);
    const [lobby, survival] = net.servers as [Net["servers"][0], Net["servers"][0]];
    const p = crypto.randomUUID();
    const t0 = Date.now() - 60_000;
    await join_(lobby.token, p, "Hopper", at(t0, 0));
    await join_(survival.token, p, "Hopper", at(t0, 10));
    const page = await api(service, "GET", net.path(), net.as());
    expect(page.body.players_online).toBe(1);
    expect(page.body.online).toEqual([
      { uuid: p, name: "Hopper", server_id: survival.id, server_name: "Survival", since: at(t0, 10) },
    ]);
    expect(page.body.servers.map((s: any) => [s.name, s.players_online])).toEqual([
      ["Lobby", 1],
      ["Survival", 1],
    ]);
    await leave(lobby.token, p, at(t0, 20));
    let s = (await api(service, "GET", net.path("/sessions"), net.as())).body.sessions;
    expect(s).toHaveLength(1);
    expect(s[0]).toMatchObject({ online: true, left_at: null });
    await leave(survival.token, p, at(t0, 30));
    s = (await api(service, "GET", net.path("/sessions"), net.as())).body.sessions;
    expect(s[0]).toMatchObject({ online: false, left_at: at(t0, 30), duration_seconds: 30 });
  });

  test("the network page: per-server shares of time played and of sessions over the window, network sessions counted once", async () => {
    const net = await newNetwork(["Lobby", "Survival"]);
    const [lobby, survival] = net.servers as [Net["servers"][0], Net["servers"][0]];
    const t0 = Date.now() - 2 * 3600_000;
    const [a, b, c] = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];
    // a: Lobby 0..61, Survival 60..600 (one network session)
    await join_(lobby.token, a, "A", at(t0, 0));
    await join_(survival.token, a, "A", at(t0, 60));
    await leave(lobby.token, a, at(t0, 61));
    await leave(survival.token, a, at(t0, 600));
    // b: Lobby 0..100, Survival 120..200 (one)
    await join_(lobby.token, b, "B", at(t0, 0));
    await leave(lobby.token, b, at(t0, 100));
    await join_(survival.token, b, "B", at(t0, 120));
    await leave(survival.token, b, at(t0, 200));
    // c: Lobby 0..100, Survival 200..300 (two); and a session two days back, outside the 24h window.
    await join_(lobby.token, c, "C", at(t0, 0));
    await leave(lobby.token, c, at(t0, 100));
    await join_(survival.token, c, "C", at(t0, 200));
    await leave(survival.token, c, at(t0, 300));
    const old = Date.now() - 2 * 86_400_000;
    await join_(lobby.token, c, "C", at(old, 0));
    await leave(lobby.token, c, at(old, 1000));

    const day = await api(service, "GET", `${net.path()}?window=24h`, net.as());
    expect(`${day.status} ${day.text}`).toStartWith("200");
    // Lobby: 61 + 100 + 100 = 261 s over 3 sessions; Survival: 540 + 80 + 100 = 720 s over 3.
    expect(day.body).toMatchObject({
      network_name: net.name,
      window: "24h",
      players_online: 0,
      online: [],
      playtime_seconds: 981,
      network_sessions: 4,
    });
    expect(day.body.servers).toEqual([
      {
        server_id: lobby.id,
        name: "Lobby",
        online: null,
        players_online: 0,
        playtime_seconds: 261,
        playtime_share: 0.2661,
        sessions: 3,
        sessions_share: 0.5,
      },
      {
        server_id: survival.id,
        name: "Survival",
        online: null,
        players_online: 0,
        playtime_seconds: 720,
        playtime_share: 0.7339,
        sessions: 3,
        sessions_share: 0.5,
      },
    ]);
    // 7d (the default) takes in the older session too: Lobby 1261 s over 4, Survival unchanged.
    const week = await api(service, "GET", net.path(), net.as());
    expect(week.body.window).toBe("7d");
    expect(week.body.network_sessions).toBe(5);
    expect(
      week.body.servers.map((s: any) => [s.playtime_seconds, s.sessions, s.playtime_share, s.sessions_share]),
    ).toEqual([
      [1261, 4, 0.6365, 0.5714],
      [720, 3, 0.3635, 0.4286],
    ]);
    // The single server of the team, outside the network, is not in it.
    expect(week.body.servers).toHaveLength(2);
    const rows = await service.services.database.db
      .select()
      .from(networkSessions)
      .where(and(eq(networkSessions.teamId, net.teamId), eq(networkSessions.uuid, c)));
    expect(rows).toHaveLength(3);
  });

  test("unknown network, bad window and another team's network are refused without a trace of it", async () => {
    const net = await newNetwork(["Lobby"]);
    expectError(await api(service, "GET", "/server/networks/Nowhere", net.as()), 404, "not_found");
    expectError(await api(service, "GET", "/server/networks/Standalone", net.as()), 404, "not_found");
    expectError(await api(service, "GET", `${net.path()}?window=1y`, net.as()), 400);
    const other = await newUser(service, "net-other");
    const otherNet = await newNetwork(["Hub"]);
    // Another team's network under this team's header: not found; under theirs: not a member.
    expectError(await api(service, "GET", otherNet.path(), net.as()), 404, "not_found");
    expectError(await api(service, "GET", otherNet.path(), { ...otherNet.as(other.token) }), 403, "forbidden");
  });

  test("a network name with spaces, slashes and non-ASCII is addressed URL-encoded", async () => {
    const net = await newNetwork(["Lobby"], "Blöck / works");
    const res = await api(service, "GET", net.path(), net.as());
    expect(`${res.status} ${res.text}`).toStartWith("200");
    expect(res.body.network_name).toBe("Blöck / works");
  });
});

describe("network bans", () => {
  test("ban once: every server's agent config carries it, a server added later too; lifted once: each gets the pardon; history keeps every ban with who and why", async () => {
    const net = await newNetwork(["Lobby", "Survival"]);
    const griefer = crypto.randomUUID();
    const made = await api(service, "POST", net.path("/bans"), {
      ...net.as(),
      body: { uuid: griefer, name: "Griefer", reason: "X-ray" },
    });
    expect(`${made.status} ${made.text}`).toStartWith("201");
    expect(made.body).toMatchObject({
      network_name: net.name,
      uuid: griefer,
      name: "Griefer",
      reason: "X-ray",
      source: "Dashboard",
      expires: "forever",
      active: true,
      created_by: { kind: "user", id: net.owner.id, name: net.owner.email },
      lifted_at: null,
      end_reason: null,
    });
    const config = async (token: string) => (await agentApi(service, token, "GET", "/agent/config")).body;
    for (const s of net.servers) {
      const c = await config(s.token);
      expect(c.bans).toEqual([
        {
          uuid: griefer,
          name: "Griefer",
          reason: "X-ray",
          source: "Dashboard",
          origin: "dashboard",
          created: made.body.created,
          expires: "forever",
        },
      ]);
      expect(c.pardons).toEqual([]);
    }
    const later = await addServer(net.owner, net.teamId, "Creative", net.name);
    expect((await config(later.token)).bans.map((b: any) => b.uuid)).toEqual([griefer]);
    const standalone = (await api(service, "GET", "/server/servers", net.as())).body.servers.find(
      (s: any) => s.name === "Standalone",
    );
    expect(standalone).toBeDefined();

    // A second ban replaces the first without overwriting it.
    const again = await api(service, "POST", net.path("/bans"), {
      ...net.as(),
      body: {
        uuid: griefer,
        name: "Griefer",
        reason: "X-ray, again",
        expires: new Date(Date.now() + 86_400_000).toISOString(),
      },
    });
    expect(again.status).toBe(201);
    expect((await config(later.token)).bans.map((b: any) => b.reason)).toEqual(["X-ray, again"]);

    expect((await api(service, "DELETE", net.path(`/bans/${griefer}`), net.as())).status).toBe(200);
    for (const s of [...net.servers, later]) {
      const c = await config(s.token);
      expect(c.bans).toEqual([]);
      expect(c.pardons.map((p: any) => p.uuid)).toEqual([griefer]);
    }
    expectError(await api(service, "DELETE", net.path(`/bans/${griefer}`), net.as()), 404, "not_found");

    expect((await api(service, "GET", net.path("/bans"), net.as())).body).toMatchObject({ bans: [], total: 0 });
    const all = await api(service, "GET", `${net.path("/bans")}?state=all`, net.as());
    expect(all.body.total).toBe(2);
    expect(all.body.bans.map((b: any) => [b.reason, b.active, b.end_reason, b.lifted_by?.id ?? null])).toEqual([
      ["X-ray, again", false, "lifted", net.owner.id],
      ["X-ray", false, "replaced", net.owner.id],
    ]);

    const entries = await service.services.database.db
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.teamId, net.teamId), eq(auditLog.targetId, griefer)));
    expect(entries.map((e) => e.action).sort()).toEqual(["network.ban", "network.ban", "network.unban"]);
    const unban = entries.find((e) => e.action === "network.unban")!;
    expect(unban.changes).toMatchObject({
      network: { before: net.name, after: null },
      reason: { before: "X-ray, again" },
    });
  });

  test("a server ban and a network ban of one player: lifting either leaves the other in force, and no pardon goes out while one holds", async () => {
    const net = await newNetwork(["Lobby", "Survival"]);
    const [lobby, survival] = net.servers as [Net["servers"][0], Net["servers"][0]];
    const p = crypto.randomUUID();
    const serverBan = await api(service, "POST", "/server/bans", {
      token: net.owner.token,
      headers: { "x-server-id": lobby.id },
      body: { uuid: p, name: "Twice", reason: "Server" },
    });
    expect(serverBan.status).toBe(201);
    await api(service, "POST", net.path("/bans"), { ...net.as(), body: { uuid: p, name: "Twice", reason: "Network" } });
    const config = async (token: string) => (await agentApi(service, token, "GET", "/agent/config")).body;
    expect((await config(lobby.token)).bans.map((b: any) => b.reason)).toEqual(["Server"]);
    expect((await config(survival.token)).bans.map((b: any) => b.reason)).toEqual(["Network"]);
    await api(service, "DELETE", net.path(`/bans/${p}`), net.as());
    const l = await config(lobby.token);
    expect([l.bans.map((b: any) => b.reason), l.pardons]).toEqual([["Server"], []]);
    expect((await config(survival.token)).pardons.map((x: any) => x.uuid)).toEqual([p]);
  });

  test("who may ban: a viewer may read but not ban, a key limited to some servers may not act on the network, a bad body is a 400 with nothing written", async () => {
    const net = await newNetwork(["Lobby"]);
    const viewer = await newUser(service, "net-viewer");
    await addMember(service, net.owner, net.teamId, viewer, "viewer");
    const body = { uuid: crypto.randomUUID(), name: "Griefer" };
    expect((await api(service, "GET", net.path("/bans"), net.as(viewer.token))).status).toBe(200);
    expectError(await api(service, "POST", net.path("/bans"), { ...net.as(viewer.token), body }), 403, "forbidden");
    const limited = await newApiKey(service, net.owner, net.teamId, {
      scopes: ["moderation:write", "servers:read"],
      server_ids: [net.servers[0]!.id],
    });
    expectError(await api(service, "POST", net.path("/bans"), { ...net.as(limited.key), body }), 403, "forbidden");
    expectError(
      await api(service, "POST", net.path("/bans"), {
        ...net.as(),
        body: { ...body, expires: "2001-01-01T00:00:00Z" },
      }),
      400,
      "bad_request",
    );
    expectError(await api(service, "POST", net.path("/bans"), { ...net.as(), body: { uuid: "nope", name: "x" } }), 400);
    expect((await api(service, "GET", `${net.path("/bans")}?state=all`, net.as())).body.total).toBe(0);
  });
  test("ban by name alone: the player the team has seen by that name is banned on the network; an unknown name is a 404 with nothing written", async () => {
    const net = await newNetwork(["Lobby"]);
    const seen = crypto.randomUUID();
    await join_(net.servers[0]!.token, seen, "SeenOnce", new Date(Date.now() - 60_000).toISOString());
    const made = await api(service, "POST", net.path("/bans"), { ...net.as(), body: { name: "SeenOnce" } });
    expect(made.status).toBe(201);
    expect(made.body).toMatchObject({ uuid: seen, name: "SeenOnce" });
    expectError(
      await api(service, "POST", net.path("/bans"), { ...net.as(), body: { name: "NeverSeen" } }),
      404,
      "not_found",
    );
    const all = await api(service, "GET", `${net.path("/bans")}?state=all`, net.as());
    expect(all.body.bans.map((b: { uuid: string }) => b.uuid)).toEqual([seen]);
  });
});

describe("network ranks", () => {
  test("each server's agent config carries the network's ranks; a server rank of the same name wins", async () => {
    const net = await newNetwork(["Lobby", "Survival"]);
    const [lobby, survival] = net.servers as [Net["servers"][0], Net["servers"][0]];
    const mk = (body: Record<string, unknown>) => api(service, "POST", net.path("/ranks"), { ...net.as(), body });
    expect((await mk({ name: "default", weight: 0 })).status).toBe(201);
    expect((await mk({ name: "vip", weight: 10, prefix: "[VIP] ", parents: ["default"] })).status).toBe(201);
    expectError(await mk({ name: "vip" }), 409, "conflict");
    expectError(await mk({ name: "mod", parents: ["nobody"] }), 400, "bad_request");
    const put = await api(service, "PUT", net.path("/ranks/vip"), { ...net.as(), body: { weight: 20 } });
    expect(`${put.status} ${put.text}`).toStartWith("200");
    expect(put.body).toMatchObject({ name: "vip", weight: 20, prefix: "[VIP] " });
    expectError(
      await api(service, "PUT", net.path("/ranks/default"), { ...net.as(), body: { parents: ["vip"] } }),
      400,
      "bad_request",
    );
    expectError(await api(service, "DELETE", net.path("/ranks/default"), net.as()), 409, "conflict");

    const own = await api(service, "POST", "/server/ranks", {
      token: net.owner.token,
      headers: { "x-server-id": lobby.id },
      body: { name: "vip", weight: 5, prefix: "[Lobby VIP] " },
    });
    expect(own.status).toBe(201);
    const ranksOf = async (token: string) =>
      (await agentApi(service, token, "GET", "/agent/config")).body.ranks.map((r: any) => [r.name, r.prefix]);
    expect(await ranksOf(lobby.token)).toEqual([
      ["vip", "[Lobby VIP] "],
      ["default", null],
    ]);
    expect(await ranksOf(survival.token)).toEqual([
      ["vip", "[VIP] "],
      ["default", null],
    ]);
    expect((await api(service, "DELETE", net.path("/ranks/vip"), net.as())).status).toBe(200);
    expect(await ranksOf(survival.token)).toEqual([["default", null]]);
    expect((await api(service, "GET", net.path("/ranks"), net.as())).body.ranks.map((r: any) => r.name)).toEqual([
      "default",
    ]);
  });
});

describe("network bans through two running agents", () => {
  test("ban on the network: both agents ban in game; lift it: both pardon; neither reports it back as a game ban", async () => {
    const net = await newNetwork(["Lobby", "Survival"]);
    const griefer = crypto.randomUUID();
    const agents = net.servers.map((s) => {
      const rcon = startFakeRcon();
      fakes.push(rcon);
      trackPlayers(rcon);
      const dir = serverDir();
      const file = join(dir, "banned-players.json");
      let bans: any[] = [];
      const write = () => writeFileSync(file, JSON.stringify(bans, null, 2));
      write();
      // The fake applies ban and pardon to banned-players.json, as the server would.
      rcon.answers.set("ban", (cmd) => {
        const [, name, ...reason] = cmd.split(" ");
        bans.push({
          uuid: griefer,
          name,
          created: "2026-01-31 18:04:05 +0000",
          source: "Rcon",
          expires: "forever",
          reason: reason.join(" "),
        });
        write();
        return `Banned ${name}`;
      });
      rcon.answers.set("pardon", (cmd) => {
        bans = bans.filter((b) => b.name !== cmd.split(" ")[1]);
        write();
        return `Unbanned ${cmd.split(" ")[1]}`;
      });
      const proc = spawnAgent({
        MCP_AGENT_URL: service.url,
        MCP_AGENT_TOKEN: s.token,
        MCP_AGENT_RCON_PORT: String(rcon.port),
        MCP_AGENT_RCON_PASSWORD: rcon.password,
        MCP_AGENT_SERVER_DIR: dir,
        MCP_AGENT_HEARTBEAT_SECONDS: "1",
        MCP_AGENT_CONFIG_POLL_SECONDS: "1",
        MCP_AGENT_LOG_POLL_MS: "100",
        MCP_AGENT_BACKOFF_MIN_MS: "100",
        MCP_AGENT_BACKOFF_MAX_MS: "500",
        MCP_AGENT_REQUEST_TIMEOUT_MS: "2000",
      });
      running.push(proc);
      return { server: s, rcon, proc, banned: () => bans.map((b) => b.name) };
    });
    for (const a of agents)
      await until("the agent to be ready", () => a.proc.lines.some((l) => l.msg === "agent_ready"));

    const made = await api(service, "POST", net.path("/bans"), {
      ...net.as(),
      body: { uuid: griefer, name: "Griefer", reason: "Fly hacks" },
    });
    expect(made.status).toBe(201);
    for (const a of agents) {
      await until(`${a.server.name} to ban`, () => a.rcon.commands.includes("ban Griefer Fly hacks"));
      await until(`${a.server.name}'s list to hold the ban`, () => a.banned().includes("Griefer"));
    }
    expect((await api(service, "DELETE", net.path(`/bans/${griefer}`), net.as())).status).toBe(200);
    for (const a of agents) {
      await until(`${a.server.name} to pardon`, () => a.rcon.commands.includes("pardon Griefer"));
      await until(`${a.server.name}'s list to drop the ban`, () => a.banned().length === 0);
    }
    // Give a wrongly echoed ban or unban time to arrive, then check none did.
    await Bun.sleep(1500);
    for (const a of agents) {
      const players = await api(service, "GET", "/server/players", {
        token: net.owner.token,
        headers: { "x-server-id": a.server.id },
      });
      expect(players.body.bans).toEqual([]);
      expect(a.rcon.commands.filter((c) => c.startsWith("ban "))).toEqual(["ban Griefer Fly hacks"]);
      expect(a.rcon.commands.filter((c) => c.startsWith("pardon "))).toEqual(["pardon Griefer"]);
    }
    const game = await service.services.database.db
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.teamId, net.teamId), eq(auditLog.targetId, griefer)));
    expect(game.map((e) => e.action).sort()).toEqual(["network.ban", "network.unban"]);
  });
});
