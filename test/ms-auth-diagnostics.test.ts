import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { resolve } from "node:path";
import type { RunningServer } from "../src/app";
import { identityConfig, runChain } from "../src/identity/chain";
import { startDevProvider } from "../src/identity/dev-provider";
import { DEV_IDP_PATHS } from "../src/identity/protocol";
import { loadConfig } from "../src/config";
import { sharedServer, startTestServer, stopTestServer } from "./harness";
import { addMember, api, expectError, newUser } from "./helpers";
import { decide, newClient, poll, signIn, start, type TestClient } from "./ms-auth-helpers";

const ROOT = resolve(import.meta.dir, "..");
let server: RunningServer;
let client: TestClient;
/** A development provider standing in for a Microsoft app whose secret "lapsed-secret" has expired. */
let idp: { url: string; stop(): Promise<void> };

beforeAll(async () => {
  server = await sharedServer();
  client = await newClient(server);
  idp = await startDevProvider({ port: 0, expiredSecrets: ["lapsed-secret"] });
});
afterAll(async () => {
  await idp.stop();
});

/** The MS_* variables that make `idp` the service's "Microsoft app". */
const microsoftApp = (secret: string | undefined, extra: Record<string, string | undefined> = {}) => ({
  DEV_IDP_URL: undefined,
  DEV_IDP_ENABLED: "false",
  MS_CLIENT_ID: "00000000-0000-0000-0000-00000000c0de",
  MS_CLIENT_SECRET: secret,
  MS_AUTHORIZE_URL: idp.url + DEV_IDP_PATHS.authorize,
  MS_TOKEN_URL: idp.url + DEV_IDP_PATHS.token,
  XBL_AUTH_URL: idp.url + DEV_IDP_PATHS.xblAuth,
  XSTS_AUTH_URL: idp.url + DEV_IDP_PATHS.xstsAuth,
  MC_LOGIN_URL: idp.url + DEV_IDP_PATHS.mcLogin,
  MC_PROFILE_URL: idp.url + DEV_IDP_PATHS.mcProfile,
  IDENTITY_RETRIES: "0",
  ...extra,
});

async function signInWith(srv: RunningServer, c: TestClient, outcome: string, username = "Diag_1") {
  const started = await start(srv, c);
  const s = await signIn(srv, started.auth_url, { username, outcome });
  return { started, s };
}

const diagnostics = (srv: RunningServer, token: string | undefined, query: string) =>
  api(srv, "GET", `/client/ms-auth/diagnostics?${query}`, { token });

const check = (body: { checks: { id: string }[] }, id: string) => body.checks.find((c) => c.id === id);

describe("distinct denial codes, driven through the development provider", () => {
  test("an app Mojang has not approved (403 from login_with_xbox) ends as minecraft_api_not_approved", async () => {
    const { started, s } = await signInWith(server, client, "minecraft_api_not_approved");
    expect(s.callback.status).toBe(303);
    const back = new URL(s.callback.headers.get("location")!);
    expect(back.searchParams.get("error")).toBe("minecraft_api_not_approved");
    expect((await poll(server, client, started.auth_request_id)).body).toEqual({
      status: "denied",
      error: "minecraft_api_not_approved",
    });
  });

  test("an expired client secret (AADSTS7000222) ends as client_secret_expired", async () => {
    const { started, s } = await signInWith(server, client, "client_secret_expired");
    expect(s.callback.status).toBe(303);
    expect((await poll(server, client, started.auth_request_id)).body).toEqual({
      status: "denied",
      error: "client_secret_expired",
    });
  });

  test("the chain names AADSTS7000222 in its detail, never the secret", async () => {
    const cfg = identityConfig(loadConfig(microsoftApp("lapsed-secret")));
    const result = await runChain(cfg, { code: "dev_code_x.y", redirectUri: "http://127.0.0.1/cb", codeVerifier: "v" });
    expect(result).toEqual({
      ok: false,
      error: "client_secret_expired",
      detail: "microsoft token: HTTP 401 AADSTS7000222",
    });
  });
});

describe("GET /client/ms-auth/diagnostics", () => {
  test("for the development provider: what is in use, the redirect URI, the probe, the approval explained", async () => {
    const c = await newClient(server);
    const res = await diagnostics(server, c.owner.token, `client_id=${c.clientId}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      client_id: c.clientId,
      identity_provider: "development",
      redirect_uri: `${server.url}/client/ms-auth/callback`,
      status: "info",
    });
    expect(res.body.checks.map((x: { id: string }) => x.id)).toEqual([
      "identity_provider",
      "redirect_uri",
      "token_endpoint",
      "minecraft_api_access",
      "ms_auth_module",
    ]);
    expect(check(res.body, "token_endpoint")).toMatchObject({ status: "ok" });
    expect(check(res.body, "minecraft_api_access")).toMatchObject({
      status: "info",
      action: expect.stringContaining("https://aka.ms/mce-reviewappid"),
    });
    expect(check(res.body, "ms_auth_module")).toMatchObject({ status: "ok" });
    // Without the probe there is no token_endpoint check.
    const noProbe = await diagnostics(server, c.owner.token, `client_id=${c.clientId}&probe=false`);
    expect(check(noProbe.body, "token_endpoint")).toBeUndefined();
  });

  test("the client's sign-ins decide the approval check: refused after a 403, ok once one passes", async () => {
    const c = await newClient(server);
    await signInWith(server, c, "minecraft_api_not_approved");
    const refused = await diagnostics(server, c.owner.token, `client_id=${c.clientId}&probe=false`);
    expect(refused.body.status).toBe("error");
    expect(check(refused.body, "minecraft_api_access")).toMatchObject({
      status: "error",
      summary: expect.stringContaining("refused as not approved (1 in the last 30 days"),
    });
    const { s } = await signInWith(server, c, "success", "Approved_1");
    expect((await decide(server, s, "approve")).status).toBe(303);
    const passed = await diagnostics(server, c.owner.token, `client_id=${c.clientId}&probe=false`);
    expect(check(passed.body, "minecraft_api_access")).toMatchObject({ status: "ok" });
  });

  test("only the owner of the client's team: 401 without a token, 403 for an admin, 404 for an outsider", async () => {
    const c = await newClient(server);
    const admin = await newUser(server, "diagadmin");
    await addMember(server, c.owner, c.teamId, admin, "admin");
    const outsider = await newUser(server, "diagout");
    expectError(await diagnostics(server, undefined, `client_id=${c.clientId}`), 401);
    expectError(await diagnostics(server, admin.token, `client_id=${c.clientId}`), 403);
    expectError(await diagnostics(server, outsider.token, `client_id=${c.clientId}`), 404);
    expectError(await diagnostics(server, c.owner.token, `client_id=${crypto.randomUUID()}`), 404);
    expectError(await diagnostics(server, c.owner.token, "client_id=nope"), 400);
    expectError(await diagnostics(server, c.owner.token, `client_id=${c.clientId}&probe=maybe`), 400);
  });

  test("a Microsoft app with an expired secret: the probe names AADSTS7000222, the date says expired, sign-ins end client_secret_expired", async () => {
    const srv = await startTestServer(microsoftApp("lapsed-secret", { MS_CLIENT_SECRET_EXPIRES_AT: "2020-01-31" }));
    try {
      const c = await newClient(srv);
      const res = await diagnostics(srv, c.owner.token, `client_id=${c.clientId}`);
      expect(res.body).toMatchObject({ identity_provider: "microsoft", status: "error" });
      expect(check(res.body, "client_secret")).toMatchObject({ status: "ok" });
      expect(check(res.body, "client_secret_expiry")).toMatchObject({
        status: "error",
        summary: expect.stringContaining("expired on 2020-01-31"),
      });
      expect(check(res.body, "token_endpoint")).toMatchObject({
        status: "error",
        summary: expect.stringContaining("AADSTS7000222"),
        action: expect.stringContaining("New client secret"),
      });
      expect(JSON.stringify(res.body)).not.toContain("lapsed-secret");
      const { started } = await signInWith(srv, c, "success");
      expect((await poll(srv, c, started.auth_request_id)).body).toEqual({
        status: "denied",
        error: "client_secret_expired",
      });
    } finally {
      await stopTestServer(srv);
    }
  });

  test("a Microsoft app whose secret is accepted and expires soon, behind plain http on a public name", async () => {
    const soon = new Date(Date.now() + 10 * 86_400_000).toISOString();
    const srv = await startTestServer(
      microsoftApp("a-good-secret", { MS_CLIENT_SECRET_EXPIRES_AT: soon, PUBLIC_URL: "http://play.example.com" }),
    );
    try {
      const c = await newClient(srv);
      const res = await diagnostics(srv, c.owner.token, `client_id=${c.clientId}`);
      expect(check(res.body, "client_secret_expiry")).toMatchObject({ status: "warning" });
      expect(check(res.body, "token_endpoint")).toMatchObject({ status: "ok" });
      expect(check(res.body, "redirect_uri")).toMatchObject({
        status: "error",
        summary: expect.stringContaining("http://play.example.com/client/ms-auth/callback"),
      });
    } finally {
      await stopTestServer(srv);
    }
  });
});

describe("bun scripts/ms-auth-check.ts", () => {
  const run = async (env: Record<string, string | undefined>, ...args: string[]) => {
    const clean = Object.fromEntries(Object.entries({ ...process.env, ...env }).filter(([, v]) => v !== undefined));
    delete clean.DATABASE_URL;
    const p = Bun.spawn(["bun", "scripts/ms-auth-check.ts", ...args], {
      cwd: ROOT,
      env: clean as Record<string, string>,
      stdout: "pipe",
      stderr: "pipe",
    });
    const [out, err, code] = await Promise.all([
      new Response(p.stdout).text(),
      new Response(p.stderr).text(),
      p.exited,
    ]);
    return { out, err, code };
  };

  test("exits 1 and says what to do for an expired secret; 0 for a good one", async () => {
    const bad = await run(microsoftApp("lapsed-secret", { PUBLIC_URL: "https://play.example.com" }));
    expect(bad.code).toBe(1);
    expect(bad.out).toContain(
      "ERROR    token_endpoint: Microsoft refused the client secret as expired (AADSTS7000222)",
    );
    expect(bad.out).toContain("https://play.example.com/client/ms-auth/callback");
    expect(bad.out).not.toContain("lapsed-secret");
    const good = await run(microsoftApp("a-good-secret", { PUBLIC_URL: "https://play.example.com" }), "--json");
    expect(good.code).toBe(0);
    const report = JSON.parse(good.out);
    expect(report.checks.find((c: { id: string }) => c.id === "token_endpoint").status).toBe("ok");
    expect(report.redirect_uri).toBe("https://play.example.com/client/ms-auth/callback");
  });

  test("a configuration that does not parse exits 2 with the variable named", async () => {
    const r = await run({ MS_CLIENT_SECRET_EXPIRES_AT: "soon" });
    expect(r.code).toBe(2);
    expect(r.err).toContain("MS_CLIENT_SECRET_EXPIRES_AT: must be a date");
  });
});
