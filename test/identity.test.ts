import { hiddenFields } from "./shared";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash, createHmac, hkdfSync } from "node:crypto";
import { parseConfig } from "../src/config";
import { authorizeUrl, identityConfig, identityEndpoints, pkcePair, runChain } from "../src/identity/chain";
import {
  createDevProvider,
  DEV_IDP_OUTCOMES,
  type DevOutcome,
  inProcessTransport,
  MemoryGrantStore,
  startDevProvider,
} from "../src/identity/dev-provider";
import { Keyring } from "../src/lib/keyring";
import { offlineUuid } from "../src/identity/protocol";
import type { DenialCode, IdentityConfig } from "../src/identity/types";

/**
 * The identity chain against the development identity provider running as its own HTTP
 * server, driven the way a browser and the login service drive it: nothing is mocked.
 */

const REDIRECT_URI = "http://127.0.0.1:9/client/ms-auth/callback";

let idp: { url: string; stop(): Promise<void> };
let cfg: IdentityConfig;
const servers: { stop(force?: boolean): unknown }[] = [];

beforeAll(async () => {
  idp = await startDevProvider({ port: 0 });
  // Through identityEndpoints, so the DEV_IDP_URL derivation is what the whole suite runs on.
  const config = parseConfig({ NODE_ENV: "test", DEV_IDP_URL: idp.url });
  cfg = { ...identityConfig(config), timeoutMs: 2000, retries: 2 };
});

afterAll(async () => {
  for (const s of servers) await s.stop(true);
  await idp.stop();
});

interface SignIn {
  location: URL;
  verifier: string;
  state: string;
  code: string | null;
}

/** GET the sign-in page from the authorize URL, then submit its form as a browser would. */
async function signIn(
  username: string,
  outcome: DevOutcome | string,
  opts: { action?: "signin" | "cancel"; config?: IdentityConfig; redirectUri?: string } = {},
): Promise<SignIn> {
  const c = opts.config ?? cfg;
  const redirectUri = opts.redirectUri ?? REDIRECT_URI;
  const { verifier, challenge } = pkcePair();
  const state = `st-${crypto.randomUUID()}`;
  const page = await fetch(authorizeUrl(c, { redirectUri, state, codeChallenge: challenge }));
  expect(page.status).toBe(200);
  const form = new URLSearchParams({
    ...hiddenFields(await page.text()),
    username,
    outcome,
    action: opts.action ?? "signin",
  });
  const res = await fetch(c.endpoints.authorize, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: form.toString(),
    redirect: "manual",
  });
  expect(res.status).toBe(302);
  const location = new URL(res.headers.get("location")!);
  return { location, verifier, state, code: location.searchParams.get("code") };
}

async function signInAndRun(username: string, outcome: DevOutcome, config: IdentityConfig = cfg) {
  const s = await signIn(username, outcome, { config });
  expect(s.code).toBeString();
  return runChain(config, { code: s.code!, redirectUri: REDIRECT_URI, codeVerifier: s.verifier });
}

/** A throwaway upstream for behaviours the provider cannot be asked to show. */
function serve(fetchHandler: (req: Request) => Response | Promise<Response>) {
  const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: fetchHandler });
  servers.push(server);
  return `http://127.0.0.1:${server.port}`;
}

function withEndpoints(
  overrides: Partial<IdentityConfig["endpoints"]>,
  extra: Partial<IdentityConfig> = {},
): IdentityConfig {
  return { ...cfg, ...extra, endpoints: { ...cfg.endpoints, ...overrides } };
}

describe("offline UUIDs", () => {
  test("match the ids offline-mode Minecraft servers give (UUID v3 of OfflinePlayer:<name>)", () => {
    expect(offlineUuid("Notch")).toBe("b50ad385-829d-3141-a216-7e7d7539ba7f");
    expect(offlineUuid("notch")).not.toBe(offlineUuid("Notch"));
  });
});

describe("keyring MACs", () => {
  test("are HMAC-SHA256 under the HKDF-derived key, as node:crypto computes it: stored hashes of tokens stay valid", () => {
    const secret = "a service signing key";
    const key = Buffer.from(hkdfSync("sha256", secret, "mc-platform", "keyring v1", 32));
    const keyring = Keyring.fromSecret(secret);
    for (const parts of [[], ["11111111-2222-3333-4444-555555555555"], ["a", "b€\u0000c"], [""]]) {
      const h = createHmac("sha256", key).update("purpose");
      for (const p of parts) h.update("\0").update(p);
      const expected = h.digest("base64url");
      expect(keyring.mac("purpose", ...parts)).toBe(expected);
      expect(keyring.verify(expected, "purpose", ...parts)).toBe(true);
      expect(keyring.verify(expected, "other purpose", ...parts)).toBe(false);
    }
  });
});

describe("authorizeUrl and pkcePair", () => {
  test("authorizeUrl carries response_type, client, redirect, scope, state, PKCE S256 and select_account", () => {
    const url = new URL(
      authorizeUrl(cfg, { redirectUri: REDIRECT_URI, state: "s&t=1", codeChallenge: "c".repeat(43) }),
    );
    expect(url.origin + url.pathname).toBe(cfg.endpoints.authorize);
    expect(Object.fromEntries(url.searchParams)).toEqual({
      client_id: "dev-client",
      response_type: "code",
      redirect_uri: REDIRECT_URI,
      scope: "XboxLive.signin",
      state: "s&t=1",
      code_challenge: "c".repeat(43),
      code_challenge_method: "S256",
      prompt: "select_account",
    });
  });

  test("pkcePair gives a fresh 43-character verifier and its S256 challenge", () => {
    const a = pkcePair();
    const b = pkcePair();
    expect(a.verifier).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(a.challenge).toBe(createHash("sha256").update(a.verifier).digest("base64url"));
    expect(a.verifier).not.toBe(b.verifier);
  });
});

describe("identityEndpoints and identityConfig", () => {
  const paths = {
    authorize: "/consumers/oauth2/v2.0/authorize",
    token: "/consumers/oauth2/v2.0/token",
    xblAuth: "/user/authenticate",
    xstsAuth: "/xsts/authorize",
    mcLogin: "/authentication/login_with_xbox",
    mcProfile: "/minecraft/profile",
  };
  const under = (base: string) =>
    Object.fromEntries(Object.entries(paths).map(([k, p]) => [k, base + p])) as unknown as IdentityConfig["endpoints"];

  test("DEV_IDP_URL: all six endpoints derive from it, with the dev client id and no secret", () => {
    const config = parseConfig({
      NODE_ENV: "test",
      DEV_IDP_URL: "http://idp.test:4000/",
      MS_CLIENT_ID: "real",
      MS_CLIENT_SECRET: "shh",
      DEV_IDP_ENABLED: "false",
    });
    expect(identityEndpoints(config)).toEqual(under("http://idp.test:4000"));
    const ic = identityConfig(config);
    expect(ic.clientId).toBe("dev-client");
    expect(ic.clientSecret).toBeUndefined();
  });

  test("the built-in provider: endpoints under PUBLIC_URL/dev-idp", () => {
    const config = parseConfig({ NODE_ENV: "development", PUBLIC_URL: "https://play.example.test/" });
    expect(identityEndpoints(config)).toEqual(under("https://play.example.test/dev-idp"));
    expect(identityConfig(config).clientId).toBe("dev-client");
  });

  test("production: Microsoft, Xbox Live and Minecraft URLs, each overridable, with the app's credentials", () => {
    const config = parseConfig({
      NODE_ENV: "production",
      MS_CLIENT_ID: "azure-app-id",
      MS_CLIENT_SECRET: "azure-secret",
      MC_PROFILE_URL: "https://mc-proxy.example.test/minecraft/profile",
      IDENTITY_TIMEOUT_MS: "4000",
      IDENTITY_RETRIES: "3",
    });
    expect(identityEndpoints(config)).toEqual({
      authorize: "https://login.microsoftonline.com/consumers/oauth2/v2.0/authorize",
      token: "https://login.microsoftonline.com/consumers/oauth2/v2.0/token",
      xblAuth: "https://user.auth.xboxlive.com/user/authenticate",
      xstsAuth: "https://xsts.auth.xboxlive.com/xsts/authorize",
      mcLogin: "https://api.minecraftservices.com/authentication/login_with_xbox",
      mcProfile: "https://mc-proxy.example.test/minecraft/profile",
    });
    const ic = identityConfig(config);
    expect([ic.clientId, ic.clientSecret, ic.timeoutMs, ic.retries]).toEqual(["azure-app-id", "azure-secret", 4000, 3]);
  });
});

describe("the development provider's sign-in page", () => {
  test("shows the username input, every outcome, hidden PKCE/state fields and a strict CSP", async () => {
    const { challenge } = pkcePair();
    const res = await fetch(authorizeUrl(cfg, { redirectUri: REDIRECT_URI, state: "abc", codeChallenge: challenge }));
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toStartWith("text/html");
    const csp = res.headers.get("content-security-policy")!;
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("form-action 'self' http://127.0.0.1:9");
    const html = await res.text();
    expect(html).toMatch(/<input[^>]* name="username"/);
    expect(html).toMatch(/<select[^>]* name="outcome"/);
    for (const o of DEV_IDP_OUTCOMES) expect(html).toContain(`<option value="${o.value}"`);
    expect(html).toContain(">Sign in</button>");
    expect(html).toContain(">Cancel</button>");
    expect(html).not.toMatch(/<script|src=|href=/);
    expect(hiddenFields(html)).toEqual({
      client_id: "dev-client",
      redirect_uri: REDIRECT_URI,
      state: "abc",
      code_challenge: challenge,
      code_challenge_method: "S256",
    });
  });

  test("escapes what the request carries", async () => {
    const evil = `"><script>alert(1)</script>`;
    const res = await fetch(
      authorizeUrl(cfg, { redirectUri: REDIRECT_URI, state: evil, codeChallenge: pkcePair().challenge }),
    );
    const html = await res.text();
    expect(html).not.toContain("<script>");
    expect(hiddenFields(html).state).toBe(evil);
  });

  const bad: [string, (u: URL) => void][] = [
    ["a javascript: redirect_uri", (u) => u.searchParams.set("redirect_uri", "javascript:alert(1)")],
    ["a relative redirect_uri", (u) => u.searchParams.set("redirect_uri", "/client/ms-auth/callback")],
    ["a redirect_uri with a fragment", (u) => u.searchParams.set("redirect_uri", `${REDIRECT_URI}#x`)],
    ["no redirect_uri", (u) => u.searchParams.delete("redirect_uri")],
    ["code_challenge_method=plain", (u) => u.searchParams.set("code_challenge_method", "plain")],
    ["no code_challenge", (u) => u.searchParams.delete("code_challenge")],
    ["response_type=token", (u) => u.searchParams.set("response_type", "token")],
  ];
  for (const [name, change] of bad) {
    test(`answers 400 and never redirects for ${name}`, async () => {
      const url = new URL(
        authorizeUrl(cfg, { redirectUri: REDIRECT_URI, state: "s", codeChallenge: pkcePair().challenge }),
      );
      change(url);
      const res = await fetch(url, { redirect: "manual" });
      expect(res.status).toBe(400);
      expect(res.headers.get("location")).toBeNull();
      expect(await res.text()).toContain("Sign-in request refused");
    });
  }

  test("a submit with a tampered redirect_uri is refused the same way", async () => {
    const form = new URLSearchParams({
      client_id: "dev-client",
      redirect_uri: "javascript:alert(1)",
      state: "s",
      code_challenge: pkcePair().challenge,
      code_challenge_method: "S256",
      username: "Steve",
      outcome: "access_denied",
    });
    const res = await fetch(cfg.endpoints.authorize, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: form.toString(),
      redirect: "manual",
    });
    expect(res.status).toBe(400);
    expect(res.headers.get("location")).toBeNull();
  });

  test("an invalid player name shows the page again with the error, and no code", async () => {
    const { challenge } = pkcePair();
    const page = await fetch(authorizeUrl(cfg, { redirectUri: REDIRECT_URI, state: "s", codeChallenge: challenge }));
    const form = new URLSearchParams({
      ...hiddenFields(await page.text()),
      username: "no spaces!",
      outcome: "success",
      action: "signin",
    });
    const res = await fetch(cfg.endpoints.authorize, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: form.toString(),
      redirect: "manual",
    });
    expect(res.status).toBe(400);
    expect(res.headers.get("location")).toBeNull();
    const html = await res.text();
    expect(html).toContain("3 to 16 letters");
    expect(html).toMatch(/<input[^>]* name="username"/);
  });

  test("a form body over 16 KiB gets 413, a JSON body 415", async () => {
    const big = await fetch(cfg.endpoints.authorize, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: `username=${"a".repeat(17 * 1024)}`,
    });
    expect(big.status).toBe(413);
    const asJson = await fetch(cfg.endpoints.authorize, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expect(asJson.status).toBe(415);
  });
});

describe("sign-in and the chain", () => {
  test("success: the redirect returns code and state, and the chain yields the player's offline UUID and name", async () => {
    const s = await signIn("Alex_42", "success");
    expect(s.location.origin + s.location.pathname).toBe(REDIRECT_URI);
    expect(s.location.searchParams.get("state")).toBe(s.state);
    expect(s.code).toBeString();
    const result = await runChain(cfg, { code: s.code!, redirectUri: REDIRECT_URI, codeVerifier: s.verifier });
    expect(result).toMatchObject({ ok: true, profile: { id: offlineUuid("Alex_42"), name: "Alex_42" } });
    if (result.ok)
      expect(result.profile.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-3[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  const denials: [DevOutcome, DenialCode, string][] = [
    ["no_xbox_profile", "no_xbox_profile", "2148916233"],
    ["region_not_allowed", "region_not_allowed", "2148916235"],
    ["age_verification_required", "age_verification_required", "2148916236"],
    ["age_verification_required_2148916237", "age_verification_required", "2148916237"],
    ["child_account", "child_account", "2148916238"],
    ["account_banned", "account_banned", "2148916227"],
  ];
  for (const [outcome, code, xerr] of denials) {
    test(`outcome ${outcome} (XSTS XErr ${xerr}) is denied with ${code}`, async () => {
      expect(await signInAndRun("Steve", outcome)).toEqual({ ok: false, error: code, detail: `xsts: XErr ${xerr}` });
    });
  }

  test("no_minecraft_profile: the profile 404 becomes no_minecraft_profile", async () => {
    const result = await signInAndRun("Steve", "no_minecraft_profile");
    expect(result).toMatchObject({ ok: false, error: "no_minecraft_profile" });
  });

  test("flaky: one 429 from Xbox Live is retried and the sign-in succeeds", async () => {
    expect(await signInAndRun("Flaky_1", "flaky")).toMatchObject({
      ok: true,
      profile: { id: offlineUuid("Flaky_1"), name: "Flaky_1" },
    });
  });

  test("flaky without retries fails, which shows the 429 really happens", async () => {
    const result = await signInAndRun("Flaky_2", "flaky", { ...cfg, retries: 0 });
    expect(result).toEqual({ ok: false, error: "upstream_unavailable", detail: "xbox live: HTTP 429 (1 attempt)" });
  });

  test("upstream_unavailable: a 503 on every Xbox call gives upstream_unavailable after the retries", async () => {
    const result = await signInAndRun("Steve", "upstream_unavailable");
    expect(result).toEqual({ ok: false, error: "upstream_unavailable", detail: "xbox live: HTTP 503 (3 attempts)" });
  });

  test("access_denied: the provider redirects back with error=access_denied and the state, no code", async () => {
    for (const s of [await signIn("Steve", "access_denied"), await signIn("Steve", "success", { action: "cancel" })]) {
      expect(s.location.origin + s.location.pathname).toBe(REDIRECT_URI);
      expect(s.location.searchParams.get("error")).toBe("access_denied");
      expect(s.location.searchParams.get("error_description")).toBeString();
      expect(s.location.searchParams.get("state")).toBe(s.state);
      expect(s.code).toBeNull();
    }
  });

  test("a code works once: reusing it is identity_error (invalid_grant), and the detail holds no token", async () => {
    const s = await signIn("Steve", "success");
    const p = { code: s.code!, redirectUri: REDIRECT_URI, codeVerifier: s.verifier };
    expect((await runChain(cfg, p)).ok).toBe(true);
    const again = await runChain(cfg, p);
    expect(again).toEqual({ ok: false, error: "identity_error", detail: "microsoft token: HTTP 400 invalid_grant" });
  });

  test("a wrong code_verifier is identity_error", async () => {
    const s = await signIn("Steve", "success");
    const result = await runChain(cfg, { code: s.code!, redirectUri: REDIRECT_URI, codeVerifier: pkcePair().verifier });
    expect(result).toEqual({ ok: false, error: "identity_error", detail: "microsoft token: HTTP 400 invalid_grant" });
  });

  test("a redirect_uri other than the authorize request's is identity_error", async () => {
    const s = await signIn("Steve", "success");
    const result = await runChain(cfg, { code: s.code!, redirectUri: `${REDIRECT_URI}?x=1`, codeVerifier: s.verifier });
    expect(result).toMatchObject({ ok: false, error: "identity_error" });
  });

  test("later steps refuse tokens they did not issue", async () => {
    const xbl = await fetch(cfg.endpoints.xblAuth, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        Properties: { AuthMethod: "RPS", SiteName: "user.auth.xboxlive.com", RpsTicket: "d=forged" },
        RelyingParty: "http://auth.xboxlive.com",
        TokenType: "JWT",
      }),
    });
    expect(xbl.status).toBe(401);
    const profile = await fetch(cfg.endpoints.mcProfile, { headers: { authorization: "Bearer forged" } });
    expect(profile.status).toBe(401);
  });
});

describe("the provider mounted in-process under /dev-idp", () => {
  test("serves the whole chain at PUBLIC_URL/dev-idp, the built-in derivation", async () => {
    const provider = createDevProvider({
      basePath: "/dev-idp",
      keyring: Keyring.fromSecret("mounted"),
      store: new MemoryGrantStore(),
    });
    const url = serve((req) => provider.fetch(req));
    const config = {
      ...identityConfig(parseConfig({ NODE_ENV: "development", PUBLIC_URL: url })),
      timeoutMs: 2000,
      retries: 1,
    };
    expect(await signInAndRun("Mounted", "success", config)).toMatchObject({
      ok: true,
      profile: { id: offlineUuid("Mounted"), name: "Mounted" },
    });
    expect((await fetch(`${url}/consumers/oauth2/v2.0/token`, { method: "POST" })).status).toBe(404);
  });
});

describe("the in-process transport (the chain of a service that serves the provider itself)", () => {
  const mounted = () =>
    createDevProvider({
      basePath: "/dev-idp",
      keyring: Keyring.fromSecret("in-process"),
      store: new MemoryGrantStore(),
    });

  test("runs the same chain with no socket: it succeeds after the provider's listener has stopped", async () => {
    const provider = mounted();
    const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (req) => provider.fetch(req) });
    const url = `http://127.0.0.1:${server.port}`;
    const base = identityConfig(parseConfig({ NODE_ENV: "development", PUBLIC_URL: url }));
    const config = { ...base, timeoutMs: 2000, retries: 1, transport: inProcessTransport(provider, `${url}/dev-idp`) };
    // The browser's part goes over HTTP, as a browser's does; then the listener is gone.
    const s = await signIn("InProcess", "success", { config });
    await server.stop(true);
    expect(await fetch(config.endpoints.token, { method: "POST" }).catch(() => "refused")).toBe("refused");
    expect(
      await runChain(config, { code: s.code!, redirectUri: REDIRECT_URI, codeVerifier: s.verifier }),
    ).toMatchObject({
      ok: true,
      profile: { id: offlineUuid("InProcess"), name: "InProcess" },
    });
    // The provider's own rules hold on this path too: the code was redeemed once.
    expect(await runChain(config, { code: s.code!, redirectUri: REDIRECT_URI, codeVerifier: s.verifier })).toEqual({
      ok: false,
      error: "identity_error",
      detail: "microsoft token: HTTP 400 invalid_grant",
    });
  });

  test("a provider that never answers times out per attempt, as over the network", async () => {
    let calls = 0;
    const stuck = {
      fetch: () => {
        calls++;
        return new Promise<Response>(() => {});
      },
    };
    const url = "http://127.0.0.1:9";
    const config = {
      ...identityConfig(parseConfig({ NODE_ENV: "development", PUBLIC_URL: url })),
      timeoutMs: 200,
      retries: 1,
      transport: inProcessTransport(stuck, `${url}/dev-idp`),
    };
    expect(await runChain(config, { code: "c", redirectUri: REDIRECT_URI, codeVerifier: "v" })).toEqual({
      ok: false,
      error: "upstream_unavailable",
      detail: "microsoft token: timed out after 200 ms (2 attempts)",
    });
    expect(calls).toBe(2);
  });
});

describe("the provider keeps no sign-in state of its own", () => {
  /** Two providers as two instances behind a balancer: one key, one store, nothing else shared. */
  function pair(opts: { otherKey?: boolean } = {}) {
    const store = new MemoryGrantStore();
    const make = (secret: string) =>
      createDevProvider({ basePath: "/dev-idp", keyring: Keyring.fromSecret(secret), store });
    const first = make("shared");
    const second = make(opts.otherKey ? "another" : "shared");
    const configFor = (p: { fetch(req: Request): Promise<Response> }) => ({
      ...identityConfig(parseConfig({ NODE_ENV: "development", PUBLIC_URL: serve((req) => p.fetch(req)) })),
      timeoutMs: 2000,
      retries: 1,
    });
    return { a: configFor(first), b: configFor(second) };
  }

  test("a code issued by one provider is redeemed, once, through another sharing the key and store", async () => {
    const { a, b } = pair();
    const s = await signIn("Roaming", "success", { config: a });
    const p = { code: s.code!, redirectUri: REDIRECT_URI, codeVerifier: s.verifier };
    expect(await runChain(b, p)).toMatchObject({ ok: true, profile: { id: offlineUuid("Roaming"), name: "Roaming" } });
    expect(await runChain(a, p)).toEqual({
      ok: false,
      error: "identity_error",
      detail: "microsoft token: HTTP 400 invalid_grant",
    });
  });

  test("flaky: the one 429 served by one provider is known to the other, which answers 200", async () => {
    const { a, b } = pair();
    const s = await signIn("Flaky_3", "flaky", { config: a });
    const redeemed = await fetch(b.endpoints.token, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "authorization_code",
        code: s.code!,
        redirect_uri: REDIRECT_URI,
        client_id: "dev-client",
        code_verifier: s.verifier,
      }),
    });
    expect(redeemed.status).toBe(200);
    const { access_token } = (await redeemed.json()) as { access_token: string };
    const xbl = (c: IdentityConfig) =>
      fetch(c.endpoints.xblAuth, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          Properties: { AuthMethod: "RPS", SiteName: "user.auth.xboxlive.com", RpsTicket: `d=${access_token}` },
          RelyingParty: "http://auth.xboxlive.com",
          TokenType: "JWT",
        }),
      });
    expect((await xbl(a)).status).toBe(429);
    expect((await xbl(b)).status).toBe(200);
    expect((await xbl(a)).status).toBe(200);
  });

  test("a provider with another key refuses the code and every token", async () => {
    const { a, b } = pair({ otherKey: true });
    const s = await signIn("Stranger", "success", { config: a });
    expect(await runChain(b, { code: s.code!, redirectUri: REDIRECT_URI, codeVerifier: s.verifier })).toEqual({
      ok: false,
      error: "identity_error",
      detail: "microsoft token: HTTP 400 invalid_grant",
    });
  });

  test("a token altered after signing is refused", async () => {
    const s = await signIn("Tamper", "success");
    const [body, mac] = s.code!.slice("dev_code_".length).split(".");
    const claims = JSON.parse(Buffer.from(body!, "base64url").toString());
    const forged = `dev_code_${Buffer.from(JSON.stringify({ ...claims, u: "Notch" })).toString("base64url")}.${mac}`;
    const result = await runChain(cfg, { code: forged, redirectUri: REDIRECT_URI, codeVerifier: s.verifier });
    expect(result).toEqual({ ok: false, error: "identity_error", detail: "microsoft token: HTTP 400 invalid_grant" });
  });

  test("the standalone store's memory is bounded: full of live marks it refuses (fails closed), expired ones make room", async () => {
    let now = 1_000;
    const store = new MemoryGrantStore(3, () => now);
    for (const k of ["a", "b", "c"]) expect(await store.claim(k, 2_000)).toBe(true);
    expect(await store.claim("a", 2_000)).toBe(false);
    expect(await store.claim("d", 2_000)).toBe(false);
    expect(store.size).toBe(3);
    now = 2_000;
    expect(await store.claim("d", 3_000)).toBe(true);
    expect(store.size).toBe(1);
  });

  test("the memory store drops expired marks as claims come, not only at its cap, and a live mark still refuses", async () => {
    let now = 0;
    const store = new MemoryGrantStore(1_000, () => now);
    for (let i = 0; i < 100; i++) {
      now = i * 10;
      expect(await store.claim(`code:${i}`, now + 50)).toBe(true);
    }
    // Marks made at 940..990 live past 990; the 95 before them are gone.
    expect(store.size).toBe(5);
    expect(await store.claim("code:99", now + 50)).toBe(false);
    expect(await store.claim("code:0", now + 50)).toBe(true);
  });
});

describe("upstream failures", () => {
  test("a closed port gives upstream_unavailable within a bounded time", async () => {
    const probe = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
    const closed = `http://127.0.0.1:${probe.port}/token`;
    await probe.stop(true);
    const started = performance.now();
    const result = await runChain(withEndpoints({ token: closed }, { timeoutMs: 500, retries: 2 }), {
      code: "c",
      redirectUri: REDIRECT_URI,
      codeVerifier: "v",
    });
    expect(performance.now() - started).toBeLessThan(3000);
    expect(result).toEqual({
      ok: false,
      error: "upstream_unavailable",
      detail: "microsoft token: network error (3 attempts)",
    });
  });

  test("an upstream that never answers times out per attempt and gives upstream_unavailable", async () => {
    let calls = 0;
    const url = serve(() => {
      calls++;
      return new Promise<Response>(() => {});
    });
    const started = performance.now();
    const result = await runChain(withEndpoints({ token: url }, { timeoutMs: 200, retries: 1 }), {
      code: "c",
      redirectUri: REDIRECT_URI,
      codeVerifier: "v",
    });
    expect(performance.now() - started).toBeLessThan(2000);
    expect(result).toEqual({
      ok: false,
      error: "upstream_unavailable",
      detail: "microsoft token: timed out after 200 ms (2 attempts)",
    });
    expect(calls).toBe(2);
  });

  test("a 200 that is not JSON, or lacks the token, is identity_error", async () => {
    const garbage = serve(() => new Response("<html>oops</html>", { headers: { "content-type": "text/html" } }));
    const r1 = await runChain(withEndpoints({ token: garbage }), {
      code: "c",
      redirectUri: REDIRECT_URI,
      codeVerifier: "v",
    });
    expect(r1).toEqual({
      ok: false,
      error: "identity_error",
      detail: "microsoft token: HTTP 200 with a body that is not JSON",
    });
    const empty = serve(() => Response.json({ token_type: "Bearer" }));
    const r2 = await runChain(withEndpoints({ token: empty }), {
      code: "c",
      redirectUri: REDIRECT_URI,
      codeVerifier: "v",
    });
    expect(r2).toEqual({ ok: false, error: "identity_error", detail: "microsoft token: unexpected response shape" });
  });

  test("a profile id that is not a UUID is identity_error; a dashless one is normalised", async () => {
    const weird = serve(() => Response.json({ id: "not-a-uuid", name: "Steve" }));
    const s1 = await signIn("Steve", "success");
    const r1 = await runChain(withEndpoints({ mcProfile: weird }), {
      code: s1.code!,
      redirectUri: REDIRECT_URI,
      codeVerifier: s1.verifier,
    });
    expect(r1).toEqual({ ok: false, error: "identity_error", detail: "minecraft profile: id is not a UUID" });
    const upper = serve(() => Response.json({ id: "069A79F444E94726A5BEFCA90E38AAF5", name: "Notch" }));
    const s2 = await signIn("Steve", "success");
    const r2 = await runChain(withEndpoints({ mcProfile: upper }), {
      code: s2.code!,
      redirectUri: REDIRECT_URI,
      codeVerifier: s2.verifier,
    });
    expect(r2).toMatchObject({ ok: true, profile: { id: "069a79f4-44e9-4726-a5be-fca90e38aaf5", name: "Notch" } });
  });
});

describe("what the chain sends", () => {
  test("each step's request has the documented shape, and the client secret goes only to the token endpoint", async () => {
    const seen: Record<string, { headers: Headers; body: string }> = {};
    const xbox = (token: string) =>
      Response.json({ IssueInstant: "", NotAfter: "", Token: token, DisplayClaims: { xui: [{ uhs: "uhs123" }] } });
    const answers: Record<string, () => Response> = {
      "/token": () => Response.json({ token_type: "Bearer", access_token: "MS-AT", expires_in: 3600 }),
      "/xbl": () => xbox("XBL-T"),
      "/xsts": () => xbox("XSTS-T"),
      "/login": () => Response.json({ access_token: "MC-AT", token_type: "Bearer" }),
      "/profile": () => Response.json({ id: "069a79f444e94726a5befca90e38aaf5", name: "Notch" }),
    };
    const base = serve(async (req) => {
      const path = new URL(req.url).pathname;
      seen[path] = { headers: req.headers, body: await req.text() };
      return answers[path]!();
    });
    const upstream = withEndpoints(
      {
        token: `${base}/token`,
        xblAuth: `${base}/xbl`,
        xstsAuth: `${base}/xsts`,
        mcLogin: `${base}/login`,
        mcProfile: `${base}/profile`,
      },
      { clientId: "app-id", clientSecret: "app-secret" },
    );
    const result = await runChain(upstream, {
      code: "the-code",
      redirectUri: REDIRECT_URI,
      codeVerifier: "the-verifier",
    });
    expect(result).toMatchObject({ ok: true, profile: { id: "069a79f4-44e9-4726-a5be-fca90e38aaf5", name: "Notch" } });

    expect(seen["/token"]!.headers.get("content-type")).toBe("application/x-www-form-urlencoded");
    expect(Object.fromEntries(new URLSearchParams(seen["/token"]!.body))).toEqual({
      grant_type: "authorization_code",
      code: "the-code",
      redirect_uri: REDIRECT_URI,
      client_id: "app-id",
      client_secret: "app-secret",
      code_verifier: "the-verifier",
      scope: "XboxLive.signin",
    });
    expect(seen["/xbl"]!.headers.get("x-xbl-contract-version")).toBe("1");
    expect(JSON.parse(seen["/xbl"]!.body)).toEqual({
      Properties: { AuthMethod: "RPS", SiteName: "user.auth.xboxlive.com", RpsTicket: "d=MS-AT" },
      RelyingParty: "http://auth.xboxlive.com",
      TokenType: "JWT",
    });
    expect(JSON.parse(seen["/xsts"]!.body)).toEqual({
      Properties: { SandboxId: "RETAIL", UserTokens: ["XBL-T"] },
      RelyingParty: "rp://api.minecraftservices.com/",
      TokenType: "JWT",
    });
    expect(JSON.parse(seen["/login"]!.body)).toEqual({ identityToken: "XBL3.0 x=uhs123;XSTS-T" });
    expect(seen["/profile"]!.headers.get("authorization")).toBe("Bearer MC-AT");
    for (const path of ["/xbl", "/xsts", "/login", "/profile"]) expect(seen[path]!.body).not.toContain("app-secret");
  });

  test("a 5xx is retried after a growing backoff, then the answer that is not retried is judged", async () => {
    const at: number[] = [];
    const url = serve(() => {
      at.push(performance.now());
      return at.length <= 2
        ? new Response(null, { status: 503 })
        : Response.json({ error: "invalid_grant" }, { status: 400 });
    });
    const result = await runChain(withEndpoints({ token: url }, { retries: 3 }), {
      code: "c",
      redirectUri: REDIRECT_URI,
      codeVerifier: "v",
    });
    expect(result).toEqual({ ok: false, error: "identity_error", detail: "microsoft token: HTTP 400 invalid_grant" });
    expect(at).toHaveLength(3);
    // Backoff 100-200 ms, then 200-400 ms.
    expect(at[1]! - at[0]!).toBeGreaterThanOrEqual(90);
    expect(at[2]! - at[1]!).toBeGreaterThanOrEqual(190);
    expect(at[2]! - at[0]!).toBeLessThan(1000);
  });

  test("a 429 is retried after its Retry-After", async () => {
    let calls = 0;
    const url = serve(() =>
      ++calls === 1
        ? new Response(null, { status: 429, headers: { "retry-after": "1" } })
        : Response.json({ error: "invalid_grant" }, { status: 400 }),
    );
    const started = performance.now();
    const result = await runChain(withEndpoints({ token: url }, { retries: 1 }), {
      code: "c",
      redirectUri: REDIRECT_URI,
      codeVerifier: "v",
    });
    expect(performance.now() - started).toBeGreaterThanOrEqual(950);
    expect(calls).toBe(2);
    expect(result).toEqual({ ok: false, error: "identity_error", detail: "microsoft token: HTTP 400 invalid_grant" });
  });
});
