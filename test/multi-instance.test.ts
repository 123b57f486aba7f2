import { describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import postgres from "postgres";
import type { RunningServer } from "../src/app";
import { devIdp, startTestServer, tempDir, usingPostgres } from "./harness";
import { api, expectError } from "./helpers";
import { hiddenFields, newClient, poll, start } from "./ms-auth-helpers";
import { REDIS_SKIP_REASON, redisReachable, redisUrl } from "./redis-helpers";
import { agentApi, newServer } from "./servers-fixture";
import { WsClient } from "./ws-helpers";

/** `url` as the load balancer would send it to `target` instead. */
const via = (url: string, target: RunningServer) => {
  const u = new URL(url);
  u.port = String(target.port);
  return u.toString();
};

const redisUp = await redisReachable();

/**
 * Three app instances on one PostgreSQL database, as behind a load balancer: they share the
 * database, the signing key (one DATA_DIR here; JWT_PRIVATE_KEY in production) and the public
 * address. Any instance can serve any request.
 */
describe.skipIf(!usingPostgres())("several instances on one PostgreSQL", () => {
  let a: RunningServer, b: RunningServer, c: RunningServer;

  async function startThree(extra: Record<string, string> = {}) {
    const idp = await devIdp();
    const dir = tempDir();
    const common = { DEV_IDP_URL: idp.url, DATA_DIR: dir, ...extra };
    a = await startTestServer(common);
    const pub = { ...common, PUBLIC_URL: `http://127.0.0.1:${a.port}` };
    b = await startTestServer(pub);
    c = await startTestServer(pub);
  }

  test("a login started on the first, called back on the second, approved there and polled on the third", async () => {
    await startThree();
    const client = await newClient(a);
    const started = await start(a, client, "lb");
    // The browser: provider sign-in, then the callback lands on instance B.
    const page = await fetch(started.auth_url);
    const form = new URLSearchParams({ ...hiddenFields(await page.text()), username: "Balancer", outcome: "success" });
    const submitted = await fetch(started.auth_url.split("?")[0]!, { method: "POST", body: form, redirect: "manual" });
    const callback = await fetch(via(submitted.headers.get("location")!, b), { redirect: "manual" });
    expect(callback.status).toBe(200);
    const html = await callback.text();
    const cookie = callback.headers.get("set-cookie")!.split(";")[0]!;
    const approved = await fetch(`${b.url}/client/ms-auth/authorize`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", cookie },
      body: new URLSearchParams({ ...hiddenFields(html), decision: "approve" }),
      redirect: "manual",
    });
    expect(new URL(approved.headers.get("location")!).searchParams.get("status")).toBe("authorized");
    const polled = await poll(c, client, started.auth_request_id);
    expect(polled.body).toMatchObject({ status: "authorized", mc_username: "Balancer" });
    const valid = await api(a, "POST", "/client/ms-auth/session/validate", {
      body: {
        client_id: client.clientId,
        client_secret: client.secret,
        svc_session_token: polled.body.svc_session_token,
      },
    });
    expect(valid.body).toMatchObject({ valid: true, mc_username: "Balancer" });
  });

  test("an agent heartbeat sent to one instance reaches a socket on another, in order with other instances' events", async () => {
    const f = await newServer(a);
    const onB = await WsClient.connect(b, f.serverId, { authorization: `Bearer ${f.owner.token}` });
    const onC = await WsClient.connect(c, f.serverId, { authorization: `Bearer ${f.owner.token}` });
    await onB.until("snapshot");
    await onC.until("snapshot");
    const hb = await agentApi(a, f.agentToken, "POST", "/agent/heartbeat", {
      tps: 19.7,
      mspt: 25.1,
      players_online: 3,
      memory_used_mb: 1024,
      memory_max_mb: 4096,
    });
    expect(hb.status).toBe(200);
    const got = await onB.next(5000);
    expect(got).toMatchObject({
      type: "heartbeat",
      server_id: f.serverId,
      data: { tps: 19.7, mspt: 25.1, players_online: 3 },
    });
    // Events published on different instances arrive in one order everywhere.
    a.services.realtime.publish(f.serverId, "status", { online: true, latency_ms: 1, changed: true });
    c.services.realtime.publish(f.serverId, "status", { online: false, latency_ms: null, changed: true });
    b.services.realtime.publish(f.serverId, "status", { online: true, latency_ms: 3, changed: true });
    const seqB = [await onB.next(5000), await onB.next(5000), await onB.next(5000)].map((m) => m.data.latency_ms);
    await onC.until("heartbeat");
    const seqC = [await onC.next(5000), await onC.next(5000), await onC.next(5000)].map((m) => m.data.latency_ms);
    expect(seqB).toEqual(seqC);
    onB.close();
    onC.close();
  });

  test("a heartbeat reaches a socket on its own instance once (at once, not again from NOTIFY) and one on another", async () => {
    const f = await newServer(a);
    const onA = await WsClient.connect(a, f.serverId, { authorization: `Bearer ${f.owner.token}` });
    const onB = await WsClient.connect(b, f.serverId, { authorization: `Bearer ${f.owner.token}` });
    await onA.until("snapshot");
    await onB.until("snapshot");
    for (const tps of [19.1, 19.2])
      expect(
        (
          await agentApi(a, f.agentToken, "POST", "/agent/heartbeat", {
            tps,
            mspt: 20,
            players_online: 1,
            memory_used_mb: 1,
            memory_max_mb: 2,
          })
        ).status,
      ).toBe(200);
    // A marker through the bus, after both heartbeats' notifications: everything before it has arrived.
    a.services.realtime.publish(f.serverId, "status", { online: true, latency_ms: 9, changed: true });
    const onATypes = (await onA.until("status", 5000)).map((m) => (m.type === "heartbeat" ? m.data.tps : m.type));
    const onBTypes = (await onB.until("status", 5000)).map((m) => (m.type === "heartbeat" ? m.data.tps : m.type));
    expect(onATypes).toEqual([19.1, 19.2, "status"]);
    expect(onBTypes).toEqual([19.1, 19.2, "status"]);
    onA.close();
    onB.close();
  });

  test("a ping result goes on the bus only for servers some instance watches; a flip always does", async () => {
    const { startStatusResponder } = await import("../scripts/demo-mc-server");
    const mc = await startStatusResponder({ port: 0 });
    // A plain LISTEN on the bus channel: every event any instance sends, as PostgreSQL carries it.
    const listener = postgres(process.env.DATABASE_URL!, { max: 1, onnotice: () => {} });
    const heard: { server_id: string; type: string; data: { changed?: boolean } }[] = [];
    try {
      await listener.listen("mcp_server_events", (payload) => {
        const parsed = JSON.parse(payload);
        heard.push(...(Array.isArray(parsed) ? parsed : "e" in parsed ? parsed.e : [parsed]));
      });
      const watched = await newServer(a, { host: "127.0.0.1", port: mc.port });
      const unwatched = await newServer(a, { host: "127.0.0.1", port: mc.port });
      const onB = await WsClient.connect(b, watched.serverId, { authorization: `Bearer ${watched.owner.token}` });
      await onB.until("snapshot");
      // Past the instances' first seconds, when they treat every server as watched.
      await Bun.sleep(2_100);
      for (let round = 0; round < 2; round++)
        for (const f of [watched, unwatched]) expect(await a.services.monitoring.checkNow(f.serverId)).not.toBeNull();
      // The watched server's second result (no flip) reaches the socket on the other instance.
      const statuses = await onB.until("status", 5000);
      expect(statuses.at(-1)!.data).toMatchObject({ online: true });
      await Bun.sleep(300);
      const status = (id: string) => heard.filter((e) => e.server_id === id && e.type === "status");
      expect(status(watched.serverId).map((e) => e.data.changed)).toEqual([true, false]);
      // Nobody watches the other: only its first result, the flip from unknown to up, went out.
      expect(status(unwatched.serverId).map((e) => e.data.changed)).toEqual([true]);
      onB.close();
    } finally {
      await listener.end({ timeout: 2 });
      await mc.close();
    }
  });

  test("a rate limit counts requests across instances, exactly with RATE_LIMIT_FLUSH_MS=0", async () => {
    await startThree({ RATE_LIMIT_START_PER_MIN: "4", RATE_LIMIT_FLUSH_MS: "0" });
    const client = await newClient(a);
    const body = { client_id: client.clientId, client_secret: client.secret };
    for (const srv of [a, b, c, a])
      expect((await api(srv, "POST", "/client/ms-auth/start", { body })).status).toBe(200);
    for (const srv of [a, b, c])
      expectError(await api(srv, "POST", "/client/ms-auth/start", { body }), 429, "rate_limited");
  });

  test.skipIf(!redisUp)("with REDIS_URL, instances count a limit together in Redis, exactly and at once", async () => {
    await startThree({ RATE_LIMIT_START_PER_MIN: "4", REDIS_URL: redisUrl });
    const dbCounters = async () => {
      const rows = await a.services.database.db.execute(sql`select count(*)::int as n from rate_limits`);
      return ((Array.isArray(rows) ? rows : (rows as unknown as { rows: unknown[] }).rows)[0] as { n: number }).n;
    };
    const before = await dbCounters();
    const client = await newClient(a);
    const body = { client_id: client.clientId, client_secret: client.secret };
    const hit = (srv: RunningServer) => api(srv, "POST", "/client/ms-auth/start", { body });
    // No wait between instances: each hit is one atomic step in the shared Redis.
    const results = await Promise.all([a, b, c, a, b, c, a, b].map(hit));
    expect(results.filter((r) => r.status === 200)).toHaveLength(4);
    for (const r of results.filter((r) => r.status !== 200)) expectError(r, 429, "rate_limited");
    // Nothing went to the database's counters.
    expect(await dbCounters()).toBe(before);
  });
  if (!redisUp) console.warn(REDIS_SKIP_REASON);

  test("with batched counting (the default), instances count together once a flush interval has passed", async () => {
    await startThree({ RATE_LIMIT_START_PER_MIN: "4", RATE_LIMIT_FLUSH_MS: "100" });
    const client = await newClient(a);
    const body = { client_id: client.clientId, client_secret: client.secret };
    for (const srv of [a, b, c, a]) {
      expect((await api(srv, "POST", "/client/ms-auth/start", { body })).status).toBe(200);
      // The stated bound: a hit is known to the other instances one flush (plus a round trip) later.
      await Bun.sleep(300);
    }
    for (const srv of [a, b, c])
      expectError(await api(srv, "POST", "/client/ms-auth/start", { body }), 429, "rate_limited");
  });
});
