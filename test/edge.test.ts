import { describe, expect, test } from "bun:test";
import { startTestServer } from "./harness";
import { api, expectError, newUser } from "./helpers";

describe("edge: CORS and the general rate limit", () => {
  test("CORS: an allowed origin gets its headers and a preflight answer; others get none", async () => {
    const srv = await startTestServer({ CORS_ORIGINS: "https://dash.example.com, https://other.example.com/" });
    const u = await newUser(srv);
    const pre = await fetch(`${srv.url}/teams`, {
      method: "OPTIONS",
      headers: {
        origin: "https://dash.example.com",
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization, content-type",
      },
    });
    expect(pre.status).toBe(204);
    expect(pre.headers.get("access-control-allow-origin")).toBe("https://dash.example.com");
    expect(pre.headers.get("access-control-allow-headers")).toContain("authorization");
    expect(pre.headers.get("access-control-allow-headers")).toContain("x-server-id");
    expect(pre.headers.get("access-control-allow-headers")).toContain("idempotency-key");
    expect(pre.headers.get("access-control-allow-methods")).toContain("PATCH");

    const res = await api(srv, "GET", "/auth/me", { token: u.token, headers: { origin: "https://other.example.com" } });
    expect(res.status).toBe(200);
    expect(res.headers.get("access-control-allow-origin")).toBe("https://other.example.com");
    expect(res.headers.get("access-control-expose-headers")).toContain("x-request-id");
    expect(res.headers.get("access-control-expose-headers")).toContain("idempotent-replayed");
    expect(res.headers.get("vary")).toContain("Origin");
    // Errors carry it too, so a dashboard can read them.
    const err = await api(srv, "GET", "/auth/me", { headers: { origin: "https://dash.example.com" } });
    expect(err.status).toBe(401);
    expect(err.headers.get("access-control-allow-origin")).toBe("https://dash.example.com");

    for (const origin of ["https://evil.example.com", "http://dash.example.com", "null"]) {
      const r = await fetch(`${srv.url}/auth/me`, { method: "OPTIONS", headers: { origin } });
      expect(r.headers.get("access-control-allow-origin")).toBeNull();
      const g = await api(srv, "GET", "/health", { headers: { origin } });
      expect(g.headers.get("access-control-allow-origin")).toBeNull();
    }
  });

  test("no CORS origins configured: no browser origin is allowed", async () => {
    const srv = await startTestServer();
    const r = await api(srv, "GET", "/health", { headers: { origin: "https://dash.example.com" } });
    expect(r.headers.get("access-control-allow-origin")).toBeNull();
  });

  test("a bad CORS_ORIGINS value stops startup naming the variable", async () => {
    const { parseConfig } = await import("../src/config");
    expect(() => parseConfig({ CORS_ORIGINS: "ftp://files.example.com" })).toThrow(/CORS_ORIGINS/);
    expect(parseConfig({ CORS_ORIGINS: "*" }).CORS_ORIGINS).toEqual(["*"]);
  });

  test("the general limit: every answer carries it, over it is a 429 on every door", async () => {
    const srv = await startTestServer({ RATE_LIMIT_GENERAL_PER_MIN: "6" });
    const seen: string[] = [];
    for (const path of ["/health", "/openapi.json", "/nope", "/trpc/health.check", "/health", "/docs"]) {
      const r = await fetch(srv.url + path);
      expect(r.headers.get("ratelimit-policy")).toBe('"general";q=6;w=60');
      seen.push(r.headers.get("ratelimit")!.split(";")[1]!);
    }
    expect(seen).toEqual(["r=5", "r=4", "r=3", "r=2", "r=1", "r=0"]);
    const limited = await api(srv, "GET", "/health");
    expectError(limited, 429, "rate_limited");
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
    expect((await api(srv, "POST", "/trpc/auth.login", { body: { email: "a@b.co", password: "x" } })).status).toBe(429);
    const page = await fetch(`${srv.url}/client/ms-auth/callback?state=x`, { redirect: "manual" });
    expect(page.status).toBe(429);
    expectError(await api(srv, "GET", "/no/such/path"), 429, "rate_limited");
  });
});
