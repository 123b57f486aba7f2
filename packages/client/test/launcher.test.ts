import { afterAll, describe, expect, test } from "bun:test";
import { sharedServer } from "../../../test/harness";
import { decide, hiddenFields, newClient, signIn } from "../../../test/ms-auth-helpers";
import {
  createLauncherBackend,
  type DeviceCode,
  type LoginStatus,
  LoginDeniedError,
  PlatformError,
  type StartResponse,
} from "../src/index";

const server = await sharedServer();

/** What the player does in the browser with auth_url: sign in on the development provider, then decide. */
function player(decision: "approve" | "deny", username = "Steve", action: "signin" | "cancel" = "signin") {
  const opened: StartResponse[] = [];
  const openUrl = async (url: string, started: StartResponse) => {
    opened.push(started);
    const s = await signIn(server, url, { username, action });
    if (action === "signin") expect((await decide(server, s, decision)).status).toBe(303);
  };
  return { openUrl, opened };
}

/** A listener in front of the service that answers chosen poll calls itself, to script 429 and 503. */
function front(answers: Record<number, () => Response>) {
  const polls: number[] = [];
  const proxy = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const url = new URL(req.url);
      if (url.pathname === "/client/ms-auth/poll") {
        polls.push(Date.now());
        const scripted = answers[polls.length];
        if (scripted) return scripted();
      }
      return fetch(`${server.url}${url.pathname}${url.search}`, {
        method: req.method,
        headers: req.headers,
        body: req.method === "GET" ? undefined : await req.arrayBuffer(),
      });
    },
  });
  afterAll(() => proxy.stop(true));
  return { url: `http://127.0.0.1:${proxy.port}`, polls };
}

const envelope =
  (status: number, code: string, headers: Record<string, string> = {}) =>
  () =>
    Response.json({ error: { code, message: code, request_id: "scripted" } }, { status, headers });

describe("launcher backend", () => {
  test("signIn: start, hand auth_url to the callback, poll at the interval, validate; revoke ends the session", async () => {
    const c = await newClient(server);
    const backend = createLauncherBackend({ baseUrl: server.url, clientId: c.clientId, clientSecret: c.secret });
    const p = player("approve", "Steve");
    const statuses: LoginStatus[] = [];
    const session = await backend.signIn({ openUrl: p.openUrl, clientState: "xyz", onStatus: (s) => statuses.push(s) });
    expect(p.opened).toHaveLength(1);
    expect(p.opened[0]!.interval).toBeGreaterThan(0);
    expect(session.authRequestId).toBe(p.opened[0]!.auth_request_id);
    expect(session.mcUsername).toBe("Steve");
    expect(session.mcUuid).toMatch(/^[0-9a-f-]{36}$/);
    expect(session.sessionToken).toStartWith("mcp_sess_");
    expect(session.expiresAt!.getTime()).toBeGreaterThan(Date.now());
    expect(statuses.at(-1)).toBe("authorized");

    const valid = await backend.validate(session.sessionToken);
    expect(valid).toMatchObject({ valid: true, mc_uuid: session.mcUuid, mc_username: "Steve" });
    expect(await backend.revoke(session.sessionToken)).toEqual({ ok: true });
    expect(await backend.validate(session.sessionToken)).toEqual({ valid: false });
  });

  test("signInWithDeviceCode: the code is shown, the player enters it on another device, the loop ends signed in", async () => {
    const c = await newClient(server);
    const backend = createLauncherBackend({ baseUrl: server.url, clientId: c.clientId, clientSecret: c.secret });
    const shown: DeviceCode[] = [];
    const session = await backend.signInWithDeviceCode({
      showCode: async (code) => {
        shown.push(code);
        // The player's phone: the code page, the code, the provider's sign-in, Approve.
        const page = await fetch(code.verificationUri);
        const cookie = page.headers.get("set-cookie")!.split(";")[0]!;
        const entered = await fetch(code.verificationUri, {
          method: "POST",
          headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({ ...hiddenFields(await page.text()), user_code: code.userCode }),
          redirect: "manual",
        });
        expect(entered.status).toBe(303);
        const s = await signIn(server, entered.headers.get("location")!, { username: "Deck" });
        expect((await decide(server, s, "approve")).status).toBe(200);
      },
    });
    expect(shown[0]!.userCode).toMatch(/^[A-Z]{4}-[A-Z]{4}$/);
    expect(shown[0]!.qrCodeSvg).toStartWith("<svg");
    expect(session.mcUsername).toBe("Deck");
    expect((await backend.validate(session.sessionToken)).valid).toBe(true);
  });

  test("a player who presses Deny ends signIn with LoginDeniedError code consent_denied", async () => {
    const c = await newClient(server);
    const backend = createLauncherBackend({ baseUrl: server.url, clientId: c.clientId, clientSecret: c.secret });
    const err = await backend.signIn(player("deny")).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LoginDeniedError);
    expect((err as LoginDeniedError).code).toBe("consent_denied");
  });

  test("a player who cancels at the identity provider is denied with access_denied", async () => {
    const c = await newClient(server);
    const backend = createLauncherBackend({ baseUrl: server.url, clientId: c.clientId, clientSecret: c.secret });
    const err = await backend.signIn(player("approve", "Steve", "cancel")).catch((e: unknown) => e);
    expect((err as LoginDeniedError).code).toBe("access_denied");
  });

  test("a 429 on poll waits Retry-After before the next poll; a 503 is ridden out", async () => {
    const c = await newClient(server);
    const fronted = front({
      1: envelope(429, "rate_limited", { "retry-after": "3" }),
      2: envelope(503, "unavailable"),
    });
    const backend = createLauncherBackend({ baseUrl: fronted.url, clientId: c.clientId, clientSecret: c.secret });
    const startedAt = Date.now();
    const session = await backend.signIn(player("approve", "Alex"));
    expect(session.mcUsername).toBe("Alex");
    const [first, second, third] = fronted.polls;
    expect(first! - startedAt).toBeGreaterThanOrEqual(1900); // the advised interval (2 s)
    expect(second! - first!).toBeGreaterThanOrEqual(2950); // Retry-After: 3
    expect(third! - second!).toBeGreaterThanOrEqual(1900);
  });

  test("wrong client credentials fail at start with the service's invalid_client, before any URL is opened", async () => {
    const c = await newClient(server);
    const backend = createLauncherBackend({ baseUrl: server.url, clientId: c.clientId, clientSecret: "wrong" });
    const p = player("approve");
    const err = await backend.signIn(p).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PlatformError);
    expect((err as PlatformError).status).toBe(401);
    expect((err as PlatformError).code).toBe("invalid_client");
    expect((err as PlatformError).requestId).toBeString();
    expect(p.opened).toHaveLength(0);
  });

  test("an abort signal stops the poll loop", async () => {
    const c = await newClient(server);
    const backend = createLauncherBackend({ baseUrl: server.url, clientId: c.clientId, clientSecret: c.secret });
    const controller = new AbortController();
    const err = await backend
      .signIn({
        openUrl: () => void setTimeout(() => controller.abort(new Error("player closed")), 50),
        signal: controller.signal,
      })
      .catch((e: unknown) => e);
    expect(String(err)).toContain("player closed");
  });
});
