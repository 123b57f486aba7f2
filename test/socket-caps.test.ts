import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { RunningServer } from "../src/app";
import { CLOSE } from "../src/realtime/socket";
import { startTestServer, stopTestServer } from "./harness";
import { api, newApiKey } from "./helpers";
import { newServer, type ServerFixture } from "./servers-fixture";
import { closeCode, WsClient } from "./ws-helpers";

const bearer = (t: string) => ({ authorization: `Bearer ${t}` });

/** A socket that authenticated and got its snapshot. */
async function subscribed(server: RunningServer, serverId: string, headers: Record<string, string>) {
  const c = await WsClient.connect(server, serverId, headers);
  expect((await c.until("snapshot")).map((m) => m.type)).toEqual(["auth_ok", "snapshot"]);
  return c;
}

/** The close code and reason, or "still open" after a few seconds. */
const closedWithin = (c: WsClient) => Promise.race([c.closed, Bun.sleep(5000).then(() => "still open")]);

async function stillOpen(c: WsClient) {
  c.send({ type: "ping" });
  expect((await c.next()).type).toBe("pong");
}

describe("open analytics sockets per credential", () => {
  let server: RunningServer;
  let fx: ServerFixture;
  beforeAll(async () => {
    server = await startTestServer({ WS_MAX_SOCKETS_PER_CREDENTIAL: "3", WS_MAX_SOCKETS_PER_ADDRESS: "1000" });
    fx = await newServer(server);
  });
  afterAll(() => stopTestServer(server));

  test("one past the cap closes with 4012, whatever token of the account it uses; the earlier ones stay open", async () => {
    const open = [];
    for (let i = 0; i < 3; i++) open.push(await subscribed(server, fx.serverId, bearer(fx.owner.token)));

    // A second sign-in of the same account is the same credential.
    const again = await api(server, "POST", "/auth/login", {
      body: { email: fx.owner.email, password: fx.owner.password },
    });
    expect(again.status).toBe(200);
    const excess = await WsClient.connect(server, fx.serverId, bearer(again.body.access_token));
    expect(await closedWithin(excess)).toEqual({
      code: CLOSE.tooManySockets,
      reason: "too many analytics sockets for this credential",
    });
    // The same by the auth message (browsers).
    const byMessage = await WsClient.connect(server, fx.serverId);
    byMessage.send({ type: "auth", token: fx.owner.token });
    expect(await closeCode(byMessage)).toBe(CLOSE.tooManySockets);

    for (const c of open) await stillOpen(c);

    // An API key of the same team is a credential of its own.
    const { key } = await newApiKey(server, fx.owner, fx.teamId, "viewer");
    const keyed = [];
    for (let i = 0; i < 3; i++) keyed.push(await subscribed(server, fx.serverId, bearer(key)));
    expect(await closeCode(await WsClient.connect(server, fx.serverId, bearer(key)))).toBe(CLOSE.tooManySockets);

    // A closed socket frees its place.
    open.shift()!.close();
    let replacement: WsClient | undefined;
    for (let i = 0; i < 50 && !replacement; i++) {
      const c = await WsClient.connect(server, fx.serverId, bearer(fx.owner.token));
      const m = await Promise.race([c.next(), c.closed]);
      if ("type" in m && m.type === "auth_ok") {
        expect((await c.next()).type).toBe("snapshot");
        replacement = c;
      } else await Bun.sleep(20);
    }
    expect(replacement).toBeDefined();
    for (const c of [...open, ...keyed, replacement!]) await stillOpen(c);
    for (const c of [...open, ...keyed, replacement!]) c.close();
  }, 60_000);
});

describe("open analytics sockets per client address", () => {
  let server: RunningServer;
  let fx: ServerFixture;
  beforeAll(async () => {
    server = await startTestServer({
      TRUST_PROXY: "1",
      WS_MAX_SOCKETS_PER_ADDRESS: "2",
      WS_MAX_SOCKETS_PER_CREDENTIAL: "1000",
    });
    fx = await newServer(server);
  });
  afterAll(() => stopTestServer(server));

  test("sockets are counted from the upgrade, authenticated or not; one past the cap closes with 4012", async () => {
    const from = { "x-forwarded-for": "198.51.100.7" };
    // Not yet authenticated: these hold descriptors all the same.
    const first = await WsClient.connect(server, fx.serverId, from);
    const second = await WsClient.connect(server, fx.serverId, from);
    const third = await WsClient.connect(server, fx.serverId, { ...from, ...bearer(fx.owner.token) });
    expect(await closedWithin(third)).toEqual({
      code: CLOSE.tooManySockets,
      reason: "too many analytics sockets from this address",
    });

    // Another address is not affected, and the first two still authenticate and stream.
    const elsewhere = await subscribed(server, fx.serverId, {
      "x-forwarded-for": "203.0.113.9",
      ...bearer(fx.owner.token),
    });
    for (const c of [first, second]) {
      c.send({ type: "auth", token: fx.owner.token });
      expect((await c.until("snapshot")).at(-1)!.type).toBe("snapshot");
      await stillOpen(c);
    }
    for (const c of [first, second, elsewhere]) c.close();
  }, 60_000);
});
