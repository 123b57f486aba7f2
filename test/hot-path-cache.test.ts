import { describe, expect, test } from "bun:test";
import type { RunningServer } from "../src/app";
import { CLIENT_CACHE_TTL_MS } from "../src/clients/service";
import { SESSION_CACHE_TTL_MS } from "../src/ms-auth/service";
import { devIdp, sharedServer, startTestServer, tempDir, usingPostgres } from "./harness";
import { api, expectError } from "./helpers";
import { fullLogin, newClient, type TestClient } from "./ms-auth-helpers";

/**
 * The launcher's hot path keeps clients (secret hash + ms_auth module) and live sessions in
 * memory. A change made anywhere must reach every instance's cache through the bus: these
 * tests allow one second, a tenth of the caches' TTL, so only the notice can make them pass.
 */
const BOUND_MS = 1_000;

const validate = (srv: RunningServer, c: TestClient, token: string, secret = c.secret) =>
  api(srv, "POST", "/client/ms-auth/session/validate", {
    body: { client_id: c.clientId, client_secret: secret, svc_session_token: token },
  });
const startCall = (srv: RunningServer, c: TestClient, secret = c.secret) =>
  api(srv, "POST", "/client/ms-auth/start", { body: { client_id: c.clientId, client_secret: secret } });

/** Polls `check` on every server until each passes; the ms each took, or throws past `limitMs`. */
async function everywhere(servers: RunningServer[], check: (s: RunningServer) => Promise<boolean>, limitMs: number) {
  const began = performance.now();
  const pending = new Set(servers);
  while (pending.size) {
    for (const s of [...pending]) if (await check(s)) pending.delete(s);
    if (!pending.size) break;
    if (performance.now() - began > limitMs)
      throw new Error(`${pending.size} instance(s) still stale after ${limitMs} ms`);
    await Bun.sleep(20);
  }
  return performance.now() - began;
}

test("the stated bound is well under the caches' TTL, so the tests below prove the notices", () => {
  expect(BOUND_MS * 5).toBeLessThanOrEqual(Math.min(CLIENT_CACHE_TTL_MS, SESSION_CACHE_TTL_MS));
});

describe("caches on one instance", () => {
  test("a deleted team's client is refused at once with 401, though it was cached (no 500 on a gone row)", async () => {
    const srv = await sharedServer();
    const c = await newClient(srv);
    expect((await startCall(srv, c)).status).toBe(200);
    expect((await api(srv, "DELETE", `/teams/${c.teamId}`, { token: c.owner.token })).status).toBe(200);
    expectError(await startCall(srv, c), 401, "invalid_client");
  });

  test("ms_auth disabled: start answers 400 at once, though the client was cached", async () => {
    const srv = await sharedServer();
    const c = await newClient(srv);
    expect((await startCall(srv, c)).status).toBe(200);
    const disabled = await api(srv, "DELETE", `/client/apps/${c.clientId}/modules/ms-auth`, { token: c.owner.token });
    expect(disabled.status).toBe(200);
    expectError(await startCall(srv, c), 400, "bad_request");
  });
});

describe.skipIf(!usingPostgres())("caches on three instances sharing PostgreSQL", () => {
  let a: RunningServer, b: RunningServer, c: RunningServer;

  async function startThree() {
    const idp = await devIdp();
    const common = { DEV_IDP_URL: idp.url, DATA_DIR: tempDir() };
    a = await startTestServer(common);
    const pub = { ...common, PUBLIC_URL: `http://127.0.0.1:${a.port}` };
    b = await startTestServer(pub);
    c = await startTestServer(pub);
  }

  test(`a session revoked on one instance is refused by the other two within ${BOUND_MS} ms, though both had it cached`, async () => {
    await startThree();
    const client = await newClient(a);
    const { token } = await fullLogin(a, client, "Revoked");
    for (const srv of [b, c]) expect((await validate(srv, client, token)).body).toMatchObject({ valid: true });
    const revoked = await api(a, "POST", "/client/ms-auth/session/revoke", {
      body: { client_id: client.clientId, client_secret: client.secret, svc_session_token: token },
    });
    expect(revoked.status).toBe(200);
    expect((await validate(a, client, token)).body).toEqual({ valid: false });
    await everywhere([b, c], async (s) => (await validate(s, client, token)).body.valid === false, BOUND_MS);
  });

  test(`a rotated secret: the old one is refused by every instance within ${BOUND_MS} ms, the new one accepted`, async () => {
    const client = await newClient(a);
    for (const srv of [a, b, c]) expect((await startCall(srv, client)).status).toBe(200);
    const rotated = await api(b, "POST", `/client/apps/${client.clientId}/secret`, { token: client.owner.token });
    expect(rotated.status).toBe(200);
    await everywhere([a, b, c], async (s) => (await startCall(s, client)).status === 401, BOUND_MS);
    for (const srv of [a, b, c]) expect((await startCall(srv, client, rotated.body.client_secret)).status).toBe(200);
  });

  test(`ms_auth disabled, or the client deleted, on one instance: every instance refuses within ${BOUND_MS} ms`, async () => {
    const client = await newClient(a);
    for (const srv of [a, b, c]) expect((await startCall(srv, client)).status).toBe(200);
    const off = await api(c, "DELETE", `/client/apps/${client.clientId}/modules/ms-auth`, {
      token: client.owner.token,
    });
    expect(off.status).toBe(200);
    await everywhere([a, b, c], async (s) => (await startCall(s, client)).status === 400, BOUND_MS);

    const other = await newClient(a);
    for (const srv of [a, b, c]) expect((await startCall(srv, other)).status).toBe(200);
    expect((await api(c, "DELETE", `/teams/${other.teamId}`, { token: other.owner.token })).status).toBe(200);
    await everywhere([a, b, c], async (s) => (await startCall(s, other)).status === 401, BOUND_MS);
  });
});
