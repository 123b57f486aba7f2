import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTRPCClient, httpBatchLink, httpLink, TRPCClientError } from "@trpc/client";
import { Elysia } from "elysia";
import type { RunningServer } from "../src/app";
import { edgePlugin } from "../src/http/edge";
import { answeredDirectly, trpcDoor } from "../src/trpc/door";
import { appRouter, type AppRouter } from "../src/trpc/router";
import { devIdp, startTestServer } from "./harness";
import { fullLogin, newClient, start, type TestClient } from "./ms-auth-helpers";

/**
 * /trpc answers single calls itself and leaves the rest to tRPC's fetch adapter. Each request
 * here goes to the app and to a reference app on the same services whose door sends everything
 * through the adapter; the two answers must be the same (status, body, headers), and the test
 * also states which requests the door answered itself, so the comparison covers that path.
 */

const AUTH_FAILURE_LIMIT = 3;
let server: RunningServer;
let reference: { url: string; stop(): void };
let client: TestClient;
let sessionToken: string;
let requestId: string;

beforeAll(async () => {
  server = await startTestServer({
    DEV_IDP_URL: (await devIdp()).url,
    RATE_LIMIT_CLIENT_AUTH_FAILURES_PER_MIN: String(AUTH_FAILURE_LIMIT),
    CORS_ORIGINS: "https://dash.example.com",
  });
  const { services } = server;
  const app = new Elysia()
    .use(
      edgePlugin({
        edge: services.edge,
        log: services.log,
        inflight: { count: 0 },
        maxBodyBytes: services.config.MAX_BODY_BYTES,
        metrics: services.metrics,
      }),
    )
    .use(trpcDoor(appRouter, services, { adapterOnly: true }))
    .listen({ port: 0, hostname: "127.0.0.1" });
  reference = { url: `http://127.0.0.1:${app.server!.port}`, stop: () => app.stop(true) };
  client = await newClient(server);
  ({ token: sessionToken } = await fullLogin(server, client));
  requestId = (await start(server, client)).auth_request_id;
});
afterAll(() => reference?.stop());

interface Case {
  name: string;
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: () => BodyInit;
  /** Whether the door answers it itself (else the adapter does, on both apps). */
  direct: boolean;
  status: number;
}

const creds = () => ({ client_id: client.clientId, client_secret: client.secret });
const json = (v: unknown) => () => JSON.stringify(v);
const JSON_TYPE = { "content-type": "application/json" };

const cases = (): Case[] => [
  {
    name: "validate, a live session",
    method: "POST",
    path: "/trpc/msAuth.validate",
    headers: JSON_TYPE,
    body: json({ ...creds(), svc_session_token: sessionToken }),
    direct: true,
    status: 200,
  },
  {
    name: "poll, a pending request",
    method: "POST",
    path: "/trpc/msAuth.poll",
    headers: JSON_TYPE,
    body: json({ ...creds(), auth_request_id: requestId }),
    direct: true,
    status: 200,
  },
  {
    name: "validate, a field missing (validation error)",
    method: "POST",
    path: "/trpc/msAuth.validate",
    headers: JSON_TYPE,
    body: json(creds()),
    direct: true,
    status: 400,
  },
  {
    name: "validate, content type with parameters and capitals",
    method: "POST",
    path: "/trpc/msAuth.validate",
    headers: { "content-type": "Application/JSON; charset=utf-8" },
    body: json({ ...creds(), svc_session_token: "svc_nope" }),
    direct: true,
    status: 200,
  },
  {
    name: "validate, a chunked body (no declared length)",
    method: "POST",
    path: "/trpc/msAuth.validate",
    headers: JSON_TYPE,
    body: () => new Blob([JSON.stringify({ ...creds(), svc_session_token: sessionToken })]).stream(),
    direct: true,
    status: 200,
  },
  {
    name: "validate, an empty body (no input)",
    method: "POST",
    path: "/trpc/msAuth.validate",
    headers: JSON_TYPE,
    body: () => "",
    direct: true,
    status: 400,
  },
  {
    name: "validate, a body that is not JSON",
    method: "POST",
    path: "/trpc/msAuth.validate",
    headers: JSON_TYPE,
    body: () => '{"client_id": ',
    direct: true,
    status: 400,
  },
  {
    name: "validate, a NUL character in the input",
    method: "POST",
    path: "/trpc/msAuth.validate",
    headers: JSON_TYPE,
    body: json({ ...creds(), svc_session_token: "a\u0000b" }),
    direct: true,
    status: 400,
  },
  {
    name: "a CORS origin: its headers join tRPC's (vary included)",
    method: "POST",
    path: "/trpc/msAuth.poll",
    headers: { ...JSON_TYPE, origin: "https://dash.example.com" },
    body: json({ ...creds(), auth_request_id: requestId }),
    direct: true,
    status: 200,
  },
  {
    name: "a query without a token (unauthenticated)",
    method: "GET",
    path: "/trpc/teams.list",
    direct: true,
    status: 401,
  },
  {
    name: "a query with a token",
    method: "GET",
    path: "/trpc/teams.list",
    headers: { authorization: `Bearer ${client.owner.token}` },
    direct: true,
    status: 200,
  },
  {
    name: "a query with URL-encoded input",
    method: "GET",
    path: `/trpc/teams.get?input=${encodeURIComponent(JSON.stringify({ team_id: client.teamId }))}`,
    headers: { authorization: `Bearer ${client.owner.token}` },
    direct: true,
    status: 200,
  },
  {
    name: "a query whose input is not JSON",
    method: "GET",
    path: "/trpc/teams.get?input=%7Bnope",
    headers: { authorization: `Bearer ${client.owner.token}` },
    direct: true,
    status: 400,
  },
  {
    name: "a query with a JSON content type",
    method: "GET",
    path: "/trpc/health.check",
    headers: JSON_TYPE,
    direct: true,
    status: 200,
  },
  {
    name: "a mutation over GET (wrong method)",
    method: "GET",
    path: "/trpc/msAuth.validate",
    direct: false,
    status: 405,
  },
  {
    name: "a query over POST (no method override)",
    method: "POST",
    path: "/trpc/teams.list",
    headers: { ...JSON_TYPE, authorization: `Bearer ${client.owner.token}` },
    body: () => "",
    direct: false,
    status: 405,
  },
  {
    name: "a PUT",
    method: "PUT",
    path: "/trpc/msAuth.validate",
    headers: JSON_TYPE,
    body: json(creds()),
    direct: false,
    status: 405,
  },
  {
    name: "an unknown procedure",
    method: "POST",
    path: "/trpc/msAuth.nope",
    headers: JSON_TYPE,
    body: json({}),
    direct: false,
    status: 404,
  },
  {
    name: "a path that does not decode",
    method: "POST",
    path: "/trpc/msAuth.%E0%A4%A",
    headers: JSON_TYPE,
    body: json({}),
    direct: false,
    status: 400,
  },
  {
    name: "a mutation sent as text/plain",
    method: "POST",
    path: "/trpc/msAuth.validate",
    headers: { "content-type": "text/plain" },
    body: json(creds()),
    direct: false,
    status: 415,
  },
  {
    name: "a mutation without a content type",
    method: "POST",
    path: "/trpc/msAuth.validate",
    body: json(creds()),
    direct: false,
    status: 415,
  },
  {
    name: "a stream request on a single call",
    method: "POST",
    path: "/trpc/msAuth.validate",
    headers: { ...JSON_TYPE, "trpc-accept": "application/jsonl" },
    body: json(creds()),
    direct: false,
    status: 400,
  },
  {
    name: "a batch of two queries",
    method: "GET",
    path: `/trpc/health.check,teams.get?batch=1&input=${encodeURIComponent(JSON.stringify({ 1: { team_id: client.teamId } }))}`,
    headers: { authorization: `Bearer ${client.owner.token}` },
    direct: false,
    status: 200,
  },
  {
    name: "a batch of one mutation",
    method: "POST",
    path: "/trpc/msAuth.validate?batch=1",
    headers: JSON_TYPE,
    body: json({ 0: { ...creds(), svc_session_token: sessionToken } }),
    direct: false,
    status: 200,
  },
];

/** The limiter's counts and times move between the two sends; their shape must not. */
const VARYING = new Set(["ratelimit", "retry-after"]);
const DROPPED = new Set(["date"]);

async function send(base: string, c: Case, id: string) {
  const res = await fetch(base + c.path, {
    method: c.method,
    headers: { "x-request-id": id, ...c.headers },
    body: c.body?.(),
  });
  const raw = await res.text();
  // The health answer carries the process's uptime in seconds: the two apps may answer either
  // side of a second's turn (and its length may grow by a digit), so only those digits are masked.
  const body = raw.replace(/"uptime_s":\d+/, '"uptime_s":#');
  const headers: Record<string, string> = {};
  for (const [k, v] of res.headers) {
    if (DROPPED.has(k)) continue;
    headers[k] = VARYING.has(k) || (k === "content-length" && body !== raw) ? v.replace(/\d+/g, "#") : v;
  }
  if (body !== raw) expect(Number(res.headers.get("content-length"))).toBe(Buffer.byteLength(raw));
  return { status: res.status, body, headers };
}

describe("/trpc answers single calls as tRPC's adapter does", () => {
  test("every case: the same status, body and headers from the door and from the adapter", async () => {
    let n = 0;
    for (const c of cases()) {
      const probe = new Request(`http://localhost${c.path}`, { method: c.method, headers: c.headers });
      expect(`${c.name}: ${answeredDirectly(appRouter, probe)}`).toBe(`${c.name}: ${c.direct}`);
      const id = `door-${n++}`;
      const fast = await send(server.url, c, id);
      const adapter = await send(reference.url, c, id);
      expect({ case: c.name, ...fast }).toEqual({ case: c.name, ...adapter });
      expect(`${c.name}: ${fast.status}`).toBe(`${c.name}: ${c.status}`);
      if (c.direct) expect(fast.body).toStartWith(c.status === 200 ? '{"result":' : '{"error":');
    }
  });

  test("a 429 from a procedure carries its Retry-After and RateLimit headers, as the adapter sends them", async () => {
    const wrong: Case = {
      name: "validate with a wrong secret",
      method: "POST",
      path: "/trpc/msAuth.validate",
      headers: JSON_TYPE,
      body: json({ client_id: client.clientId, client_secret: "wrong", svc_session_token: sessionToken }),
      direct: true,
      status: 429,
    };
    // Both apps count against the one limiter: the failures up to the limit are 401s, then 429s.
    const statuses: number[] = [];
    for (let i = 0; i < AUTH_FAILURE_LIMIT; i++) statuses.push((await send(server.url, wrong, `spend-${i}`)).status);
    expect(statuses).toEqual(Array(AUTH_FAILURE_LIMIT).fill(401));
    expect(await send(server.url, wrong, "over")).toEqual(await send(reference.url, wrong, "over"));
    const limited = await send(server.url, wrong, "limited");
    expect(limited.status).toBe(429);
    expect(limited.headers["retry-after"]).toBe("#");
    expect(limited.headers.ratelimit).toContain('"client-auth-failure"');
    expect(JSON.parse(limited.body).error).toMatchObject({
      code: -32029,
      request_id: "limited",
      data: { code: "rate_limited", httpStatus: 429, path: "msAuth.validate" },
    });
  });

  test("tRPC's own clients work against the door: httpLink and httpBatchLink, results and errors", async () => {
    for (const link of [httpLink, httpBatchLink]) {
      const trpc = createTRPCClient<AppRouter>({ links: [link({ url: `${server.url}/trpc` })] });
      const ok = await trpc.msAuth.validate.mutate({ ...creds(), svc_session_token: sessionToken });
      expect(ok).toMatchObject({ valid: true });
      const health = await trpc.health.check.query();
      expect(health.status).toBe("ok");
      const err = await trpc.msAuth.poll.mutate({ ...creds(), auth_request_id: "nope" }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(TRPCClientError);
      expect((err as TRPCClientError<AppRouter>).data).toMatchObject({ httpStatus: 400, path: "msAuth.poll" });
    }
  });
});
