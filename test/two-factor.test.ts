import { describe, expect, test } from "bun:test";
import { and, eq } from "drizzle-orm";
import { passkeys, recoveryCodes, totpFactors, twoFactorChallenges } from "../src/db/schema";
import { sha256 } from "../src/lib/secrets";
import { sharedServer, startTestServer } from "./harness";
import { addMember, api, expectError, newApiKey, newTeam, newUser, type TestUser } from "./helpers";
import { addPasskey, enableTotp, SoftAuthenticator, totpCode } from "./two-factor-helpers";

/**
 * Two-factor sign-in through the real doors: enrolment and removal on the account, the second
 * step after the password (TOTP, recovery codes, passkeys from a software authenticator), the
 * failed sign-in limits, and a team that requires a factor of its members.
 */
const server = await sharedServer();
const db = server.services.database.db;

const login = (email: string, password: string, srv = server) =>
  api(srv, "POST", "/auth/login", { body: { email, password } });
const second = (body: Record<string, unknown>, srv = server) => api(srv, "POST", "/auth/login/second-factor", { body });

async function challengeFor(user: TestUser, srv = server) {
  const res = await login(user.email, user.password, srv);
  expect(res.status).toBe(200);
  expect(res.body.access_token).toBeUndefined();
  expect(res.body.refresh_token).toBeUndefined();
  expect(res.body.second_factor_required).toBe(true);
  return res.body as { challenge_token: string; methods: string[]; passkey_options: any };
}

describe("authenticator app (TOTP)", () => {
  test("enrolment needs the password, shows the secret and a QR code, and stores the secret sealed", async () => {
    const u = await newUser(server, "totp-enrol");
    expectError(
      await api(server, "POST", "/auth/two-factor/totp", { token: u.token, body: { password: "not the password" } }),
      401,
      "unauthenticated",
    );
    const setup = await api(server, "POST", "/auth/two-factor/totp", {
      token: u.token,
      body: { password: u.password },
    });
    expect(setup.status).toBe(200);
    expect(setup.body.secret).toMatch(/^[A-Z2-7]{32}$/);
    expect(setup.body.otpauth_url).toStartWith("otpauth://totp/");
    expect(setup.body.otpauth_url).toContain(`secret=${setup.body.secret}`);
    expect(setup.body.qr_svg).toStartWith("<svg");
    const [row] = await db.select().from(totpFactors).where(eq(totpFactors.userId, u.id));
    expect(row!.confirmedAt).toBeNull();
    expect(row!.secretSealed).not.toContain(setup.body.secret);
    // Pending: sign-in is unchanged until a code confirms it.
    expect((await login(u.email, u.password)).body.access_token).toBeString();

    expectError(
      await api(server, "POST", "/auth/two-factor/totp/confirm", { token: u.token, body: { code: "000000" } }),
      400,
      "bad_request",
    );
    const confirmed = await api(server, "POST", "/auth/two-factor/totp/confirm", {
      token: u.token,
      body: { code: await totpCode(setup.body.secret, -1) },
    });
    expect(confirmed.status).toBe(200);
    const codes: string[] = confirmed.body.recovery_codes;
    expect(codes).toHaveLength(10);
    expect(new Set(codes).size).toBe(10);
    // Recovery codes are stored as SHA-256 only.
    const stored = await db.select().from(recoveryCodes).where(eq(recoveryCodes.userId, u.id));
    expect(stored.map((r) => r.codeHash).sort()).toEqual(codes.map((c) => sha256(c.replace("-", ""))).sort());
    const status = await api(server, "GET", "/auth/two-factor", { token: u.token });
    expect(status.body).toMatchObject({
      enabled: true,
      totp: { enabled: true },
      passkeys: [],
      recovery_codes_left: 10,
    });
    expect(JSON.stringify(status.body)).not.toContain(setup.body.secret);
    // A second app is refused until the first is removed.
    expectError(
      await api(server, "POST", "/auth/two-factor/totp", { token: u.token, body: { password: u.password } }),
      409,
      "conflict",
    );
    // API keys have no account: 403.
    const team = await newTeam(server, u);
    const key = await newApiKey(server, u, team, "admin");
    expectError(await api(server, "GET", "/auth/two-factor", { token: key!.key }), 403, "forbidden");
  });

  test("sign-in asks for a code after the password; a code works once; a recovery code works once", async () => {
    const u = await newUser(server, "totp-signin");
    const { secret, recoveryCodes: codes } = await enableTotp(server, u);
    const ch = await challengeFor(u);
    expect(ch.methods).toEqual(["totp", "recovery_code"]);
    expect(ch.passkey_options).toBeNull();
    // The challenge token is stored as SHA-256 only.
    const [stored] = await db
      .select()
      .from(twoFactorChallenges)
      .where(eq(twoFactorChallenges.tokenHash, sha256(ch.challenge_token)));
    expect(stored!.purpose).toBe("sign_in");

    expectError(await second({ challenge_token: ch.challenge_token, code: "123456" }), 401, "unauthenticated");
    const code = await totpCode(secret);
    const done = await second({ challenge_token: ch.challenge_token, code });
    expect(done.status).toBe(200);
    expect(done.body.token_type).toBe("Bearer");
    expect((await api(server, "GET", "/auth/me", { token: done.body.access_token })).body.two_factor).toBe(true);
    // The challenge is spent, and the same code on a new challenge is a replay.
    expectError(await second({ challenge_token: ch.challenge_token, code }), 401, "unauthenticated");
    const again = await challengeFor(u);
    expectError(await second({ challenge_token: again.challenge_token, code }), 401, "unauthenticated");
    // The next step's code is still good (clock drift of one step either way).
    expect((await second({ challenge_token: again.challenge_token, code: await totpCode(secret, 1) })).status).toBe(
      200,
    );

    const viaRecovery = await challengeFor(u);
    const rc = codes[3]!;
    expect(
      (await second({ challenge_token: viaRecovery.challenge_token, recovery_code: rc.toUpperCase() })).status,
    ).toBe(200);
    const reused = await challengeFor(u);
    expectError(await second({ challenge_token: reused.challenge_token, recovery_code: rc }), 401, "unauthenticated");
    expect((await api(server, "GET", "/auth/two-factor", { token: u.token })).body.recovery_codes_left).toBe(9);

    // Exactly one factor per attempt; an unknown challenge is a 401.
    expectError(await second({ challenge_token: reused.challenge_token, code: "123456", recovery_code: rc }), 400);
    expectError(await second({ challenge_token: "mcp_2fa_nope", code: "123456" }), 401, "unauthenticated");
  });

  test("removing the app needs the password; with no factor left the recovery codes go and sign-in is one step again", async () => {
    const u = await newUser(server, "totp-remove");
    await enableTotp(server, u);
    expectError(
      await api(server, "POST", "/auth/two-factor/totp/remove", { token: u.token, body: { password: "wrong one" } }),
      401,
    );
    const removed = await api(server, "POST", "/auth/two-factor/totp/remove", {
      token: u.token,
      body: { password: u.password },
    });
    expect(removed.status).toBe(200);
    expect(removed.body).toMatchObject({ enabled: false, recovery_codes_left: 0 });
    expect(await db.select().from(recoveryCodes).where(eq(recoveryCodes.userId, u.id))).toHaveLength(0);
    expect((await login(u.email, u.password)).body.access_token).toBeString();
    expectError(
      await api(server, "POST", "/auth/two-factor/recovery-codes", { token: u.token, body: { password: u.password } }),
      409,
      "conflict",
    );
  });
});

describe("passkeys (WebAuthn)", () => {
  test("enrol with a software authenticator, sign in with it; the counter moves and a replayed assertion is refused", async () => {
    const u = await newUser(server, "passkey");
    const { authenticator, passkeyId, recoveryCodes: codes } = await addPasskey(server, u);
    expect(codes).toHaveLength(10);
    const status = await api(server, "GET", "/auth/two-factor", { token: u.token });
    expect(status.body.passkeys).toEqual([
      { passkey_id: passkeyId, name: "Test key", created_at: expect.any(String), last_used_at: null },
    ]);

    // A passkey alone is a second factor: for the account page, the team gates and new recovery codes.
    expect((await api(server, "GET", "/auth/me", { token: u.token })).body.two_factor).toBe(true);
    const regenerated = await api(server, "POST", "/auth/two-factor/recovery-codes", {
      token: u.token,
      body: { password: u.password },
    });
    expect(regenerated.body.recovery_codes).toHaveLength(10);
    expect(regenerated.body.recovery_codes).not.toContain(codes[0]);

    const ch = await challengeFor(u);
    expect(ch.methods).toEqual(["recovery_code", "passkey"]);
    expect(ch.passkey_options.rpId).toBe("127.0.0.1");
    const assertion = authenticator.get(ch.passkey_options);
    const done = await second({ challenge_token: ch.challenge_token, passkey: assertion });
    expect(`${done.status} ${done.text}`).toStartWith("200");
    const [row] = await db.select().from(passkeys).where(eq(passkeys.id, passkeyId));
    expect(row!.counter).toBe(1);
    expect(row!.lastUsedAt).not.toBeNull();

    // The same assertion for a new challenge: signed over the old challenge, so refused.
    const again = await challengeFor(u);
    expectError(await second({ challenge_token: again.challenge_token, passkey: assertion }), 401, "unauthenticated");
    // Signed for another origin: refused.
    const phished = authenticator.get(again.passkey_options, { origin: "https://evil.example" });
    expectError(await second({ challenge_token: again.challenge_token, passkey: phished }), 401, "unauthenticated");
    // Another authenticator's answer to the right challenge: unknown credential, refused.
    const stranger = new SoftAuthenticator(server.url);
    await addPasskey(server, await newUser(server, "stranger"), stranger);
    expect(() => stranger.get(again.passkey_options)).toThrow();

    expect(
      (await second({ challenge_token: again.challenge_token, passkey: authenticator.get(again.passkey_options) }))
        .status,
    ).toBe(200);

    // Registration needs the password, and a registration answer is checked against its challenge.
    expectError(
      await api(server, "POST", "/auth/two-factor/passkeys/options", {
        token: u.token,
        body: { password: "nope nope" },
      }),
      401,
    );
    const { options } = (
      await api(server, "POST", "/auth/two-factor/passkeys/options", { token: u.token, body: { password: u.password } })
    ).body;
    expect(options.rp.id).toBe("127.0.0.1");
    expect(options.excludeCredentials).toHaveLength(1);
    const forged = authenticator.create({ challenge: "c29tZXRoaW5nLWVsc2U" });
    expectError(
      await api(server, "POST", "/auth/two-factor/passkeys", {
        token: u.token,
        body: { name: "Forged", response: forged },
      }),
      400,
      "bad_request",
    );
    // The challenge is spent by the failed try.
    expectError(
      await api(server, "POST", "/auth/two-factor/passkeys", {
        token: u.token,
        body: { name: "Late", response: authenticator.create(options) },
      }),
      409,
    );

    const removed = await api(server, "POST", `/auth/two-factor/passkeys/${passkeyId}/remove`, {
      token: u.token,
      body: { password: u.password },
    });
    expect(removed.body).toMatchObject({ enabled: false, passkeys: [] });
    expect((await login(u.email, u.password)).body.access_token).toBeString();
  });
});

describe("limits", () => {
  test("wrong second factors count against the failed sign-in limit of the account; a challenge takes five", async () => {
    const srv = await startTestServer({ LOGIN_FAILURES_PER_ACCOUNT: "5" });
    const u = await newUser(srv, "limit");
    await enableTotp(srv, u);
    const ch = await challengeFor(u, srv);
    for (let i = 0; i < 4; i++)
      expectError(await second({ challenge_token: ch.challenge_token, code: "000000" }, srv), 401, "unauthenticated");
    const fifth = expectError(await second({ challenge_token: ch.challenge_token, code: "000000" }, srv), 401);
    expect(fifth.message).toContain("too many tries");
    // Spent: even the right code no longer completes it.
    expectError(await second({ challenge_token: ch.challenge_token, code: "111111" }, srv), 401);
    // Those five failures are the account's limit (the spent challenge did not count): one more goes over it.
    const next = await challengeFor(u, srv);
    const over = await second({ challenge_token: next.challenge_token, code: "000000" }, srv);
    expectError(over, 429, "rate_limited");
    expect(over.headers.get("retry-after")).toBeString();
    // And the password step itself is refused for the account now.
    expectError(await login(u.email, u.password, srv), 429, "rate_limited");
  });

  test("a wrong password on a factor change counts as a failed sign-in too", async () => {
    const srv = await startTestServer({ LOGIN_FAILURES_PER_ACCOUNT: "2" });
    const u = await newUser(srv, "pw-limit");
    for (const expected of [401, 401, 429])
      expectError(
        await api(srv, "POST", "/auth/two-factor/totp", { token: u.token, body: { password: "wrong password" } }),
        expected,
      );
    expectError(await login(u.email, u.password, srv), 429, "rate_limited");
  });
});

describe("the dashboard's session door", () => {
  test("the password step answers the challenge without a cookie; the second step sets the cookie", async () => {
    const u = await newUser(server, "door");
    const { secret } = await enableTotp(server, u);
    const headers = { "x-mcp-dashboard": "1" };
    const first = await api(server, "POST", "/dashboard/session", {
      headers,
      body: { email: u.email, password: u.password },
    });
    expect(first.status).toBe(200);
    expect(first.headers.get("set-cookie")).toBeNull();
    expect(first.body.second_factor_required).toBe(true);
    const wrong = await api(server, "POST", "/dashboard/session/second-factor", {
      headers,
      body: { challenge_token: first.body.challenge_token, code: "000000" },
    });
    expectError(wrong, 401, "unauthenticated");
    expectError(
      await api(server, "POST", "/dashboard/session/second-factor", {
        body: { challenge_token: first.body.challenge_token, code: "000000" },
      }),
      403,
    );
    const done = await api(server, "POST", "/dashboard/session/second-factor", {
      headers,
      body: { challenge_token: first.body.challenge_token, code: await totpCode(secret) },
    });
    expect(done.status).toBe(200);
    expect(done.body.access_token).toBeString();
    expect(done.body.refresh_token).toBeUndefined();
    expect(done.headers.get("set-cookie")).toContain("mcp_dashboard_refresh=mcp_rt_");
  });
});

describe("a team that requires a second factor", () => {
  test("turning it on needs a factor of one's own; members without one are locked out of every team route but leaving", async () => {
    const owner = await newUser(server, "req-owner");
    const member = await newUser(server, "req-member");
    const leaver = await newUser(server, "req-leaver");
    const team = await newTeam(server, owner);
    await addMember(server, owner, team, member, "admin");
    await addMember(server, owner, team, leaver, "viewer");
    const srv = await api(server, "POST", "/server/servers", {
      token: owner.token,
      body: { team_id: team, name: "Survival", host: "127.0.0.1", port: 9, kind: "single" },
    });
    const app = await api(server, "POST", "/client/apps", {
      token: owner.token,
      body: { team_id: team, name: "launcher", title: "Launcher", description: "A launcher." },
    });
    const key = (await newApiKey(server, owner, team, "viewer"))!.key;

    const turnOn = () =>
      api(server, "PUT", `/teams/${team}/two-factor`, { token: owner.token, body: { required: true } });
    const refused = expectError(await turnOn(), 403, "two_factor_required");
    expect(refused.details).toEqual({ team_id: team });
    await enableTotp(server, owner);
    const on = await turnOn();
    expect(on.status).toBe(200);
    expect(on.body.require_two_factor).toBe(true);

    // The member without a factor: every route of the team answers 403 two_factor_required.
    const locked = [
      ["GET", `/teams/${team}`],
      ["GET", `/teams/${team}/members`],
      ["PATCH", `/teams/${team}`, { name: "taken over" }],
      ["GET", `/teams/${team}/webhooks`],
      ["GET", `/client/apps?team_id=${team}`],
      ["GET", `/client/apps/${app.body.app.client_id}`],
      ["GET", `/server/servers/${srv.body.server_id}`],
    ] as const;
    for (const [method, path, body] of locked) {
      const res = await api(server, method, path, { token: member.token, body });
      expect(`${method} ${path} ${res.status} ${res.body?.error?.code}`).toBe(
        `${method} ${path} 403 two_factor_required`,
      );
    }
    const list = await api(server, "GET", "/server/servers", { token: member.token, headers: { "x-team-id": team } });
    expectError(list, 403, "two_factor_required");
    // The account page still works, and tells which team is locked.
    const me = await api(server, "GET", "/auth/me", { token: member.token });
    expect(me.body.two_factor).toBe(false);
    expect(me.body.teams).toEqual([
      { team_id: team, name: expect.any(String), role: "admin", require_two_factor: true, locked: true },
    ]);
    // The team's API keys are not people and are not affected.
    expect((await api(server, "GET", `/teams/${team}`, { token: key })).status).toBe(200);
    // The owner, with a factor, carries on.
    expect((await api(server, "GET", `/teams/${team}/members`, { token: owner.token })).status).toBe(200);
    // A locked member may still leave.
    expect((await api(server, "DELETE", `/teams/${team}/members/${leaver.id}`, { token: leaver.token })).status).toBe(
      200,
    );

    // With a passkey of their own, the member is let in.
    await addPasskey(server, member);
    expect((await api(server, "GET", `/teams/${team}`, { token: member.token })).status).toBe(200);
    expect((await api(server, "GET", `/server/servers/${srv.body.server_id}`, { token: member.token })).status).toBe(
      200,
    );
    expect((await api(server, "GET", "/auth/me", { token: member.token })).body.teams[0].locked).toBe(false);

    // Turning it off needs no factor, and API keys cannot toggle it.
    expectError(
      await api(server, "PUT", `/teams/${team}/two-factor`, { token: key, body: { required: false } }),
      403,
      "forbidden",
    );
    const off = await api(server, "PUT", `/teams/${team}/two-factor`, {
      token: owner.token,
      body: { required: false },
    });
    expect(off.body.require_two_factor).toBe(false);
    const [pending] = await db
      .select()
      .from(twoFactorChallenges)
      .where(and(eq(twoFactorChallenges.userId, member.id), eq(twoFactorChallenges.purpose, "passkey_registration")));
    expect(pending).toBeUndefined();
  });
});
