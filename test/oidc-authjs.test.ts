import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Auth, type AuthConfig } from "@auth/core";
import type { RunningServer } from "../src/app";
import { sharedServer } from "./harness";
import { browserAuthorize, newOidcClient } from "./oidc-helpers";

/**
 * Auth.js (@auth/core), the library behind NextAuth and the SvelteKit/Express/Qwik adapters, as
 * a website would configure it: a generic OIDC provider given nothing but the issuer URL, the
 * client id and the secret. It discovers the rest, and is driven over real HTTP like a browser.
 */
let server: RunningServer;
let rp: ReturnType<typeof Bun.serve>;
let config: AuthConfig | undefined;

beforeAll(async () => {
  server = await sharedServer();
  rp = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: (req) => (config ? Auth(req, config) : new Response("not ready", { status: 503 })),
  });
  const c = await newOidcClient(server, {
    redirectUris: [`http://127.0.0.1:${rp.port}/auth/callback/minecraft`],
  });
  config = {
    basePath: "/auth",
    secret: "a test secret that is long enough for Auth.js to use",
    trustHost: true,
    // The denial test makes Auth.js log the provider's error; the test asserts it instead.
    logger: { error: () => {} },
    providers: [
      {
        id: "minecraft",
        name: "Minecraft",
        type: "oidc",
        issuer: server.url,
        clientId: c.clientId,
        clientSecret: c.secret,
      },
    ],
    callbacks: {
      session: ({ session, token }) => ({ ...session, mc_uuid: token.sub }),
    },
  };
});
afterAll(() => rp?.stop(true));

/** A browser's cookie jar for the relying party's origin. */
class Jar {
  private readonly cookies = new Map<string, string>();
  take(res: Response) {
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(";");
      const eq = pair!.indexOf("=");
      const name = pair!.slice(0, eq);
      const value = pair!.slice(eq + 1);
      if (value === "" || /max-age=0/i.test(c) || /expires=Thu, 01 Jan 1970/i.test(c)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return res;
  }
  header() {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
  }
}

describe("Auth.js signs in with nothing but issuer, client id and secret", () => {
  test("sign in, consent, callback, session with the Minecraft name and UUID", async () => {
    const base = `http://127.0.0.1:${rp.port}`;
    const jar = new Jar();
    const csrf = jar.take(await fetch(`${base}/auth/csrf`));
    const { csrfToken } = (await csrf.json()) as { csrfToken: string };
    const started = jar.take(
      await fetch(`${base}/auth/signin/minecraft`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", cookie: jar.header() },
        body: new URLSearchParams({ csrfToken, callbackUrl: `${base}/welcome` }),
        redirect: "manual",
      }),
    );
    expect(started.status).toBe(302);
    const authorizeUrl = new URL(started.headers.get("location")!);
    expect(authorizeUrl.origin + authorizeUrl.pathname).toBe(`${server.url}/oidc/authorize`);
    expect(authorizeUrl.searchParams.get("code_challenge_method")).toBe("S256");

    const back = await browserAuthorize(server, authorizeUrl.href, { username: "AuthJs_Steve" });
    expect(back.origin + back.pathname).toBe(`${base}/auth/callback/minecraft`);
    const landed = jar.take(await fetch(back, { headers: { cookie: jar.header() }, redirect: "manual" }));
    expect(landed.status).toBe(302);
    expect(landed.headers.get("location")).toBe(`${base}/welcome`);

    const session = await (await fetch(`${base}/auth/session`, { headers: { cookie: jar.header() } })).json();
    expect(session.user.name).toBe("AuthJs_Steve");
    expect(session.mc_uuid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  });

  test("a player who denies: Auth.js sends the browser back to sign-in with its error, no session", async () => {
    const base = `http://127.0.0.1:${rp.port}`;
    const jar = new Jar();
    const { csrfToken } = (await jar.take(await fetch(`${base}/auth/csrf`)).json()) as { csrfToken: string };
    const started = jar.take(
      await fetch(`${base}/auth/signin/minecraft`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", cookie: jar.header() },
        body: new URLSearchParams({ csrfToken, callbackUrl: `${base}/welcome` }),
        redirect: "manual",
      }),
    );
    const back = await browserAuthorize(server, started.headers.get("location")!, { decision: "deny" });
    expect(back.searchParams.get("error")).toBe("access_denied");
    const landed = jar.take(await fetch(back, { headers: { cookie: jar.header() }, redirect: "manual" }));
    expect(landed.status).toBe(302);
    expect(landed.headers.get("location")).toBe(`${base}/auth/signin?error=OAuthCallbackError`);
    const session = await (await fetch(`${base}/auth/session`, { headers: { cookie: jar.header() } })).json();
    expect(session).toBeNull();
  });
});
