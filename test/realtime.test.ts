import { beforeAll, describe, expect, test } from "bun:test";
import type { RunningServer } from "../src/app";
import { CLOSE } from "../src/realtime/socket";
import { sharedServer, startTestServer, stopTestServer } from "./harness";
import { addMember, api, newApiKey, newUser } from "./helpers";
import { newServer, type ServerFixture } from "./servers-fixture";
import { closeCode, WsClient } from "./ws-helpers";

let server: RunningServer;
let fx: ServerFixture;
beforeAll(async () => {
  server = await sharedServer();
  fx = await newServer(server);
});

const bearer = (t: string) => ({ authorization: `Bearer ${t}` });

describe("analytics stream: authentication and refusals", () => {
  test("auth by header: auth_ok, then a snapshot of the server", async () => {
    const c = await WsClient.connect(server, fx.serverId, bearer(fx.owner.token));
    const ok = await c.next();
    expect(ok).toMatchObject({ type: "auth_ok", server_id: fx.serverId, data: { expires_at: expect.any(String) } });
    const snap = await c.next();
    expect(snap.type).toBe("snapshot");
    expect(snap.server_id).toBe(fx.serverId);
    expect(snap.data).toMatchObject({
      status: expect.stringMatching(/^(up|down|unknown)$/),
      players_online: 0,
      players: [],
    });
    expect(Date.parse(snap.ts)).toBeGreaterThan(Date.now() - 60_000);
    c.close();
  });

  test("auth by first message (browsers), with a team API key", async () => {
    const { key } = await newApiKey(server, fx.owner, fx.teamId, "viewer");
    const c = await WsClient.connect(server, fx.serverId);
    c.send({ type: "auth", token: key });
    expect((await c.next()).type).toBe("auth_ok");
    expect((await c.next()).type).toBe("snapshot");
    c.close();
  });

  test("a viewer of the team may watch", async () => {
    const viewer = await newUser(server);
    await addMember(server, fx.owner, fx.teamId, viewer, "viewer");
    const c = await WsClient.connect(server, fx.serverId, bearer(viewer.token));
    expect((await c.until("snapshot")).map((m) => m.type)).toEqual(["auth_ok", "snapshot"]);
    c.close();
  });

  test("invalid, malformed and expired credentials close with 4001", async () => {
    const expired = await server.services.tokens.sign(
      fx.owner.id,
      (await server.services.tokens.verify(fx.owner.token))!.sid,
      Math.floor(Date.now() / 1000) - 3600,
      60,
    );
    for (const headers of [
      bearer("not-a-token"),
      { authorization: "Basic abc" },
      bearer(expired),
      bearer(`mcp_key_${"x".repeat(43)}`),
    ]) {
      const c = await WsClient.connect(server, fx.serverId, headers);
      expect(await closeCode(c)).toBe(CLOSE.unauthenticated);
    }
    const viaMessage = await WsClient.connect(server, fx.serverId);
    viaMessage.send({ type: "auth", token: "nope" });
    expect(await closeCode(viaMessage)).toBe(CLOSE.unauthenticated);
  });

  test("an agent token is refused with 4003", async () => {
    const c = await WsClient.connect(server, fx.serverId, bearer(fx.agentToken));
    expect(await closeCode(c)).toBe(CLOSE.forbidden);
  });

  test("an unknown server and a stranger's server close the same way: 4004", async () => {
    const stranger = await newUser(server);
    const reasons: string[] = [];
    for (const [id, token] of [
      [crypto.randomUUID(), fx.owner.token],
      [fx.serverId, stranger.token],
      ["not-a-uuid", fx.owner.token],
    ] as const) {
      const c = await WsClient.connect(server, id, bearer(token));
      const closed = await Promise.race([c.closed, Bun.sleep(3000).then(() => ({ code: 0, reason: "open" }))]);
      expect(closed.code).toBe(CLOSE.unknownServer);
      reasons.push(closed.reason);
    }
    expect(new Set(reasons).size).toBe(1);
  });

  test("a message that is not JSON, or of an unknown type, closes with 4400", async () => {
    const c1 = await WsClient.connect(server, fx.serverId, bearer(fx.owner.token));
    await c1.until("snapshot");
    c1.send("{not json");
    expect(await closeCode(c1)).toBe(CLOSE.badMessage);
    const c2 = await WsClient.connect(server, fx.serverId, bearer(fx.owner.token));
    await c2.until("snapshot");
    c2.send({ type: "subscribe_everything" });
    expect(await closeCode(c2)).toBe(CLOSE.badMessage);
  });

  test("ping is answered with pong", async () => {
    const c = await WsClient.connect(server, fx.serverId, bearer(fx.owner.token));
    await c.until("snapshot");
    c.send({ type: "ping" });
    expect((await c.next()).type).toBe("pong");
    c.close();
  });
});

describe("analytics stream: timing (servers of their own)", () => {
  test("no auth message in time closes with 4001", async () => {
    const srv = await startTestServer({ WS_AUTH_TIMEOUT_MS: "300" });
    const f = await newServer(srv);
    const c = await WsClient.connect(srv, f.serverId);
    const t = performance.now();
    expect(await closeCode(c)).toBe(CLOSE.unauthenticated);
    expect(performance.now() - t).toBeLessThan(2500);
  });

  test("token expiry: a notice first, re-auth keeps the socket, and expiry without re-auth ends it with 4011", async () => {
    const srv = await startTestServer({ WS_EXPIRY_NOTICE_SECONDS: "1" });
    const f = await newServer(srv);
    const now = Math.floor(Date.now() / 1000);
    const sid = (await srv.services.tokens.verify(f.owner.token))!.sid;
    const short = await srv.services.tokens.sign(f.owner.id, sid, now, 2);

    // Renewed: the notice arrives, a fresh token goes in, and the socket outlives the old token.
    const kept = await WsClient.connect(srv, f.serverId, bearer(short));
    await kept.until("snapshot");
    const notice = (await kept.until("token_expiring", 3000)).at(-1);
    expect(notice).toMatchObject({
      type: "token_expiring",
      data: { expires_at: new Date((now + 2) * 1000).toISOString() },
    });
    kept.send({ type: "auth", token: f.owner.token });
    await kept.until("auth_ok");

    // Not renewed: closed at expiry.
    const lapsed = await WsClient.connect(
      srv,
      f.serverId,
      bearer(await srv.services.tokens.sign(f.owner.id, sid, Math.floor(Date.now() / 1000), 2)),
    );
    await lapsed.until("snapshot");
    await lapsed.until("token_expiring", 3000);
    expect(await closeCode(lapsed, 4000)).toBe(CLOSE.credentialEnded);
    expect(await closeCode(kept, 500)).toBe("open");
    kept.close();
  });

  test("a revoked API key or a removed member ends the stream with 4011", async () => {
    const srv = await startTestServer({ WS_REVALIDATE_SECONDS: "1" });
    const f = await newServer(srv);
    const { key, id } = await newApiKey(srv, f.owner, f.teamId, "viewer");
    const member = await newUser(srv);
    await addMember(srv, f.owner, f.teamId, member, "viewer");
    const byKey = await WsClient.connect(srv, f.serverId, bearer(key));
    const byMember = await WsClient.connect(srv, f.serverId, bearer(member.token));
    await byKey.until("snapshot");
    await byMember.until("snapshot");
    await api(srv, "DELETE", `/teams/${f.teamId}/api-keys/${id}`, { token: f.owner.token });
    await api(srv, "DELETE", `/teams/${f.teamId}/members/${member.id}`, { token: f.owner.token });
    expect(await closeCode(byKey, 4000)).toBe(CLOSE.credentialEnded);
    expect(await closeCode(byMember, 4000)).toBe(CLOSE.credentialEnded);
  });
});

describe("analytics stream: events", () => {
  test("snapshot first, then every published event in order, to every subscriber", async () => {
    const f = await newServer(server);
    const a = await WsClient.connect(server, f.serverId, bearer(f.owner.token));
    const b = await WsClient.connect(server, f.serverId);
    b.send({ type: "auth", token: f.owner.token });
    await a.until("snapshot");
    await b.until("snapshot");
    const rt = server.services.realtime;
    rt.publish(f.serverId, "heartbeat", { tps: 19.5, mspt: 30, players_online: 1, memory_used_mb: 512 });
    rt.publish(f.serverId, "player_join", { uuid: "11111111-1111-4111-8111-111111111111", name: "Alex" });
    rt.publish(f.serverId, "status", { online: true, latency_ms: 7, changed: true });
    for (const c of [a, b]) {
      const got = [await c.next(), await c.next(), await c.next()];
      expect(got.map((m) => m.type)).toEqual(["heartbeat", "player_join", "status"]);
      expect(got.every((m) => m.server_id === f.serverId && typeof m.ts === "string")).toBe(true);
      expect(got[1]!.data).toEqual({ uuid: "11111111-1111-4111-8111-111111111111", name: "Alex" });
    }
    // A new subscriber's snapshot reflects what the actor has seen.
    const late = await WsClient.connect(server, f.serverId, bearer(f.owner.token));
    const snap = (await late.until("snapshot")).at(-1)!;
    expect(snap.data).toMatchObject({
      status: "up",
      latency_ms: 7,
      tps: 19.5,
      players_online: 1,
      players: [{ uuid: "11111111-1111-4111-8111-111111111111", name: "Alex" }],
    });
    // Events of another server never arrive here.
    rt.publish(fx.serverId, "heartbeat", { tps: 1 });
    expect(await a.quiet(200)).toEqual([]);
    for (const c of [a, b, late]) c.close();
  });
});

describe("analytics stream: events from the platform", () => {
  test("agent pushes, dashboard changes and pinger results arrive in order after the snapshot", async () => {
    const { startStatusResponder } = await import("../scripts/demo-mc-server");
    const { agentApi, eventId } = await import("./servers-fixture");
    const mc = await startStatusResponder({ port: 0, motd: "Live test", maxPlayers: 42 });
    try {
      const f = await newServer(server, { host: "127.0.0.1", port: mc.port });
      const c = await WsClient.connect(server, f.serverId, bearer(f.owner.token));
      await c.until("snapshot");
      const alex = "22222222-2222-4222-8222-222222222222";

      expect(
        (
          await agentApi(server, f.agentToken, "POST", "/agent/heartbeat", {
            tps: 19.8,
            mspt: 22,
            players_online: 1,
            memory_used_mb: 700,
            memory_max_mb: 2048,
          })
        ).status,
      ).toBe(200);
      const batch = {
        events: [
          { event_id: eventId(), type: "join", uuid: alex, name: "Alex" },
          {
            event_id: eventId(),
            type: "ban",
            uuid: "33333333-3333-4333-8333-333333333333",
            name: "Griefer",
            reason: "griefing",
          },
          { event_id: eventId(), type: "leave", uuid: alex, name: "Alex" },
        ],
      };
      expect((await agentApi(server, f.agentToken, "POST", "/agent/events", batch)).body).toMatchObject({
        accepted: 3,
      });
      // A retried batch changes nothing, so it publishes nothing.
      expect((await agentApi(server, f.agentToken, "POST", "/agent/events", batch)).body).toMatchObject({
        accepted: 0,
      });
      const sel = { token: f.owner.token, headers: { "x-server-id": f.serverId } };
      expect(
        (await api(server, "POST", "/server/ranks", { ...sel, body: { name: "vip", weight: 10, prefix: "[VIP]" } }))
          .status,
      ).toBe(201);
      expect(
        (
          await api(server, "POST", "/server/announcements", {
            ...sel,
            body: { message: "Welcome!", interval_seconds: 300 },
          })
        ).status,
      ).toBe(201);
      expect((await api(server, "DELETE", "/server/bans/33333333-3333-4333-8333-333333333333", sel)).status).toBe(200);
      await server.services.monitoring.checkNow(f.serverId);

      const got = await c.until("status", 5000);
      expect(got.map((m) => m.type)).toEqual([
        "heartbeat",
        "player_join",
        "ban_added",
        "player_leave",
        "ranks_changed",
        "announcements_changed",
        "ban_lifted",
        "status",
      ]);
      expect(got[0]!.data).toMatchObject({ tps: 19.8, mspt: 22, players_online: 1, memory_used_mb: 700 });
      expect(got[1]!.data).toEqual({ uuid: alex, name: "Alex" });
      expect(got[2]!.data).toMatchObject({ uuid: "33333333-3333-4333-8333-333333333333", reason: "griefing" });
      expect(got[4]!.data).toMatchObject({ action: "created", rank: { name: "vip", weight: 10 } });
      expect(got[7]!.data).toMatchObject({
        online: true,
        players_max: 42,
        changed: true,
        down_reason: null,
        latency_ms: expect.any(Number),
      });
      expect(await c.quiet(150)).toEqual([]);

      // The server goes down: the next check says so.
      await mc.close();
      await server.services.monitoring.checkNow(f.serverId);
      expect(await c.next(5000)).toMatchObject({
        type: "status",
        data: { online: false, changed: true, down_reason: "connection_refused" },
      });
      const late = await WsClient.connect(server, f.serverId, bearer(f.owner.token));
      const snap = (await late.until("snapshot")).at(-1)!;
      expect(snap.data).toMatchObject({ status: "down", online: false, tps: 19.8, players_online: 0, players_max: 42 });
      c.close();
      late.close();
    } finally {
      await mc.close().catch(() => {});
    }
  }, 20_000);
});

describe("analytics stream: the pinger's own loop", () => {
  test("with the pinger running, status events arrive without anyone asking", async () => {
    const { startStatusResponder } = await import("../scripts/demo-mc-server");
    const mc = await startStatusResponder({ port: 0 });
    // Stopped at the end: on PostgreSQL its pinger would go on claiming later files' servers.
    const srv = await startTestServer({ PINGER_ENABLED: "true", PING_INTERVAL_SECONDS: "1" });
    try {
      const f = await newServer(srv, { host: "127.0.0.1", port: mc.port });
      const c = await WsClient.connect(srv, f.serverId, bearer(f.owner.token));
      await c.until("snapshot");
      // A liveness check, not a timing one: the loop must get there, however busy the machine.
      const status = (await c.until("status", 20_000)).at(-1)!;
      expect(status.data).toMatchObject({ online: true });
      c.close();
    } finally {
      await stopTestServer(srv);
      await mc.close();
    }
  }, 40_000);
});

describe("analytics stream: players the pinger sees (no agent)", () => {
  const METRICS_TOKEN = "metrics-token-0123456789abcdef";
  const ALEX = { uuid: "a1a1a1a1-0000-4000-8000-000000000001", name: "Alex" };
  const STEVE = { uuid: "a1a1a1a1-0000-4000-8000-000000000002", name: "Steve" };
  const NOTCH = { uuid: "a1a1a1a1-0000-4000-8000-000000000003", name: "Notch" };
  /** What a status answer lists: `id` and `name`, as vanilla sends them. */
  const listed = (...ps: { uuid: string; name: string }[]) => ps.map((p) => ({ id: p.uuid, name: p.name }));
  const sorted = (ps: { uuid: string; name: string }[]) =>
    ps.map(({ uuid, name }) => ({ uuid, name })).sort((a, b) => a.uuid.localeCompare(b.uuid));

  /** The players REST lists as online, and what a new subscriber's snapshot says. */
  async function views(srv: RunningServer, f: ServerFixture) {
    const res = await api(srv, "GET", "/server/players?online=true&limit=100", f.as());
    expect(res.status).toBe(200);
    const c = await WsClient.connect(srv, f.serverId, bearer(f.owner.token));
    const snap = (await c.until("snapshot")).at(-1)!;
    c.close();
    return {
      rest: sorted(res.body.players),
      snapshot: sorted(snap.data.players),
      snapshotCount: snap.data.players_online,
    };
  }

  async function actorsGauge(srv: RunningServer): Promise<number> {
    const res = await fetch(`${srv.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    const line = /^realtime_server_actors (\d+)$/m.exec(await res.text());
    expect(line).not.toBeNull();
    return Number(line![1]);
  }

  test("joins and leaves in the player sample reach subscribers; a new subscriber's snapshot lists what REST lists; a server nobody watches keeps no actor, pinged or not", async () => {
    const { startStatusResponder } = await import("../scripts/demo-mc-server");
    const mc = await startStatusResponder({ port: 0 });
    const srv = await startTestServer({ ACTOR_IDLE_SECONDS: "1", METRICS_TOKEN });
    try {
      const f = await newServer(srv, { host: "127.0.0.1", port: mc.port });
      const check = () => srv.services.monitoring.checkNow(f.serverId);
      const c = await WsClient.connect(srv, f.serverId, bearer(f.owner.token));
      await c.until("snapshot");

      // Three players appear in the sample: three joins, before the check's status.
      mc.players = 3;
      mc.sample = listed(ALEX, STEVE, NOTCH);
      await check();
      const joined = await c.until("status", 5000);
      expect(joined.map((m) => m.type)).toEqual(["player_join", "player_join", "player_join", "status"]);
      expect(sorted(joined.slice(0, 3).map((m) => m.data))).toEqual(sorted([ALEX, STEVE, NOTCH]));
      expect(await views(srv, f)).toEqual({
        rest: sorted([ALEX, STEVE, NOTCH]),
        snapshot: sorted([ALEX, STEVE, NOTCH]),
        snapshotCount: 3,
      });

      // The same players again: no news. A truncated sample (5 online, an anonymous entry among
      // those listed) proves nobody left: no leave either.
      await check();
      expect((await c.until("status", 5000)).map((m) => m.type)).toEqual(["status"]);
      mc.players = 5;
      mc.sample = [...listed(ALEX), { id: "00000000-0000-0000-0000-000000000000", name: "Anonymous Player" }];
      await check();
      expect((await c.until("status", 5000)).map((m) => m.type)).toEqual(["status"]);

      // A complete sample without Steve and Notch: two leaves; REST and a new snapshot agree.
      mc.players = 1;
      mc.sample = listed(ALEX);
      await check();
      const left = await c.until("status", 5000);
      expect(left.map((m) => m.type)).toEqual(["player_leave", "player_leave", "status"]);
      expect(sorted(left.slice(0, 2).map((m) => m.data))).toEqual(sorted([STEVE, NOTCH]));
      expect(await views(srv, f)).toEqual({ rest: [ALEX], snapshot: [ALEX], snapshotCount: 1 });
      c.close();
      await c.closed;

      // Nobody watches now. Pings go on (each result reached the actor), yet the actor is let go
      // once it has had no subscriber for ACTOR_IDLE_SECONDS. A liveness check, not a timed one.
      const until = Date.now() + 20_000;
      while ((await actorsGauge(srv)) > 0 && Date.now() < until) {
        await check();
        await Bun.sleep(250);
      }
      expect(await actorsGauge(srv)).toBe(0);
      expect(srv.services.realtime.actors.stats(f.serverId)).toEqual({ actors: 0, subscribers: 0 });

      // Alex leaves and two others join while nobody watches: the next subscriber's actor is
      // seeded from the database, and says what REST says.
      mc.players = 2;
      mc.sample = listed(STEVE, NOTCH);
      await check();
      expect(await views(srv, f)).toEqual({
        rest: sorted([STEVE, NOTCH]),
        snapshot: sorted([STEVE, NOTCH]),
        snapshotCount: 2,
      });
      // Everyone leaves.
      mc.players = 0;
      mc.sample = [];
      await check();
      expect(await views(srv, f)).toEqual({ rest: [], snapshot: [], snapshotCount: 0 });
    } finally {
      await stopTestServer(srv);
      await mc.close();
    }
  }, 60_000);

  test("while an agent runs, its joins are the only ones: the sample adds no event of its own; a session the sweep ends is a leave", async () => {
    const { startStatusResponder } = await import("../scripts/demo-mc-server");
    const { agentApi, eventId } = await import("./servers-fixture");
    const mc = await startStatusResponder({ port: 0 });
    try {
      const f = await newServer(server, { host: "127.0.0.1", port: mc.port });
      const c = await WsClient.connect(server, f.serverId, bearer(f.owner.token));
      await c.until("snapshot");
      expect((await agentApi(server, f.agentToken, "POST", "/agent/heartbeat", { players_online: 1 })).status).toBe(
        200,
      );
      const batch = { events: [{ event_id: eventId(), type: "join", uuid: ALEX.uuid, name: ALEX.name }] };
      expect((await agentApi(server, f.agentToken, "POST", "/agent/events", batch)).status).toBe(200);
      mc.players = 2;
      mc.sample = listed(ALEX, STEVE);
      await server.services.monitoring.checkNow(f.serverId);
      expect((await c.until("status", 5000)).map((m) => m.type)).toEqual(["heartbeat", "player_join", "status"]);
      expect(await views(server, f)).toEqual({ rest: [ALEX], snapshot: [ALEX], snapshotCount: 1 });

      // The agent goes silent past the session timeout: the sweep ends Alex's session, and says so.
      const timeout = server.services.config.PLAYER_SESSION_TIMEOUT_SECONDS;
      await server.services.playerHistory.sweep(new Date(Date.now() + (timeout + 60) * 1000));
      const left = await c.next(5000);
      expect(left).toMatchObject({ type: "player_leave", data: ALEX });
      expect(await views(server, f)).toEqual({ rest: [], snapshot: [], snapshotCount: 0 });
      c.close();
    } finally {
      await mc.close();
    }
  }, 20_000);
});

describe("watched servers (which ping results go on the bus)", () => {
  test("a new instance treats all as watched until others answered; announcements last three periods", async () => {
    const { InProcessBus } = await import("../src/realtime/bus");
    const { Watchers, WATCH_ANNOUNCE_MS } = await import("../src/realtime/watchers");
    const { createLogger } = await import("../src/lib/log");
    const bus = new InProcessBus(createLogger("silent"));
    let now = 1_000_000;
    const clock = () => now;
    // Two instances on one bus: `viewer` has a live view of server s1, `pinger` has none.
    const viewerLocal = new Set(["s1"]);
    const viewer = new Watchers(bus, { has: (id) => viewerLocal.has(id), servers: () => viewerLocal }, clock);
    const pinger = new Watchers(bus, { has: () => false, servers: () => [] }, clock);
    expect(pinger.watched("s2")).toBe(true);
    now += 2_001;
    // The pinger's start asked, and the viewer answered with s1.
    expect(pinger.watched("s1")).toBe(true);
    expect(pinger.watched("s2")).toBe(false);
    expect(viewer.watched("s1")).toBe(true);
    // A new live view is announced at once.
    viewerLocal.add("s2");
    await viewer.started("s2");
    expect(pinger.watched("s2")).toBe(true);
    // Without a repeat, an announcement expires after three periods; a repeat renews it.
    viewerLocal.delete("s2");
    now += 3 * WATCH_ANNOUNCE_MS - 1;
    await viewer.announce();
    now += 2;
    expect(pinger.watched("s1")).toBe(true);
    expect(pinger.watched("s2")).toBe(false);
  });
});
