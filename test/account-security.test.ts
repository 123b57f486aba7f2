import { beforeAll, describe, expect, test } from "bun:test";
import { and, count, eq, isNull } from "drizzle-orm";
import type { RunningServer } from "../src/app";
import { apiKeys, teamMembers } from "../src/db/schema";
import { CLOSE } from "../src/realtime/socket";
import { devIdp, sharedServer, startTestServer, tempDir, usingPostgres } from "./harness";
import { addMember, api, expectError, newApiKey, newTeam, newUser, trpcClient, uniqueEmail } from "./helpers";
import { newServer } from "./servers-fixture";
import { closeCode, WsClient } from "./ws-helpers";

let server: RunningServer;
beforeAll(async () => {
  server = await sharedServer();
});

const login = (srv: RunningServer, email: string, password: string, from?: string) =>
  api(srv, "POST", "/auth/login", {
    body: { email, password },
    headers: from ? { "x-forwarded-for": from } : {},
  });

/** Polls until `fn` holds or `ms` pass; the bus between instances is asynchronous. */
async function eventually(fn: () => Promise<boolean>, ms = 3000) {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (await fn()) return true;
    await Bun.sleep(50);
  }
  return fn();
}

describe("access tokens signed by the service for no live account", () => {
  const routes = [
    ["GET", "/auth/me", undefined],
    ["GET", "/teams", undefined],
    ["POST", "/teams", { name: "ghost team" }],
  ] as const;

  test("a token whose subject is an unknown UUID is 401 everywhere, not 500", async () => {
    const token = await server.services.tokens.sign(crypto.randomUUID(), crypto.randomUUID());
    for (const [method, path, body] of routes)
      expectError(await api(server, method, path, { token, body }), 401, "unauthenticated");
  });

  test("a token whose subject is not a UUID is 401 everywhere, not 500", async () => {
    const u = await newUser(server);
    const sid = (await server.services.tokens.verify(u.token))!.sid;
    for (const sub of ["not-a-uuid", "admin", `${u.id}x`]) {
      const token = await server.services.tokens.sign(sub, sid);
      for (const [method, path, body] of routes)
        expectError(await api(server, method, path, { token, body }), 401, "unauthenticated");
    }
    // The same login's own token still works: only the forged subjects were refused.
    expect((await api(server, "GET", "/auth/me", { token: u.token })).status).toBe(200);
  });
});

describe("access tokens end with their login", () => {
  test("logout refuses the login's access token at once on REST and the typed door; another login stays", async () => {
    const u = await newUser(server);
    const other = await login(server, u.email, u.password);
    expect((await api(server, "GET", "/auth/me", { token: u.token })).status).toBe(200);
    expect((await api(server, "POST", "/auth/logout", { body: { refresh_token: u.refresh } })).status).toBe(200);
    expectError(await api(server, "GET", "/auth/me", { token: u.token }), 401, "unauthenticated");
    const err = await trpcClient(server, u.token)
      .auth.me.query()
      .catch((e) => e);
    expect(err.data).toMatchObject({ code: "unauthenticated", httpStatus: 401 });
    expect((await api(server, "GET", "/auth/me", { token: other.body.access_token })).status).toBe(200);
  });

  test("refresh-token reuse refuses every access token of that login", async () => {
    const u = await newUser(server);
    const rotated = await api(server, "POST", "/auth/refresh", { body: { refresh_token: u.refresh } });
    expect(rotated.status).toBe(200);
    expect((await api(server, "GET", "/auth/me", { token: rotated.body.access_token })).status).toBe(200);
    expectError(await api(server, "POST", "/auth/refresh", { body: { refresh_token: u.refresh } }), 401);
    for (const token of [u.token, rotated.body.access_token])
      expectError(await api(server, "GET", "/auth/me", { token }), 401, "unauthenticated");
  });

  test("an analytics socket on a token whose login logs out closes with 4011 within WS_REVALIDATE_SECONDS", async () => {
    const srv = await startTestServer({ WS_REVALIDATE_SECONDS: "1" });
    const f = await newServer(srv);
    const ws = await WsClient.connect(srv, f.serverId, { authorization: `Bearer ${f.owner.token}` });
    await ws.until("snapshot");
    expect((await api(srv, "POST", "/auth/logout", { body: { refresh_token: f.owner.refresh } })).status).toBe(200);
    expect(await closeCode(ws, 2500)).toBe(CLOSE.credentialEnded);
  });
});

describe.skipIf(!usingPostgres())("revocation across instances on PostgreSQL", () => {
  test("logout on one instance refuses the token on another, on REST and on its open socket", async () => {
    const idp = await devIdp();
    const common = { DEV_IDP_URL: idp.url, DATA_DIR: tempDir(), WS_REVALIDATE_SECONDS: "1" };
    const a = await startTestServer(common);
    const b = await startTestServer(common);
    const f = await newServer(a);
    // B has seen the token live (and cached it) before the logout happens on A.
    expect((await api(b, "GET", "/auth/me", { token: f.owner.token })).status).toBe(200);
    const ws = await WsClient.connect(b, f.serverId, { authorization: `Bearer ${f.owner.token}` });
    await ws.until("snapshot");
    expect((await api(a, "POST", "/auth/logout", { body: { refresh_token: f.owner.refresh } })).status).toBe(200);
    expect(
      await eventually(async () => (await api(b, "GET", "/auth/me", { token: f.owner.token })).status === 401),
    ).toBe(true);
    expectError(await api(b, "GET", "/auth/me", { token: f.owner.token }), 401, "unauthenticated");
    expect(await closeCode(ws, 2500)).toBe(CLOSE.credentialEnded);
  });

  test("failed sign-ins counted on one instance block the email on another", async () => {
    const idp = await devIdp();
    const common = { DEV_IDP_URL: idp.url, DATA_DIR: tempDir(), LOGIN_FAILURES_PER_ACCOUNT: "2" };
    const a = await startTestServer(common);
    const b = await startTestServer(common);
    const u = await newUser(a);
    for (let i = 0; i < 2; i++) expectError(await login(a, u.email, "wrong password"), 401);
    expectError(await login(b, u.email, "wrong password"), 429, "rate_limited");
    // Now even the right password is refused, on both.
    expect(await eventually(async () => (await login(a, u.email, u.password)).status === 429)).toBe(true);
    expectError(await login(b, u.email, u.password), 429, "rate_limited");
  });
});

describe("failed sign-ins are limited", () => {
  test("per email: after the limit every sign-in answers 429 with Retry-After, the same for an unknown email", async () => {
    const srv = await startTestServer({ LOGIN_FAILURES_PER_ACCOUNT: "3", LOGIN_FAILURE_WINDOW_SECONDS: "600" });
    const u = await newUser(srv);
    const ghost = uniqueEmail("ghost");
    const seen: Record<string, string[]> = { known: [], unknown: [] };
    for (const [who, email] of [
      ["known", u.email],
      ["unknown", ghost],
    ] as const) {
      for (let i = 0; i < 3; i++) {
        const e = expectError(await login(srv, email, "wrong password"), 401, "unauthenticated");
        seen[who]!.push(`401 ${e.message}`);
      }
      const over = await login(srv, email, "wrong password");
      const e = expectError(over, 429, "rate_limited");
      const retry = Number(over.headers.get("retry-after"));
      expect(retry).toBeGreaterThan(0);
      expect(retry).toBeLessThanOrEqual(600);
      expect(e.details.retry_after).toBe(retry);
      seen[who]!.push(`429 ${e.message.replace(/\d+ s/, "N s")}`);
      // The right password (or any) is refused too until the window ends.
      const right = await login(srv, email, who === "known" ? u.password : "correct horse battery");
      seen[who]!.push(`${right.status} ${right.body.error.message.replace(/\d+ s/, "N s")}`);
    }
    expect(seen.known).toEqual(seen.unknown);
    expect(seen.known!.at(-1)).toStartWith("429 ");
    // Another email from the same address is not affected.
    const v = await newUser(srv);
    expect((await login(srv, v.email, v.password)).status).toBe(200);
  });

  test("per address: one address's failures block it, not a right password from elsewhere below the per-email bound", async () => {
    const srv = await startTestServer({
      TRUST_PROXY: "true",
      LOGIN_FAILURES_PER_ACCOUNT: "5",
      LOGIN_FAILURES_PER_ADDRESS: "3",
    });
    const victim = await newUser(srv);
    for (let i = 0; i < 3; i++) expectError(await login(srv, victim.email, "guess", "203.0.113.7"), 401);
    expectError(await login(srv, victim.email, "guess", "203.0.113.7"), 429, "rate_limited");
    // The attacker's address is blocked for every email, even with a right password.
    const bystander = await newUser(srv);
    expectError(await login(srv, bystander.email, bystander.password, "203.0.113.7"), 429, "rate_limited");
    // The owner, from their own address, still signs in: 4 failures on the account, under its bound of 5.
    expect((await login(srv, victim.email, victim.password, "198.51.100.20")).status).toBe(200);
    // One more failure from a third address passes the per-email bound: then the email is refused everywhere.
    expectError(await login(srv, victim.email, "guess", "192.0.2.9"), 401);
    expectError(await login(srv, victim.email, "guess", "192.0.2.10"), 429, "rate_limited");
    expectError(await login(srv, victim.email, victim.password, "198.51.100.20"), 429, "rate_limited");
  });
});

describe("members and API keys are managed by people only", () => {
  test("an admin API key gets 403 on member and key management, and writes nothing", async () => {
    const owner = await newUser(server);
    const teamId = await newTeam(server, owner);
    const viewer = await newUser(server);
    await addMember(server, owner, teamId, viewer, "viewer");
    const admin = await newApiKey(server, owner, teamId, "admin");
    const outsider = await newUser(server);
    const db = server.services.database.db;
    const counts = async () => {
      const [m] = await db.select({ n: count() }).from(teamMembers).where(eq(teamMembers.teamId, teamId));
      const [k] = await db
        .select({ n: count() })
        .from(apiKeys)
        .where(and(eq(apiKeys.teamId, teamId), isNull(apiKeys.revokedAt)));
      return { members: m!.n, keys: k!.n };
    };
    const before = await counts();
    const calls: [string, string, unknown?][] = [
      ["POST", `/teams/${teamId}/api-keys`, { name: "successor", role: "admin" }],
      ["POST", `/teams/${teamId}/api-keys`, { name: "spare", role: "viewer" }],
      ["GET", `/teams/${teamId}/api-keys`],
      ["DELETE", `/teams/${teamId}/api-keys/${admin.id}`],
      ["POST", `/teams/${teamId}/members`, { email: outsider.email, role: "admin" }],
      ["PATCH", `/teams/${teamId}/members/${viewer.id}`, { role: "admin" }],
      ["DELETE", `/teams/${teamId}/members/${viewer.id}`],
      ["POST", `/teams/${teamId}/transfer`, { user_id: viewer.id }],
    ];
    for (const [method, path, body] of calls)
      expectError(await api(server, method, path, { token: admin.key, body }), 403, "forbidden");
    expect(await counts()).toEqual(before);
    // Reads and other writes within its role still work for the key.
    expect((await api(server, "GET", `/teams/${teamId}/members`, { token: admin.key })).status).toBe(200);
    expect(
      (await api(server, "PATCH", `/teams/${teamId}`, { token: admin.key, body: { name: "renamed" } })).status,
    ).toBe(200);
  });

  test("the OpenAPI document says so on each of those operations", async () => {
    const doc = (await api(server, "GET", "/openapi.json")).body;
    for (const [path, method] of [
      ["/teams/{team_id}/api-keys", "post"],
      ["/teams/{team_id}/api-keys", "get"],
      ["/teams/{team_id}/api-keys/{key_id}", "delete"],
      ["/teams/{team_id}/members", "post"],
      ["/teams/{team_id}/invitations/{invitation_id}", "delete"],
      ["/teams/{team_id}/members/{user_id}", "patch"],
      ["/teams/{team_id}/members/{user_id}", "delete"],
      ["/teams/{team_id}/transfer", "post"],
    ] as const)
      expect(`${method} ${path}: ${doc.paths[path][method].description}`).toContain("API key gets 403");
  });
});
