import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createRequire } from "node:module";
import { parseConfig } from "../src/config";
import { authorizeUrl, identityConfig, pkcePair, runChain } from "../src/identity/chain";
import { startDevProvider } from "../src/identity/dev-provider";
import { DEV_IDP_PATHS, offlineUuid } from "../src/identity/protocol";
import type { IdentityConfig } from "../src/identity/types";
import { hiddenFields } from "./shared";

/**
 * prismarine-auth 3.1.1, a client of the real Microsoft, Xbox Live and Minecraft endpoints
 * (mineflayer and node-minecraft-protocol sign in with it), driven against the development
 * provider: its own XboxTokenManager and MinecraftJavaTokenManager make every Xbox and
 * Minecraft request, with their own headers, bodies, request signing and error handling.
 *
 * How it is pointed at the provider: its endpoint URLs are not options, they are fields of the
 * `Endpoints` object its modules share (src/common/Constants.js); the test sets those fields to
 * the provider's loopback URLs and restores them afterwards. No file of the package is changed.
 * The one step it cannot be pointed at is the Microsoft sign-in itself: it uses msal-node's
 * device-code flow against login.microsoftonline.com. The test signs in through the provider's
 * own authorize and token endpoints (as a browser and the service do) and hands prismarine-auth
 * that Microsoft access token through the token manager it asks for one. Every fetch is checked
 * to go to the loopback provider: anything else fails the test and is never sent.
 */

const require = createRequire(import.meta.url);
const { Authflow } = require("prismarine-auth") as typeof import("prismarine-auth");
const { Endpoints, xboxLiveErrors } = require("prismarine-auth/src/common/Constants") as {
  Endpoints: { xbox: Record<string, string>; minecraftJava: Record<string, string> };
  xboxLiveErrors: Record<number, string>;
};

const REDIRECT_URI = "http://127.0.0.1:9/callback";
/** The path of https://device.auth.xboxlive.com/device/authenticate, below the provider's base URL. */
const DEV_IDP_DEVICE_PATH = new URL(Endpoints.xbox.deviceAuth!).pathname;

let idp: { url: string; stop(): Promise<void> };
let cfg: IdentityConfig;
const originals = { xbox: { ...Endpoints.xbox }, minecraftJava: { ...Endpoints.minecraftJava } };
const realFetch = globalThis.fetch;
/** What prismarine-auth sent, in order: path and Content-Type. */
const seen: { path: string; contentType: string | null; status: number }[] = [];

beforeAll(async () => {
  idp = await startDevProvider({ port: 0, hostname: "127.0.0.1" });
  cfg = { ...identityConfig(parseConfig({ NODE_ENV: "test", DEV_IDP_URL: idp.url })), timeoutMs: 2000, retries: 0 };
  Object.assign(Endpoints.xbox, {
    userAuth: idp.url + DEV_IDP_PATHS.xblAuth,
    deviceAuth: idp.url + DEV_IDP_DEVICE_PATH,
    xstsAuthorize: idp.url + DEV_IDP_PATHS.xstsAuth,
  });
  Object.assign(Endpoints.minecraftJava, {
    loginWithXbox: idp.url + DEV_IDP_PATHS.mcLogin,
    profile: idp.url + DEV_IDP_PATHS.mcProfile,
  });
  const guarded = async (input: RequestInfo | URL, init?: RequestInit) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    if (url.origin !== new URL(idp.url).origin) throw new Error(`refused: a request to ${url.origin} left loopback`);
    const res = await realFetch(input, init);
    seen.push({ path: url.pathname, contentType: new Headers(init?.headers).get("content-type"), status: res.status });
    return res;
  };
  globalThis.fetch = Object.assign(guarded, { preconnect: realFetch.preconnect }) as typeof fetch;
});

afterAll(async () => {
  globalThis.fetch = realFetch;
  Object.assign(Endpoints.xbox, originals.xbox);
  Object.assign(Endpoints.minecraftJava, originals.minecraftJava);
  await idp.stop();
});

/** A Microsoft access token from the provider: its sign-in form, then the code for a token (PKCE). */
async function microsoftToken(username: string, outcome: string): Promise<string> {
  const { verifier, challenge } = pkcePair();
  const page = await fetch(authorizeUrl(cfg, { redirectUri: REDIRECT_URI, state: "s", codeChallenge: challenge }));
  const form = new URLSearchParams({ ...hiddenFields(await page.text()), username, outcome, action: "signin" });
  const submitted = await fetch(cfg.endpoints.authorize, { method: "POST", body: form, redirect: "manual" });
  const code = new URL(submitted.headers.get("location")!).searchParams.get("code")!;
  const res = await fetch(cfg.endpoints.token, {
    method: "POST",
    body: new URLSearchParams({
      grant_type: "authorization_code",
      client_id: cfg.clientId,
      code,
      redirect_uri: REDIRECT_URI,
      code_verifier: verifier,
    }),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { access_token: string }).access_token;
}

/** prismarine-auth's Authflow (msal flow, as for an Azure app) with an in-memory cache. */
function authflow(username: string, msToken: string) {
  const caches = new Map<string, Record<string, unknown>>();
  const cache = ({ cacheName }: { cacheName: string }) => ({
    reset: async () => caches.set(cacheName, {}),
    getCached: async () => caches.get(cacheName) ?? {},
    setCached: async (v: Record<string, unknown>) => caches.set(cacheName, v),
    setCachedPartial: async (v: Record<string, unknown>) => caches.set(cacheName, { ...caches.get(cacheName), ...v }),
  });
  const flow = new Authflow(username, cache as never, {
    flow: "msal",
    // For the msal flow this is an Azure app's client id, which the typings do not list.
    authTitle: "00000000-0000-0000-0000-000000000000" as never,
  });
  // The Microsoft step, already done above (see the file comment).
  (flow as unknown as { msa: unknown }).msa = {
    forceRefresh: false,
    verifyTokens: async () => true,
    getAccessToken: async () => ({ token: msToken }),
  };
  return flow;
}

const decodeJwt = (t: string) => JSON.parse(Buffer.from(t.split(".")[1]!, "base64url").toString("utf8"));

describe("prismarine-auth 3.1.1 against the development provider", () => {
  test("its Java chain signs in: device token first, XSTS with no Content-Type, JWT-shaped tokens, the profile", async () => {
    const flow = authflow("Alex_pa", await microsoftToken("Alex_pa", "success"));
    seen.splice(0);
    const res = await flow.getMinecraftJavaToken({ fetchProfile: true });
    expect(res.profile).toMatchObject({ id: offlineUuid("Alex_pa").replace(/-/g, ""), name: "Alex_pa" });
    expect(seen.map((s) => `${s.status} ${s.path}`)).toEqual([
      `200 ${DEV_IDP_PATHS.xblAuth}`,
      `200 ${DEV_IDP_DEVICE_PATH}`,
      `200 ${DEV_IDP_PATHS.xstsAuth}`,
      `200 ${DEV_IDP_PATHS.mcLogin}`,
      `200 ${DEV_IDP_PATHS.mcProfile}`,
    ]);
    // What the finding was about: prismarine-auth sends XSTS and device requests with no Content-Type.
    expect(seen.find((s) => s.path === DEV_IDP_PATHS.xstsAuth)!.contentType).toBeNull();
    expect(seen.find((s) => s.path === DEV_IDP_DEVICE_PATH)!.contentType).toBeNull();
    // The Minecraft access token is a JWT whose exp a client can read.
    expect(res.token.split(".")).toHaveLength(3);
    const claims = decodeJwt(res.token);
    expect(claims.exp).toBeGreaterThan(Date.now() / 1000);
    expect(claims.exp).toBeLessThanOrEqual(Date.now() / 1000 + 86_400 + 5);
    // So are the Xbox tokens it cached.
    const xsts = await (flow as unknown as { xbl: { getCachedTokens(rp: string): Promise<any> } }).xbl.getCachedTokens(
      "rp://api.minecraftservices.com/",
    );
    for (const t of [xsts.userToken.token, xsts.deviceToken.token, xsts.xstsToken.data.XSTSToken])
      expect(decodeJwt(t).exp).toBeGreaterThan(Date.now() / 1000);
  });

  for (const [outcome, xerr] of [
    ["guardian_restricted", 2148916229],
    ["xbox_terms_not_accepted", 2148916234],
  ] as const) {
    test(`outcome ${outcome}: XSTS answers 401 with XErr ${xerr}, which prismarine-auth explains as Xbox's own`, async () => {
      const flow = authflow(`Kid_${xerr % 1000}`, await microsoftToken(`Kid_${xerr % 1000}`, outcome));
      seen.splice(0);
      const err = await flow.getMinecraftJavaToken().then(
        () => undefined,
        (e: Error) => e,
      );
      expect(err?.message).toBe(xboxLiveErrors[xerr]!);
      const xsts = seen.filter((s) => s.path === DEV_IDP_PATHS.xstsAuth);
      expect(xsts.length).toBeGreaterThan(0);
      expect(xsts.every((s) => s.status === 401)).toBe(true);
    }, 30_000);
  }
});

describe("the service's chain maps the same refusals to their own denial codes", () => {
  for (const outcome of ["guardian_restricted", "xbox_terms_not_accepted"] as const) {
    test(outcome, async () => {
      const { verifier, challenge } = pkcePair();
      const page = await fetch(authorizeUrl(cfg, { redirectUri: REDIRECT_URI, state: "s", codeChallenge: challenge }));
      const form = new URLSearchParams({
        ...hiddenFields(await page.text()),
        username: "Kid",
        outcome,
        action: "signin",
      });
      const submitted = await fetch(cfg.endpoints.authorize, { method: "POST", body: form, redirect: "manual" });
      const code = new URL(submitted.headers.get("location")!).searchParams.get("code")!;
      const result = await runChain(cfg, { code, redirectUri: REDIRECT_URI, codeVerifier: verifier });
      expect(result).toMatchObject({ ok: false, error: outcome });
    });
  }
});

describe("Xbox request bodies", () => {
  test("XSTS reads JSON with no Content-Type; what does not parse is Xbox's empty 400, never a 415", async () => {
    const noType = await fetch(idp.url + DEV_IDP_PATHS.xstsAuth, {
      method: "POST",
      body: new Blob(['{"RelyingParty":"rp://api.minecraftservices.com/","TokenType":"JWT","Properties":{}}']),
    });
    // Read and checked: no UserTokens array, as Xbox answers such a body.
    expect(noType.status).toBe(400);
    const garbage = await fetch(idp.url + DEV_IDP_PATHS.xstsAuth, {
      method: "POST",
      headers: { "content-type": "text/plain" },
      body: "not json",
    });
    expect(garbage.status).toBe(400);
    expect(await garbage.text()).toBe("");
  });
});
