import { afterAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { Webhook } from "standardwebhooks";
import type { RunningServer } from "../src/app";
import { startStatusResponder } from "../scripts/demo-mc-server";
import { sendOnce } from "../src/webhooks/send";
import { ciRunsElsewhere, devIdp, productionEnv, startTestServer } from "./harness";
import { api, expectError, newTeam, newUser, type TestUser } from "./helpers";
import { decide, fullLogin, newClient, signIn, start } from "./ms-auth-helpers";
import { newServer } from "./servers-fixture";
import { FAST_WEBHOOKS, type Receiver, startReceiver } from "./webhook-receiver";

const receivers: Receiver[] = [];
const receiver = (path?: string) => {
  const r = startReceiver(path);
  receivers.push(r);
  return r;
};
const started: RunningServer[] = [];
afterAll(async () => {
  for (const r of receivers) r.stop();
  // On PostgreSQL, later files' delivery tests must not have these draining the shared queue.
  for (const s of started) await s.stop();
});
const webhookServer = async (env: Record<string, string>) => {
  const s = await startTestServer(env);
  started.push(s);
  return s;
};

const FAST = FAST_WEBHOOKS;

let fast: Promise<RunningServer> | undefined;
const fastServer = () => (fast ??= devIdp().then((idp) => webhookServer({ ...FAST, DEV_IDP_URL: idp.url })));

async function endpoint(srv: RunningServer, owner: TestUser, teamId: string, body: Record<string, unknown>) {
  const res = await api(srv, "POST", `/teams/${teamId}/webhooks`, { token: owner.token, body });
  expect(`${res.status} ${res.text}`).toStartWith("201");
  return res.body as { endpoint: { endpoint_id: string; secret_prefix: string }; secret: string };
}

async function ownerAndTeam(srv: RunningServer) {
  const owner = await newUser(srv, "hooks");
  const teamId = await newTeam(srv, owner);
  return { owner, teamId };
}

const events = (r: Receiver) => r.got.map((g) => JSON.parse(g.body) as { type: string; data: Record<string, any> });

/** Waits until the receiver has an event of `type` and returns it. */
async function eventOf(r: Receiver, type: string, ms = 10_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const found = events(r).find((e) => e.type === type);
    if (found) return found;
    if (Date.now() > deadline) throw new Error(`no ${type} within ${ms} ms; got ${events(r).map((e) => e.type)}`);
    await Bun.sleep(10);
  }
}

describe("webhook endpoints", () => {
  test("creating an endpoint shows a whsec_ secret once; reads show only its prefix", async () => {
    const srv = await fastServer();
    const { owner, teamId } = await ownerAndTeam(srv);
    const created = await endpoint(srv, owner, teamId, {
      url: "https://hooks.example.test/in",
      description: "ops channel",
      event_types: ["server.down", "server.up"],
    });
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(created.endpoint).toMatchObject({
      kind: "standard",
      enabled: true,
      event_types: ["server.down", "server.up"],
    });
    const listed = await api(srv, "GET", `/teams/${teamId}/webhooks`, { token: owner.token });
    expect(listed.status).toBe(200);
    expect(listed.body.endpoints).toHaveLength(1);
    expect(listed.text).not.toContain(created.secret.slice(6, 20));
    expect(listed.body.endpoints[0].secret_prefix).toBe(created.endpoint.secret_prefix);
  });

  // The address guard is the subject (nothing is written): in CI it runs on PostgreSQL, where a
  // server of its own starts in a fraction of PGlite's time.
  test.skipIf(ciRunsElsewhere("postgres"))(
    "URLs that could reach inside the network are refused with 400 at creation; metadata even when private targets are allowed",
    async () => {
      const strict = await startTestServer(productionEnv());
      expect(strict.services.config.WEBHOOK_ALLOW_PRIVATE).toBe(false);
      const { owner, teamId } = await ownerAndTeam(strict);
      for (const url of [
        "http://127.0.0.1:8080/x",
        "http://[::1]/x",
        "http://10.1.2.3/x",
        "http://2130706433/x",
        "http://localhost:3000/x",
        "http://169.254.169.254/latest",
        "ftp://example.com/x",
        "https://user:pw@example.com/x",
      ]) {
        const res = await api(strict, "POST", `/teams/${teamId}/webhooks`, { token: owner.token, body: { url } });
        expectError(res, 400, "validation_failed");
      }
      const srv = await fastServer();
      const other = await ownerAndTeam(srv);
      const meta = await api(srv, "POST", `/teams/${other.teamId}/webhooks`, {
        token: other.owner.token,
        body: { url: "http://169.254.169.254/latest/meta-data" },
      });
      expectError(meta, 400, "validation_failed");
      expect(
        (await api(srv, "GET", `/teams/${other.teamId}/webhooks`, { token: other.owner.token })).body.endpoints,
      ).toEqual([]);
    },
  );

  test("at send time a name is resolved once and checked: loopback is refused without the allowance, and the request goes to the checked address", async () => {
    const r = receiver();
    const url = `http://hooks.example.test:${r.port}/hook`;
    let lookups = 0;
    const lookup = async () => {
      lookups++;
      return ["127.0.0.1"];
    };
    const refused = await sendOnce(url, "{}", {}, { timeoutMs: 2000, policy: { allowPrivate: false }, lookup });
    expect(refused).toMatchObject({ ok: false, retryable: false, status: null });
    // Refused without saying what the name resolved to: that would map the network inside.
    expect(refused.error).toBe("refused by policy: hooks.example.test may not be reached from this service");
    expect(r.got).toHaveLength(0);
    const allowed = await sendOnce(url, "{}", {}, { timeoutMs: 2000, policy: { allowPrivate: true }, lookup });
    expect(allowed).toMatchObject({ ok: true, status: 200 });
    expect(lookups).toBe(2);
    // Connected to the address checked, with the URL's own host name in the Host header.
    expect(r.got[0]!.headers.host).toBe(`hooks.example.test:${r.port}`);
    const metadata = await sendOnce(
      url,
      "{}",
      {},
      {
        timeoutMs: 2000,
        policy: { allowPrivate: true },
        lookup: async () => ["169.254.169.254"],
      },
    );
    expect(metadata).toMatchObject({ ok: false, retryable: false });
  });
});

describe("webhook delivery", () => {
  test("a test event carries Standard Webhooks headers that the standardwebhooks library verifies", async () => {
    const srv = await fastServer();
    const r = receiver();
    const { owner, teamId } = await ownerAndTeam(srv);
    const { endpoint: ep, secret } = await endpoint(srv, owner, teamId, { url: r.url });
    const queued = await api(srv, "POST", `/teams/${teamId}/webhooks/${ep.endpoint_id}/test`, { token: owner.token });
    expect(queued.status).toBe(200);
    const [got] = await r.until(1);
    expect(got!.headers["webhook-id"]).toMatch(/^msg_[A-Za-z0-9_-]{22}$/);
    expect(got!.headers["webhook-id"]).toBe(queued.body.message_id);
    expect(Math.abs(Number(got!.headers["webhook-timestamp"]) - Date.now() / 1000)).toBeLessThan(30);
    expect(got!.headers["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    const verified = new Webhook(secret).verify(got!.body, got!.headers) as {
      type: string;
      data: { endpoint_id: string };
    };
    expect(verified).toMatchObject({ type: "webhook.test", data: { endpoint_id: ep.endpoint_id } });
    // A signature made with another secret does not verify.
    expect(() =>
      new Webhook(`whsec_${Buffer.alloc(32, 7).toString("base64")}`).verify(got!.body, got!.headers),
    ).toThrow();
  });

  test("a receiver answering 500 twice then 200 gets the event three times with the same webhook-id", async () => {
    const srv = await fastServer();
    const r = receiver();
    r.plan = [500, 500, 200];
    const { owner, teamId } = await ownerAndTeam(srv);
    const { endpoint: ep, secret } = await endpoint(srv, owner, teamId, { url: r.url });
    await api(srv, "POST", `/teams/${teamId}/webhooks/${ep.endpoint_id}/test`, { token: owner.token });
    const got = await r.until(3);
    await Bun.sleep(200);
    expect(r.got).toHaveLength(3);
    expect(new Set(got.map((g) => g.headers["webhook-id"])).size).toBe(1);
    for (const g of got) expect(() => new Webhook(secret).verify(g.body, g.headers)).not.toThrow();
    // Backoff: each retry came after the scheduled wait (50 ms, up to 20% more).
    expect(got[1]!.at - got[0]!.at).toBeGreaterThanOrEqual(45);
    const list = await api(srv, "GET", `/teams/${teamId}/webhooks/${ep.endpoint_id}/deliveries`, {
      token: owner.token,
    });
    expect(list.body.deliveries[0]).toMatchObject({ status: "succeeded", attempts: 3, last_status_code: 200 });
    expect(list.body.deliveries[0].last_latency_ms).toBeGreaterThanOrEqual(0);
    const epNow = await api(srv, "GET", `/teams/${teamId}/webhooks/${ep.endpoint_id}`, { token: owner.token });
    expect(epNow.body).toMatchObject({ consecutive_failures: 0, failing_since: null });
  });

  test("timeouts and 429 are retried; 4xx and redirects fail at once and redirects are not followed", async () => {
    const srv = await fastServer();
    const r = receiver();
    const target = receiver();
    r.plan = [
      async () => {
        await Bun.sleep(3000);
        return new Response("late");
      },
      429,
      200,
      404,
      () => new Response(null, { status: 302, headers: { location: target.url } }),
    ];
    const { owner, teamId } = await ownerAndTeam(srv);
    const { endpoint: ep } = await endpoint(srv, owner, teamId, { url: r.url });
    const path = `/teams/${teamId}/webhooks/${ep.endpoint_id}`;
    await api(srv, "POST", `${path}/test`, { token: owner.token });
    await r.until(3);
    await api(srv, "POST", `${path}/test`, { token: owner.token });
    await r.until(4);
    await api(srv, "POST", `${path}/test`, { token: owner.token });
    await r.until(5);
    await Bun.sleep(300);
    const list = (await api(srv, "GET", `${path}/deliveries`, { token: owner.token })).body.deliveries;
    expect(
      list.map((d: { status: string; attempts: number; last_status_code: number | null }) => [
        d.status,
        d.attempts,
        d.last_status_code,
      ]),
    ).toEqual([
      ["failed", 1, 302],
      ["failed", 1, 404],
      ["succeeded", 3, 200],
    ]);
    expect(list[0].last_error).toMatch(/redirect/);
    expect(target.got).toHaveLength(0);
    expect(r.got).toHaveLength(5);
  });

  test("the response body kept in the delivery log is capped at 4 KiB", async () => {
    const srv = await fastServer();
    const r = receiver();
    r.plan = [() => new Response("x".repeat(200_000))];
    const { owner, teamId } = await ownerAndTeam(srv);
    const { endpoint: ep } = await endpoint(srv, owner, teamId, { url: r.url });
    await api(srv, "POST", `/teams/${teamId}/webhooks/${ep.endpoint_id}/test`, { token: owner.token });
    await r.until(1);
    await srv.services.webhookWorker.drain();
    const d = (await api(srv, "GET", `/teams/${teamId}/webhooks/${ep.endpoint_id}/deliveries`, { token: owner.token }))
      .body.deliveries[0];
    expect(d.status).toBe("succeeded");
    expect(d.last_response.length).toBe(4096);
  });

  test("after a rotation both secrets sign during the overlap, then only the new one", async () => {
    const srv = await fastServer();
    const r = receiver();
    const { owner, teamId } = await ownerAndTeam(srv);
    const { endpoint: ep, secret: oldSecret } = await endpoint(srv, owner, teamId, { url: r.url });
    const path = `/teams/${teamId}/webhooks/${ep.endpoint_id}`;
    const rotated = await api(srv, "POST", `${path}/secret`, { token: owner.token, body: { overlap_seconds: 3600 } });
    expect(rotated.status).toBe(200);
    const newSecret: string = rotated.body.secret;
    expect(newSecret).not.toBe(oldSecret);
    expect(rotated.body.endpoint.previous_secret_expires_at).not.toBeNull();
    await api(srv, "POST", `${path}/test`, { token: owner.token });
    const [during] = await r.until(1);
    expect(during!.headers["webhook-signature"]!.split(" ")).toHaveLength(2);
    expect(() => new Webhook(oldSecret).verify(during!.body, during!.headers)).not.toThrow();
    expect(() => new Webhook(newSecret).verify(during!.body, during!.headers)).not.toThrow();
    // A rotation without overlap drops the previous secret at once.
    const again = await api(srv, "POST", `${path}/secret`, { token: owner.token, body: { overlap_seconds: 0 } });
    await api(srv, "POST", `${path}/test`, { token: owner.token });
    const after = (await r.until(2))[1]!;
    expect(after.headers["webhook-signature"]!.split(" ")).toHaveLength(1);
    expect(() => new Webhook(again.body.secret).verify(after.body, after.headers)).not.toThrow();
    expect(() => new Webhook(newSecret).verify(after.body, after.headers)).toThrow();
  });

  test("redeliver sends the same event again with the same webhook-id", async () => {
    const srv = await fastServer();
    const r = receiver();
    const { owner, teamId } = await ownerAndTeam(srv);
    const { endpoint: ep } = await endpoint(srv, owner, teamId, { url: r.url });
    const path = `/teams/${teamId}/webhooks/${ep.endpoint_id}`;
    const first = await api(srv, "POST", `${path}/test`, { token: owner.token });
    await r.until(1);
    const again = await api(srv, "POST", `${path}/deliveries/${first.body.delivery_id}/redeliver`, {
      token: owner.token,
    });
    expect(again.status).toBe(200);
    expect(again.body.delivery_id).not.toBe(first.body.delivery_id);
    const got = await r.until(2);
    expect(got[1]!.headers["webhook-id"]).toBe(got[0]!.headers["webhook-id"]);
    expect(got[1]!.body).toBe(got[0]!.body);
    const missing = await api(srv, "POST", `${path}/deliveries/${crypto.randomUUID()}/redeliver`, {
      token: owner.token,
    });
    expectError(missing, 404, "not_found");
  });

  test("drain() ends when each claim takes longer than the poll interval (a loaded database), with every delivery made", async () => {
    // The worker's timer claims every WEBHOOK_POLL_MS. A drain that waited for "no claim under
    // way" never saw that moment once a claim outlasted the interval, and looped until the test's
    // timeout (a CI run's PostgreSQL, shared by many files' rows, got there).
    const srv = await webhookServer({ ...FAST, WEBHOOK_POLL_MS: "10" });
    const worker = srv.services.webhookWorker;
    const claim = worker.claim.bind(worker);
    worker.claim = async (limit: number) => {
      const rows = await claim(limit);
      await Bun.sleep(40);
      return rows;
    };
    const r = receiver();
    const { owner, teamId } = await ownerAndTeam(srv);
    const { endpoint: ep } = await endpoint(srv, owner, teamId, { url: r.url });
    for (let i = 0; i < 3; i++)
      expect(
        (await api(srv, "POST", `/teams/${teamId}/webhooks/${ep.endpoint_id}/test`, { token: owner.token })).status,
      ).toBe(200);
    await srv.services.webhooks.flush();
    const ended = await Promise.race([worker.drain().then(() => true), Bun.sleep(5_000).then(() => false)]);
    expect(ended).toBe(true);
    expect(r.got.length).toBeGreaterThanOrEqual(3);
  });

  test("an endpoint failing past both thresholds is disabled, shows why, and the team's other endpoint is told", async () => {
    const srv = await fastServer();
    const bad = receiver();
    bad.plan = Array(20).fill(503);
    const good = receiver();
    const { owner, teamId } = await ownerAndTeam(srv);
    const { endpoint: failing } = await endpoint(srv, owner, teamId, { url: bad.url });
    await endpoint(srv, owner, teamId, { url: good.url, event_types: ["endpoint.disabled"] });
    await api(srv, "POST", `/teams/${teamId}/webhooks/${failing.endpoint_id}/test`, { token: owner.token });
    const told = await eventOf(good, "endpoint.disabled");
    // The URL masked, as the team's viewers see it: the event may land in a chat channel.
    expect(told.data).toMatchObject({
      endpoint_id: failing.endpoint_id,
      url: `http://127.0.0.1:${bad.port}/…`,
      reason: "failing",
    });
    expect(bad.got).toHaveLength(4);
    const ep = await api(srv, "GET", `/teams/${teamId}/webhooks/${failing.endpoint_id}`, { token: owner.token });
    expect(ep.body).toMatchObject({ enabled: false, disabled_reason: "failing", consecutive_failures: 4 });
    // Disabled: a test is refused, and enabling it again clears the failure state.
    expectError(
      await api(srv, "POST", `/teams/${teamId}/webhooks/${failing.endpoint_id}/test`, { token: owner.token }),
      409,
    );
    const on = await api(srv, "PATCH", `/teams/${teamId}/webhooks/${failing.endpoint_id}`, {
      token: owner.token,
      body: { enabled: true },
    });
    expect(on.body).toMatchObject({
      enabled: true,
      disabled_reason: null,
      consecutive_failures: 0,
      failing_since: null,
    });
  });

  test("discord and slack endpoints get a chat message made from the event", async () => {
    const srv = await fastServer();
    const discord = receiver("/api/webhooks/1/abc");
    const slack = receiver("/services/T/B/X");
    const { owner, teamId } = await ownerAndTeam(srv);
    const d = await endpoint(srv, owner, teamId, { url: discord.url, kind: "discord" });
    const s = await endpoint(srv, owner, teamId, { url: slack.url, kind: "slack" });
    await api(srv, "POST", `/teams/${teamId}/webhooks/${d.endpoint.endpoint_id}/test`, { token: owner.token });
    await api(srv, "POST", `/teams/${teamId}/webhooks/${s.endpoint.endpoint_id}/test`, { token: owner.token });
    const dBody = JSON.parse((await discord.until(1))[0]!.body);
    expect(dBody.embeds[0]).toMatchObject({ title: "Test event from mc-platform", footer: { text: "webhook.test" } });
    expect(typeof dBody.embeds[0].color).toBe("number");
    const sBody = JSON.parse((await slack.until(1))[0]!.body);
    expect(sBody.text).toBe("Test event from mc-platform");
    expect(sBody.blocks[0].type).toBe("section");
  });
});

describe("events from the domains", () => {
  test("server.down after three failed pings in a row (not after one), then server.up", async () => {
    const srv = await fastServer();
    const r = receiver();
    const mc = await startStatusResponder();
    const f = await newServer(srv, { host: "127.0.0.1", port: mc.port });
    await endpoint(srv, f.owner, f.teamId, { url: r.url, event_types: ["server.down", "server.up"] });
    const check = () => srv.services.monitoring.checkNow(f.serverId);
    expect((await check())!.online).toBe(true);
    await mc.close();
    expect((await check())!.online).toBe(false);
    await srv.services.webhooks.flush();
    await srv.services.webhookWorker.drain();
    expect(r.got).toHaveLength(0);
    await check();
    await check();
    const down = await eventOf(r, "server.down");
    expect(down.data).toMatchObject({
      server_id: f.serverId,
      server_name: "Survival",
      failed_pings: 3,
      reason: "connection_refused",
    });
    await check();
    await srv.services.webhooks.flush();
    await srv.services.webhookWorker.drain();
    expect(events(r).filter((e) => e.type === "server.down")).toHaveLength(1);
    const back = await startStatusResponder({ port: mc.port });
    await check();
    const up = await eventOf(r, "server.up");
    expect(up.data).toMatchObject({ server_id: f.serverId });
    await back.close();
  });

  test("bans and pardons from the dashboard are player.banned and player.unbanned", async () => {
    const srv = await fastServer();
    const r = receiver();
    const f = await newServer(srv);
    await endpoint(srv, f.owner, f.teamId, { url: r.url, event_types: ["player.banned", "player.unbanned"] });
    const uuid = crypto.randomUUID();
    const ban = await api(srv, "POST", "/server/bans", {
      ...f.as(),
      body: { uuid, name: "Griefer", reason: "griefing" },
    });
    expect(`${ban.status} ${ban.text}`).toStartWith("201");
    const banned = await eventOf(r, "player.banned");
    expect(banned.data).toMatchObject({ server_id: f.serverId, uuid, name: "Griefer", reason: "griefing" });
    const lifted = await api(srv, "DELETE", `/server/bans/${uuid}`, f.as());
    expect(lifted.status).toBe(200);
    expect((await eventOf(r, "player.unbanned")).data).toMatchObject({ server_id: f.serverId, uuid });
    // A ban made in game, reported by the agent, is a player.banned too.
    const inGame = crypto.randomUUID();
    const pushed = await api(srv, "POST", "/agent/events", {
      headers: { authorization: `Bearer ${f.agentToken}` },
      body: { events: [{ event_id: `ban-${inGame}`, type: "ban", uuid: inGame, name: "Cheater", reason: "fly hack" }] },
    });
    expect(`${pushed.status} ${pushed.text}`).toStartWith("200");
    await r.until(3);
    expect(events(r)[2]).toMatchObject({
      type: "player.banned",
      data: { server_id: f.serverId, uuid: inGame, name: "Cheater", origin: "game" },
    });
  });

  test("an agent silent past the limit is agent.offline, and agent.online when it is heard again", async () => {
    const srv = await fastServer();
    const r = receiver();
    const f = await newServer(srv);
    await endpoint(srv, f.owner, f.teamId, { url: r.url, event_types: ["agent.offline", "agent.online"] });
    const hb = await api(srv, "POST", "/agent/heartbeat", {
      headers: { authorization: `Bearer ${f.agentToken}` },
      body: { tps: 20 },
    });
    expect(hb.status).toBe(200);
    await srv.services.alerts.sweepAgents();
    const db = srv.services.database.db;
    await db.execute(
      sql`update server_status set heartbeat_at = now() - interval '1 hour' where server_id = ${f.serverId}`,
    );
    await srv.services.alerts.sweepAgents();
    await srv.services.alerts.sweepAgents();
    expect((await eventOf(r, "agent.offline")).data).toMatchObject({ server_id: f.serverId });
    await api(srv, "POST", "/agent/heartbeat", {
      headers: { authorization: `Bearer ${f.agentToken}` },
      body: { tps: 20 },
    });
    await srv.services.alerts.sweepAgents();
    await eventOf(r, "agent.online");
    await srv.services.webhookWorker.drain();
    expect(events(r).map((e) => e.type)).toEqual(["agent.offline", "agent.online"]);
  });

  test("a client's sign-ins are login.authorized and login.denied (with the code); a secret rotation is client.secret_rotated", async () => {
    const srv = await fastServer();
    const r = receiver();
    const c = await newClient(srv);
    await endpoint(srv, c.owner, c.teamId, { url: r.url });
    await fullLogin(srv, c, "Alex");
    const ok = await eventOf(r, "login.authorized");
    expect(ok.data).toMatchObject({ client_id: c.clientId, client_name: "launcher", mc_username: "Alex" });
    const started = await start(srv, c, "deny-me");
    const s = await signIn(srv, started.auth_url, { username: "Bob" });
    await decide(srv, s, "deny");
    const denied = await eventOf(r, "login.denied");
    expect(denied.data).toMatchObject({
      client_id: c.clientId,
      auth_request_id: started.auth_request_id,
      error: "consent_denied",
    });
    const rotated = await api(srv, "POST", `/client/apps/${c.clientId}/secret`, { token: c.owner.token });
    expect(rotated.status).toBe(200);
    expect((await eventOf(r, "client.secret_rotated")).data).toMatchObject({ client_id: c.clientId });
  });

  test("a team with no endpoint for a type stores no event for it", async () => {
    const srv = await fastServer();
    const f = await newServer(srv);
    const id = await srv.services.webhooks.enqueue({ serverId: f.serverId }, "server.down", { failed_pings: 3 });
    expect(id).toBeNull();
  });

  test("on a service with no endpoint yet, events go nowhere; the first endpoint created, or one enabled again, gets the next ones", async () => {
    // A server of its own: on the embedded database it knows without a read that no endpoint is
    // enabled, and must learn of the first one (and of one enabled again) at once.
    const srv = await devIdp().then((idp) => webhookServer({ ...FAST, DEV_IDP_URL: idp.url }));
    const c = await newClient(srv);
    const before = await srv.services.webhooks.enqueue({ clientId: c.clientId }, "login.denied", { error: "x" });
    expect(before).toBeNull();
    const r = receiver();
    const { endpoint: e } = await endpoint(srv, c.owner, c.teamId, { url: r.url, event_types: ["login.authorized"] });
    await fullLogin(srv, c, "First");
    expect((await eventOf(r, "login.authorized")).data).toMatchObject({ mc_username: "First" });
    const path = `/teams/${c.teamId}/webhooks/${e.endpoint_id}`;
    expect((await api(srv, "PATCH", path, { token: c.owner.token, body: { enabled: false } })).status).toBe(200);
    expect(await srv.services.webhooks.enqueue({ clientId: c.clientId }, "login.authorized", {})).toBeNull();
    expect((await api(srv, "PATCH", path, { token: c.owner.token, body: { enabled: true } })).status).toBe(200);
    await fullLogin(srv, c, "Second");
    await eventOf(r, "login.authorized");
    const deadline = Date.now() + 10_000;
    while (!events(r).some((x) => x.data.mc_username === "Second")) {
      if (Date.now() > deadline) throw new Error(`no event for Second; got ${JSON.stringify(events(r))}`);
      await Bun.sleep(10);
    }
  });
});

describe("signing secrets at rest", () => {
  test("a sealed secret opens only with the same service key and the same endpoint id", async () => {
    const { Keyring } = await import("../src/lib/keyring");
    const k = Keyring.fromSecret("service key one");
    const sealed = k.seal("whsec_abc", "endpoint-1");
    expect(sealed).toStartWith("v1.");
    expect(sealed).not.toContain("whsec_abc");
    expect(k.open(sealed, "endpoint-1")).toBe("whsec_abc");
    expect(() => k.open(sealed, "endpoint-2")).toThrow();
    expect(() => Keyring.fromSecret("service key two").open(sealed, "endpoint-1")).toThrow();
    // Each seal uses a fresh IV: the same secret never seals to the same text.
    expect(k.seal("whsec_abc", "endpoint-1")).not.toBe(sealed);
  });
});

describe("the OpenAPI document", () => {
  test("describes every event type's body and the signature headers under `webhooks`", async () => {
    const srv = await fastServer();
    const doc = (await api(srv, "GET", "/openapi.json")).body;
    const { TEAM_EVENT_TYPES } = await import("../src/lib/events");
    expect(Object.keys(doc.webhooks).sort()).toEqual([...TEAM_EVENT_TYPES].sort());
    const down = doc.webhooks["server.down"].post;
    expect(down.parameters.map((p: { name: string }) => p.name)).toEqual([
      "webhook-id",
      "webhook-timestamp",
      "webhook-signature",
    ]);
    const body = down.requestBody.content["application/json"].schema;
    expect(body.properties.type.const).toBe("server.down");
    expect(Object.keys(body.properties.data.properties)).toEqual([
      "server_id",
      "server_name",
      "failed_pings",
      "error",
      "reason",
    ]);
  });
});
