import { afterAll, describe, expect, test } from "bun:test";
import type { RunningServer } from "../src/app";
import { devIdpGrants } from "../src/db/schema";
import { startTestServer, tempDir, usingPostgres } from "./harness";
import { api } from "./helpers";
import { codeGrant, expectCodeRedeemed, hiddenFields, newClient, poll, start } from "./ms-auth-helpers";

/** `url` as the load balancer would send it to `target` instead. */
const via = (url: string, target: RunningServer) => {
  const u = new URL(url);
  u.port = String(target.port);
  return u.toString();
};

/**
 * The built-in development identity provider behind a load balancer: three instances on one
 * PostgreSQL database, sharing the signing key (one DATA_DIR) and the public address, and
 * each serving its own `/dev-idp` (no DEV_IDP_URL). The public address is a round-robin
 * balancer with no sticky sessions, so the chain's five calls to the provider land on
 * different instances.
 *
 * Before the provider signed its codes and tokens, each instance kept them in its own memory:
 * the code issued by B's form submit was unknown to whichever instance answered the token
 * request, the chain got invalid_grant, and the login ended denied / identity_error.
 *
 * The chain's calls go over HTTP here (DEV_IDP_CHAIN_IN_PROCESS=false), as they would to a real
 * provider; the last test runs the default, where each instance's chain calls its own provider
 * in process.
 */
describe.skipIf(!usingPostgres())("the built-in provider across instances", () => {
  const instances: RunningServer[] = [];
  let turn = 0;
  /** Which instances answered a provider call (by index), in order. */
  const providerHits: number[] = [];
  const balancer = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const i = turn++ % instances.length;
      const url = new URL(req.url);
      url.port = String(instances[i]!.port);
      if (url.pathname.startsWith("/dev-idp/")) providerHits.push(i);
      return fetch(url, {
        method: req.method,
        headers: req.headers,
        body: req.body ? await req.arrayBuffer() : undefined,
        redirect: "manual",
      });
    },
  });
  const publicUrl = `http://127.0.0.1:${balancer.port}`;

  afterAll(() => balancer.stop(true));

  async function startThree(extra: Record<string, string> = {}) {
    const common = {
      DATA_DIR: tempDir(),
      PUBLIC_URL: publicUrl,
      DEV_IDP_URL: undefined,
      DEV_IDP_CHAIN_IN_PROCESS: "false",
      ...extra,
    };
    instances.splice(0);
    for (let i = 0; i < 3; i++) instances.push(await startTestServer(common));
    return instances as [RunningServer, RunningServer, RunningServer];
  }

  /** Page from A, form posted to B, callback on C, consent on C; the chain goes through the balancer. */
  async function login(username: string, outcome: string) {
    const [a, b, c] = instances as [RunningServer, RunningServer, RunningServer];
    const client = await newClient(a);
    const started = await start(a, client);
    expect(started.auth_url.startsWith(`${publicUrl}/dev-idp/`)).toBe(true);
    const page = await fetch(via(started.auth_url, a));
    expect(page.status).toBe(200);
    const form = new URLSearchParams({ ...hiddenFields(await page.text()), username, outcome, action: "signin" });
    const submitted = await fetch(via(started.auth_url.split("?")[0]!, b), {
      method: "POST",
      body: form,
      redirect: "manual",
    });
    expect(submitted.status).toBe(302);
    providerHits.splice(0);
    const callback = await fetch(via(submitted.headers.get("location")!, c), { redirect: "manual" });
    const code = new URL(submitted.headers.get("location")!).searchParams.get("code")!;
    return { a, b, c, client, started, code, callback, html: await callback.text() };
  }

  /** Approves on `target` the consent page a callback answered; the status the redirect carries. */
  async function approveOn(target: { url: string }, callback: Response, html: string) {
    const cookie = callback.headers.get("set-cookie")!.split(";")[0]!;
    const approved = await fetch(`${target.url}/client/ms-auth/authorize`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", cookie },
      body: new URLSearchParams({ ...hiddenFields(html), decision: "approve" }),
      redirect: "manual",
    });
    return new URL(approved.headers.get("location")!).searchParams.get("status");
  }

  test("sign-in page on A, form on B, callback on C: authorized, and the session validates", async () => {
    await startThree();
    const { a, b, c, client, started, code, callback, html } = await login("Balanced", "success");
    expect(callback.status).toBe(200);
    // The five provider calls of the chain were spread over the instances.
    expect(providerHits).toHaveLength(5);
    expect(new Set(providerHits).size).toBe(3);
    expect(await approveOn(c, callback, html)).toBe("authorized");
    const polled = await poll(a, client, started.auth_request_id);
    expect(polled.body).toMatchObject({ status: "authorized", mc_username: "Balanced" });
    const valid = await api(b, "POST", "/client/ms-auth/session/validate", {
      body: {
        client_id: client.clientId,
        client_secret: client.secret,
        svc_session_token: polled.body.svc_session_token,
      },
    });
    expect(valid.body).toMatchObject({ valid: true, mc_username: "Balanced" });
    // Redeemed once through the balancer, the code is refused by every instance.
    for (const target of [a, b, c])
      await expectCodeRedeemed(via(`${publicUrl}/dev-idp/consumers/oauth2/v2.0/token`, target), code);
    // The redeemed code's mark is a row every instance reads, not an entry in one process (the
    // suite's other sign-ins on this database leave marks of their own: this code's is picked out).
    const marks = await a.services.database.db.select().from(devIdpGrants);
    expect(marks.filter((m) => m.key === `code:${codeGrant(code)}`)).toHaveLength(1);
  });

  test("flaky: the one 429 is remembered in the database, so the retry on another instance passes", async () => {
    // One retry only: had the instance that retries not known the 429 was served, it would answer 429 again.
    await startThree({ IDENTITY_RETRIES: "1" });
    const { callback, html } = await login("Flaky_lb", "flaky");
    expect(callback.status).toBe(200);
    expect(html).toContain("Flaky_lb");
    // token, xbl (429), xbl again on the next instance, xsts, login, profile
    expect(providerHits).toHaveLength(6);
    expect(providerHits[2]).not.toBe(providerHits[1]);
  });

  test("in process (the default): C's chain redeems the code B issued without a network call, once", async () => {
    const [a, , c] = await startThree({ DEV_IDP_CHAIN_IN_PROCESS: "true" });
    const { client, started, code, callback, html } = await login("InProc_lb", "success");
    expect(callback.status).toBe(200);
    expect(html).toContain("InProc_lb");
    expect(providerHits).toHaveLength(0);
    expect(await approveOn(c, callback, html)).toBe("authorized");
    expect((await poll(a, client, started.auth_request_id)).body).toMatchObject({
      status: "authorized",
      mc_username: "InProc_lb",
    });
    // The redemption was recorded in the shared database: no instance takes the code again.
    const again = await fetch(via(`${publicUrl}/dev-idp/consumers/oauth2/v2.0/token`, a), {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ grant_type: "authorization_code", code, client_id: "dev-client" }),
    });
    expect(await again.json()).toMatchObject({ error: "invalid_grant" });
  });
});
