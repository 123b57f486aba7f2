import { describe, expect, test } from "bun:test";
import { TRPCClientError } from "@trpc/client";
import { sharedServer } from "../../../test/harness";
import { newTeam, newUser } from "../../../test/helpers";
import { newServer } from "../../../test/servers-fixture";
import { type AnalyticsMessage, AnalyticsSocket, createRestClient, createTrpcClient, selectors } from "../src/index";

describe("tRPC client", () => {
  test("per-call context selects the team and server: each call reaches its own", async () => {
    const server = await sharedServer();
    const a = await newServer(server, { name: "Alpha" });
    const b = await newServer(server, { name: "Beta" }, a.owner);
    const api = createTrpcClient({ baseUrl: server.url, token: () => a.owner.token });
    const [listA, listB] = await Promise.all([
      api.servers.list.query(undefined, { context: { teamId: a.teamId } }),
      api.servers.list.query(undefined, selectors({ teamId: b.teamId })),
    ]);
    expect(listA.servers.map((s) => s.name)).toEqual(["Alpha"]);
    expect(listB.servers.map((s) => s.name)).toEqual(["Beta"]);
    const players = await api.servers.players.query({}, selectors({ serverId: b.serverId }));
    expect(players.players).toEqual([]);
  });

  test("defaults apply to every call; a missing selector is the service's typed 400", async () => {
    const server = await sharedServer();
    const owner = await newUser(server, "sdk");
    const teamId = await newTeam(server, owner);
    const withDefault = createTrpcClient({ baseUrl: `${server.url}/`, token: owner.token, defaults: { teamId } });
    expect((await withDefault.servers.list.query()).servers).toEqual([]);
    const bare = createTrpcClient({ baseUrl: server.url, token: owner.token });
    const err = await bare.servers.list.query().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TRPCClientError);
    const shape = (err as TRPCClientError<import("../src/index").AppRouter>).shape;
    expect(shape?.data.code).toBe("bad_request");
    expect(shape?.data.httpStatus).toBe(400);
    expect(shape?.message).toContain("x-team-id");
  });
});

describe("Idempotency-Key", () => {
  test("a call's idempotencyKey makes a retried create answer the first answer; the REST client takes it as a header", async () => {
    const server = await sharedServer();
    const owner = await newUser(server, "sdk");
    const api = createTrpcClient({ baseUrl: server.url, token: owner.token });
    const idempotencyKey = crypto.randomUUID();
    const first = await api.teams.create.mutate({ name: "Once" }, { context: { idempotencyKey } });
    const again = await api.teams.create.mutate({ name: "Once" }, { context: { idempotencyKey } });
    expect(again).toEqual(first);
    const rest = createRestClient({ baseUrl: server.url, token: owner.token });
    const viaRest = await rest.POST("/teams", {
      params: { header: { "Idempotency-Key": idempotencyKey } },
      body: { name: "Once" },
    });
    expect(viaRest.response.headers.get("idempotent-replayed")).toBe("true");
    expect(viaRest.data).toEqual(first);
    expect((await api.teams.list.query()).teams).toHaveLength(1);
  });
});

describe("REST client", () => {
  test("typed paths with the selector header; errors come back as the envelope", async () => {
    const server = await sharedServer();
    const fx = await newServer(server, { name: "Gamma" });
    const rest = createRestClient({ baseUrl: server.url, token: async () => fx.owner.token });
    const listed = await rest.GET("/server/servers", { params: { header: { "x-team-id": fx.teamId } } });
    expect(listed.response.status).toBe(200);
    expect(listed.data?.servers.map((s) => s.server_id)).toEqual([fx.serverId]);
    const other = await rest.GET("/server/players", {
      params: { header: { "x-server-id": crypto.randomUUID() }, query: {} },
    });
    expect(other.response.status).toBe(404);
    expect(other.error?.error.code).toBe("not_found");
    expect(other.error?.error.request_id).toBe(other.response.headers.get("x-request-id")!);
  });
});

function collect(socket: AnalyticsSocket) {
  const seen: AnalyticsMessage[] = [];
  const waiters: { type: string; resolve: (m: AnalyticsMessage) => void }[] = [];
  socket.on("message", (m) => {
    seen.push(m);
    for (const w of waiters.filter((w) => w.type === m.type)) {
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve(m);
    }
  });
  const next = (type: string, timeoutMs = 10_000) =>
    new Promise<AnalyticsMessage>((resolve, reject) => {
      const already = seen.find((m) => m.type === type && !used.has(m));
      if (already) {
        used.add(already);
        return resolve(already);
      }
      const timer = setTimeout(() => reject(new Error(`no ${type} within ${timeoutMs} ms`)), timeoutMs);
      waiters.push({
        type,
        resolve: (m) => {
          clearTimeout(timer);
          used.add(m);
          resolve(m);
        },
      });
    });
  const used = new Set<AnalyticsMessage>();
  return { seen, next };
}

describe("analytics socket", () => {
  test("authenticates with a first message, then a snapshot and live events, typed", async () => {
    const server = await sharedServer();
    const fx = await newServer(server, { name: "Delta" });
    const socket = new AnalyticsSocket({ baseUrl: server.url, serverId: fx.serverId, token: fx.owner.token });
    const { next } = collect(socket);
    await socket.connect();
    const snapshot = await next("snapshot");
    expect(snapshot.type === "snapshot" && snapshot.data.players_online).toBe(0);
    const rest = createRestClient({ baseUrl: server.url, token: fx.owner.token });
    const ban = await rest.POST("/server/bans", {
      params: { header: { "x-server-id": fx.serverId } },
      body: { uuid: "069a79f4-44e9-4726-a5be-fca90e38aaf5", name: "Notch", reason: "griefing" },
    });
    expect(ban.response.status).toBe(201);
    const event = await next("ban_added");
    expect(event.server_id).toBe(fx.serverId);
    expect(event.type === "ban_added" && event.data.name).toBe("Notch");
    socket.ping();
    await next("pong");
    socket.close();
  });

  test("a server outside the caller's teams ends the stream with 4004 and no reconnection", async () => {
    const server = await sharedServer();
    const owner = await newUser(server, "sdk");
    const socket = new AnalyticsSocket({
      baseUrl: server.url,
      serverId: crypto.randomUUID(),
      token: owner.token,
      backoff: { initialMs: 10 },
    });
    let reconnects = 0;
    socket.on("reconnecting", () => reconnects++);
    const err = await socket.connect().catch((e: Error) => e);
    expect(String(err)).toContain("4004");
    await Bun.sleep(100);
    expect(reconnects).toBe(0);
  });

  test("after a drop it reconnects with backoff, asks for the token again and gets a fresh snapshot", async () => {
    // A listener that drops the first connection after authenticating, to cut the stream
    // the way a restarting instance or a lost network does.
    let connections = 0;
    const ids = new WeakMap<object, number>();
    const tokens: string[] = [];
    const relay = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch(req, srv) {
        return srv.upgrade(req) ? undefined : new Response("upgrade", { status: 400 });
      },
      websocket: {
        open(ws) {
          ids.set(ws, ++connections);
        },
        message(ws, raw) {
          const id = ids.get(ws);
          const msg = JSON.parse(String(raw));
          if (msg.type !== "auth") return;
          tokens.push(msg.token);
          const env = (type: string, data: object) =>
            JSON.stringify({ type, server_id: "s", ts: new Date().toISOString(), data });
          ws.send(env("auth_ok", { expires_at: null }));
          ws.send(env("snapshot", { status: "up", players_online: id }));
          if (id === 1) ws.close(1011, "going away");
        },
      },
    });
    let issued = 0;
    const socket = new AnalyticsSocket({
      baseUrl: `http://127.0.0.1:${relay.port}`,
      serverId: "s",
      token: () => `token-${++issued}`,
      backoff: { initialMs: 50 },
    });
    const drops: { attempt: number; delayMs: number; code: number }[] = [];
    socket.on("reconnecting", (d) => drops.push(d));
    const snapshots: number[] = [];
    socket.on("snapshot", (m) => snapshots.push(m.data.players_online));
    await socket.connect();
    for (let i = 0; i < 100 && snapshots.length < 2; i++) await Bun.sleep(20);
    socket.close();
    relay.stop(true);
    expect(snapshots).toEqual([1, 2]);
    expect(tokens).toEqual(["token-1", "token-2"]);
    expect(drops).toHaveLength(1);
    expect(drops[0]!.code).toBe(1011);
    expect(drops[0]!.delayMs).toBeGreaterThanOrEqual(25);
    expect(drops[0]!.delayMs).toBeLessThanOrEqual(50);
  });
});

test("analytics socket: token_expiring is answered with an auth message carrying a fresh token", async () => {
  const tokens: string[] = [];
  const relay = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch(req, srv) {
      return srv.upgrade(req) ? undefined : new Response("upgrade", { status: 400 });
    },
    websocket: {
      message(ws, raw) {
        const msg = JSON.parse(String(raw));
        if (msg.type !== "auth") return;
        tokens.push(msg.token);
        const env = (type: string, data: object) =>
          JSON.stringify({ type, server_id: "s", ts: new Date().toISOString(), data });
        ws.send(env("auth_ok", { expires_at: new Date(Date.now() + 60_000).toISOString() }));
        if (tokens.length === 1) ws.send(env("token_expiring", { expires_at: new Date().toISOString() }));
      },
    },
  });
  let issued = 0;
  const socket = new AnalyticsSocket({
    baseUrl: `http://127.0.0.1:${relay.port}`,
    serverId: "s",
    token: async () => `token-${++issued}`,
  });
  let authOks = 0;
  socket.on("auth_ok", () => authOks++);
  await socket.connect();
  for (let i = 0; i < 100 && authOks < 2; i++) await Bun.sleep(20);
  socket.close();
  relay.stop(true);
  expect(tokens).toEqual(["token-1", "token-2"]);
  expect(authOks).toBe(2);
});
