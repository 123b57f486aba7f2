import { beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import {
  createRemoteJWKSet,
  decodeProtectedHeader,
  exportPKCS8,
  generateKeyPair,
  type JWTVerifyOptions,
  jwtVerify,
} from "jose";
import type { RunningServer } from "../src/app";
import { parseConfig } from "../src/config";
import { assertionKeys } from "../src/db/schema";
import { KEY_REFRESH_SECONDS, ROTATION_LEAD_SECONDS } from "../src/ms-auth/assertions";
import { devIdp, freePort, startTestServer, tempDir, usingPostgres } from "./harness";
import { api, expectError, trpcClient } from "./helpers";
import { decide, fullLogin, newClient, signIn, start, type TestClient } from "./ms-auth-helpers";

const jwksUrl = (srv: RunningServer) => new URL(`${srv.url}/.well-known/jwks.json`);

/** What a launcher backend does: fetch the served JWKS over HTTP and verify with jose. */
function verify(srv: RunningServer, jwt: string, c: TestClient, opts: JWTVerifyOptions = {}) {
  return jwtVerify(jwt, createRemoteJWKSet(jwksUrl(srv)), {
    issuer: srv.url,
    audience: c.clientId,
    algorithms: ["EdDSA"],
    typ: "JWT",
    ...opts,
  });
}

const validate = (srv: RunningServer, c: TestClient, token: string, extra: Record<string, unknown> = {}) =>
  api(srv, "POST", "/client/ms-auth/session/validate", {
    body: { client_id: c.clientId, client_secret: c.secret, svc_session_token: token, ...extra },
  });

const pollWith = (srv: RunningServer, c: TestClient, id: string, extra: Record<string, unknown> = {}) =>
  api(srv, "POST", "/client/ms-auth/poll", {
    body: { client_id: c.clientId, client_secret: c.secret, auth_request_id: id, ...extra },
  });

async function verificationError(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return "verified";
  } catch (err) {
    return (err as { code?: string }).code ?? String(err);
  }
}

describe("signed session assertions", () => {
  let server: RunningServer;
  let client: TestClient;
  beforeAll(async () => {
    server = await startTestServer({ DEV_IDP_URL: (await devIdp()).url });
    client = await newClient(server);
  });

  test("poll and validate with assertion: true return an EdDSA JWT that verifies against the served JWKS with the player's claims", async () => {
    const { id, token } = await fullLogin(server, client, "Alex_7");
    const polled = await pollWith(server, client, id, { assertion: true });
    expect(polled.status).toBe(200);
    expect(polled.body.status).toBe("authorized");
    const valid = await validate(server, client, token, { assertion: true });
    expect(valid.status).toBe(200);
    expect(valid.body.valid).toBe(true);

    for (const jwt of [polled.body.assertion, valid.body.assertion] as string[]) {
      expect(typeof jwt).toBe("string");
      const { payload, protectedHeader } = await verify(server, jwt, client);
      expect(protectedHeader).toEqual({ alg: "EdDSA", kid: expect.any(String), typ: "JWT" });
      expect(payload.iss).toBe(server.url);
      expect(payload.aud).toBe(client.clientId);
      expect(payload.sub).toBe(valid.body.mc_uuid);
      expect(payload.name).toBe("Alex_7");
      expect(payload.exp! - payload.iat!).toBe(300);
      expect(Math.abs(payload.iat! - Date.now() / 1000)).toBeLessThan(10);
      expect(payload.jti).toMatch(/^[0-9a-f-]{36}$/);
    }
    // Another client's audience does not accept it.
    const other = await newClient(server);
    expect(await verificationError(verify(server, valid.body.assertion, other))).toBe(
      "ERR_JWT_CLAIM_VALIDATION_FAILED",
    );
  });

  test("the typed /trpc door takes the same flag and returns the same field", async () => {
    const { id, token } = await fullLogin(server, client);
    const trpc = trpcClient(server).msAuth;
    const creds = { client_id: client.clientId, client_secret: client.secret };
    const v = await trpc.validate.mutate({ ...creds, svc_session_token: token, assertion: true });
    // The answers are discriminated: narrowing on valid / status types the assertion field.
    if (!v.valid) throw new Error("expected a valid session");
    expect((await verify(server, v.assertion!, client)).payload.sub).toBe(v.mc_uuid);
    const p = await trpc.poll.mutate({ ...creds, auth_request_id: id, assertion: true });
    if (p.status !== "authorized") throw new Error(`expected authorized, got ${p.status}`);
    expect((await verify(server, p.assertion!, client)).payload.sub).toBe(v.mc_uuid);
  });

  test("no assertion field unless asked: absent, or assertion: false", async () => {
    const { id, token } = await fullLogin(server, client);
    for (const extra of [{}, { assertion: false }]) {
      const p = await pollWith(server, client, id, extra);
      expect(p.body.status).toBe("authorized");
      expect("assertion" in p.body).toBe(false);
      const v = await validate(server, client, token, extra);
      expect(v.body.valid).toBe(true);
      expect("assertion" in v.body).toBe(false);
    }
  });

  test("a pending, authenticated or denied poll never carries an assertion, even when asked", async () => {
    const pending = await start(server, client);
    const p1 = await pollWith(server, client, pending.auth_request_id, { assertion: true });
    expect(p1.body).toEqual({ status: "pending", expires_in: expect.any(Number) });

    const s = await signIn(server, pending.auth_url);
    const p2 = await pollWith(server, client, pending.auth_request_id, { assertion: true });
    expect(p2.body.status).toBe("authenticated");
    expect("assertion" in p2.body).toBe(false);

    expect((await decide(server, s, "deny")).status).toBe(303);
    for (let i = 0; i < 2; i++) {
      // The second answer comes from the ended-poll cache.
      const p3 = await pollWith(server, client, pending.auth_request_id, { assertion: true });
      expect(p3.body).toMatchObject({ status: "denied", error: "consent_denied" });
      expect("assertion" in p3.body).toBe(false);
    }
  });

  test('a non-boolean assertion flag ("yes", 1, null) is a 400 in the error envelope on poll and validate', async () => {
    const { id, token } = await fullLogin(server, client);
    for (const bad of ["yes", 1, null]) {
      const p = await pollWith(server, client, id, { assertion: bad });
      expect(expectError(p, 400, "validation_failed").details).toBeDefined();
      expectError(await validate(server, client, token, { assertion: bad }), 400, "validation_failed");
    }
  });

  test("an unknown or revoked session gets {valid: false} and no assertion; one issued before revocation verifies until exp", async () => {
    const { id, token } = await fullLogin(server, client);
    const before = (await validate(server, client, token, { assertion: true })).body.assertion as string;
    const revoked = await api(server, "POST", "/client/ms-auth/session/revoke", {
      body: { client_id: client.clientId, client_secret: client.secret, svc_session_token: token },
    });
    expect(revoked.body).toEqual({ ok: true });
    expect((await validate(server, client, token, { assertion: true })).body).toEqual({ valid: false });
    expect((await validate(server, client, "mcp_sess_nope", { assertion: true })).body).toEqual({ valid: false });
    // The request is still authorized (its token is shown again), but the session is not live.
    const p = await pollWith(server, client, id, { assertion: true });
    expect(p.body.status).toBe("authorized");
    expect("assertion" in p.body).toBe(false);
    // Documented: a revoked session's assertions stay verifiable until exp (bounded by the TTL).
    expect((await verify(server, before, client)).payload.exp).toBeGreaterThan(Date.now() / 1000);
  });

  test("the JWKS is public (no private part), cacheable, and names the kid assertions carry", async () => {
    const { token } = await fullLogin(server, client);
    const jwt = (await validate(server, client, token, { assertion: true })).body.assertion as string;
    const res = await fetch(jwksUrl(server));
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/jwk-set+json");
    expect(res.headers.get("cache-control")).toBe("public, max-age=300");
    const jwks = (await res.json()) as { keys: Record<string, string>[] };
    expect(jwks.keys.length).toBeGreaterThanOrEqual(1);
    for (const k of jwks.keys) {
      expect(Object.keys(k).sort()).toEqual(["alg", "crv", "kid", "kty", "use", "x"]);
      expect(k).toMatchObject({ kty: "OKP", crv: "Ed25519", alg: "EdDSA", use: "sig" });
    }
    expect(jwks.keys.map((k) => k.kid)).toContain(decodeProtectedHeader(jwt).kid!);
    // The private half is stored sealed: no PEM and no raw key material in the row.
    const rows = await server.services.database.db.select().from(assertionKeys);
    for (const r of rows) expect(r.privateKey).toMatch(/^v1\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]+$/);
  });

  test("the same session's assertion is reused while it has most of its life left, not signed per call", async () => {
    const { token } = await fullLogin(server, client);
    const a = (await validate(server, client, token, { assertion: true })).body.assertion;
    const b = (await validate(server, client, token, { assertion: true })).body.assertion;
    expect(b).toBe(a);
    // Past half its life a fresh one is signed.
    server.services.clock.advance(151_000);
    const c = (await validate(server, client, token, { assertion: true })).body.assertion;
    expect(c).not.toBe(a);
  });
});

describe("assertion expiry", () => {
  test("with SESSION_ASSERTION_TTL_SECONDS=3 an assertion verifies at once and fails as expired 4 s later", async () => {
    const srv = await startTestServer({ DEV_IDP_URL: (await devIdp()).url, SESSION_ASSERTION_TTL_SECONDS: "3" });
    const c = await newClient(srv);
    const { token } = await fullLogin(srv, c);
    const jwt = (await validate(srv, c, token, { assertion: true })).body.assertion as string;
    const { payload } = await verify(srv, jwt, c);
    expect(payload.exp! - payload.iat!).toBe(3);
    await Bun.sleep(4100);
    expect(await verificationError(verify(srv, jwt, c))).toBe("ERR_JWT_EXPIRED");
    // A new call gets a fresh one that verifies.
    const fresh = (await validate(srv, c, token, { assertion: true })).body.assertion as string;
    expect(fresh).not.toBe(jwt);
    await verify(srv, fresh, c);
  });
});

describe("key rotation", () => {
  test("the next key is published before it signs; the previous key verifies until its assertions have expired, then its kid is unknown", async () => {
    const srv = await startTestServer({ DEV_IDP_URL: (await devIdp()).url });
    const c = await newClient(srv);
    const clock = srv.services.clock;
    const kids = async () =>
      ((await (await fetch(jwksUrl(srv))).json()) as { keys: { kid: string }[] }).keys.map((k) => k.kid);
    const assertion = async () => {
      const { token } = await fullLogin(srv, c);
      return (await validate(srv, c, token, { assertion: true })).body.assertion as string;
    };
    // Verification at the service's (moved) time, each with a fresh JWKS fetch.
    const at = (jwt: string, when: number) => verify(srv, jwt, c, { currentDate: new Date(when) });

    const old = await assertion();
    const oldKid = decodeProtectedHeader(old).kid!;
    const oldIat = (await at(old, clock.now())).payload.iat! * 1000;

    const nextKid = await srv.services.assertions.rotate();
    expect(nextKid).not.toBe(oldKid);
    expect(await kids()).toEqual(expect.arrayContaining([oldKid, nextKid]));
    // Published ahead: still signing with the old key during the lead.
    expect(decodeProtectedHeader(await assertion()).kid).toBe(oldKid);

    clock.advance((ROTATION_LEAD_SECONDS + 1) * 1000);
    const fresh = await assertion();
    expect(decodeProtectedHeader(fresh).kid).toBe(nextKid);
    await at(fresh, clock.now());
    // An assertion signed by the previous, still-published key still verifies.
    expect((await at(old, oldIat)).payload.sub).toBeString();

    // Past the last moment an old-key assertion can be alive, the key leaves the JWKS.
    clock.advance((300 + 60 + KEY_REFRESH_SECONDS + 1) * 1000);
    expect(await kids()).toEqual([nextKid]);
    expect(await verificationError(at(old, oldIat))).toBe("ERR_JWKS_NO_MATCHING_KEY");
    await at(fresh, clock.now() - 300_000);

    // The periodic pass deletes it from the table.
    await srv.services.assertions.maintain();
    const rows = await srv.services.database.db.select().from(assertionKeys).where(eq(assertionKeys.kid, oldKid));
    expect(rows).toEqual([]);
  });

  test("the periodic pass rotates once the newest key is older than SESSION_ASSERTION_KEY_ROTATION_HOURS", async () => {
    const srv = await startTestServer({ DEV_IDP_URL: (await devIdp()).url, SESSION_ASSERTION_KEY_ROTATION_HOURS: "1" });
    const kids = async () =>
      ((await (await fetch(jwksUrl(srv))).json()) as { keys: { kid: string }[] }).keys.map((k) => k.kid);
    const before = await kids();
    await srv.services.assertions.maintain();
    expect(await kids()).toEqual(before);
    // Hours, not one: on a shared database an earlier test's key may have been made at a moved clock.
    srv.services.clock.advance(3 * 3_600_000 + 1000);
    await srv.services.assertions.maintain();
    await srv.services.assertions.maintain();
    // One new key (published ahead of use), not one per pass.
    expect((await kids()).filter((k) => !before.includes(k))).toHaveLength(1);
  });
});

test("after JWT_PRIVATE_KEY is replaced the service signs with a fresh key it can open; the old key stays published", async () => {
  const dir = tempDir();
  const idp = (await devIdp()).url;
  const pem = async () =>
    exportPKCS8((await generateKeyPair("EdDSA", { crv: "Ed25519", extractable: true })).privateKey);
  const port = String(freePort());
  const first = await startTestServer({ DEV_IDP_URL: idp, DATA_DIR: dir, PORT: port, JWT_PRIVATE_KEY: await pem() });
  const c = await newClient(first);
  const { token } = await fullLogin(first, c);
  const before = (await validate(first, c, token, { assertion: true })).body.assertion as string;
  await first.stop();

  // The same database (DATA_DIR, or the run's PostgreSQL), another keyring root.
  const second = await startTestServer({ DEV_IDP_URL: idp, DATA_DIR: dir, PORT: port, JWT_PRIVATE_KEY: await pem() });
  // Session tokens are keyed MACs of the old root too, so this one is still looked up by hash.
  const after = (await validate(second, c, token, { assertion: true })).body;
  expect(after.valid).toBe(true);
  expect(decodeProtectedHeader(after.assertion).kid).not.toBe(decodeProtectedHeader(before).kid);
  await verify(second, after.assertion, c);
  await verify(second, before, c);
  // Asking again signs no further key: it uses the one it made.
  const again = await validate(second, c, (await fullLogin(second, c)).token, { assertion: true });
  expect(decodeProtectedHeader(again.body.assertion).kid).toBe(decodeProtectedHeader(after.assertion).kid);
});

describe.skipIf(!usingPostgres())("several instances on one PostgreSQL", () => {
  test("they publish the same JWKS, a rotation on one is published by the others, and each verifies the others' assertions", async () => {
    // Instances share the keyring root (one DATA_DIR here, JWT_PRIVATE_KEY in production).
    const common = { DEV_IDP_URL: (await devIdp()).url, DATA_DIR: tempDir() };
    const [a, b] = [await startTestServer(common), await startTestServer(common)];
    const jwksOf = async (srv: RunningServer) => (await fetch(jwksUrl(srv))).json();
    expect(await jwksOf(b)).toEqual(await jwksOf(a));
    const kid = await a.services.assertions.rotate();
    const deadline = Date.now() + 2000;
    while (!JSON.stringify(await jwksOf(b)).includes(kid) && Date.now() < deadline) await Bun.sleep(50);
    expect(await jwksOf(b)).toEqual(await jwksOf(a));

    const c = await newClient(a);
    const { token } = await fullLogin(a, c);
    const jwt = (await validate(b, c, token, { assertion: true })).body.assertion as string;
    // Signed by b, verified against a's JWKS (the issuer is b's PUBLIC_URL).
    await jwtVerify(jwt, createRemoteJWKSet(jwksUrl(a)), { issuer: b.url, audience: c.clientId });
  });
});

test("SESSION_ASSERTION_TTL_SECONDS and SESSION_ASSERTION_KEY_ROTATION_HOURS are bounded; a bad value stops startup naming it", () => {
  expect(parseConfig({}).SESSION_ASSERTION_TTL_SECONDS).toBe(300);
  for (const bad of ["0", "3601", "1.5", "soon"])
    expect(() => parseConfig({ SESSION_ASSERTION_TTL_SECONDS: bad })).toThrow(/SESSION_ASSERTION_TTL_SECONDS/);
  for (const bad of ["0", "8761"])
    expect(() => parseConfig({ SESSION_ASSERTION_KEY_ROTATION_HOURS: bad })).toThrow(
      /SESSION_ASSERTION_KEY_ROTATION_HOURS/,
    );
});
