import { describe, expect, test } from "bun:test";
import { createApp, startServer } from "../src/app";
import { loadConfig } from "../src/config";
import { AppError } from "../src/lib/errors";
import type { Logger } from "../src/lib/log";
import { devIdp, startTestServer, tempDir, testEnv } from "./harness";
import { api, expectError, newUser } from "./helpers";
import { hiddenFields, newClient, start } from "./ms-auth-helpers";
import { freePort } from "./shared";
import { newServer } from "./servers-fixture";
import { closeCode, WsClient } from "./ws-helpers";

/** A logger that keeps every line, to read what the edge logged. */
function capturingLogger(lines: Record<string, unknown>[]): Logger {
  const write = (level: string) => (msg: string, fields?: Record<string, unknown>) =>
    void lines.push({ level, msg, ...fields });
  const log: Logger = {
    debug: write("debug"),
    info: write("info"),
    warn: write("warn"),
    error: write("error"),
    child: () => log,
    enabled: () => true,
  };
  return log;
}

describe("one request pipeline for every route", () => {
  test("a plain route added after the edge answers errors in the envelope and logs one access line, with no code of its own", async () => {
    const lines: Record<string, unknown>[] = [];
    const port = freePort();
    const running = await startServer(
      loadConfig(testEnv({ DATA_DIR: tempDir(), PORT: String(port), RATE_LIMIT_GENERAL_PER_MIN: "5" })),
      capturingLogger(lines),
    );
    try {
      const app = createApp(running.services)
        .get("/plain/ok", () => ({ ok: true }))
        .get("/plain/conflict", () => {
          throw new AppError("conflict", "Already there.");
        })
        .get("/plain/crash", () => {
          throw new Error("database password is hunter2");
        })
        .listen({ port: 0, hostname: "127.0.0.1" });
      const base = `http://127.0.0.1:${app.server!.port}`;
      const ok = await fetch(`${base}/plain/ok`, { headers: { "x-request-id": "plain-ok-1" } });
      expect(ok.status).toBe(200);
      expect(ok.headers.get("x-request-id")).toBe("plain-ok-1");
      expect(ok.headers.get("ratelimit-policy")).toContain('"general"');

      const conflict = await fetch(`${base}/plain/conflict`);
      expect(conflict.status).toBe(409);
      const body = (await conflict.json()) as { error: { code: string; message: string; request_id: string } };
      expect(body.error).toMatchObject({ code: "conflict", message: "Already there." });
      expect(body.error.request_id).toBe(conflict.headers.get("x-request-id")!);

      const crash = await fetch(`${base}/plain/crash`);
      expect(crash.status).toBe(500);
      const crashText = await crash.text();
      expect(crashText).toStartWith('{"error":{"code":"internal"');
      expect(crashText).not.toContain("hunter2");

      // The general limit applies to the new route too (5 per minute: 3 used above).
      await fetch(`${base}/plain/ok`);
      await fetch(`${base}/plain/ok`);
      const limited = await fetch(`${base}/plain/ok`);
      expect(limited.status).toBe(429);
      expect(limited.headers.get("retry-after")).not.toBeNull();

      await Bun.sleep(50);
      const access = lines.filter((l) => l.msg === "request" && String(l.path).startsWith("/plain/"));
      expect(access.map((l) => `${l.path} ${l.status}`)).toEqual([
        "/plain/ok 200",
        "/plain/conflict 409",
        "/plain/crash 500",
        "/plain/ok 200",
        "/plain/ok 200",
        "/plain/ok 429",
      ]);
      expect(access.find((l) => l.path === "/plain/ok")?.request_id).toBe("plain-ok-1");
      app.stop(true);
    } finally {
      await running.stop();
    }
  });

  test("graceful shutdown waits for a slow browser callback: the identity chain finishes and the consent page is served", async () => {
    const idp = await devIdp();
    // The identity provider's token endpoint answers slowly, as a busy upstream would, and
    // says when the callback has reached it.
    let reachedToken!: () => void;
    const atToken = new Promise<void>((resolve) => (reachedToken = resolve));
    const slow = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      async fetch(req) {
        const url = new URL(req.url);
        if (url.pathname.endsWith("/token")) {
          reachedToken();
          await Bun.sleep(1500);
        }
        const body = req.method === "GET" || req.method === "HEAD" ? undefined : await req.arrayBuffer();
        const upstream = await fetch(idp.url + url.pathname + url.search, {
          method: req.method,
          headers: req.headers,
          body,
          redirect: "manual",
        });
        return new Response(upstream.body, { status: upstream.status, headers: upstream.headers });
      },
    });
    const server = await startTestServer({ DEV_IDP_URL: `http://127.0.0.1:${slow.port}` });
    const client = await newClient(server);
    const started = await start(server, client);
    const page = await fetch(started.auth_url);
    const form = new URLSearchParams({ ...hiddenFields(await page.text()), username: "Patient", outcome: "success" });
    const submitted = await fetch(started.auth_url.split("?")[0]!, { method: "POST", body: form, redirect: "manual" });
    const callbackUrl = submitted.headers.get("location")!;
    expect(callbackUrl).toContain("/client/ms-auth/callback");

    let answeredAt = 0;
    const callback = fetch(callbackUrl, { redirect: "manual" }).then(async (res) => {
      const text = await res.text();
      answeredAt = performance.now();
      return { status: res.status, text };
    });
    await atToken; // the callback is now inside the identity chain, waiting on the token endpoint
    await server.stop();
    const stoppedAt = performance.now();
    const answer = await callback;
    slow.stop(true);
    expect(answer.status).toBe(200);
    expect(answer.text).toContain("Patient");
    expect(answer.text).toContain('name="decision"');
    expect(answeredAt).toBeGreaterThan(0);
    // The page was read by the time stop() resolved: a stop that did not wait would resolve while
    // the token endpoint still slept (1.5 s before the answer). The client's read of the body and
    // the test's continuation after stop() are separate callbacks, so either may run first: a
    // loaded run saw the read land 0.5 ms after.
    expect(answeredAt).toBeLessThanOrEqual(stoppedAt + 250);
  });
});

describe("tRPC batches", () => {
  test("password procedures cannot be batched: 400 before any password is hashed", async () => {
    const server = await startTestServer();
    const email = `batch-${Date.now()}@example.com`;
    const input = JSON.stringify({ "0": { email, password: "long enough pw" }, "1": { email, password: "x" } });
    const res = await fetch(`${server.url}/trpc/auth.login,auth.login?batch=1`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: input,
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe("bad_request");
    expect(body.error.message).toContain("auth.login");
    // A single call still works on the typed door.
    const single = await fetch(`${server.url}/trpc/auth.signup`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email, password: "long enough pw" }),
    });
    expect(single.status).toBe(200);
  });

  test("a batch is capped at TRPC_MAX_BATCH calls", async () => {
    const server = await startTestServer({ TRPC_MAX_BATCH: "4" });
    const four = await fetch(`${server.url}/trpc/health.check,health.check,health.check,health.check?batch=1`);
    expect(four.status).toBe(200);
    const five = await fetch(`${server.url}/trpc/${Array(5).fill("health.check").join(",")}?batch=1`);
    expect(five.status).toBe(400);
    expect(((await five.json()) as { error: { message: string } }).error.message).toContain("at most 4 calls");
  });

  test("every call of a batch counts against the general limit", async () => {
    const server = await startTestServer({ RATE_LIMIT_GENERAL_PER_MIN: "6" });
    const batch = await fetch(`${server.url}/trpc/${Array(5).fill("health.check").join(",")}?batch=1`);
    expect(batch.status).toBe(200);
    expect((await api(server, "GET", "/health")).status).toBe(200); // the 6th call
    const over = await api(server, "GET", "/health");
    expectError(over, 429, "rate_limited");
    // A batch that would pass the limit is refused whole.
    const server2 = await startTestServer({ RATE_LIMIT_GENERAL_PER_MIN: "3" });
    const tooBig = await fetch(`${server2.url}/trpc/${Array(4).fill("health.check").join(",")}?batch=1`);
    expect(tooBig.status).toBe(429);
  });
});

describe("client address behind proxies", () => {
  test("with TRUST_PROXY=1 the address is the rightmost X-Forwarded-For entry: rotating the leftmost does not escape the limit", async () => {
    const server = await startTestServer({ TRUST_PROXY: "true", RATE_LIMIT_GENERAL_PER_MIN: "3" });
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await api(server, "GET", "/health", { headers: { "x-forwarded-for": `10.0.0.${i}, 203.0.113.7` } });
      statuses.push(res.status);
    }
    expect(statuses).toEqual([200, 200, 200, 429, 429]);
    // Another client behind the same proxy has its own budget.
    expect((await api(server, "GET", "/health", { headers: { "x-forwarded-for": "203.0.113.8" } })).status).toBe(200);
  });

  test("with TRUST_PROXY=2 the client is two hops from the right", async () => {
    const server = await startTestServer({ TRUST_PROXY: "2", RATE_LIMIT_GENERAL_PER_MIN: "2" });
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) {
      const xff = `198.51.100.${i}, 203.0.113.9, 192.0.2.1`;
      statuses.push((await api(server, "GET", "/health", { headers: { "x-forwarded-for": xff } })).status);
    }
    expect(statuses).toEqual([200, 200, 429, 429]);
  });

  test("TRUST_PROXY takes true, false or a hop count, and says so otherwise", () => {
    expect(loadConfig(testEnv({ TRUST_PROXY: "true" })).TRUST_PROXY).toBe(1);
    expect(loadConfig(testEnv({ TRUST_PROXY: "false" })).TRUST_PROXY).toBe(0);
    expect(loadConfig(testEnv({ TRUST_PROXY: "3" })).TRUST_PROXY).toBe(3);
    expect(() => loadConfig(testEnv({ TRUST_PROXY: "sometimes" }))).toThrow(/TRUST_PROXY/);
  });
});

describe("analytics socket limits", () => {
  test("a WebSocket upgrade over the general limit is refused with 429 before any credential is looked at", async () => {
    const server = await startTestServer({ RATE_LIMIT_GENERAL_PER_MIN: "2" });
    await api(server, "GET", "/health");
    await api(server, "GET", "/health");
    const res = await fetch(`${server.url}/ws/server/00000000-0000-4000-8000-000000000000/analytics`, {
      headers: {
        upgrade: "websocket",
        connection: "Upgrade",
        "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
        "sec-websocket-version": "13",
        authorization: "Bearer not-a-real-token",
      },
    });
    expect(res.status).toBe(429);
    expect(res.headers.get("retry-after")).not.toBeNull();
  });

  test("before authenticating, a socket may send only a few messages (4029 past them)", async () => {
    const server = await startTestServer();
    const f = await newServer(server);
    const ws = await WsClient.connect(server, f.serverId);
    for (let i = 0; i < 10; i++) ws.send({ type: "ping" });
    expect(await closeCode(ws)).toBe(4029);
  });

  test("an authenticated socket has a message budget: past WS_MESSAGES_PER_MIN it is closed with 4029", async () => {
    const server = await startTestServer({ WS_MESSAGES_PER_MIN: "10" });
    const f = await newServer(server);
    const ws = await WsClient.connect(server, f.serverId, { authorization: `Bearer ${f.owner.token}` });
    await ws.until("snapshot");
    for (let i = 0; i < 30; i++) ws.send({ type: "ping" });
    expect(await closeCode(ws)).toBe(4029);
    const pongs = (await ws.quiet(50)).filter((m) => m.type === "pong").length;
    expect(pongs).toBeLessThanOrEqual(10);
  });

  test("re-authentication messages share the budget, so they cannot each run a membership query without bound", async () => {
    const server = await startTestServer({ WS_MESSAGES_PER_MIN: "5" });
    const f = await newServer(server);
    const u = await newUser(server);
    expect(u.token).toBeString();
    const ws = await WsClient.connect(server, f.serverId, { authorization: `Bearer ${f.owner.token}` });
    await ws.until("snapshot");
    for (let i = 0; i < 20; i++) ws.send({ type: "auth", token: f.owner.token });
    expect(await closeCode(ws)).toBe(4029);
  });
});
