import { beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import type { RunningServer } from "../src/app";
import { loginSessions } from "../src/db/schema";
import { sharedServer } from "./harness";
import { api, expectError, newUser, type TestUser } from "./helpers";

let server: RunningServer;
beforeAll(async () => {
  server = await sharedServer();
});

/** Another sign-in of the same account, from a device of its own. */
async function signIn(user: TestUser, userAgent: string, password = user.password) {
  const res = await api(server, "POST", "/auth/login", {
    body: { email: user.email, password },
    headers: { "user-agent": userAgent },
  });
  expect(res.status).toBe(200);
  const sid = (await server.services.tokens.verify(res.body.access_token))!.sid;
  return { token: res.body.access_token as string, refresh: res.body.refresh_token as string, sid };
}

const sessionsOf = (token: string) => api(server, "GET", "/auth/sessions", { token });

describe("your sign-ins in view", () => {
  test("the account lists its sign-ins with when, where and what, and marks the current one", async () => {
    const user = await newUser(server, "devices");
    const phone = await signIn(user, "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X)");
    const laptop = await signIn(user, "Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0");
    const res = await sessionsOf(laptop.token);
    expect(res.status).toBe(200);
    expect(res.body.sessions).toHaveLength(3);
    const mine = res.body.sessions.find((s: { session_id: string }) => s.session_id === laptop.sid);
    expect(mine).toMatchObject({
      current: true,
      user_agent: "Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0",
      address: expect.stringMatching(/^(127\.0\.0\.1|::1|::ffff:127\.0\.0\.1)$/),
      created_at: expect.any(String),
      last_used_at: expect.any(String),
    });
    expect(res.body.sessions.filter((s: { current: boolean }) => s.current)).toHaveLength(1);
    expect(res.body.sessions.map((s: { session_id: string }) => s.session_id)).toContain(phone.sid);
    // Someone else's list holds none of them.
    const other = await newUser(server, "stranger");
    const theirs = await sessionsOf(other.token);
    expect(theirs.body.sessions.map((s: { session_id: string }) => s.session_id)).not.toContain(phone.sid);
  });

  test("ending one sign-in stops its access and refresh tokens; another account's sign-in answers 404", async () => {
    const user = await newUser(server, "end-one");
    const phone = await signIn(user, "phone");
    const stranger = await newUser(server, "stranger");
    expectError(
      await api(server, "DELETE", `/auth/sessions/${phone.sid}`, { token: stranger.token }),
      404,
      "not_found",
    );
    expect((await api(server, "GET", "/auth/me", { token: phone.token })).status).toBe(200);
    const res = await api(server, "DELETE", `/auth/sessions/${phone.sid}`, { token: user.token });
    expect(res.status).toBe(200);
    expectError(await api(server, "GET", "/auth/me", { token: phone.token }), 401, "unauthenticated");
    expectError(
      await api(server, "POST", "/auth/refresh", { body: { refresh_token: phone.refresh } }),
      401,
      "unauthenticated",
    );
    expect((await sessionsOf(user.token)).body.sessions.map((s: { session_id: string }) => s.session_id)).not.toContain(
      phone.sid,
    );
    // Ended is ended: a second time finds nothing.
    expectError(await api(server, "DELETE", `/auth/sessions/${phone.sid}`, { token: user.token }), 404);
    expect((await api(server, "GET", "/auth/me", { token: user.token })).status).toBe(200);
  });

  test("signing out all other devices keeps only the current sign-in", async () => {
    const user = await newUser(server, "others");
    const a = await signIn(user, "a");
    const b = await signIn(user, "b");
    const res = await api(server, "POST", "/auth/sessions/revoke-others", { token: a.token });
    expect(res.body).toEqual({ revoked: 2 });
    for (const gone of [user.token, b.token]) expectError(await api(server, "GET", "/auth/me", { token: gone }), 401);
    const left = await sessionsOf(a.token);
    expect(left.body.sessions.map((s: { session_id: string }) => s.session_id)).toEqual([a.sid]);
  });

  test("a password change needs the current password, ends every other sign-in, and the new one signs in", async () => {
    const user = await newUser(server, "password");
    const other = await signIn(user, "other device");
    const wrong = await api(server, "POST", "/auth/password", {
      token: user.token,
      body: { current_password: "not my password", new_password: "a brand new password" },
    });
    expectError(wrong, 403, "forbidden");
    expect((await api(server, "GET", "/auth/me", { token: other.token })).status).toBe(200);
    expectError(
      await api(server, "POST", "/auth/password", {
        token: user.token,
        body: { current_password: user.password, new_password: "short" },
      }),
      400,
      "validation_failed",
    );
    const res = await api(server, "POST", "/auth/password", {
      token: user.token,
      body: { current_password: user.password, new_password: "a brand new password" },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ revoked: 1 });
    expectError(await api(server, "GET", "/auth/me", { token: other.token }), 401);
    expect((await api(server, "GET", "/auth/me", { token: user.token })).status).toBe(200);
    expectError(
      await api(server, "POST", "/auth/login", { body: { email: user.email, password: user.password } }),
      401,
    );
    await signIn(user, "new", "a brand new password");
  });

  test("last used moves on a refresh, and a request within the minute writes nothing", async () => {
    const user = await newUser(server, "last-used");
    const device = await signIn(user, "device");
    const db = server.services.database.db;
    const mark = async () =>
      (await db.select().from(loginSessions).where(eq(loginSessions.id, device.sid)))[0]!.lastUsedAt.getTime();
    const old = new Date(Date.now() - 3_600_000);
    await db.update(loginSessions).set({ lastUsedAt: old }).where(eq(loginSessions.id, device.sid));
    const refreshed = await api(server, "POST", "/auth/refresh", { body: { refresh_token: device.refresh } });
    expect(refreshed.status).toBe(200);
    expect(await mark()).toBeGreaterThan(old.getTime());
    // Within the minute, requests read the cached answer and write nothing.
    const after = await mark();
    await api(server, "GET", "/auth/me", { token: refreshed.body.access_token });
    expect(await mark()).toBe(after);
  });

  test("the dashboard's cookie sign-in is listed with its user agent", async () => {
    const user = await newUser(server, "dash");
    const res = await api(server, "POST", "/dashboard/session", {
      body: { email: user.email, password: user.password },
      headers: { "x-mcp-dashboard": "1", "user-agent": "Mozilla/5.0 (Macintosh) Safari/605.1.15" },
    });
    expect(res.status).toBe(200);
    const list = await sessionsOf(user.token);
    expect(list.body.sessions.map((s: { user_agent: string }) => s.user_agent)).toContain(
      "Mozilla/5.0 (Macintosh) Safari/605.1.15",
    );
  });
});
