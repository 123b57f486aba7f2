import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type Demo, DEMO_EMAIL, emptyReads, runDemo } from "../scripts/demo";
import type { RunningServer } from "../src/app";
import { startTestServer, stopTestServer } from "./harness";
import { api } from "./helpers";

/**
 * The demo as `npm run demo` runs it, against a real service: the service's own pinger, webhook
 * worker and metric flushes at the demo's settings, everything sent through the public doors.
 */
let srv: RunningServer;
let demo: Demo | undefined;
beforeAll(async () => {
  srv = await startTestServer({
    PINGER_ENABLED: "true",
    PING_INTERVAL_SECONDS: "10",
    METRICS_FLUSH_MS: "1000",
    WEBHOOK_CONCURRENCY: "4",
    WEBHOOK_POLL_MS: "200",
  });
});
afterAll(async () => {
  await demo?.stop();
  // Its pinger and webhook worker must not work beside later files' tests on a shared database.
  await stopTestServer(srv);
});

/** Polls `emptyReads` until nothing is empty or `ms` pass; returns what was still empty. */
async function untilFull(ms: number) {
  const deadline = Date.now() + ms;
  let missing = await emptyReads(srv.url);
  while (missing.length > 0 && Date.now() < deadline) {
    await Bun.sleep(250);
    missing = await emptyReads(srv.url);
  }
  return missing;
}

describe("npm run demo", () => {
  test("fills every dashboard read through the public doors: servers checked, charts from each window's start, uptime, players, bans, ranks, announcements, client app, members, keys, a delivered webhook", async () => {
    demo = await runDemo({ baseUrl: srv.url, live: false });
    expect(demo.email).toBe(DEMO_EMAIL);
    // The pinger's first checks, the last flush of the buckets and the webhook worker come within seconds.
    expect(await untilFull(30_000)).toEqual([]);

    const login = await api(srv, "POST", "/auth/login", { body: { email: demo.email, password: demo.password } });
    const token = login.body.access_token;
    const network = await api(srv, "GET", "/server/networks", { token, headers: { "x-team-id": demo.teamId } });
    expect(network.body.networks).toHaveLength(1);
    expect(network.body.networks[0]).toMatchObject({ network_name: "Blockworks", servers_total: 3 });
    const list = await api(srv, "GET", "/server/servers", { token, headers: { "x-team-id": demo.teamId } });
    expect(list.body.servers.map((s: any) => [s.name, s.kind])).toEqual([
      ["Lobby", "network"],
      ["Survival", "network"],
      ["BedWars", "network"],
      ["Creative Plots", "single"],
    ]);

    // Thirty days of sessions came in as agent events: players first seen weeks ago, with hours played.
    const creative = demo.servers.find((s) => s.key === "creative")!;
    const players = await api(srv, "GET", "/server/players?limit=200", {
      token,
      headers: { "x-server-id": creative.serverId },
    });
    const firstSeen = Math.min(...players.body.players.map((p: any) => Date.parse(p.first_seen)));
    expect(Date.now() - firstSeen).toBeGreaterThan(20 * 86_400_000);
    expect(players.body.players.some((p: any) => p.time_played_seconds > 3600)).toBe(true);
    expect(players.body.bans.map((b: any) => [b.name, b.origin])).toContainEqual(["PlotGriefer", "game"]);
    // The dashboard's ban reached the Survival agent's config.
    const survival = demo.servers.find((s) => s.key === "survival")!;
    const bans = await api(srv, "GET", "/server/players", { token, headers: { "x-server-id": survival.serverId } });
    expect(bans.body.bans.map((b: any) => [b.name, b.origin])).toContainEqual(["XrayAndy", "dashboard"]);
    // The team's players, the network's sessions and bans, a note, and Bedrock players among them.
    const team = { token, headers: { "x-team-id": demo.teamId } };
    const directory = await api(srv, "GET", "/players?limit=100", team);
    expect(directory.body.players.length).toBeGreaterThan(20);
    expect(directory.body.players.some((p: any) => p.edition === "bedrock")).toBe(true);
    const hops = await api(srv, "GET", "/server/networks/Blockworks/sessions", team);
    expect(hops.body.sessions.length).toBeGreaterThan(0);
    const networkBans = await api(srv, "GET", "/server/networks/Blockworks/bans", team);
    expect(networkBans.body.bans.map((b: any) => b.name)).toContain("HackerMan99");
    const xray = bans.body.bans.find((b: any) => b.name === "XrayAndy");
    const page = await api(srv, "GET", `/players/${xray.uuid}`, team);
    expect(page.body.notes.map((n: any) => n.text)).toEqual([
      "Admitted to using an X-ray pack; may appeal after 30 days.",
    ]);
    const editions = await api(srv, "GET", "/analytics/editions?network=Blockworks", team);
    expect(`${editions.status}`).toBe("200");
    expect(editions.body.editions.find((e: any) => e.edition === "bedrock").players).toBeGreaterThan(0);
  }, 180_000);

  test("a crash: the server is down because the connection is refused, the webhook hears it, and it comes back", async () => {
    const bedwars = demo!.servers.find((s) => s.key === "bedwars")!;
    const restart = await demo!.crash("bedwars");
    for (let i = 0; i < 3; i++) await srv.services.monitoring.checkNow(bedwars.serverId);
    const login = await api(srv, "POST", "/auth/login", { body: { email: demo!.email, password: demo!.password } });
    const read = () =>
      api(srv, "GET", `/server/servers/${bedwars.serverId}`, { token: login.body.access_token }).then((r) => r.body);
    expect((await read()).status).toMatchObject({ online: false, down_reason: "connection_refused" });
    const deadline = Date.now() + 15_000;
    while (!demo!.webhookEvents().includes("server.down") && Date.now() < deadline) await Bun.sleep(100);
    expect(demo!.webhookEvents()).toContain("server.down");
    await restart();
    await srv.services.monitoring.checkNow(bedwars.serverId);
    expect((await read()).status).toMatchObject({ online: true, down_reason: null, down_since: null });
  }, 60_000);
});
