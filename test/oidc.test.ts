import { beforeAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { eq } from "drizzle-orm";
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from "jose";
import * as oidc from "openid-client";
import type { RunningServer } from "../src/app";
import { oidcGrants } from "../src/db/schema";
import { devIdp, sharedServer, startTestServer } from "./harness";
import { api } from "./helpers";
import { basic, browserAuthorize, newOidcClient, type OidcTestClient, tokenRequest } from "./oidc-helpers";

let server: RunningServer;
let confidential: OidcTestClient;
beforeAll(async () => {
  server = await sharedServer();
  confidential = await newOidcClient(server);
});

const insecure = { execute: [oidc.allowInsecureRequests] };

/** A raw authorization request with PKCE, as any relying party sends it. */
function authorizationUrl(srv: RunningServer, c: OidcTestClient, extra: Record<string, string> = {}) {
  const verifier = oidc.randomPKCECodeVerifier();
  const challenge = createHash("sha256").update(verifier).digest("base64url");
  const params = new URLSearchParams({
    response_type: "code",
    client_id: c.clientId,
    redirect_uri: c.redirectUri,
    scope: "openid profile",
    state: "st-123",
    nonce: "n-456",
    code_challenge: challenge,
    code_challenge_method: "S256",
    ...extra,
  });
  return { url: `${srv.url}/oidc/authorize?${params}`, verifier };
}

async function codeFor(srv: RunningServer, c: OidcTestClient, username = "Steve") {
  const { url, verifier } = authorizationUrl(srv, c);
  const back = await browserAuthorize(srv, url, { username });
  expect(back.searchParams.get("state")).toBe("st-123");
  return { code: back.searchParams.get("code")!, verifier };
}

describe("discovery", () => {
  test("the provider metadata names the endpoints, RS256 and EdDSA, S256 and both client authentications", async () => {
    const res = await fetch(`${server.url}/.well-known/openid-configuration`);
    expect(res.status).toBe(200);
    const doc = await res.json();
    expect(doc).toMatchObject({
      issuer: server.url,
      authorization_endpoint: `${server.url}/oidc/authorize`,
      token_endpoint: `${server.url}/oidc/token`,
      userinfo_endpoint: `${server.url}/oidc/userinfo`,
      jwks_uri: `${server.url}/oidc/jwks.json`,
      response_types_supported: ["code"],
      subject_types_supported: ["public"],
      code_challenge_methods_supported: ["S256"],
    });
    expect(doc.id_token_signing_alg_values_supported).toEqual(expect.arrayContaining(["RS256", "EdDSA"]));
    expect(doc.token_endpoint_auth_methods_supported).toEqual(
      expect.arrayContaining(["client_secret_basic", "client_secret_post"]),
    );
    const jwks = await (await fetch(doc.jwks_uri)).json();
    expect(jwks.keys.map((k: { alg: string }) => k.alg).sort()).toEqual(["EdDSA", "RS256"]);
    // The launcher assertion keys stay where they were, apart from the ID token keys.
    const assertionKeys = await (await fetch(`${server.url}/.well-known/jwks.json`)).json();
    for (const k of assertionKeys.keys) expect(jwks.keys.map((j: { kid: string }) => j.kid)).not.toContain(k.kid);
  });
});

describe("openid-client completes the flow", () => {
  test("confidential client (client_secret_post, RS256): code + PKCE + state + nonce, ID token, userinfo", async () => {
    const config = await oidc.discovery(
      new URL(server.url),
      confidential.clientId,
      confidential.secret,
      oidc.ClientSecretPost(confidential.secret),
      insecure,
    );
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: confidential.redirectUri,
      scope: "openid profile",
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
      state,
      nonce,
    });
    const back = await browserAuthorize(server, url.href, { username: "Alex_OIDC" });
    expect(back.searchParams.get("iss")).toBe(server.url);
    const tokens = await oidc.authorizationCodeGrant(config, back, {
      pkceCodeVerifier: verifier,
      expectedState: state,
      expectedNonce: nonce,
    });
    const claims = tokens.claims()!;
    expect(claims.iss).toBe(server.url);
    expect(claims.aud).toBe(confidential.clientId);
    expect(claims.preferred_username).toBe("Alex_OIDC");
    expect(claims.sub).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(decodeProtectedHeader(tokens.id_token!).alg).toBe("RS256");
    const info = await oidc.fetchUserInfo(config, tokens.access_token, claims.sub);
    expect(JSON.parse(JSON.stringify(info))).toEqual({ sub: claims.sub, preferred_username: "Alex_OIDC" });
    // The grant is recorded for the player's apps page.
    const [grant] = await server.services.database.db
      .select()
      .from(oidcGrants)
      .where(eq(oidcGrants.mcUuid, claims.sub));
    expect(grant).toMatchObject({ clientId: confidential.clientId, mcUsername: "Alex_OIDC", revokedAt: null });
  });

  test("client_secret_basic with EdDSA ID tokens (id_token_signed_response_alg)", async () => {
    const c = await newOidcClient(server, { alg: "EdDSA" });
    const config = await oidc.discovery(
      new URL(server.url),
      c.clientId,
      { client_secret: c.secret, id_token_signed_response_alg: "EdDSA" },
      oidc.ClientSecretBasic(c.secret),
      insecure,
    );
    const verifier = oidc.randomPKCECodeVerifier();
    const nonce = oidc.randomNonce();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: c.redirectUri,
      scope: "openid",
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
      nonce,
    });
    const back = await browserAuthorize(server, url.href, { username: "Edd" });
    const tokens = await oidc.authorizationCodeGrant(config, back, {
      pkceCodeVerifier: verifier,
      expectedNonce: nonce,
    });
    expect(decodeProtectedHeader(tokens.id_token!).alg).toBe("EdDSA");
    expect(tokens.claims()!.preferred_username).toBe("Edd");
    // Verifiable by anyone against jwks_uri.
    const { payload } = await jwtVerify(tokens.id_token!, createRemoteJWKSet(new URL(`${server.url}/oidc/jwks.json`)), {
      issuer: server.url,
      audience: c.clientId,
    });
    expect(payload.nonce).toBe(nonce);
  });

  test("public client: no secret, PKCE required", async () => {
    const c = await newOidcClient(server, { public: true, redirectUris: ["com.example.site:/cb"] });
    const config = await oidc.discovery(new URL(server.url), c.clientId, undefined, oidc.None(), insecure);
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: c.redirectUri,
      scope: "openid profile",
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
      state,
    });
    const back = await browserAuthorize(server, url.href, { username: "Pub" });
    const tokens = await oidc.authorizationCodeGrant(config, back, {
      pkceCodeVerifier: verifier,
      expectedState: state,
    });
    expect(tokens.claims()!.preferred_username).toBe("Pub");

    // Without a challenge the request goes back to the client as an OAuth error.
    const noPkce = new URLSearchParams({
      response_type: "code",
      client_id: c.clientId,
      redirect_uri: c.redirectUri,
      scope: "openid",
      state: "s1",
    });
    const res = await fetch(`${server.url}/oidc/authorize?${noPkce}`, { redirect: "manual" });
    expect(res.status).toBe(303);
    const err = new URL(res.headers.get("location")!);
    expect(`${err.protocol}${err.pathname}`).toBe("com.example.site:/cb");
    expect(err.searchParams.get("error")).toBe("invalid_request");
    expect(err.searchParams.get("state")).toBe("s1");
    // A secret is not a public client's way in.
    const code = await codeFor(server, c);
    const withSecret = await tokenRequest(server, {
      grant_type: "authorization_code",
      code: code.code,
      redirect_uri: c.redirectUri,
      code_verifier: code.verifier,
      client_id: c.clientId,
      client_secret: c.secret,
    });
    expect(withSecret.status).toBe(401);
  });

  test("nonce mismatch: the relying party refuses the ID token", async () => {
    const config = await oidc.discovery(
      new URL(server.url),
      confidential.clientId,
      confidential.secret,
      undefined,
      insecure,
    );
    const verifier = oidc.randomPKCECodeVerifier();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: confidential.redirectUri,
      scope: "openid",
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
      nonce: "the-nonce-sent",
    });
    const back = await browserAuthorize(server, url.href);
    const err = await oidc
      .authorizationCodeGrant(config, back, { pkceCodeVerifier: verifier, expectedNonce: "another-nonce" })
      .catch((e: Error) => e);
    // openid-client compares the ID token's nonce claim with the one it expects.
    expect(err).toBeInstanceOf(Error);
    expect((err as Error & { code?: string }).code).toBe("OAUTH_JWT_CLAIM_COMPARISON_FAILED");
  });
});

describe("the token endpoint refuses", () => {
  test("a replayed code, and revokes what the first redemption issued", async () => {
    const { code, verifier } = await codeFor(server, confidential);
    const params = {
      grant_type: "authorization_code",
      code,
      redirect_uri: confidential.redirectUri,
      code_verifier: verifier,
    };
    const first = await tokenRequest(server, params, {
      authorization: basic(confidential.clientId, confidential.secret),
    });
    expect(first.status).toBe(200);
    expect(first.headers.get("cache-control")).toBe("no-store");
    const tokens = await first.json();
    expect(tokens).toMatchObject({ token_type: "Bearer", expires_in: 3600, scope: "openid profile" });
    const info = await fetch(`${server.url}/oidc/userinfo`, {
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    expect(info.status).toBe(200);

    const again = await tokenRequest(server, params, {
      authorization: basic(confidential.clientId, confidential.secret),
    });
    expect(again.status).toBe(400);
    expect(await again.json()).toMatchObject({ error: "invalid_grant" });
    const after = await fetch(`${server.url}/oidc/userinfo`, {
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    expect(after.status).toBe(401);
    expect(after.headers.get("www-authenticate")).toContain('error="invalid_token"');
  });

  test("the player's apps page lists the website's grant; revoking it ends its access token at once", async () => {
    const { code, verifier } = await codeFor(server, confidential, "GrantHolder");
    const res = await tokenRequest(
      server,
      { grant_type: "authorization_code", code, redirect_uri: confidential.redirectUri, code_verifier: verifier },
      { authorization: basic(confidential.clientId, confidential.secret) },
    );
    expect(res.status).toBe(200);
    const tokens = await res.json();
    const userinfo = () =>
      fetch(`${server.url}/oidc/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    const info = await (await userinfo()).json();
    expect(info.preferred_username).toBe("GrantHolder");
    const apps = await server.services.playerApps.list(info.sub);
    expect(apps.map((a) => [a.clientId, a.kinds])).toEqual([[confidential.clientId, ["oidc_grant"]]]);
    expect(apps[0]!.redirectHost).toBe(new URL(confidential.redirectUri).host);
    expect(await server.services.playerApps.revoke(info.sub, confidential.clientId)).toBe(1);
    expect((await userinfo()).status).toBe(401);
    expect(await server.services.playerApps.list(info.sub)).toEqual([]);
  });

  test("a wrong PKCE verifier, a missing one, and a different redirect_uri", async () => {
    const { code, verifier } = await codeFor(server, confidential);
    const creds = { client_id: confidential.clientId, client_secret: confidential.secret };
    const wrong = await tokenRequest(server, {
      grant_type: "authorization_code",
      code,
      redirect_uri: confidential.redirectUri,
      code_verifier: oidc.randomPKCECodeVerifier(),
      ...creds,
    });
    expect(wrong.status).toBe(400);
    expect((await wrong.json()).error).toBe("invalid_grant");
    // The code is spent by the failed attempt.
    const right = await tokenRequest(server, {
      grant_type: "authorization_code",
      code,
      redirect_uri: confidential.redirectUri,
      code_verifier: verifier,
      ...creds,
    });
    expect((await right.json()).error).toBe("invalid_grant");

    const second = await codeFor(server, confidential);
    const none = await tokenRequest(server, {
      grant_type: "authorization_code",
      code: second.code,
      redirect_uri: confidential.redirectUri,
      ...creds,
    });
    expect((await none.json()).error).toBe("invalid_grant");

    const third = await codeFor(server, confidential);
    const elsewhere = await tokenRequest(server, {
      grant_type: "authorization_code",
      code: third.code,
      redirect_uri: "http://127.0.0.1:9/other",
      code_verifier: third.verifier,
      ...creds,
    });
    expect((await elsewhere.json()).error).toBe("invalid_grant");
  });

  test("a bad client secret (Basic and post), an unknown client, another client's code: RFC 6749 error JSON", async () => {
    const { code, verifier } = await codeFor(server, confidential);
    const params = {
      grant_type: "authorization_code",
      code,
      redirect_uri: confidential.redirectUri,
      code_verifier: verifier,
    };
    const badBasic = await tokenRequest(server, params, {
      authorization: basic(confidential.clientId, "client_secret_nope"),
    });
    expect(badBasic.status).toBe(401);
    expect(badBasic.headers.get("www-authenticate")).toStartWith("Basic");
    expect(await badBasic.json()).toEqual({ error: "invalid_client", error_description: expect.any(String) });
    const badPost = await tokenRequest(server, { ...params, client_id: confidential.clientId, client_secret: "x" });
    expect(badPost.status).toBe(401);
    const unknown = await tokenRequest(server, {
      ...params,
      client_id: crypto.randomUUID(),
      client_secret: confidential.secret,
    });
    expect(unknown.status).toBe(401);
    const other = await newOidcClient(server);
    const stolen = await tokenRequest(server, { ...params, client_id: other.clientId, client_secret: other.secret });
    expect(stolen.status).toBe(400);
    expect((await stolen.json()).error).toBe("invalid_grant");
    // None of that spent the code: its own client still redeems it.
    const own = await tokenRequest(server, {
      ...params,
      client_id: confidential.clientId,
      client_secret: confidential.secret,
    });
    expect(own.status).toBe(200);
    const wrongGrant = await tokenRequest(server, {
      grant_type: "password",
      client_id: confidential.clientId,
      client_secret: confidential.secret,
    });
    expect(await wrongGrant.json()).toMatchObject({ error: "unsupported_grant_type" });
    const notForm = await fetch(`${server.url}/oidc/token`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(params),
    });
    expect(notForm.status).toBe(400);
    expect((await notForm.json()).error).toBe("invalid_request");
  });
});

describe("the authorization endpoint", () => {
  test("never redirects to an unregistered redirect URI or for an unknown client", async () => {
    const { url } = authorizationUrl(server, { ...confidential, redirectUri: "https://evil.example/cb" });
    const res = await fetch(url, { redirect: "manual" });
    expect(res.status).toBe(400);
    expect(res.headers.get("location")).toBeNull();
    expect(await res.text()).toContain("redirect_uri");
    const unknown = authorizationUrl(server, { ...confidential, clientId: crypto.randomUUID() });
    const res2 = await fetch(unknown.url, { redirect: "manual" });
    expect(res2.status).toBe(400);
    expect(res2.headers.get("location")).toBeNull();
  });

  test("errors after the redirect URI is known go back to it with state and iss", async () => {
    for (const [extra, error] of [
      [{ response_type: "token" }, "unsupported_response_type"],
      [{ scope: "profile" }, "invalid_scope"],
      [{ code_challenge_method: "plain" }, "invalid_request"],
    ] as const) {
      const res = await fetch(authorizationUrl(server, confidential, extra).url, { redirect: "manual" });
      expect(res.status).toBe(303);
      const back = new URL(res.headers.get("location")!);
      expect(back.origin + back.pathname).toBe(confidential.redirectUri);
      expect(back.searchParams.get("error")).toBe(error);
      expect(back.searchParams.get("state")).toBe("st-123");
      expect(back.searchParams.get("iss")).toBe(server.url);
    }
  });

  test("a state or nonce with a control character (a NUL cannot even be stored) is invalid_request, not a 500", async () => {
    for (const extra of [{ nonce: "n\u0000" }, { nonce: "n\u0007x" }, { nonce: "n\u007f" }]) {
      const res = await fetch(authorizationUrl(server, confidential, extra).url, { redirect: "manual" });
      expect(res.status).toBe(303);
      const back = new URL(res.headers.get("location")!);
      expect(back.searchParams.get("error")).toBe("invalid_request");
      expect(back.searchParams.get("state")).toBe("st-123");
    }
    const nul = authorizationUrl(server, confidential);
    const u = new URL(nul.url);
    u.searchParams.set("state", "\u0000");
    const res = await fetch(u, { redirect: "manual" });
    expect(res.status).toBe(303);
    expect(new URL(res.headers.get("location")!).searchParams.get("error")).toBe("invalid_request");
  });

  test("a player who denies on the consent page: access_denied to the relying party", async () => {
    const { url } = authorizationUrl(server, confidential);
    const back = await browserAuthorize(server, url, { decision: "deny" });
    expect(back.searchParams.get("error")).toBe("access_denied");
    expect(back.searchParams.get("state")).toBe("st-123");
    expect(back.searchParams.get("code")).toBeNull();
  });

  test("the userinfo endpoint refuses a missing or unknown bearer token", async () => {
    expect((await fetch(`${server.url}/oidc/userinfo`)).status).toBe(401);
    const res = await fetch(`${server.url}/oidc/userinfo`, { headers: { authorization: "Bearer mcp_oat_nope" } });
    expect(res.status).toBe(401);
  });
});

describe("expiry", () => {
  test("a code older than its lifetime is refused; so is an access token past its own", async () => {
    const idp = await devIdp();
    const srv = await startTestServer({ DEV_IDP_URL: idp.url });
    const c = await newOidcClient(srv);
    const first = await codeFor(srv, c);
    srv.services.clock.advance(61_000);
    const late = await tokenRequest(srv, {
      grant_type: "authorization_code",
      code: first.code,
      redirect_uri: c.redirectUri,
      code_verifier: first.verifier,
      client_id: c.clientId,
      client_secret: c.secret,
    });
    expect(late.status).toBe(400);
    expect(await late.json()).toMatchObject({
      error: "invalid_grant",
      error_description: expect.stringContaining("expired"),
    });

    const second = await codeFor(srv, c);
    const ok = await tokenRequest(srv, {
      grant_type: "authorization_code",
      code: second.code,
      redirect_uri: c.redirectUri,
      code_verifier: second.verifier,
      client_id: c.clientId,
      client_secret: c.secret,
    });
    expect(ok.status).toBe(200);
    const { access_token } = await ok.json();
    const live = await fetch(`${srv.url}/oidc/userinfo`, { headers: { authorization: `Bearer ${access_token}` } });
    expect(live.status).toBe(200);
    srv.services.clock.advance(3601_000);
    const dead = await fetch(`${srv.url}/oidc/userinfo`, { headers: { authorization: `Bearer ${access_token}` } });
    expect(dead.status).toBe(401);

    // A login request that expires before the player finishes: the relying party hears access_denied.
    const { url } = authorizationUrl(srv, c);
    const started = await fetch(url, { redirect: "manual" });
    expect(started.status).toBe(303);
    srv.services.clock.advance(601_000);
    const { signIn } = await import("./ms-auth-helpers");
    const s = await signIn(srv, started.headers.get("location")!);
    expect(s.callback.status).toBe(303);
    const back = new URL(s.callback.headers.get("location")!);
    expect(back.searchParams.get("error")).toBe("access_denied");
    expect(back.searchParams.get("state")).toBe("st-123");
  });
});

describe("settings", () => {
  test("only the client's team admins enable it; bad redirect URIs are refused", async () => {
    const bad = await api(server, "POST", `/client/apps/${confidential.clientId}/modules/oidc`, {
      token: confidential.owner.token,
      body: { redirect_uris: ["javascript:alert(1)"] },
    });
    expect(bad.status).toBe(400);
    const got = await api(server, "GET", `/client/apps/${confidential.clientId}/modules/oidc`, {
      token: confidential.owner.token,
    });
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({
      redirect_uris: [confidential.redirectUri],
      public: false,
      id_token_signed_response_alg: "RS256",
    });
    const c = await newOidcClient(server);
    const off = await api(server, "DELETE", `/client/apps/${c.clientId}/modules/oidc`, { token: c.owner.token });
    expect(off.status).toBe(200);
    const { url } = authorizationUrl(server, c);
    expect((await fetch(url, { redirect: "manual" })).status).toBe(400);
  });
});
