import { beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import type { RunningServer } from "../src/app";
import { loginRequests, sessions } from "../src/db/schema";
import { offlineUuid } from "../src/identity/protocol";
import { sha256 } from "../src/lib/secrets";
import { devIdp, sharedServer, startTestServer, tempDir } from "./harness";
import { api, expectError, trpcClient } from "./helpers";
import { decide, fullLogin, newClient, poll, signIn, start, type TestClient } from "./ms-auth-helpers";

let server: RunningServer;
let client: TestClient;
beforeAll(async () => {
  server = await sharedServer();
  client = await newClient(server);
});

const validate = (c: TestClient, token: string, srv = server) =>
  api(srv, "POST", "/client/ms-auth/session/validate", {
    body: { client_id: c.clientId, client_secret: c.secret, svc_session_token: token },
  });

describe("ms_auth login flow over REST", () => {
  test("the whole integration path: start, sign in, consent, approve, poll, validate, revoke", async () => {
    const started = await start(server, client, "launcher-state-42");
    expect(started).toMatchObject({ expires_in: 600, interval: 2 });
    const auth = new URL(started.auth_url);
    expect(auth.searchParams.get("code_challenge_method")).toBe("S256");
    expect(auth.searchParams.get("code_challenge")).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(auth.searchParams.get("state")).toStartWith(`${started.auth_request_id}.`);
    expect(auth.searchParams.get("redirect_uri")).toBe(`${server.url}/client/ms-auth/callback`);
    expect((await poll(server, client, started.auth_request_id)).body).toMatchObject({ status: "pending" });

    const s = await signIn(server, started.auth_url, { username: "Notch_42" });
    expect(s.callback.status).toBe(200);
    // The consent page names the client and the player, with Approve/Deny and a CSRF token.
    expect(s.html).toContain("Blocky Launcher");
    expect(s.html).toContain("Play on Blocky servers.");
    expect(s.html).toContain('src="https://cdn.example.com/logo.png"');
    expect(s.html).toContain("Notch_42");
    expect(s.html).toMatch(/<button type="submit" value="approve" class="primary" name="decision">/);
    expect(s.html).toMatch(/<button type="submit" value="deny" class="secondary" name="decision">/);
    // Who asks (and where the player goes next), what is shared, how to revoke.
    expect(s.html).toContain('you go back to <span class="host">com.example.launcher</span>');
    expect(s.html).toContain("<li>your Minecraft UUID</li>");
    expect(s.html).toMatch(
      /Withdraw it at any time on <a href="[^"]*\/account\/apps">your apps page<\/a>, or sign out in (<!-- -->)?Blocky Launcher/,
    );
    expect(s.html).toMatch(/name="csrf_token" value="[A-Za-z0-9_-]{43}"/);
    expect((await poll(server, client, started.auth_request_id)).body).toEqual({
      status: "authenticated",
      mc_username: "Notch_42",
      expires_in: expect.any(Number),
    });

    const approved = await decide(server, s, "approve");
    expect(approved.status).toBe(303);
    const back = new URL(approved.headers.get("location")!);
    expect(`${back.protocol}${back.pathname}`).toBe("com.example.launcher:/callback");
    expect(Object.fromEntries(back.searchParams)).toEqual({
      auth_request_id: started.auth_request_id,
      status: "authorized",
      state: "launcher-state-42",
    });

    const polled = await poll(server, client, started.auth_request_id);
    expect(polled.body).toEqual({
      status: "authorized",
      mc_username: "Notch_42",
      svc_session_token: expect.stringMatching(/^mcp_sess_[A-Za-z0-9_-]{43}$/),
    });
    const token = polled.body.svc_session_token;
    // A lost poll answer can be repeated: the same token, not a second session.
    expect((await poll(server, client, started.auth_request_id)).body.svc_session_token).toBe(token);

    const valid = await validate(client, token);
    expect(valid.body).toEqual({
      valid: true,
      mc_uuid: offlineUuid("Notch_42"),
      mc_username: "Notch_42",
      expires_at: expect.any(String),
    });

    expect(
      (
        await api(server, "POST", "/client/ms-auth/session/revoke", {
          body: { client_id: client.clientId, client_secret: client.secret, svc_session_token: token },
        })
      ).body,
    ).toEqual({ ok: true });
    expect((await validate(client, token)).body).toEqual({ valid: false });
  });

  test("client_state comes back as state, and no state parameter is sent when none was given", async () => {
    const withState = await start(server, client, "a b&c=d/é");
    const s1 = await signIn(server, withState.auth_url);
    const r1 = new URL((await decide(server, s1, "deny")).headers.get("location")!);
    expect(r1.searchParams.get("state")).toBe("a b&c=d/é");
    const without = await start(server, client);
    const s2 = await signIn(server, without.auth_url);
    const r2 = new URL((await decide(server, s2, "approve")).headers.get("location")!);
    expect(r2.searchParams.has("state")).toBe(false);
  });

  test("session tokens are stored only as SHA-256, and one login makes one session", async () => {
    const { id, token } = await fullLogin(server, client, "Hasher");
    const rows = await server.services.database.db.select().from(sessions).where(eq(sessions.loginRequestId, id));
    expect(rows.length).toBe(1);
    expect(rows[0]!.tokenHash).toBe(sha256(token));
    expect(JSON.stringify(rows)).not.toContain(token);
    const [req] = await server.services.database.db.select().from(loginRequests).where(eq(loginRequests.id, id));
    expect(JSON.stringify(req)).not.toContain(token);
  });

  test("deny on the consent page ends as denied with consent_denied", async () => {
    const started = await start(server, client, "st");
    const s = await signIn(server, started.auth_url);
    const denied = await decide(server, s, "deny");
    expect(Object.fromEntries(new URL(denied.headers.get("location")!).searchParams)).toEqual({
      auth_request_id: started.auth_request_id,
      status: "denied",
      error: "consent_denied",
      state: "st",
    });
    expect((await poll(server, client, started.auth_request_id)).body).toEqual({
      status: "denied",
      mc_username: "Steve",
      error: "consent_denied",
    });
  });

  const denials: [string, string][] = [
    ["no_xbox_profile", "no_xbox_profile"],
    ["child_account", "child_account"],
    ["region_not_allowed", "region_not_allowed"],
    ["age_verification_required", "age_verification_required"],
    ["account_banned", "account_banned"],
    ["no_minecraft_profile", "no_minecraft_profile"],
    ["upstream_unavailable", "upstream_unavailable"],
    ["access_denied", "access_denied"],
  ];
  for (const [outcome, code] of denials) {
    test(`identity failure ${outcome} becomes denied with error ${code}`, async () => {
      const started = await start(server, client, "s");
      const s = await signIn(server, started.auth_url, { outcome });
      expect(s.callback.status).toBe(303);
      expect(s.cookie).toBeUndefined();
      const back = new URL(s.callback.headers.get("location")!);
      expect(Object.fromEntries(back.searchParams)).toEqual({
        auth_request_id: started.auth_request_id,
        status: "denied",
        error: code,
        state: "s",
      });
      expect((await poll(server, client, started.auth_request_id)).body).toEqual({ status: "denied", error: code });
    });
  }

  test("a flaky upstream (429 once) is retried and the sign-in succeeds", async () => {
    const started = await start(server, client);
    const s = await signIn(server, started.auth_url, { outcome: "flaky", username: "Retry_Me" });
    expect(s.callback.status).toBe(200);
    expect(s.html).toContain("Retry_Me");
  });

  test("start: 401 for bad credentials, 400 when ms_auth is not enabled, 400 for bad input", async () => {
    expectError(
      await api(server, "POST", "/client/ms-auth/start", {
        body: { client_id: client.clientId, client_secret: "mcp_cs_wrong" },
      }),
      401,
      "invalid_client",
    );
    expectError(
      await api(server, "POST", "/client/ms-auth/start", {
        body: { client_id: crypto.randomUUID(), client_secret: client.secret },
      }),
      401,
      "invalid_client",
    );
    const noModule = await newClient(server);
    await api(server, "DELETE", `/client/apps/${noModule.clientId}/modules/ms-auth`, { token: noModule.owner.token });
    expectError(
      await api(server, "POST", "/client/ms-auth/start", {
        body: { client_id: noModule.clientId, client_secret: noModule.secret },
      }),
      400,
      "bad_request",
    );
    expectError(
      await api(server, "POST", "/client/ms-auth/start", { body: { client_id: "nope", client_secret: client.secret } }),
      400,
      "validation_failed",
    );
    expectError(
      await api(server, "POST", "/client/ms-auth/start", {
        body: { client_id: client.clientId, client_secret: client.secret, client_state: "x".repeat(600) },
      }),
      400,
      "validation_failed",
    );
  });

  test("poll: 404 for an unknown request or another client's, 401 for bad credentials", async () => {
    const other = await newClient(server);
    const mine = await start(server, client);
    expectError(await poll(server, client, crypto.randomUUID()), 404, "not_found");
    expectError(await poll(server, other, mine.auth_request_id), 404, "not_found");
    expectError(
      await api(server, "POST", "/client/ms-auth/poll", {
        body: { client_id: client.clientId, client_secret: "bad", auth_request_id: mine.auth_request_id },
      }),
      401,
      "invalid_client",
    );
  });

  test("validate: unknown, revoked and another client's tokens are just {valid:false}; bad credentials 401", async () => {
    const other = await newClient(server);
    const { token } = await fullLogin(server, client, "Validator");
    expect((await validate(other, token)).body).toEqual({ valid: false });
    expect((await validate(client, `mcp_sess_${"A".repeat(43)}`)).body).toEqual({ valid: false });
    expect((await validate(client, "garbage")).body).toEqual({ valid: false });
    // Another client cannot revoke it either.
    await api(server, "POST", "/client/ms-auth/session/revoke", {
      body: { client_id: other.clientId, client_secret: other.secret, svc_session_token: token },
    });
    expect((await validate(client, token)).body.valid).toBe(true);
    expectError(
      await api(server, "POST", "/client/ms-auth/session/validate", {
        body: { client_id: client.clientId, client_secret: other.secret, svc_session_token: token },
      }),
      401,
      "invalid_client",
    );
  });

  test("authorize only from the browser holding the cookie, with the page's CSRF token", async () => {
    const started = await start(server, client);
    const s = await signIn(server, started.auth_url);
    expect(s.cookie).toMatch(/^mcp_login_[0-9a-f-]{36}=/);
    const other = await signIn(server, (await start(server, client)).auth_url);
    // No cookie, another login's cookie, a forged CSRF token: all refused, nothing changes.
    expect((await decide(server, s, "approve", "")).status).toBe(403);
    expect(
      (await decide(server, s, "approve", `${s.cookie!.split("=")[0]}=${other.cookie!.split("=")[1]}`)).status,
    ).toBe(403);
    const forged = await fetch(`${server.url}/client/ms-auth/authorize`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", cookie: s.cookie! },
      body: new URLSearchParams({
        auth_request_id: started.auth_request_id,
        csrf_token: "A".repeat(43),
        decision: "approve",
      }),
      redirect: "manual",
    });
    expect(forged.status).toBe(403);
    expect((await poll(server, client, started.auth_request_id)).body.status).toBe("authenticated");
    expect((await decide(server, s, "approve")).status).toBe(303);
  });

  test("a callback replayed after use does not sign in again", async () => {
    const started = await start(server, client);
    const page = await fetch(started.auth_url);
    const { hiddenFields } = await import("./ms-auth-helpers");
    const form = new URLSearchParams({ ...hiddenFields(await page.text()), username: "Replay", outcome: "success" });
    const submitted = await fetch(started.auth_url.split("?")[0]!, { method: "POST", body: form, redirect: "manual" });
    const callbackUrl = submitted.headers.get("location")!;
    expect((await fetch(callbackUrl, { redirect: "manual" })).status).toBe(200);
    const again = await fetch(callbackUrl, { redirect: "manual" });
    expect(again.status).toBe(400);
    expect(await again.text()).toContain("already used");
    // A forged state is refused before anything happens.
    const forged = await fetch(`${server.url}/client/ms-auth/callback?code=x&state=${started.auth_request_id}.AAAA`, {
      redirect: "manual",
    });
    expect(forged.status).toBe(400);
  });

  test("browser pages send CSP with frame-ancestors 'none', no-referrer, and a HttpOnly SameSite cookie", async () => {
    const s = await signIn(server, (await start(server, client)).auth_url);
    const h = s.callback.headers;
    expect(h.get("content-security-policy")).toContain("frame-ancestors 'none'");
    expect(h.get("content-security-policy")).toContain("form-action 'self' com.example.launcher:");
    expect(h.get("referrer-policy")).toBe("no-referrer");
    expect(h.get("x-frame-options")).toBe("DENY");
    expect(h.get("set-cookie")).toMatch(/HttpOnly/);
    expect(h.get("set-cookie")).toMatch(/SameSite=Strict/);
    expect(h.get("set-cookie")).not.toMatch(/Secure/); // loopback http; Secure is set when PUBLIC_URL is https
  });

  test("concurrent approve and deny on one request: exactly one wins, at most one session", async () => {
    for (let i = 0; i < 5; i++) {
      const started = await start(server, client);
      const s = await signIn(server, started.auth_url);
      const [a, d] = await Promise.all([decide(server, s, "approve"), decide(server, s, "deny")]);
      const statuses = [a, d].map((r) => new URL(r.headers.get("location")!).searchParams.get("status"));
      expect(statuses[0]).toBe(statuses[1]!);
      const final = (await poll(server, client, started.auth_request_id)).body.status;
      expect(statuses[0]).toBe(final);
      const rows = await server.services.database.db
        .select()
        .from(sessions)
        .where(eq(sessions.loginRequestId, started.auth_request_id));
      expect(rows.length).toBe(final === "authorized" ? 1 : 0);
    }
  });
});

describe("ms_auth login through the typed tRPC client", () => {
  test("start, poll, validate via @trpc/client", async () => {
    const trpc = trpcClient(server);
    const started = await trpc.msAuth.start.mutate({
      client_id: client.clientId,
      client_secret: client.secret,
      client_state: "typed",
    });
    const s = await signIn(server, started.auth_url, { username: "Typed_Tom" });
    await decide(server, s, "approve");
    const polled = await trpc.msAuth.poll.mutate({
      client_id: client.clientId,
      client_secret: client.secret,
      auth_request_id: started.auth_request_id,
    });
    // The typed door narrows on status: an authorized answer's token is a string, no assertion needed.
    if (polled.status !== "authorized") throw new Error(`expected authorized, got ${polled.status}`);
    const v = await trpc.msAuth.validate.mutate({
      client_id: client.clientId,
      client_secret: client.secret,
      svc_session_token: polled.svc_session_token,
    });
    expect(v).toMatchObject({ valid: true, mc_username: "Typed_Tom", mc_uuid: offlineUuid("Typed_Tom") });
    const err = await trpc.msAuth.poll
      .mutate({ client_id: client.clientId, client_secret: client.secret, auth_request_id: crypto.randomUUID() })
      .catch((e) => e);
    expect(err.data).toMatchObject({ code: "not_found", httpStatus: 404 });
    const bad = await trpc.msAuth.start.mutate({ client_id: client.clientId, client_secret: "nope" }).catch((e) => e);
    expect(bad.data).toMatchObject({ code: "invalid_client", httpStatus: 401 });
  });
});

describe("expiry, restarts and limits (servers of their own)", () => {
  test("a login request expires after its deadline: on poll, on callback, and by the sweep", async () => {
    const idp = await devIdp();
    const srv = await startTestServer({ DEV_IDP_URL: idp.url, LOGIN_REQUEST_TTL_SECONDS: "60" });
    const c = await newClient(srv);
    const polled = await start(srv, c);
    const calledBack = await start(srv, c, "late");
    const swept = await start(srv, c);
    const signedIn = await start(srv, c);
    const s = await signIn(srv, signedIn.auth_url);
    expect(s.callback.status).toBe(200);

    srv.services.clock.advance(61_000);
    expect((await poll(srv, c, polled.auth_request_id)).body).toEqual({ status: "expired", error: "expired" });
    const late = await signIn(srv, calledBack.auth_url);
    expect(late.callback.status).toBe(303);
    expect(Object.fromEntries(new URL(late.callback.headers.get("location")!).searchParams)).toMatchObject({
      status: "expired",
      state: "late",
    });
    // Consent after the deadline cannot authorize.
    const tooLate = await decide(srv, s, "approve");
    expect(new URL(tooLate.headers.get("location")!).searchParams.get("status")).toBe("expired");
    expect(await srv.services.loginRequests.sweep()).toBeGreaterThanOrEqual(1);
    const [row] = await srv.services.database.db
      .select()
      .from(loginRequests)
      .where(eq(loginRequests.id, swept.auth_request_id));
    expect(row!.status).toBe("expired");
  });

  test("a restart in the middle of a flow: a new instance on the same database continues it", async () => {
    const idp = await devIdp();
    const dir = tempDir();
    const first = await startTestServer({ DEV_IDP_URL: idp.url, DATA_DIR: dir });
    const c = await newClient(first);
    const started = await start(first, c, "restart");
    const s = await signIn(first, started.auth_url, { username: "Phoenix" });
    expect(s.callback.status).toBe(200);
    const port = String(first.port);
    await first.stop();
    // Same port (the callback URL is part of the request), same data.
    const second = await startTestServer({ DEV_IDP_URL: idp.url, DATA_DIR: dir, PORT: port });
    const approved = await decide(second, s, "approve");
    expect(new URL(approved.headers.get("location")!).searchParams.get("status")).toBe("authorized");
    const polled = await poll(second, c, started.auth_request_id);
    expect(polled.body.status).toBe("authorized");
    expect((await validate(c, polled.body.svc_session_token, second)).body).toMatchObject({
      valid: true,
      mc_username: "Phoenix",
    });
  });

  test("over the limit: 429 in the envelope with Retry-After and RateLimit headers", async () => {
    const idp = await devIdp();
    const srv = await startTestServer({
      DEV_IDP_URL: idp.url,
      RATE_LIMIT_START_PER_MIN: "3",
      RATE_LIMIT_VALIDATE_PER_MIN: "2",
      RATE_LIMIT_CLIENT_WRITE_PER_MIN: "4",
    });
    const c = await newClient(srv); // 2 client writes used
    const body = { client_id: c.clientId, client_secret: c.secret };
    for (let i = 0; i < 3; i++) {
      const ok = await api(srv, "POST", "/client/ms-auth/start", { body });
      expect(ok.status).toBe(200);
      // The general (per client address) policy, then the route's own: both listed, each named.
      expect(ok.headers.get("ratelimit")).toMatch(new RegExp(`^"general";r=\\d+;t=\\d+, "start";r=${2 - i};t=\\d+$`));
      expect(ok.headers.get("ratelimit-policy")).toBe('"general";q=10000000;w=60, "start";q=3;w=60');
    }
    const limited = await api(srv, "POST", "/client/ms-auth/start", { body });
    expectError(limited, 429, "rate_limited");
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(limited.headers.get("ratelimit")).toContain('"start";r=0;');
    // Limits are per client: another client is unaffected.
    const other = await newClient(srv);
    expect(
      (
        await api(srv, "POST", "/client/ms-auth/start", {
          body: { client_id: other.clientId, client_secret: other.secret },
        })
      ).status,
    ).toBe(200);
    // Validate has its own budget; client writes are counted per token.
    for (let i = 0; i < 2; i++) expect((await validate(c, "x", srv)).status).toBe(200);
    expectError(await validate(c, "x", srv), 429, "rate_limited");
    // Client creates are counted per token, in a bucket of their own: newClient made one.
    const create = () =>
      api(srv, "POST", "/client/apps", {
        token: c.owner.token,
        body: { team_id: c.teamId, name: "a", title: "t", description: "d" },
      });
    for (let i = 0; i < 3; i++) expect((await create()).status).toBe(201);
    expectError(await create(), 429, "rate_limited");
    // The tRPC door counts the same and carries the same headers.
    const viaTrpc = await api(srv, "POST", "/trpc/msAuth.start", { body });
    expect(viaTrpc.status).toBe(429);
    expect(viaTrpc.headers.get("retry-after")).not.toBeNull();
  });
});

/** Moves a server's clock to the start of a fresh minute, so a test's counts share one window. */
function freshWindow(srv: RunningServer) {
  const intoMinute = srv.services.clock.now() % 60_000;
  srv.services.clock.advance(60_000 - intoMinute + 50);
}

/** Distinct letter-case variants of a lower-case UUID (none of them all lower case). */
function caseVariants(id: string, n: number): string[] {
  const out = new Set<string>();
  while (out.size < n) {
    const v = [...id].map((ch) => (Math.random() < 0.5 ? ch.toUpperCase() : ch)).join("");
    if (v !== id) out.add(v);
  }
  return [...out];
}

describe("client credentials and limits (security review)", () => {
  test("wrong secrets do not spend the client's budget: the failing caller gets 429, the real backend keeps working", async () => {
    const idp = await devIdp();
    const srv = await startTestServer({
      DEV_IDP_URL: idp.url,
      RATE_LIMIT_START_PER_MIN: "3",
      RATE_LIMIT_POLL_PER_MIN: "3",
      RATE_LIMIT_VALIDATE_PER_MIN: "40",
      RATE_LIMIT_CLIENT_AUTH_FAILURES_PER_MIN: "20",
    });
    const c = await newClient(srv);
    freshWindow(srv);
    const wrong = { client_id: c.clientId, client_secret: "mcp_cs_wrong" };
    const right = { client_id: c.clientId, client_secret: c.secret };

    const attempts: number[] = [];
    for (let i = 0; i < 41; i++) {
      const res = await api(srv, "POST", "/client/ms-auth/session/validate", {
        body: { ...wrong, svc_session_token: "x" },
      });
      attempts.push(res.status);
      if (i === 0) expectError(res, 401, "invalid_client");
      if (i === 40) {
        expectError(res, 429, "rate_limited");
        expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
        expect(res.headers.get("ratelimit")).toContain('"client-auth-failure";r=0;');
      }
    }
    expect(attempts.filter((s) => s === 401).length).toBe(20);
    expect(attempts.filter((s) => s === 429).length).toBe(21);
    // Start and poll: the same failing caller stays refused, on both doors.
    for (let i = 0; i < 4; i++) {
      expectError(await api(srv, "POST", "/client/ms-auth/start", { body: wrong }), 429, "rate_limited");
      expectError(
        await api(srv, "POST", "/client/ms-auth/poll", { body: { ...wrong, auth_request_id: crypto.randomUUID() } }),
        429,
        "rate_limited",
      );
    }
    expect((await api(srv, "POST", "/trpc/msAuth.start", { body: wrong })).status).toBe(429);

    // The real backend, with the right secret: its whole budget of each call is still there.
    expect((await validate(c, "x", srv)).body).toEqual({ valid: false });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const ok = await api(srv, "POST", "/client/ms-auth/start", { body: right });
      expect(ok.status).toBe(200);
      expect(ok.headers.get("ratelimit")).toContain(`"start";r=${2 - i};`);
      ids.push(ok.body.auth_request_id);
    }
    for (let i = 0; i < 3; i++) expect((await poll(srv, c, ids[i]!)).body.status).toBe("pending");
    // Its own budget still applies to verified calls.
    expectError(await api(srv, "POST", "/client/ms-auth/start", { body: right }), 429, "rate_limited");
    expectError(await poll(srv, c, ids[0]!), 429, "rate_limited");
  });

  test("letter case of client_id does not escape the per-client limit", async () => {
    const idp = await devIdp();
    const srv = await startTestServer({ DEV_IDP_URL: idp.url, RATE_LIMIT_POLL_PER_MIN: "3" });
    const c = await newClient(srv);
    const started = await start(srv, c);
    freshWindow(srv);
    for (let i = 0; i < 3; i++) expect((await poll(srv, c, started.auth_request_id)).status).toBe(200);
    const variants = caseVariants(c.clientId, 25);
    const statuses = await Promise.all(
      variants.map(
        async (id) =>
          (
            await api(srv, "POST", "/client/ms-auth/poll", {
              body: { client_id: id, client_secret: c.secret, auth_request_id: started.auth_request_id },
            })
          ).status,
      ),
    );
    expect(statuses).toEqual(variants.map(() => 429));
  });

  test("upper-case ids name the same client and request, on both doors", async () => {
    const started = await start(server, client);
    const upper = { client_id: client.clientId.toUpperCase(), client_secret: client.secret };
    const polled = await api(server, "POST", "/client/ms-auth/poll", {
      body: { ...upper, auth_request_id: started.auth_request_id.toUpperCase() },
    });
    expect(polled.status).toBe(200);
    expect(polled.body.status).toBe("pending");
    const viaTrpc = await trpcClient(server).msAuth.poll.mutate({
      ...upper,
      auth_request_id: started.auth_request_id.toUpperCase(),
    });
    expect(viaTrpc.status).toBe("pending");
    // Path and query ids too: the answer carries the canonical lower-case form.
    const got = await api(server, "GET", `/client/apps/${client.clientId.toUpperCase()}`, {
      token: client.owner.token,
    });
    expect(got.status).toBe(200);
    expect(got.body.client_id).toBe(client.clientId);
    const listed = await api(server, "GET", `/client/apps?team_id=${client.teamId.toUpperCase()}`, {
      token: client.owner.token,
    });
    expect(listed.status).toBe(200);
    expect(listed.body.apps.map((a: { client_id: string }) => a.client_id)).toContain(client.clientId);
  });
});

describe("start resumes a login with auth_request_id (spec section 7)", () => {
  const resume = (c: TestClient, id: string, srv = server) =>
    api(srv, "POST", "/client/ms-auth/start", {
      body: { client_id: c.clientId, client_secret: c.secret, auth_request_id: id },
    });

  test("a live request answers the same auth_request_id with a fresh auth_url, and the login completes", async () => {
    const first = await start(server, client, "resume-state");
    const again = await resume(client, first.auth_request_id.toUpperCase());
    expect(again.status).toBe(200);
    expect(again.body).toEqual({
      auth_request_id: first.auth_request_id,
      auth_url: expect.any(String),
      expires_in: expect.any(Number),
      interval: 2,
    });
    expect(again.body.expires_in).toBeLessThanOrEqual(first.expires_in);
    expect(new URL(again.body.auth_url).searchParams.get("state")).toStartWith(`${first.auth_request_id}.`);
    const rows = await server.services.database.db
      .select()
      .from(loginRequests)
      .where(eq(loginRequests.id, first.auth_request_id));
    expect(rows.length).toBe(1);

    const s = await signIn(server, again.body.auth_url, { username: "Resumer" });
    expect(s.callback.status).toBe(200);
    const approved = await decide(server, s, "approve");
    expect(new URL(approved.headers.get("location")!).searchParams.get("state")).toBe("resume-state");
    expect((await poll(server, client, first.auth_request_id)).body).toMatchObject({
      status: "authorized",
      mc_username: "Resumer",
    });
    // Once ended it cannot be resumed: poll it for the result instead.
    expectError(await resume(client, first.auth_request_id), 409, "conflict");
  });

  test("an expired request answers 401 auth_request_expired, on both doors", async () => {
    const idp = await devIdp();
    const srv = await startTestServer({ DEV_IDP_URL: idp.url, LOGIN_REQUEST_TTL_SECONDS: "60" });
    const c = await newClient(srv);
    const started = await start(srv, c);
    srv.services.clock.advance(61_000);
    expectError(await resume(c, started.auth_request_id, srv), 401, "auth_request_expired");
    const [row] = await srv.services.database.db
      .select()
      .from(loginRequests)
      .where(eq(loginRequests.id, started.auth_request_id));
    expect(row!.status).toBe("expired");
    const err = await trpcClient(srv)
      .msAuth.start.mutate({ client_id: c.clientId, client_secret: c.secret, auth_request_id: started.auth_request_id })
      .catch((e) => e);
    expect(err.data).toMatchObject({ code: "auth_request_expired", httpStatus: 401 });
  });

  test("an unknown auth_request_id or another client's answers 404", async () => {
    const other = await newClient(server);
    const theirs = await start(server, other);
    expectError(await resume(client, crypto.randomUUID()), 404, "not_found");
    expectError(await resume(client, theirs.auth_request_id), 404, "not_found");
    expect((await poll(server, other, theirs.auth_request_id)).body.status).toBe("pending");
  });
});

describe("login request store", () => {
  test("an event sent with a stale row is applied to the current state, never over it", async () => {
    const started = await start(server, client);
    const store = server.services.loginRequests;
    const stale = (await store.loadCurrent(started.auth_request_id))!;
    const signedIn = await store.send(stale, {
      type: "AUTHENTICATE",
      mcUuid: offlineUuid("Stale"),
      mcUsername: "Stale",
    });
    expect(signedIn).toMatchObject({ applied: true, row: { status: "authenticated", version: stale.version + 1 } });
    // The version check fails on the old copy: the store reads again and applies DENY to "authenticated".
    const denied = await store.send(stale, { type: "DENY", error: "consent_denied" });
    expect(denied).toMatchObject({ applied: true, row: { status: "denied", version: stale.version + 2 } });
    expect(denied!.row.context).toMatchObject({ mcUsername: "Stale", error: "consent_denied" });
    // A final state takes nothing more, whatever copy the caller holds.
    const again = await store.send(stale, { type: "AUTHENTICATE", mcUuid: offlineUuid("Other"), mcUsername: "Other" });
    expect(again).toMatchObject({ applied: false, row: { status: "denied" } });
    expect((await poll(server, client, started.auth_request_id)).body).toEqual({
      status: "denied",
      mc_username: "Stale",
      error: "consent_denied",
    });
  });
});

describe("a request gone while its player signs in", () => {
  test("a client deleted between start and the callback: the callback says the link is not valid (400) and writes nothing", async () => {
    // On the embedded database the callback answers from the row the process last wrote; the
    // delete happened behind it (a cascade), and the write that follows must find the row gone.
    const doomed = await newClient(server);
    const started = await start(server, doomed);
    const deleted = await api(server, "DELETE", `/client/apps/${doomed.clientId}`, { token: doomed.owner.token });
    expect(deleted.status).toBe(200);
    const s = await signIn(server, started.auth_url, { username: "Gone" });
    expect(s.callback.status).toBe(400);
    expect(s.html).toContain("not valid");
    const db = server.services.database.db;
    expect(await db.select().from(loginRequests).where(eq(loginRequests.id, started.auth_request_id))).toEqual([]);
    expect(await db.select().from(sessions).where(eq(sessions.mcUsername, "Gone"))).toEqual([]);
  });
});
