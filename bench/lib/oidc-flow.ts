/**
 * OpenID Connect flows over real HTTP for the benchmarks: this service's (authorize .. token)
 * and the `oidc-provider` peer's (bench/peer/oidc-provider.mjs), each as a user agent with
 * cookies and a relying party's backend would drive them.
 */
import { createHash, randomBytes } from "node:crypto";
import { hiddenFields } from "../../test/shared";
import { call } from "./login-flow";

export const REDIRECT_URI = "http://127.0.0.1:9/cb";

export interface OidcBenchClient {
  clientId: string;
  basic: string;
}

/** Enables OpenID Connect on a launcher client (bench/lib/login-flow.ts's launcherClient). */
export async function enableOidc(
  base: string,
  creds: { client_id: string; client_secret: string },
  accessToken: string,
  alg: "RS256" | "EdDSA" = "RS256",
): Promise<OidcBenchClient> {
  await call(
    base,
    "POST",
    `/client/apps/${creds.client_id}/modules/oidc`,
    { redirect_uris: [REDIRECT_URI], id_token_signed_response_alg: alg },
    accessToken,
  );
  return {
    clientId: creds.client_id,
    basic: `Basic ${Buffer.from(`${creds.client_id}:${creds.client_secret}`).toString("base64")}`,
  };
}

const pkce = () => {
  const verifier = randomBytes(32).toString("base64url");
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") };
};

/** The browser's part up to the code: authorize, provider page, sign-in, callback (consent page), approve. */
export async function oidcCode(base: string, client: OidcBenchClient, name: string) {
  const { verifier, challenge } = pkce();
  const q = new URLSearchParams({
    response_type: "code",
    client_id: client.clientId,
    redirect_uri: REDIRECT_URI,
    scope: "openid profile",
    state: randomBytes(8).toString("hex"),
    nonce: randomBytes(8).toString("hex"),
    code_challenge: challenge,
    code_challenge_method: "S256",
  });
  const authorized = await fetch(`${base}/oidc/authorize?${q}`, { redirect: "manual" });
  const idpUrl = authorized.headers.get("location")!;
  const page = await (await fetch(idpUrl)).text();
  const submitted = await fetch(idpUrl.split("?")[0]!, {
    method: "POST",
    body: new URLSearchParams({ ...hiddenFields(page), username: name, outcome: "success" }),
    redirect: "manual",
  });
  const callback = await fetch(submitted.headers.get("location")!, { redirect: "manual" });
  const consent = await callback.text();
  const cookie = callback.headers.get("set-cookie")!.split(";")[0]!;
  const approved = await fetch(`${base}/client/ms-auth/authorize`, {
    method: "POST",
    headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ ...hiddenFields(consent), decision: "approve" }),
    redirect: "manual",
  });
  const code = new URL(approved.headers.get("location")!).searchParams.get("code");
  if (!code) throw new Error(`no code: ${approved.status}`);
  return { code, verifier };
}

/** The relying party's token request (client_secret_basic, PKCE); throws unless 200 with an ID token. */
export async function redeem(tokenUrl: string, basic: string, c: { code: string; verifier: string }) {
  const res = await fetch(tokenUrl, {
    method: "POST",
    headers: { authorization: basic, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "authorization_code",
      code: c.code,
      redirect_uri: REDIRECT_URI,
      code_verifier: c.verifier,
    }),
  });
  if (res.status !== 200) throw new Error(`token: ${res.status} ${await res.text()}`);
  const body = (await res.json()) as { id_token?: string };
  if (!body.id_token) throw new Error("token: no id_token");
}

/** This service's whole OIDC flow: 6 HTTP requests. */
export async function oidcFlow(base: string, client: OidcBenchClient, name: string) {
  await redeem(`${base}/oidc/token`, client.basic, await oidcCode(base, client, name));
}

export const PEER_CLIENT = {
  clientId: "bench",
  basic: `Basic ${Buffer.from("bench:bench-secret-bench-secret-bench-secret").toString("base64")}`,
};

/**
 * The peer's whole flow as a user agent with a cookie jar: /auth, the login interaction, /auth
 * again, the consent interaction, /auth again (to the redirect URI with the code), then /token.
 */
export async function peerFlow(base: string, name: string) {
  const { verifier, challenge } = pkce();
  const jar = new Map<string, string>();
  const q = new URLSearchParams({
    response_type: "code",
    client_id: PEER_CLIENT.clientId,
    redirect_uri: REDIRECT_URI,
    scope: "openid profile",
    state: randomBytes(8).toString("hex"),
    nonce: randomBytes(8).toString("hex"),
    code_challenge: challenge,
    code_challenge_method: "S256",
    login_hint: name,
  });
  let url = `${base}/auth?${q}`;
  for (let hop = 0; hop < 8; hop++) {
    const cookie = [...jar].map(([k, v]) => `${k}=${v}`).join("; ");
    const res = await fetch(url, { redirect: "manual", headers: cookie ? { cookie } : {} });
    await res.arrayBuffer();
    for (const c of res.headers.getSetCookie()) {
      const [pair, ...attrs] = c.split(";");
      const eq = pair!.indexOf("=");
      const k = pair!.slice(0, eq).trim();
      const v = pair!.slice(eq + 1).trim();
      if (!v || attrs.some((a) => /expires=Thu, 01 Jan 1970/i.test(a))) jar.delete(k);
      else jar.set(k, v);
    }
    const location = res.headers.get("location");
    if (!location) throw new Error(`peer: ${res.status} at ${url}`);
    const next = new URL(location, url);
    if (next.href.startsWith(REDIRECT_URI)) {
      const code = next.searchParams.get("code");
      if (!code) throw new Error(`peer: no code (${next.search})`);
      await redeem(`${base}/token`, PEER_CLIENT.basic, { code, verifier });
      return;
    }
    url = next.href;
  }
  throw new Error("peer: too many redirects");
}
