import { afterAll, describe, expect, test } from "bun:test";
import { appendFileSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { type Responder, startStatusResponder } from "../scripts/demo-mc-server";
import type { RunningServer } from "../src/app";
import { rowsOf } from "../src/db/rows";
import { publicIncidents } from "../src/incidents/service";
import { isUnderMaintenance } from "../src/maintenance/service";
import { type FakeRcon, startFakeRcon } from "../packages/agent/test/fake-rcon";
import { type AgentProcess, serverDir, spawnAgent, trackPlayers, until, vanilla } from "../packages/agent/test/support";
import { startTestServer, stopTestServer } from "./harness";
import { api, expectError } from "./helpers";
import { newServer, type ServerFixture } from "./servers-fixture";
import { FAST_WEBHOOKS, type Receiver, startReceiver } from "./webhook-receiver";

/**
 * A real crash report, as a vanilla 1.20.4 server writes it to crash-reports/ when its tick loop
 * throws: the header, a comment, the time, the description, then the exception and its stack.
 */
const CRASH_REPORT = `---- Minecraft Crash Report ----
// Shall we play a game?

Time: 2026-11-27 11:40:00
Description: Exception in server tick loop

java.lang.IllegalStateException: Lock is no longer valid
\tat net.minecraft.world.level.storage.LevelStorageSource$LevelStorageAccess.checkLock(LevelStorageSource.java:440)
\tat net.minecraft.world.level.storage.LevelStorageSource$LevelStorageAccess.saveDataTag(LevelStorageSource.java:552)
\tat net.minecraft.server.MinecraftServer.saveAllChunks(MinecraftServer.java:646)
\tat net.minecraft.server.MinecraftServer.saveEverything(MinecraftServer.java:675)
\tat net.minecraft.server.MinecraftServer.tickServer(MinecraftServer.java:907)
\tat net.minecraft.server.dedicated.DedicatedServer.tickServer(DedicatedServer.java:283)
\tat net.minecraft.server.MinecraftServer.runServer(MinecraftServer.java:815)
\tat net.minecraft.server.MinecraftServer.lambda$spin$2(MinecraftServer.java:267)
\tat java.base/java.lang.Thread.run(Thread.java:1583)


A detailed walkthrough of the error, its code path and all known details is as follows:
---------------------------------------------------------------------------------------

-- System Details --
Details:
\tMinecraft Version: 1.20.4
\tMinecraft Version ID: 1.20.4
\tOperating System: Linux (amd64) version 6.1.0-13-amd64
\tJava Version: 21.0.1, Eclipse Adoptium
\tJava VM Version: OpenJDK 64-Bit Server VM (mixed mode, sharing), Eclipse Adoptium
\tMemory: 1386734592 bytes (1322 MiB) / 2147483648 bytes (2048 MiB) up to 4294967296 bytes (4096 MiB)
\tCPUs: 4
\tServer Running: true
\tPlayer Count: 0 / 20; []
\tIs Modded: Probably not. Server jar signature and brand is untouched
\tType: Dedicated Server (map_server.txt)
`;

const DONE = 'Done (3.104s)! For help, type "help"';

let srv: RunningServer;
const cleanup: (() => unknown)[] = [];
afterAll(async () => {
  for (const c of cleanup.reverse()) await c();
  if (srv) await stopTestServer(srv);
});

const events = (r: Receiver) => r.got.map((g) => JSON.parse(g.body) as { type: string; data: Record<string, any> });
const ofType = (r: Receiver, type: string) => events(r).filter((e) => e.type === type);
async function eventOf(r: Receiver, type: string, n = 1, ms = 20_000) {
  return until(`${n} ${type} event(s)`, () => ofType(r, type).length >= n && ofType(r, type)[n - 1]!, ms);
}
/** Everything queued so far delivered: what has not arrived was not sent. */
async function settle() {
  await srv.services.webhooks.flush();
  await srv.services.webhookWorker.drain();
}
const incidentsOf = async (f: ServerFixture) => {
  const res = await api(srv, "GET", `/server/incidents?server_id=${f.serverId}`, {
    token: f.owner.token,
    headers: { "x-team-id": f.teamId },
  });
  expect(`${res.status} ${res.text}`).toStartWith("200");
  return res.body.incidents as Record<string, any>[];
};

describe("crash or restart, end to end", () => {
  test("a real agent: an announced stop is no incident and no alert; a death with a crash report is a crash incident with its lines, alerted; back up resolves it; a maintenance window holds the alert", async () => {
    srv = await startTestServer({ ...FAST_WEBHOOKS });
    const hooks = startReceiver();
    const discord = startReceiver("/api/webhooks/1/abc");
    cleanup.push(
      () => hooks.stop(),
      () => discord.stop(),
    );
    let mc: Responder = await startStatusResponder();
    cleanup.push(() => mc.close());
    const port = mc.port;
    const f = await newServer(srv, { host: "127.0.0.1", port });
    const team = { token: f.owner.token, headers: { "x-team-id": f.teamId } };
    const types = ["server.down", "server.up", "incident.opened", "incident.updated", "incident.resolved"];
    for (const [url, kind] of [
      [hooks.url, "standard"],
      [discord.url, "discord"],
    ]) {
      const res = await api(srv, "POST", `/teams/${f.teamId}/webhooks`, {
        token: f.owner.token,
        body: { url, kind, event_types: types },
      });
      expect(`${res.status} ${res.text}`).toStartWith("201");
    }

    // The server's directory, its RCON and the agent from packages/agent, as a process.
    const dir = serverDir();
    mkdirSync(join(dir, "crash-reports"));
    const log = (line: string) => appendFileSync(join(dir, "logs", "latest.log"), vanilla(line));
    log(DONE);
    const rcon: FakeRcon = startFakeRcon();
    trackPlayers(rcon);
    cleanup.push(() => rcon.stop());
    const agent: AgentProcess = spawnAgent({
      MCP_AGENT_URL: srv.url,
      MCP_AGENT_TOKEN: f.agentToken,
      MCP_AGENT_RCON_PORT: String(rcon.port),
      MCP_AGENT_RCON_PASSWORD: rcon.password,
      MCP_AGENT_SERVER_DIR: dir,
      MCP_AGENT_HEARTBEAT_SECONDS: "1",
      MCP_AGENT_CONFIG_POLL_SECONDS: "5",
      MCP_AGENT_LOG_POLL_MS: "100",
      MCP_AGENT_BACKOFF_MIN_MS: "100",
      MCP_AGENT_BACKOFF_MAX_MS: "500",
    });
    cleanup.push(() => agent.proc.kill("SIGKILL"));
    await until("the agent to be ready", () => agent.lines.some((l) => l.msg === "agent_ready"));
    const db = srv.services.database.db;
    const alertState = async () =>
      rowsOf<{ planned_stop_at: unknown; held_for: string | null }>(
        await db.execute(sql`select planned_stop_at, held_for from server_alert_state where server_id = ${f.serverId}`),
      )[0];
    const check = () => srv.services.monitoring.checkNow(f.serverId);
    expect((await check())!.online).toBe(true);
    await until(
      "a heartbeat",
      async () =>
        rowsOf(
          await db.execute(
            sql`select 1 from server_status where server_id = ${f.serverId} and heartbeat_at is not null`,
          ),
        ).length > 0,
    );

    // 1. /stop: "Stopping the server", then the process ends. A planned stop.
    log("Stopping the server");
    log("Stopping server");
    log("Saving players");
    await until("the planned stop to arrive", async () => (await alertState())?.planned_stop_at);
    await mc.close();
    for (let i = 0; i < 4; i++) expect((await check())!.online).toBe(false);
    await settle();
    expect(events(hooks).map((e) => e.type)).toEqual([]);
    expect(await incidentsOf(f)).toEqual([]);
    expect((await alertState())!.held_for).toBe("planned");
    // It starts again: no server.up for a down nobody was told of.
    mc = await startStatusResponder({ port });
    log(DONE);
    expect((await check())!.online).toBe(true);
    await settle();
    expect(events(hooks).map((e) => e.type)).toEqual([]);
    expect(await alertState()).toMatchObject({ planned_stop_at: null, held_for: null });

    // 2. The tick loop throws: a crash report, "Stopping server" (never "Stopping the server"), gone.
    writeFileSync(join(dir, "crash-reports", "crash-2026-11-27_11.40.00-server.txt"), CRASH_REPORT);
    log("Stopping server");
    await mc.close();
    const opened = await eventOf(hooks, "incident.opened");
    expect(opened.data).toMatchObject({
      server_id: f.serverId,
      server_name: "Survival",
      kind: "crash",
      status: "investigating",
      title: "Survival crashed",
      ended_at: null,
    });
    expect(opened.data.crash.description).toBe("Exception in server tick loop");
    expect(opened.data.crash.lines[0]).toBe("java.lang.IllegalStateException: Lock is no longer valid");
    expect(opened.data.crash.lines[1]).toStartWith(
      "    at net.minecraft.world.level.storage.LevelStorageSource$LevelStorageAccess.checkLock",
    );
    // The lines end with the stack: nothing of the system details.
    expect(opened.data.crash.lines).toHaveLength(10);
    for (let i = 0; i < 3; i++) expect((await check())!.online).toBe(false);
    const down = await eventOf(hooks, "server.down");
    expect(down.data).toMatchObject({ server_id: f.serverId, failed_pings: 3, reason: "connection_refused" });
    await settle();
    expect(ofType(hooks, "incident.opened")).toHaveLength(1);
    // The same alert, as a Discord message.
    const chat = await until("the Discord message", () =>
      discord.got.map((g) => JSON.parse(g.body)).find((b) => b.embeds?.[0]?.title === "Incident: Survival crashed"),
    );
    expect(JSON.stringify(chat.embeds[0].fields)).toContain("Exception in server tick loop");

    const [incident] = await incidentsOf(f);
    expect(incident).toMatchObject({ kind: "crash", status: "investigating", ended_at: null });
    expect(incident!.crash).toMatchObject({
      file: "crash-2026-11-27_11.40.00-server.txt",
      description: "Exception in server tick loop",
    });

    // 3. Back up: resolved.
    mc = await startStatusResponder({ port });
    log(DONE);
    expect((await check())!.online).toBe(true);
    const resolved = await eventOf(hooks, "incident.resolved");
    expect(resolved.data).toMatchObject({ incident_id: incident!.incident_id, status: "resolved" });
    expect(resolved.data.ended_at).not.toBeNull();
    await eventOf(hooks, "server.up");
    const one = await api(srv, "GET", `/server/incidents/${incident!.incident_id}`, team);
    expect(one.status).toBe(200);
    expect(one.body.status).toBe("resolved");
    expect(one.body.updates.map((u: { status: string }) => u.status)).toEqual(["investigating", "resolved"]);
    // What a public status page may show of it: nothing of the crash.
    const shown = await publicIncidents(db, f.teamId, {
      serverIds: [f.serverId],
      networkNames: [],
      since: new Date(Date.now() - 3_600_000),
    });
    expect(shown).toMatchObject([{ incident_id: incident!.incident_id, kind: "down", status: "resolved" }]);
    expect(JSON.stringify(shown)).not.toMatch(/crash|Exception|IllegalState|@/i);
    // The uptime figures still list the down period.
    const uptime = await api(srv, "GET", "/server/uptime-stats?window=1h", f.as());
    expect(uptime.status).toBe(200);
    expect(uptime.body.incidents).toHaveLength(1);

    // 4. A maintenance window: the server dies inside it, and nothing is sent.
    const now = Date.now();
    const window = await api(srv, "POST", "/server/maintenance", {
      ...team,
      body: {
        server_id: f.serverId,
        title: "World backup",
        starts_at: new Date(now - 60_000).toISOString(),
        ends_at: new Date(now + 3_600_000).toISOString(),
      },
    });
    expect(`${window.status} ${window.text}`).toStartWith("201");
    expect(window.body.active).not.toBeNull();
    expect(await isUnderMaintenance(db, f.serverId)).toBe(true);
    const upcoming = await api(srv, "GET", "/server/maintenance/upcoming?days=1", team);
    expect(upcoming.body.occurrences).toMatchObject([{ window_id: window.body.window_id, active: true }]);
    await mc.close();
    for (let i = 0; i < 3; i++) expect((await check())!.online).toBe(false);
    await settle();
    expect(ofType(hooks, "server.down")).toHaveLength(1);
    expect(ofType(hooks, "incident.opened")).toHaveLength(1);
    expect((await alertState())!.held_for).toBe("maintenance");
    // The window ends with the server still down: the held alert goes out then.
    const ended = await api(srv, "PATCH", `/server/maintenance/${window.body.window_id}`, {
      ...team,
      body: { ends_at: new Date(Date.now() - 1000).toISOString() },
    });
    expect(`${ended.status} ${ended.text}`).toStartWith("200");
    await srv.services.alerts.releaseHeld();
    await eventOf(hooks, "server.down", 2);
    const second = await eventOf(hooks, "incident.opened", 2);
    expect(second.data).toMatchObject({ server_id: f.serverId, kind: "crash", crash: null });
    mc = await startStatusResponder({ port });
    expect((await check())!.online).toBe(true);
    await eventOf(hooks, "incident.resolved", 2);
  }, 180_000);
});

describe("incidents by hand and maintenance windows", () => {
  test("a team posts an incident for a network, adds updates, resolves it; each is an audit entry and a webhook event", async () => {
    srv ??= await startTestServer({ ...FAST_WEBHOOKS });
    const hooks = startReceiver();
    cleanup.push(() => hooks.stop());
    const f = await newServer(srv, { kind: "network", network_name: "Blockworks" });
    const team = { token: f.owner.token, headers: { "x-team-id": f.teamId } };
    await api(srv, "POST", `/teams/${f.teamId}/webhooks`, {
      token: f.owner.token,
      body: { url: hooks.url, event_types: ["incident.opened", "incident.updated", "incident.resolved"] },
    });
    const created = await api(srv, "POST", "/server/incidents", {
      ...team,
      body: {
        network_name: "Blockworks",
        title: "Lobby lag",
        status: "identified",
        message: "A plugin update slows the lobby.",
      },
    });
    expect(`${created.status} ${created.text}`).toStartWith("201");
    expect(created.body).toMatchObject({ kind: "manual", status: "identified", network_name: "Blockworks" });
    const id = created.body.incident_id;
    const upd = await api(srv, "POST", `/server/incidents/${id}/updates`, {
      ...team,
      body: { status: "monitoring", message: "Rolled back; watching." },
    });
    expect(upd.status).toBe(201);
    const done = await api(srv, "POST", `/server/incidents/${id}/updates`, {
      ...team,
      body: { status: "resolved", message: "All good." },
    });
    expect(done.body.status).toBe("resolved");
    expect(done.body.updates.map((u: { status: string }) => u.status)).toEqual([
      "identified",
      "monitoring",
      "resolved",
    ]);
    expect(done.body.updates[0].author).toMatchObject({ kind: "user", name: f.owner.email });
    await eventOf(hooks, "incident.opened");
    const updated = await eventOf(hooks, "incident.updated");
    expect(updated.data).toMatchObject({ network_name: "Blockworks", update: { status: "monitoring" } });
    await eventOf(hooks, "incident.resolved");
    const audit = await api(srv, "GET", `/teams/${f.teamId}/audit?action=incident.update`, { token: f.owner.token });
    expect(audit.status).toBe(200);
    expect(audit.body.entries).toHaveLength(2);
    // A manual incident is not a down period of the uptime figures.
    const list = await api(srv, "GET", "/server/incidents?network_name=Blockworks&state=resolved", team);
    expect(list.body.incidents).toHaveLength(1);
  });

  test("bad input is a clear 400; another team's incident or window is 404", async () => {
    srv ??= await startTestServer({ ...FAST_WEBHOOKS });
    const f = await newServer(srv);
    const other = await newServer(srv);
    const team = { token: f.owner.token, headers: { "x-team-id": f.teamId } };
    expectError(
      await api(srv, "POST", "/server/maintenance", {
        ...team,
        body: { server_id: f.serverId, title: "x", schedule: "0 4 * *", duration_minutes: 30 },
      }),
      400,
    );
    expectError(
      await api(srv, "POST", "/server/maintenance", {
        ...team,
        body: { server_id: f.serverId, title: "x", starts_at: "2026-01-02T00:00:00Z", ends_at: "2026-01-01T00:00:00Z" },
      }),
      400,
    );
    expectError(
      await api(srv, "POST", "/server/maintenance", {
        ...team,
        body: { server_id: other.serverId, title: "x", schedule: "0 4 * * *", duration_minutes: 30 },
      }),
      404,
    );
    expectError(await api(srv, "POST", "/server/incidents", { ...team, body: { title: "x", message: "y" } }), 400);
    const theirs = await api(srv, "POST", "/server/incidents", {
      token: other.owner.token,
      headers: { "x-team-id": other.teamId },
      body: { server_id: other.serverId, title: "Theirs", message: "m" },
    });
    expect(theirs.status).toBe(201);
    expectError(await api(srv, "GET", `/server/incidents/${theirs.body.incident_id}`, team), 404);
    // A recurring window, in the team's time zone: every Monday at 04:00 for 30 minutes.
    const weekly = await api(srv, "POST", "/server/maintenance", {
      ...team,
      body: { server_id: f.serverId, title: "Weekly restart", schedule: "0 4 * * 1", duration_minutes: 30 },
    });
    expect(`${weekly.status} ${weekly.text}`).toStartWith("201");
    expect(weekly.body.next).not.toBeNull();
    expect(new Date(weekly.body.next.ends_at).getTime() - new Date(weekly.body.next.starts_at).getTime()).toBe(
      30 * 60_000,
    );
    const upcoming = await api(srv, "GET", "/server/maintenance/upcoming?days=14", team);
    expect(upcoming.body.occurrences.length).toBe(2);
    const del = await api(srv, "DELETE", `/server/maintenance/${weekly.body.window_id}`, team);
    expect(del.status).toBe(200);
    expect((await api(srv, "GET", "/server/maintenance", team)).body.windows).toEqual([]);
  });
});
