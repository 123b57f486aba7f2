import { beforeAll, describe, expect, test } from "bun:test";
import type { RunningServer } from "../src/app";
import { sharedServer } from "./harness";
import { api, expectError, newUser } from "./helpers";

let server: RunningServer;
beforeAll(async () => {
  server = await sharedServer();
});

const JSON_HDR = { "content-type": "application/json" };

describe("errors: bad input is a 4xx in the envelope, never a 5xx", () => {
  test("unknown paths are a 404", async () => {
    expectError(await api(server, "GET", "/no/such/thing"), 404, "not_found");
    expectError(await api(server, "POST", "/teams/not-a-route/at/all", { body: {} }), 404, "not_found");
  });

  test("malformed JSON is a 400", async () => {
    for (const raw of ["{", '{"email":', "nul", '{"a":1}}', "\u0000"]) {
      expectError(await api(server, "POST", "/auth/login", { rawBody: raw, headers: JSON_HDR }), 400, "invalid_json");
    }
  });

  test("a JSON body that is not an object is a 400", async () => {
    for (const raw of ["[]", "42", '"str"', "null"]) {
      expectError(await api(server, "POST", "/auth/login", { rawBody: raw, headers: JSON_HDR }), 400);
    }
  });

  test("wrong types and missing fields are a 400 naming the field", async () => {
    const wrong = expectError(
      await api(server, "POST", "/auth/signup", { body: { email: 42, password: ["x"] } }),
      400,
      "validation_failed",
    );
    expect([...new Set(wrong.details.issues.map((i: any) => i.path))].sort()).toEqual(["email", "password"]);
    const missing = expectError(await api(server, "POST", "/auth/signup", { body: {} }), 400, "validation_failed");
    expect(missing.details.issues.map((i: any) => i.path).sort()).toEqual(["email", "password"]);
    const u = await newUser(server);
    expectError(await api(server, "GET", "/teams/not-a-uuid", { token: u.token }), 400, "validation_failed");
    expectError(
      await api(server, "POST", "/teams", { token: u.token, body: { name: "x".repeat(5000) } }),
      400,
      "validation_failed",
    );
  });

  test("a huge body is a 413, whether declared or streamed", async () => {
    const big = JSON.stringify({ email: "a@b.co", password: "x".repeat(2 * 1024 * 1024) });
    expectError(
      await api(server, "POST", "/auth/signup", { rawBody: big, headers: JSON_HDR }),
      413,
      "payload_too_large",
    );
    const stream = new ReadableStream({
      start(c) {
        c.enqueue(new TextEncoder().encode(big.slice(0, 200_000)));
        c.close();
      },
    });
    const res = await fetch(`${server.url}/auth/signup`, { method: "POST", body: stream, headers: JSON_HDR });
    expect(res.status).toBe(413);
    expect(((await res.json()) as any).error.code).toBe("payload_too_large");
    expectError(
      await api(server, "POST", "/trpc/auth.signup", { rawBody: big, headers: JSON_HDR }),
      413,
      "payload_too_large",
    );
    const chunked = new ReadableStream({
      start(c) {
        c.enqueue(new TextEncoder().encode(big.slice(0, 200_000)));
        c.close();
      },
    });
    const viaTrpc = await fetch(`${server.url}/trpc/auth.signup`, { method: "POST", body: chunked, headers: JSON_HDR });
    expect(viaTrpc.status).toBe(413);
  });

  test("a non-JSON body is a 415", async () => {
    expectError(
      await api(server, "POST", "/auth/login", {
        rawBody: "email=a&password=b",
        headers: { "content-type": "application/x-www-form-urlencoded" },
      }),
      415,
      "unsupported_media_type",
    );
    expectError(
      await api(server, "POST", "/auth/login", { rawBody: "<x/>", headers: { "content-type": "text/xml" } }),
      415,
      "unsupported_media_type",
    );
  });

  test("invalid UTF-8 in a JSON body is a 400", async () => {
    const bytes = new Uint8Array([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]);
    expectError(await api(server, "POST", "/auth/login", { rawBody: bytes, headers: JSON_HDR }), 400, "invalid_json");
  });

  test("every response carries x-request-id, and a sane incoming one is kept", async () => {
    for (const path of ["/health", "/openapi.json", "/nope", "/trpc/health.check", "/docs"]) {
      const res = await fetch(server.url + path);
      expect(`${path}: ${res.headers.get("x-request-id") ?? "missing"}`).toMatch(/: [0-9a-f-]{36}$/);
    }
    const res = await fetch(`${server.url}/nope`, { headers: { "x-request-id": "trace-abc.123" } });
    expect(res.headers.get("x-request-id")).toBe("trace-abc.123");
    const weird = await fetch(`${server.url}/nope`, { headers: { "x-request-id": "a b<script>" } });
    expect(weird.headers.get("x-request-id")).not.toBe("a b<script>");
  });

  test("the tRPC door answers bad input with 4xx and our code, request id and details", async () => {
    const res = await api(server, "POST", "/trpc/auth.signup", { body: { email: "nope" } });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({
      message: expect.any(String),
      data: { code: "validation_failed", httpStatus: 400 },
    });
    expect(res.body.error.request_id).toBe(res.headers.get("x-request-id")!);
    expect(res.body.error.details.issues.length).toBeGreaterThan(0);
    const bad = await api(server, "POST", "/trpc/auth.signup", { rawBody: "{oops", headers: JSON_HDR });
    expect(bad.status).toBe(400);
    expect((await api(server, "GET", "/trpc/no.such.procedure")).status).toBe(404);
    expect((await api(server, "GET", "/trpc/auth.signup")).status).toBe(405);
    for (const r of [res, bad]) expect(r.text).not.toMatch(/\bat .+:\d+:\d+|"stack"/);
  });
});
