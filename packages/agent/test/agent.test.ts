import { afterEach, beforeAll, describe, expect, test } from "bun:test";
import { appendFileSync, existsSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import type { RunningServer } from "../../../src/app";
import { agentEvents, playerSessions } from "../../../src/db/schema";
import { ciRunsElsewhere, freePort, sharedServer, startTestServer, tempDir } from "../../../test/harness";
import { api } from "../../../test/helpers";
import { newServer, type ServerFixture } from "../../../test/servers-fixture";
import { offlineUuid } from "../src/profiles";
import { type FakeRcon, startFakeRcon } from "./fake-rcon";
import { type AgentProcess, serverDir, spawnAgent, trackPlayers, until, vanilla } from "./support";

const running: AgentProcess[] = [];
const fakes: FakeRcon[] = [];
// Each test's agents stop with it: on two shared cores, idle agents left running slow the next test.
afterEach(() => {
  for (const a of running.splice(0)) a.proc.kill("SIGKILL");
  for (const f of fakes.splice(0)) f.stop();
});

function agentEnv(
  service: RunningServer,
  s: ServerFixture,
  rcon: FakeRcon,
  dir: string,
  extra: Record<string, string> = {},
) {
  return {
    MCP_AGENT_URL: service.url,
    MCP_AGENT_TOKEN: s.agentToken,
    MCP_AGENT_RCON_PORT: String(rcon.port),
    MCP_AGENT_RCON_PASSWORD: rcon.password,
    MCP_AGENT_SERVER_DIR: dir,
    MCP_AGENT_HEARTBEAT_SECONDS: "1",
    MCP_AGENT_CONFIG_POLL_SECONDS: "1",
    MCP_AGENT_LOG_POLL_MS: "100",
    MCP_AGENT_BACKOFF_MIN_MS: "100",
    MCP_AGENT_BACKOFF_MAX_MS: "500",
    MCP_AGENT_REQUEST_TIMEOUT_MS: "2000",
    ...extra,
  };
}

function start(env: Record<string, string>) {
  const a = spawnAgent(env);
  running.push(a);
  return a;
}

const fake = () => {
  const f = startFakeRcon();
  fakes.push(f);
  return f;
};

const log = (dir: string) => join(dir, "logs", "latest.log");
const players = async (service: RunningServer, s: ServerFixture) =>
  (await api(service, "GET", "/server/players", s.as())).body;
// Ready: the log caught up and the players online reconciled, so what the test writes next is new.
const started = (a: AgentProcess) => until("the agent to be ready", () => a.lines.some((l) => l.msg === "agent_ready"));

let service: RunningServer;
beforeAll(async () => {
  service = await sharedServer();
});

describe("agent process against the service and a fake RCON server", () => {
  test("joins and leaves from latest.log arrive with their UUIDs; heartbeats carry players, Paper TPS/MSPT and memory", async () => {
    const s = await newServer(service);
    const rcon = fake();
    const online = trackPlayers(rcon);
    rcon.answers.set("tps", "§6TPS from last 1m, 5m, 15m: §a19.5, §a*20.0, §a20.0");
    rcon.answers.set(
      "mspt",
      "§6Server tick times §e(§7avg§e/§7min§e/§7max§e)§6 from last 5s§7,§6 10s§7,§6 1m§e:\n§6◴ §a12.3§7/§a4.1§7/§a30.2§7, §a11.0§7/§a4.0§7/§a31.0§7, §a10.0§7/§a3.9§7/§a40.0",
    );
    const dir = serverDir();
    const agent = start(agentEnv(service, s, rcon, dir, { MCP_AGENT_SERVER_PID: String(process.pid) }));
    await started(agent);

    const steve = crypto.randomUUID();
    const alex = crypto.randomUUID();
    appendFileSync(log(dir), vanilla(`UUID of player Steve is ${steve}`, "User Authenticator #1"));
    appendFileSync(log(dir), vanilla("Steve joined the game"));
    appendFileSync(log(dir), vanilla(`UUID of player Alex is ${alex}`, "User Authenticator #2"));
    appendFileSync(log(dir), vanilla("Alex joined the game"));
    appendFileSync(log(dir), vanilla("<Alex> Steve left the game"));
    appendFileSync(log(dir), vanilla("Steve left the game"));
    online.set("Alex", alex);

    const list = await until("both players", async () => {
      const p = await players(service, s);
      return p.players.length === 2 && p.players.every((x: any) => x.online === (x.name === "Alex")) && p;
    });
    expect(Object.fromEntries(list.players.map((p: any) => [p.name, p.uuid]))).toEqual({ Steve: steve, Alex: alex });

    const agentBlock = await until("a heartbeat with TPS", async () => {
      const r = await api(service, "GET", `/server/servers/${s.serverId}`, { token: s.owner.token });
      return r.body.agent?.players_online === 1 && r.body.agent;
    });
    expect(agentBlock.tps).toBeCloseTo(19.5, 3);
    expect(agentBlock.mspt).toBeCloseTo(12.3, 3);
    expect(agentBlock.memory_used_mb).toBeGreaterThan(10);
    // The test runner has no -Xmx: no maximum is invented.
    expect(agentBlock.memory_max_mb).toBeNull();
    const rows = await service.services.database.db
      .select()
      .from(agentEvents)
      .where(eq(agentEvents.serverId, s.serverId));
    expect(rows.map((r) => r.eventId.split(".")[0])).toEqual(["log", "log", "log"]);
  });

  test("vanilla's tick query gives TPS and MSPT when Paper's tps is not a command", async () => {
    const s = await newServer(service);
    const rcon = fake();
    trackPlayers(rcon);
    rcon.answers.set(
      "tick",
      "The game is running normally\nTarget tick rate: 20.0 per second.\nAverage time per tick: 62.5ms (Target: 50.0ms)\nPercentiles: P50: 60.1ms P95: 70.2ms P99: 80.3ms, sample: 100",
    );
    const dir = serverDir();
    start(agentEnv(service, s, rcon, dir));
    const block = await until("a heartbeat with TPS", async () => {
      const r = await api(service, "GET", `/server/servers/${s.serverId}`, { token: s.owner.token });
      return typeof r.body.agent?.tps === "number" && r.body.agent;
    });
    // 62.5 ms a tick does not fit in the 50 ms slot: 16 ticks a second, not the target 20.
    expect(block.tps).toBeCloseTo(16, 3);
    expect(block.mspt).toBeCloseTo(62.5, 3);
    expect(rcon.commands).toContain("tps");
    expect(rcon.commands).toContain("tick query");
  });

  test("a server that offers no TPS command reports none", async () => {
    const s = await newServer(service);
    const rcon = fake();
    trackPlayers(rcon);
    start(agentEnv(service, s, rcon, serverDir()));
    const block = await until("a heartbeat", async () => {
      const r = await api(service, "GET", `/server/servers/${s.serverId}`, { token: s.owner.token });
      return r.body.agent && rcon.commands.includes("tick query") && r.body.agent;
    });
    expect(block.players_online).toBe(0);
    expect(block.tps).toBeNull();
    expect(block.mspt).toBeNull();
  });

  test("bans both ways: in game to the service, dashboard to the game, and neither echoed back", async () => {
    const s = await newServer(service);
    const rcon = fake();
    trackPlayers(rcon);
    const dir = serverDir();
    const bansFile = join(dir, "banned-players.json");
    let bans: any[] = [];
    const writeBans = () => writeFileSync(bansFile, JSON.stringify(bans, null, 2));
    writeBans();
    // The fake applies ban and pardon to banned-players.json, as the server would.
    rcon.answers.set("ban", (cmd) => {
      const [, name, ...reason] = cmd.split(" ");
      bans.push({
        uuid: griefer,
        name,
        created: "2025-01-31 18:04:05 +0000",
        source: "Rcon",
        expires: "forever",
        reason: reason.join(" "),
      });
      writeBans();
      return `Banned ${name}`;
    });
    rcon.answers.set("pardon", (cmd) => {
      bans = bans.filter((b) => b.name !== cmd.split(" ")[1]);
      writeBans();
      return `Unbanned ${cmd.split(" ")[1]}`;
    });
    const jeb = crypto.randomUUID();
    const griefer = crypto.randomUUID();
    start(agentEnv(service, s, rcon, dir));

    bans.push({
      uuid: jeb,
      name: "jeb_",
      created: "2025-01-30 10:00:00 +0000",
      source: "Notch",
      expires: "forever",
      reason: "Griefing",
    });
    writeBans();
    const gameBan = await until("the game ban", async () =>
      (await players(service, s)).bans.find((b: any) => b.uuid === jeb),
    );
    expect(gameBan).toMatchObject({
      name: "jeb_",
      reason: "Griefing",
      source: "Notch",
      origin: "game",
      expires: "forever",
    });

    const res = await api(service, "POST", "/server/bans", {
      ...s.as(),
      body: { uuid: griefer, name: "Griefer", reason: "Fly hacks" },
    });
    expect(res.status).toBe(201);
    await until("the ban command", () => rcon.commands.includes("ban Griefer Fly hacks"));
    expect((await api(service, "DELETE", `/server/bans/${griefer}`, s.as())).status).toBe(200);
    await until("the pardon command", () => rcon.commands.includes("pardon Griefer"));

    bans = bans.filter((b) => b.uuid !== jeb);
    writeBans();
    await until("the game unban", async () => !(await players(service, s)).bans.some((b: any) => b.uuid === jeb));
    await Bun.sleep(500);
    const ids = (
      await service.services.database.db.select().from(agentEvents).where(eq(agentEvents.serverId, s.serverId))
    ).map((r) => r.eventId.split(".")[0]);
    // Only the in-game ban and unban: the dashboard's own ban and pardon are not reported back.
    expect(ids.sort()).toEqual(["ban", "unban"]);
    expect(rcon.commands.filter((c) => c.startsWith("ban "))).toEqual(["ban Griefer Fly hacks"]);
  });

  test("an opted-out player's joins and leaves are neither queued nor sent; an erased player's ban is applied at their next join", async () => {
    const s = await newServer(service);
    const rcon = fake();
    const online = trackPlayers(rcon);
    rcon.answers.set("ban", (cmd) => `Banned ${cmd.split(" ")[1]}`);
    const quiet = crypto.randomUUID();
    const griefer = crypto.randomUUID();
    const alex = crypto.randomUUID();
    const teamHeaders = { token: s.owner.token, headers: { "x-team-id": s.teamId } };
    expect(
      (await api(service, "POST", `/teams/${s.teamId}/opt-outs`, { token: s.owner.token, body: { uuid: quiet } }))
        .status,
    ).toBe(201);
    await api(service, "POST", "/server/bans", { ...s.as(), body: { uuid: griefer, name: "Griefer", reason: "Xray" } });
    expect((await api(service, "POST", `/players/${griefer}/erase`, teamHeaders)).status).toBe(200);
    const dir = serverDir();
    const agent = start(agentEnv(service, s, rcon, dir));
    await started(agent);
    await until("the config", () => agent.lines.some((l) => l.msg === "config_pulled" && l.opt_outs === 1));

    // The ban has no name to ban by: nothing is run until the player shows up.
    expect(rcon.commands.filter((c) => c.startsWith("ban "))).toEqual([]);
    for (const [name, uuid] of [
      ["Quiet", quiet],
      ["Alex", alex],
      ["Grief2", griefer],
    ] as const) {
      appendFileSync(log(dir), vanilla(`UUID of player ${name} is ${uuid}`, "User Authenticator #1"));
      appendFileSync(log(dir), vanilla(`${name} joined the game`));
      online.set(name, uuid);
    }
    appendFileSync(log(dir), vanilla("Quiet left the game"));
    online.delete("Quiet");
    await until("Alex", async () => (await players(service, s)).players.some((p: any) => p.uuid === alex));
    await until("the ban by the name the join gave", () => rcon.commands.includes("ban Grief2"));
    await Bun.sleep(500);
    const known = (await players(service, s)).players.map((p: any) => p.uuid);
    expect(known).not.toContain(quiet);
    const sent = (
      await service.services.database.db.select().from(agentEvents).where(eq(agentEvents.serverId, s.serverId))
    ).length;
    // Alex's and the banned player's joins; none of the opted-out player's lines.
    expect(sent).toBe(2);
    const queue = join(dir, ".mc-platform-agent", "queue.jsonl");
    expect(existsSync(queue) ? readFileSync(queue, "utf8") : "").not.toContain(quiet);
  });

  test("a kick asked for in the dashboard is run once in game, by a moderator's key too", async () => {
    const s = await newServer(service);
    const rcon = fake();
    trackPlayers(rcon);
    rcon.answers.set("kick", (cmd) => `Kicked ${cmd.split(" ")[1]}`);
    const keyRes = await api(service, "POST", `/teams/${s.teamId}/api-keys`, {
      token: s.owner.token,
      body: { name: "mod bot", role: "moderator" },
    });
    start(agentEnv(service, s, rcon, serverDir()));
    const res = await api(service, "POST", "/server/kicks", {
      ...s.as(keyRes.body.key),
      body: { uuid: crypto.randomUUID(), name: "Griefer", reason: "Calm down\nplease" },
    });
    expect(res.status).toBe(201);
    // A name that could carry another command is never sent.
    await api(service, "POST", "/server/kicks", {
      ...s.as(),
      body: { uuid: crypto.randomUUID(), name: "x op me" },
    });
    await until("the kick command", () => rcon.commands.includes("kick Griefer Calm down please"));
    // Several more configuration reads: still one kick, and nothing else.
    await Bun.sleep(2500);
    expect(rcon.commands.filter((c) => c.startsWith("kick "))).toEqual(["kick Griefer Calm down please"]);
  });

  // Up to a minute of waiting for the next minute's start (the agent's scheduler, not the
  // database, is the subject): in CI, on PostgreSQL only.
  test.skipIf(ciRunsElsewhere("postgres"))(
    "announcements are broadcast with tellraw on their interval and on their cron schedule (UTC)",
    async () => {
      const s = await newServer(service);
      const rcon = fake();
      trackPlayers(rcon);
      const sent: { cmd: string; at: Date }[] = [];
      rcon.answers.set("tellraw", (cmd) => {
        sent.push({ cmd, at: new Date() });
        return "";
      });
      const every = await api(service, "POST", "/server/announcements", {
        ...s.as(),
        body: { message: "&aVote for us!", interval_seconds: 10 },
      });
      const cron = await api(service, "POST", "/server/announcements", {
        ...s.as(),
        body: { message: "Top of the minute", schedule: "* * * * *" },
      });
      expect([every.status, cron.status]).toEqual([201, 201]);
      start(agentEnv(service, s, rcon, serverDir()));

      const interval = () => sent.filter((x) => x.cmd === 'tellraw @a {"text":"§aVote for us!"}');
      await until("two interval broadcasts", () => interval().length >= 2, 30_000);
      const gap = interval()[1]!.at.getTime() - interval()[0]!.at.getTime();
      expect(gap).toBeGreaterThan(9_000);
      expect(gap).toBeLessThan(11_500);

      const top = await until(
        "the cron broadcast",
        () => sent.find((x) => x.cmd === 'tellraw @a {"text":"Top of the minute"}'),
        65_000,
      );
      expect(top.at.getUTCSeconds()).toBeLessThan(3);
    },
    90_000,
  );

  test("ranks are reported unsupported when LuckPerms does not answer", async () => {
    const s = await newServer(service);
    const rcon = fake();
    trackPlayers(rcon);
    expect(
      (
        await api(service, "POST", "/server/ranks", {
          ...s.as(),
          body: { name: "vip", permissions: ["essentials.fly"] },
        })
      ).status,
    ).toBe(201);
    const agent = start(agentEnv(service, s, rcon, serverDir()));
    const line = await until("the unsupported line", () => agent.lines.find((l) => l.msg === "ranks_unsupported"));
    expect(line).toMatchObject({ level: "warn", ranks: 1 });
    expect(rcon.commands.some((c) => c.startsWith("lp group"))).toBe(false);
  });

  test("ranks become LuckPerms groups when LuckPerms answers", async () => {
    const s = await newServer(service);
    const rcon = fake();
    trackPlayers(rcon);
    rcon.answers.set("lp", (cmd) => (cmd === "lp info" ? "[LP] Running LuckPerms v5.4.141." : "[LP] ok"));
    await api(service, "POST", "/server/ranks", {
      ...s.as(),
      body: { name: "default", permissions: ["essentials.spawn"] },
    });
    await api(service, "POST", "/server/ranks", {
      ...s.as(),
      body: {
        name: "vip",
        weight: 10,
        prefix: "&a[VIP] ",
        permissions: ["essentials.fly", "-essentials.god"],
        parents: ["default"],
      },
    });
    start(agentEnv(service, s, rcon, serverDir()));
    await until("the vip group", () => rcon.commands.includes("lp group vip parent add default"));
    expect(rcon.commands).toEqual(
      expect.arrayContaining([
        "lp creategroup vip",
        "lp group vip setweight 10",
        'lp group vip meta setprefix 10 "&a[VIP] "',
        "lp group vip permission set essentials.fly true",
        "lp group vip permission set essentials.god false",
        "lp creategroup default",
      ]),
    );
  });

  test("service killed and restarted, log rotated, agent killed and restarted: every event counted once", async () => {
    const dataDir = tempDir();
    const port = String(freePort());
    let own = await startTestServer({ DATA_DIR: dataDir, PORT: port });
    const s = await newServer(own);
    const rcon = fake();
    const online = trackPlayers(rcon);
    const dir = serverDir();
    const env = agentEnv(own, s, rcon, dir);
    let agent = start(env);
    await started(agent);
    const uuid: Record<string, string> = {};
    const joinGame = (name: string) => {
      uuid[name] = crypto.randomUUID();
      appendFileSync(log(dir), vanilla(`UUID of player ${name} is ${uuid[name]}`, "User Authenticator #1"));
      appendFileSync(log(dir), vanilla(`${name} joined the game`));
      online.set(name, uuid[name]!);
    };
    const leave = (name: string) => {
      appendFileSync(log(dir), vanilla(`${name} left the game`));
      online.delete(name);
    };
    const eventsIn = async () =>
      (await own.services.database.db.select().from(agentEvents).where(eq(agentEvents.serverId, s.serverId))).length;

    joinGame("Steve");
    await until("Steve's join", async () => (await eventsIn()) === 1);

    await own.stop();
    leave("Steve");
    joinGame("Alex");
    joinGame("Bob");
    await until("the agent to notice", () => agent.lines.some((l) => l.msg === "service_unreachable"));
    await until("the queue on disk", () => statSync(join(dir, ".mc-platform-agent", "queue.jsonl")).size > 0);
    own = await startTestServer({ DATA_DIR: dataDir, PORT: port });
    await until("the queue replayed", async () => (await eventsIn()) === 4);

    // Rotation as vanilla does it on start: the last line lands in the old file just before it moves.
    leave("Bob");
    renameSync(log(dir), join(dir, "logs", "2025-01-31-1.log"));
    writeFileSync(log(dir), vanilla(`Starting minecraft server version 1.21.4 ${Math.random()}`));
    leave("Alex");
    joinGame("Carl");
    await until("the lines after rotation", async () => (await eventsIn()) === 7);

    agent.proc.kill("SIGKILL");
    await agent.proc.exited;
    leave("Carl");
    agent = start(env);
    await started(agent);
    await until("Carl's leave", async () => (await eventsIn()) === 8);
    await Bun.sleep(1500);
    expect(await eventsIn()).toBe(8);

    const sessions = await own.services.database.db
      .select()
      .from(playerSessions)
      .where(eq(playerSessions.serverId, s.serverId));
    const byPlayer = Object.fromEntries(
      Object.entries(uuid).map(([name, id]) => [
        name,
        sessions.filter((x) => x.uuid === id).map((x) => x.leftAt !== null),
      ]),
    );
    expect(byPlayer).toEqual({ Steve: [true], Alex: [true], Bob: [true], Carl: [true] });

    agent.proc.kill("SIGTERM");
    expect(await agent.proc.exited).toBe(0);
    expect(agent.lines.some((l) => l.msg === "agent_stopped")).toBe(true);
  });
});

describe("server families and proxies", () => {
  const p2 = (n: number) => String(n).padStart(2, "0");
  const clock = () => {
    const d = new Date();
    return `${p2(d.getHours())}:${p2(d.getMinutes())}:${p2(d.getSeconds())}`;
  };
  const months = "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split(" ");
  /** Forge 1.16.5+ and NeoForge: a dated time and the logger segment. */
  const forge = (logger: string, message: string, thread = "Server thread") => {
    const d = new Date();
    return `[${p2(d.getDate())}${months[d.getMonth()]}${d.getFullYear()} ${clock()}.123] [${thread}/INFO] [${logger}/]: ${message}\n`;
  };
  const events = async (s: ServerFixture) =>
    (await service.services.database.db.select().from(agentEvents).where(eq(agentEvents.serverId, s.serverId))).length;
  const sessionsOf = async (s: ServerFixture) =>
    service.services.database.db.select().from(playerSessions).where(eq(playerSessions.serverId, s.serverId));

  test("Forge/NeoForge: joins, leaves and UUIDs in the dated layout; a renamed player keeps the UUID; each login's two lines count once", async () => {
    const s = await newServer(service);
    const rcon = fake();
    trackPlayers(rcon);
    const dir = serverDir();
    const agent = start(agentEnv(service, s, rcon, dir));
    await started(agent);
    const steve = crypto.randomUUID();
    const login = "net.minecraft.server.network.ServerLoginPacketListenerImpl";
    appendFileSync(log(dir), forge(login, `UUID of player Steve is ${steve}`, "User Authenticator #1"));
    appendFileSync(
      log(dir),
      forge(
        "net.minecraft.server.players.PlayerList",
        "Steve[/127.0.0.1:50412] logged in with entity id 7 at (0.5, 64.0, 0.5)",
      ),
    );
    appendFileSync(log(dir), forge("net.minecraft.server.MinecraftServer", "Steve joined the game"));
    appendFileSync(log(dir), forge("net.minecraft.server.MinecraftServer", "<Alex> Steve left the game"));
    appendFileSync(
      log(dir),
      forge("net.minecraft.server.network.ServerGamePacketListenerImpl", "Steve lost connection: Disconnected"),
    );
    appendFileSync(log(dir), forge("net.minecraft.server.MinecraftServer", "Steve left the game"));
    // The account was renamed between two sessions; the server says so, with no UUID line this time.
    appendFileSync(
      log(dir),
      forge("net.minecraft.server.MinecraftServer", "Alex (formerly known as Steve) joined the game"),
    );

    const list = await until("the renamed player online", async () => {
      const p = await players(service, s);
      return p.players.length === 1 && p.players[0].name === "Alex" && p.players[0].online && p;
    });
    expect(list.players[0].uuid).toBe(steve);
    expect(await events(s)).toBe(3);
    expect((await sessionsOf(s)).map((x) => x.leftAt !== null).sort()).toEqual([false, true]);
    expect(agent.lines.some((l) => l.msg === "join_without_uuid")).toBe(false);
  });

  test("beside Velocity: network-wide sessions with UUIDs from the profile API; hops are not sessions; a refused second login is not a leave", async () => {
    const s = await newServer(service);
    const rcon = fake();
    trackPlayers(rcon);
    const accounts: Record<string, string> = { Steve: crypto.randomUUID(), Alex: crypto.randomUUID() };
    const asked: string[] = [];
    const profiles = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch(req) {
        const name = decodeURIComponent(new URL(req.url).pathname.split("/").pop()!);
        asked.push(name);
        const id = accounts[name];
        return id ? Response.json({ id: id.replace(/-/g, ""), name }) : new Response(null, { status: 404 });
      },
    });
    try {
      const dir = serverDir();
      writeFileSync(join(dir, "velocity.toml"), 'bind = "0.0.0.0:25577"\nonline-mode = true\n');
      const agent = start(
        agentEnv(service, s, rcon, dir, {
          MCP_AGENT_PROFILE_URL: `http://127.0.0.1:${profiles.port}/users/profiles/minecraft/`,
          MCP_AGENT_LOG_LEVEL: "debug",
        }),
      );
      await started(agent);
      const velocity = (message: string) =>
        `[${clock()}] [Netty epoll Worker #3/INFO] [com.velocitypowered.proxy]: ${message}\n`;
      appendFileSync(log(dir), velocity("[connected player] Steve (/10.0.0.5:50412) has connected"));
      appendFileSync(log(dir), velocity("[server connection] Steve -> lobby has connected"));
      appendFileSync(log(dir), velocity("[connected player] Alex (/10.0.0.6:50413) has connected"));
      appendFileSync(log(dir), velocity("[server connection] Alex -> lobby has connected"));
      appendFileSync(
        log(dir),
        velocity("[connected player] Steve (/10.0.0.5:50412): kicked from server lobby: Server closed"),
      );
      appendFileSync(log(dir), velocity("[server connection] Steve -> survival has connected"));
      appendFileSync(
        log(dir),
        velocity(
          "[connected player] Alex (/10.0.0.9:50999) has disconnected: You are already connected to this proxy!",
        ),
      );
      // kick-existing-players: Alex connects again; the old connection's leave is not the player's.
      appendFileSync(log(dir), velocity("[connected player] Alex (/10.0.0.8:51000) has connected"));
      appendFileSync(
        log(dir),
        velocity("[connected player] Alex (/10.0.0.6:50413) has disconnected: You logged in from another location"),
      );
      appendFileSync(log(dir), velocity("[connected player] Steve (/10.0.0.5:50412) has disconnected"));
      appendFileSync(log(dir), velocity("[connected player] Ghost (/10.0.0.7:50414) has connected"));

      const list = await until("Steve gone, Alex still on", async () => {
        const p = await players(service, s);
        return p.players.length === 2 && p.players.every((x: any) => x.online === (x.name === "Alex")) && p;
      });
      expect(Object.fromEntries(list.players.map((p: any) => [p.name, p.uuid]))).toEqual(accounts);
      expect(await events(s)).toBe(3);
      expect(agent.lines.filter((l) => l.msg === "player_server").map((l) => `${l.name}>${l.server}`)).toEqual([
        "Steve>lobby",
        "Alex>lobby",
        "Steve>survival",
      ]);
      await until("the unknown account reported", () =>
        agent.lines.some((l) => l.msg === "join_without_uuid" && l.name === "Ghost"),
      );
      expect(asked.sort()).toEqual(["Alex", "Ghost", "Steve"]);
    } finally {
      profiles.stop(true);
    }
  });

  test("beside BungeeCord: proxy.log.0 read, offline-mode UUIDs derived from names, the first server connect is the join and the UpstreamBridge line the leave", async () => {
    const s = await newServer(service);
    const rcon = fake();
    trackPlayers(rcon);
    const dir = tempDir("mcp-bungee-");
    writeFileSync(join(dir, "config.yml"), "listeners:\n- host: 0.0.0.0:25577\nonline_mode: false\nip_forward: true\n");
    const file = join(dir, "proxy.log.0");
    writeFileSync(
      file,
      `${clock()} [INFO] Enabled BungeeCord version git:BungeeCord-Bootstrap:1.21-R0.1-SNAPSHOT:abc1234:1900\n`,
    );
    const agent = start(agentEnv(service, s, rcon, dir, { MCP_AGENT_PROFILE_URL: "off" }));
    await started(agent);
    const bungee = (message: string) => `${clock()} [INFO] ${message}\n`;
    appendFileSync(file, bungee("[/10.0.0.5:50412] <-> InitialHandler has connected"));
    appendFileSync(file, bungee("[Steve] <-> ServerConnector [lobby] has connected"));
    appendFileSync(file, bungee("[Steve] <-> ServerConnector [survival] has connected"));
    appendFileSync(file, bungee("[Steve] <-> DownstreamBridge <-> [lobby] has disconnected"));
    appendFileSync(file, bungee("[Steve] disconnected with: Kicked whilst connecting to survival: Server closed"));
    appendFileSync(file, bungee("[Steve] -> UpstreamBridge has disconnected"));

    const list = await until("Steve's session closed", async () => {
      const p = await players(service, s);
      return p.players.length === 1 && !p.players[0].online && p;
    });
    expect(list.players[0].uuid).toBe(offlineUuid("Steve"));
    expect(await events(s)).toBe(2);
    expect((await sessionsOf(s)).map((x) => x.leftAt !== null)).toEqual([true]);
    expect(agent.lines.some((l) => l.msg === "log_format_unrecognised")).toBe(false);
  });

  test("a log in no known layout is reported once, not on every line", async () => {
    const s = await newServer(service);
    const rcon = fake();
    trackPlayers(rcon);
    const dir = serverDir();
    const agent = start(agentEnv(service, s, rcon, dir));
    await started(agent);
    const lines = Array.from(
      { length: 130 },
      (_, i) => `${new Date().toISOString()} player${i} connected\n\tat frame ${i}\n`,
    );
    appendFileSync(log(dir), lines.join(""));
    await until("the warning", () => agent.lines.some((l) => l.msg === "log_format_unrecognised"));
    appendFileSync(log(dir), lines.join(""));
    await Bun.sleep(1000);
    const warnings = agent.lines.filter((l) => l.msg === "log_format_unrecognised");
    expect(warnings.length).toBe(1);
    expect(warnings[0].sample).toContain("player0 connected");
    expect(warnings[0].file).toBe(log(dir));
  });
});

describe("agent configuration", () => {
  test("every bad value is named at once and the agent exits 2", async () => {
    const a = spawnAgent({
      MCP_AGENT_URL: "ftp://x",
      MCP_AGENT_TOKEN: "nope",
      MCP_AGENT_RCON_PORT: "99999",
      MCP_AGENT_PROFILE_URL: "mojang",
    });
    expect(await a.proc.exited).toBe(2);
    const err = await a.stderr();
    expect(err).toContain("MCP_AGENT_URL must be an http(s) URL");
    expect(err).toContain("MCP_AGENT_TOKEN must be an agent token");
    expect(err).toContain("MCP_AGENT_RCON_PORT must be an integer from 1 to 65535");
    expect(err).toContain("MCP_AGENT_RCON_PASSWORD is required");
    expect(err).toContain('MCP_AGENT_PROFILE_URL must be an http(s) URL the player\'s name is appended to, or "off"');
    expect(err).not.toContain("nope");
  });

  test("a config file is read, environment variables win, and --check verifies each connection", async () => {
    const s = await newServer(service);
    const rcon = fake();
    trackPlayers(rcon);
    const dir = serverDir();
    const file = join(tempDir(), "agent.json");
    writeFileSync(
      file,
      JSON.stringify({
        url: service.url,
        token: s.agentToken,
        rcon_port: rcon.port,
        rcon_password: "wrong",
        server_dir: dir,
      }),
    );
    const bad = spawnAgent({}, ["--config", file, "--check"]);
    expect(await bad.proc.exited).toBe(1);
    await Bun.sleep(50);
    expect(bad.lines.map((l) => l.raw)).toEqual([
      expect.stringMatching(/^ok {3}service: .* accepts the token/),
      expect.stringMatching(/^FAIL rcon: .*Invalid RCON password/),
      expect.stringMatching(/^ok {3}log: /),
    ]);
    const good = spawnAgent({ MCP_AGENT_RCON_PASSWORD: rcon.password }, ["--config", file, "--check"]);
    expect(await good.proc.exited).toBe(0);
    expect(existsSync(file)).toBe(true);
    writeFileSync(file, JSON.stringify({ url: service.url, tokn: "x" }));
    const typo = spawnAgent({}, ["--config", file]);
    expect(await typo.proc.exited).toBe(2);
    expect(await typo.stderr()).toContain('unknown key "tokn"');
    expect(readFileSync(file, "utf8")).toContain("tokn");
  });
});
