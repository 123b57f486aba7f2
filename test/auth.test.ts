import { beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import type { RunningServer } from "../src/app";
import { refreshTokens, users } from "../src/db/schema";
import { sha256 } from "../src/lib/secrets";
import { sharedServer } from "./harness";
import { api, expectError, newUser, trpcClient, uniqueEmail } from "./helpers";

let server: RunningServer;
beforeAll(async () => {
  server = await sharedServer();
});

describe("accounts", () => {
  test("signup creates an account and never returns or stores the password in plain text", async () => {
    const email = uniqueEmail();
    const res = await api(server, "POST", "/auth/signup", {
      body: { email: email.toUpperCase(), password: "long enough pw" },
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ id: expect.any(String), email, created_at: expect.any(String) });
    const [row] = await server.services.database.db.select().from(users).where(eq(users.id, res.body.id));
    expect(row!.passwordHash).toStartWith("$argon2id$");
    expect(row!.passwordHash).not.toContain("long enough pw");
  });

  test("signup with a taken email is a 409 and a short password a 400", async () => {
    const u = await newUser(server);
    expectError(
      await api(server, "POST", "/auth/signup", { body: { email: u.email, password: "another password" } }),
      409,
      "conflict",
    );
    const short = expectError(
      await api(server, "POST", "/auth/signup", { body: { email: uniqueEmail(), password: "short" } }),
      400,
      "validation_failed",
    );
    expect(short.details.issues[0].path).toBe("password");
  });

  test("login returns a bearer access token and a refresh token", async () => {
    const u = await newUser(server);
    const res = await api(server, "POST", "/auth/login", { body: { email: u.email, password: u.password } });
    expect(res.body).toEqual({
      access_token: expect.any(String),
      token_type: "Bearer",
      expires_in: 900,
      refresh_token: expect.stringMatching(/^mcp_rt_/),
    });
    const me = await api(server, "GET", "/auth/me", { token: res.body.access_token });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ id: u.id, email: u.email, teams: [] });
  });

  test("a wrong password and an unknown email fail the same way", async () => {
    const u = await newUser(server);
    const wrong = expectError(
      await api(server, "POST", "/auth/login", { body: { email: u.email, password: "not the password" } }),
      401,
      "unauthenticated",
    );
    const unknown = expectError(
      await api(server, "POST", "/auth/login", { body: { email: uniqueEmail(), password: "not the password" } }),
      401,
      "unauthenticated",
    );
    expect(wrong.message).toBe(unknown.message);
    expect(wrong.details).toEqual(unknown.details);
  });

  test("refresh rotates: the new pair works and the old refresh token does not", async () => {
    const u = await newUser(server);
    const first = await api(server, "POST", "/auth/refresh", { body: { refresh_token: u.refresh } });
    expect(first.status).toBe(200);
    expect(first.body.refresh_token).not.toBe(u.refresh);
    expect((await api(server, "GET", "/auth/me", { token: first.body.access_token })).status).toBe(200);
    const second = await api(server, "POST", "/auth/refresh", { body: { refresh_token: first.body.refresh_token } });
    expect(second.status).toBe(200);
  });

  test("reusing a spent refresh token revokes the whole family", async () => {
    const u = await newUser(server);
    const rotated = await api(server, "POST", "/auth/refresh", { body: { refresh_token: u.refresh } });
    expect(rotated.status).toBe(200);
    // The thief replays the old token: refused, and the legitimate successor dies with it.
    expectError(
      await api(server, "POST", "/auth/refresh", { body: { refresh_token: u.refresh } }),
      401,
      "unauthenticated",
    );
    expectError(
      await api(server, "POST", "/auth/refresh", { body: { refresh_token: rotated.body.refresh_token } }),
      401,
      "unauthenticated",
    );
    const rows = await server.services.database.db.select().from(refreshTokens).where(eq(refreshTokens.userId, u.id));
    expect(rows.length).toBeGreaterThanOrEqual(2);
    expect(rows.every((r) => r.revokedAt !== null || r.tokenHash !== sha256(rotated.body.refresh_token))).toBe(true);
  });

  test("refresh tokens are stored only as SHA-256", async () => {
    const u = await newUser(server);
    const [row] = await server.services.database.db
      .select()
      .from(refreshTokens)
      .where(eq(refreshTokens.tokenHash, sha256(u.refresh)));
    expect(row).toBeDefined();
    expect(JSON.stringify(row)).not.toContain(u.refresh);
  });

  test("logout revokes the refresh token", async () => {
    const u = await newUser(server);
    expect((await api(server, "POST", "/auth/logout", { body: { refresh_token: u.refresh } })).body).toEqual({
      ok: true,
    });
    expectError(await api(server, "POST", "/auth/refresh", { body: { refresh_token: u.refresh } }), 401);
  });

  test("the same account flow works through the typed tRPC client", async () => {
    const email = uniqueEmail("trpc");
    const anon = trpcClient(server);
    await anon.auth.signup.mutate({ email, password: "typed door pw" });
    const pair = await anon.auth.login.mutate({ email, password: "typed door pw" });
    if (!("access_token" in pair)) throw new Error("an account without a second factor gets tokens");
    expect(pair.token_type).toBe("Bearer");
    const me = await trpcClient(server, pair.access_token).auth.me.query();
    expect(me.email).toBe(email);
    const err = await anon.auth.login.mutate({ email, password: "wrong password" }).catch((e) => e);
    expect(err.data).toMatchObject({ code: "unauthenticated", httpStatus: 401 });
    expect(err.shape.request_id).toEqual(expect.any(String));
  });
});
