import { afterAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { startStatusResponder } from "../scripts/demo-mc-server";
import { PerformanceAlerts } from "../src/alerts/evaluate";
import type { RunningServer } from "../src/app";
import { createLogger } from "../src/lib/log";
import { startTestServer, tempDir, usingPostgres } from "./harness";
import { addMember, api, expectError, newUser } from "./helpers";
import { agentApi, newServer } from "./servers-fixture";
import { FAST_WEBHOOKS, type Receiver, startReceiver } from "./webhook-receiver";

const receivers: Receiver[] = [];
const started: RunningServer[] = [];
afterAll(async () => {
  for (const r of receivers) r.stop();
  for (const s of started) await s.stop();
});
let shared: Promise<RunningServer> | undefined;
const app = () =>
  (shared ??= startTestServer({ ...FAST_WEBHOOKS, OUTBOUND_ALLOW_PRIVATE: "true" }).then((s) => {
    started.push(s);
    return s;
  }));
const receiver = () => {
  const r = startReceiver();
  receivers.push(r);
  return r;
};
type Event = { type: string; data: Record<string, any> };
const events = (r: Receiver) => r.got.map((g) => JSON.parse(g.body) as Event);

/** Waits until the receiver has `n` events, then for anything late, and returns them all. */
async function settle(srv: RunningServer, r: Receiver, n: number, ms = 20_000): Promise<Event[]> {
  const deadline = Date.now() + ms;
  for (;;) {
    await srv.services.webhooks.flush();
    await srv.services.webhookWorker.drain();
    if (events(r).length >= n) break;
    if (Date.now() > deadline)
      throw new Error(`wanted ${n} events, got ${JSON.stringify(events(r).map((e) => e.type))}`);
    await Bun.sleep(20);
  }
  return events(r);
}

async function hookFor(srv: RunningServer, token: string, teamId: string, url: string, kind = "standard") {
  const res = await api(srv, "POST", `/teams/${teamId}/webhooks`, {
    token,
    body: { url, kind, event_types: ["alert.firing", "alert.resolved"] },
  });
  expect(`${res.status} ${res.text}`).toStartWith("201");
}

const ago = (s: number, base: number) => new Date(base - s * 1000).toISOString();

describe("alert rules", () => {
  test("CRUD over REST: defaults, validation, one target, team isolation, roles, audit", async () => {
    const srv = await app();
    const f = await newServer(srv);
    const base = `/teams/${f.teamId}/alert-rules`;
    const created = await api(srv, "POST", base, {
      token: f.owner.token,
      body: { name: "Low TPS", server_id: f.serverId, metric: "tps", op: "below", threshold: 18 },
    });
    expect(`${created.status} ${created.text}`).toStartWith("201");
    expect(created.body).toMatchObject({
      server_id: f.serverId,
      network_name: null,
      margin: 1,
      duration_seconds: 60,
      enabled: true,
      firing: [],
    });
    const id = created.body.id;
    // Neither or both targets, a share above 1, an unknown metric: 400, nothing written.
    for (const body of [
      { name: "x", metric: "tps", op: "below", threshold: 18 },
      { name: "x", server_id: f.serverId, network_name: "hub", metric: "tps", op: "below", threshold: 18 },
      { name: "x", server_id: f.serverId, metric: "memory_share", op: "above", threshold: 1.5 },
      { name: "x", server_id: f.serverId, metric: "cpu", op: "above", threshold: 1 },
      { name: "x", server_id: f.serverId, metric: "tps", op: "below", threshold: 18, margin: -1 },
    ])
      expectError(await api(srv, "POST", base, { token: f.owner.token, body }), 400, "validation_failed");
    // A server or network of another team is not found.
    const other = await newServer(srv);
    expectError(
      await api(srv, "POST", base, {
        token: f.owner.token,
        body: { name: "x", server_id: other.serverId, metric: "tps", op: "below", threshold: 18 },
      }),
      404,
    );
    expectError(
      await api(srv, "POST", base, {
        token: f.owner.token,
        body: { name: "x", network_name: "nowhere", metric: "tps", op: "below", threshold: 18 },
      }),
      404,
    );
    // The other team's owner neither sees nor changes it.
    expectError(await api(srv, "GET", `${base}/${id}`, { token: other.owner.token }), 403);
    expectError(
      await api(srv, "DELETE", `/teams/${other.teamId}/alert-rules/${id}`, { token: other.owner.token }),
      404,
    );
    // A viewer reads, an admin changes.
    const viewer = await newUser(srv, "viewer");
    await addMember(srv, f.owner, f.teamId, viewer, "viewer");
    const listed = await api(srv, "GET", base, { token: viewer.token });
    expect(listed.status).toBe(200);
    expect(listed.body.rules.map((r: { id: string }) => r.id)).toEqual([id]);
    expectError(await api(srv, "PATCH", `${base}/${id}`, { token: viewer.token, body: { threshold: 15 } }), 403);
    const patched = await api(srv, "PATCH", `${base}/${id}`, {
      token: f.owner.token,
      body: { threshold: 15, duration_seconds: 30 },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ threshold: 15, duration_seconds: 30, margin: 1 });
    const audit = await api(srv, "GET", `/teams/${f.teamId}/audit`, { token: f.owner.token });
    const actions = (audit.body.entries as { action: string }[]).map((e) => e.action);
    expect(actions).toContain("alert_rule.create");
    expect(actions).toContain("alert_rule.update");
    expect((await api(srv, "DELETE", `${base}/${id}`, { token: f.owner.token })).status).toBe(200);
    expectError(await api(srv, "GET", `${base}/${id}`, { token: f.owner.token }), 404);
  });

  test("TPS below a value for a duration fires once and recovers once past the margin, over real heartbeats", async () => {
    const srv = await app();
    const r = receiver();
    const f = await newServer(srv);
    await hookFor(srv, f.owner.token, f.teamId, r.url);
    const rule = await api(srv, "POST", `/teams/${f.teamId}/alert-rules`, {
      token: f.owner.token,
      body: {
        name: "Lag",
        server_id: f.serverId,
        metric: "tps",
        op: "below",
        threshold: 18,
        margin: 1,
        duration_seconds: 10,
      },
    });
    expect(rule.status).toBe(201);
    const now = Date.now();
    const beat = async (s: number, tps: number) => {
      const res = await agentApi(srv, f.agentToken, "POST", "/agent/heartbeat", { at: ago(s, now), tps });
      expect(`${res.status} ${res.text}`).toStartWith("200");
    };
    // Below, then at the threshold before the duration: the count starts over.
    await beat(58, 10);
    await beat(54, 18);
    // Below for 7 s: not yet; 11 s: fires, once, whether or not the same reading comes twice at once.
    await beat(52, 10);
    await beat(45, 10);
    await Promise.all([beat(41, 10), beat(41, 10)]);
    // Past the threshold but inside the margin: still firing. Past the margin, then back inside
    // it before the duration: the recovery count starts over. A reading older than the last is ignored.
    await beat(38, 18.5);
    await beat(35, 19.5);
    await beat(28, 18.5);
    await beat(30, 5);
    await beat(25, 19.5);
    await beat(20, 19.5);
    const listed = await api(srv, "GET", `/teams/${f.teamId}/alert-rules/${rule.body.id}`, { token: f.owner.token });
    expect(listed.body.firing).toEqual([f.serverId]);
    await beat(14, 19.6);
    await settle(srv, r, 2);
    await Bun.sleep(200);
    // Deliveries keep no order between events: sorted by type.
    const got = events(r).sort((a, b) => a.type.localeCompare(b.type));
    expect(got.map((e) => e.type)).toEqual(["alert.firing", "alert.resolved"]);
    expect(got[0]!.data).toMatchObject({
      server_id: f.serverId,
      server_name: "Survival",
      rule_id: rule.body.id,
      rule_name: "Lag",
      metric: "tps",
      op: "below",
      threshold: 18,
      value: 10,
      since: ago(52, now),
      at: ago(41, now),
    });
    expect(got[1]!.data).toMatchObject({ value: 19.6, since: ago(25, now), at: ago(14, now) });
    // Signed as every delivery is.
    expect(r.got[0]!.headers["webhook-signature"]).toMatch(/^v1,/);
    const { rows } = await srv.services.database.db
      .execute(sql`select firing, notified from alert_rule_state where rule_id = ${rule.body.id}`)
      .then((x: any) => ({ rows: Array.isArray(x) ? x : x.rows }));
    expect(rows).toEqual([{ firing: false, notified: true }]);
  });

  test("memory share and MSPT above a value; Discord and Slack bodies", async () => {
    const srv = await app();
    const discord = receiver();
    const slack = receiver();
    const f = await newServer(srv);
    await hookFor(srv, f.owner.token, f.teamId, discord.url, "discord");
    await hookFor(srv, f.owner.token, f.teamId, slack.url, "slack");
    for (const body of [
      { name: "Memory", metric: "memory_share", op: "above", threshold: 0.9, duration_seconds: 0 },
      { name: "MSPT", metric: "mspt", op: "above", threshold: 50, duration_seconds: 0 },
    ])
      expect(
        (
          await api(srv, "POST", `/teams/${f.teamId}/alert-rules`, {
            token: f.owner.token,
            body: { ...body, server_id: f.serverId },
          })
        ).status,
      ).toBe(201);
    const res = await agentApi(srv, f.agentToken, "POST", "/agent/heartbeat", {
      tps: 20,
      mspt: 80,
      memory_used_mb: 3900,
      memory_max_mb: 4096,
    });
    expect(res.status).toBe(200);
    await settle(srv, discord, 2);
    await settle(srv, slack, 2);
    const titles = discord.got.map((g) => JSON.parse(g.body).embeds[0].title).sort();
    expect(titles).toEqual(["MSPT: mspt above 50 on Survival", "Memory: memory\\_share above 90% on Survival"]);
    const fields = discord.got.map((g) => JSON.parse(g.body).embeds[0].fields[0].value).sort();
    expect(fields).toEqual(["80", "95.2%"]);
    expect(slack.got.map((g) => JSON.parse(g.body).text).sort()).toEqual([
      "MSPT: mspt above 50 on Survival",
      "Memory: memory_share above 90% on Survival",
    ]);
  });

  test("a network rule on players online fires per server from the pinger", async () => {
    const srv = await app();
    const r = receiver();
    const mc = await startStatusResponder({ players: 7, maxPlayers: 20 });
    try {
      const f = await newServer(srv, { kind: "network", network_name: "hub", port: mc.port });
      await hookFor(srv, f.owner.token, f.teamId, r.url);
      const created = await api(srv, "POST", `/teams/${f.teamId}/alert-rules`, {
        token: f.owner.token,
        body: {
          name: "Crowd",
          network_name: "hub",
          metric: "players_online",
          op: "above",
          threshold: 5,
          duration_seconds: 0,
        },
      });
      expect(`${created.status} ${created.text}`).toStartWith("201");
      await srv.services.monitoring.checkNow(f.serverId);
      const [e] = await settle(srv, r, 1);
      expect(e).toMatchObject({
        type: "alert.firing",
        data: { server_id: f.serverId, network_name: "hub", metric: "players_online", value: 7 },
      });
      mc.players = 2;
      await srv.services.monitoring.checkNow(f.serverId);
      await settle(srv, r, 2);
      expect(
        events(r)
          .map((x) => x.type)
          .sort(),
      ).toEqual(["alert.firing", "alert.resolved"]);
    } finally {
      await mc.close();
    }
  });

  test("a notice held (maintenance) is not sent; it goes out once the hold ends while still firing; a recovery of an untold firing is not sent", async () => {
    const srv = await app();
    const r = receiver();
    const f = await newServer(srv);
    await hookFor(srv, f.owner.token, f.teamId, r.url);
    const created = await api(srv, "POST", `/teams/${f.teamId}/alert-rules`, {
      token: f.owner.token,
      body: { name: "Lag", server_id: f.serverId, metric: "tps", op: "below", threshold: 18, duration_seconds: 0 },
    });
    expect(created.status).toBe(201);
    // Its own evaluator on the same database and webhooks, with a hold the test switches.
    let held = true;
    const alerts = new PerformanceAlerts(
      srv.services.database.db,
      srv.services.webhooks,
      createLogger("silent"),
      async (serverId) => held && serverId === f.serverId,
    );
    const t = Date.now();
    const read = (s: number, value: number) =>
      alerts.evaluate([{ serverId: f.serverId, metric: "tps", value, at: new Date(t - s * 1000) }]);
    // Fires and recovers inside the hold: neither is told.
    await read(55, 10);
    await read(50, 19.5);
    // Fires again inside the hold: told at the first reading after it that still finds it firing.
    await read(45, 10);
    await read(30, 10);
    await srv.services.webhooks.flush();
    await srv.services.webhookWorker.drain();
    expect(events(r)).toEqual([]);
    held = false;
    await read(20, 10);
    await read(10, 12);
    await read(5, 19.5);
    await settle(srv, r, 2);
    expect(
      events(r)
        .map((e) => [e.type, e.data.value])
        .sort(),
    ).toEqual([
      ["alert.firing", 10],
      ["alert.resolved", 19.5],
    ]);
  });

  test.skipIf(!usingPostgres())(
    "two instances on one database taking heartbeats of the same server report each change once",
    async () => {
      const dir = tempDir();
      const env = { ...FAST_WEBHOOKS, DATA_DIR: dir };
      const a = await startTestServer(env);
      started.push(a);
      const b = await startTestServer(env);
      started.push(b);
      const r = receiver();
      const f = await newServer(a);
      await hookFor(a, f.owner.token, f.teamId, r.url);
      const created = await api(a, "POST", `/teams/${f.teamId}/alert-rules`, {
        token: f.owner.token,
        body: { name: "Lag", server_id: f.serverId, metric: "mspt", op: "above", threshold: 50, duration_seconds: 5 },
      });
      expect(created.status).toBe(201);
      // B learns of the rule within its refresh of the covered servers.
      b.services.performanceAlerts.invalidate();
      const now = Date.now();
      const beat = (srv: RunningServer, s: number, mspt: number) =>
        agentApi(srv, f.agentToken, "POST", "/agent/heartbeat", { at: ago(s, now), mspt }).then((res) =>
          expect(res.status).toBe(200),
        );
      await beat(a, 40, 80);
      // The reading that fires, and one after it, each sent to both instances at once.
      await Promise.all([beat(a, 30, 90), beat(b, 30, 90)]);
      await Promise.all([beat(a, 25, 95), beat(b, 25, 95)]);
      await Promise.all([beat(a, 15, 10), beat(b, 15, 10)]);
      await Promise.all([beat(a, 5, 10), beat(b, 5, 10)]);
      for (const srv of [a, b]) await srv.services.webhooks.flush();
      await settle(a, r, 2);
      await Bun.sleep(300);
      await b.services.webhookWorker.drain();
      expect(
        events(r)
          .map((e) => e.type)
          .sort(),
      ).toEqual(["alert.firing", "alert.resolved"]);
    },
  );
});
