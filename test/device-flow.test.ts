import { beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import type { RunningServer } from "../src/app";
import { deviceCodes } from "../src/db/schema";
import { offlineUuid } from "../src/identity/protocol";
import QRCode from "qrcode";
import { normalizeUserCode, USER_CODE_ALPHABET } from "../src/ms-auth/device";
import { QR_OPTIONS } from "../src/ms-auth/device-qr";
import { sha256 } from "../src/lib/secrets";
import { devIdp, sharedServer, startTestServer, stopTestServer, usingPostgres } from "./harness";
import { freshDatabase } from "./shared";
import { api } from "./helpers";
import { hiddenFields, newClient, poll, signIn, type TestClient } from "./ms-auth-helpers";

/**
 * The device flow (RFC 8628 shape) end to end: the launcher starts with `flow: "device"`, the
 * player opens verification_uri in another browser, types the code, signs in at the
 * development identity provider (a real HTTP server), consents; the launcher polls.
 */

let server: RunningServer;
let client: TestClient;
beforeAll(async () => {
  server = await sharedServer();
  client = await newClient(server);
});

interface DeviceStart {
  auth_request_id: string;
  auth_url: string;
  expires_in: number;
  interval: number;
  user_code: string;
  verification_uri: string;
  verification_uri_complete: string;
  qr_code_svg: string;
}

async function startDevice(srv: RunningServer, c: TestClient, extra: Record<string, unknown> = {}) {
  const res = await api(srv, "POST", "/client/ms-auth/start", {
    body: { client_id: c.clientId, client_secret: c.secret, flow: "device", ...extra },
  });
  expect(res.status).toBe(200);
  return res.body as DeviceStart;
}

/** A browser on the player's phone: keeps the device page's cookie, fills its form. */
class Phone {
  cookie?: string;
  constructor(
    private readonly srv: RunningServer,
    private readonly forwardedFor?: string,
  ) {}

  private headers(extra: Record<string, string> = {}) {
    return {
      ...(this.cookie && { cookie: this.cookie }),
      ...(this.forwardedFor && { "x-forwarded-for": this.forwardedFor }),
      ...extra,
    };
  }

  async open(url = `${this.srv.url}/device`) {
    const res = await fetch(url, { headers: this.headers() });
    const set = res.headers.get("set-cookie");
    if (set) this.cookie = set.split(";")[0];
    return { res, html: await res.text() };
  }

  /** Loads the page (as a person would) and submits `code`. */
  async enter(code: string) {
    const { html } = await this.open();
    return this.submit(code, hiddenFields(html).csrf_token ?? "");
  }

  submit(code: string, csrf: string) {
    return fetch(`${this.srv.url}/device`, {
      method: "POST",
      headers: this.headers({ "content-type": "application/x-www-form-urlencoded" }),
      body: new URLSearchParams({ csrf_token: csrf, user_code: code }),
      redirect: "manual",
    });
  }
}

/** Presses a consent button as the browser holding the sign-in cookie. */
function decide(srv: RunningServer, html: string, cookie: string | undefined, decision: "approve" | "deny") {
  return fetch(`${srv.url}/client/ms-auth/authorize`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...(cookie && { cookie }) },
    body: new URLSearchParams({ ...hiddenFields(html), decision }),
    redirect: "manual",
  });
}

const CODE = new RegExp(`^[${USER_CODE_ALPHABET}]{4}-[${USER_CODE_ALPHABET}]{4}$`);

describe("device flow over REST, with the development provider", () => {
  test("start, type the code on another device, sign in, consent; the launcher polls before and after", async () => {
    const started = await startDevice(server, client);
    expect(started.user_code).toMatch(CODE);
    expect(started.verification_uri).toBe(`${server.url}/device`);
    expect(started.verification_uri_complete).toBe(`${server.url}/device?code=${started.user_code}`);
    expect(started.qr_code_svg).toStartWith("<svg");
    expect(started.qr_code_svg).toContain("</svg>");
    // The QR code is verification_uri_complete's, as the library encodes it from scratch.
    expect(started.qr_code_svg).toBe(
      await QRCode.toString([{ data: new TextEncoder().encode(started.verification_uri_complete), mode: "byte" }], {
        type: "svg",
        ...QR_OPTIONS,
      }),
    );
    expect(started).toMatchObject({ interval: 2, expires_in: 600 });
    // Only the code's hash is stored.
    const stored = await server.services.database.db
      .select()
      .from(deviceCodes)
      .where(eq(deviceCodes.loginRequestId, started.auth_request_id));
    expect(stored).toHaveLength(1);
    expect(stored[0]!.codeHash).toBe(sha256(normalizeUserCode(started.user_code)!));

    expect((await poll(server, client, started.auth_request_id)).body).toMatchObject({ status: "pending" });

    // The complete link fills the field; the player still presses Continue.
    const phone = new Phone(server);
    const opened = await phone.open(started.verification_uri_complete);
    expect(opened.res.status).toBe(200);
    expect(opened.html).toContain(`value="${started.user_code}"`);
    expect(opened.html).toContain("If someone sent you this code or this link, stop");
    expect(opened.res.headers.get("content-security-policy")).toContain("form-action 'self' ");
    // Case, spaces and dashes do not matter.
    const typed = started.user_code.toLowerCase().replace("-", " ");
    const entered = await phone.submit(typed, hiddenFields(opened.html).csrf_token!);
    expect(entered.status).toBe(303);
    const authUrl = entered.headers.get("location")!;
    expect(authUrl).toBe(started.auth_url);
    // Claimed: the code is gone.
    expect(
      await server.services.database.db
        .select()
        .from(deviceCodes)
        .where(eq(deviceCodes.loginRequestId, started.auth_request_id)),
    ).toHaveLength(0);

    const s = await signIn(server, authUrl, { username: "Deck_Player" });
    expect(s.callback.status).toBe(200);
    expect(s.html).toContain("Sign in to Blocky Launcher");
    expect(s.html).toContain("you go back to the device that showed you the code");
    expect(s.html).toContain("your Minecraft UUID");
    expect((await poll(server, client, started.auth_request_id)).body).toMatchObject({
      status: "authenticated",
      mc_username: "Deck_Player",
    });

    const approved = await decide(server, s.html, s.cookie, "approve");
    // No redirect to the launcher's address: the phone is not the launcher's machine.
    expect(approved.status).toBe(200);
    expect(await approved.text()).toContain("You are signed in");

    const polled = await poll(server, client, started.auth_request_id);
    expect(polled.body).toEqual({
      status: "authorized",
      mc_username: "Deck_Player",
      svc_session_token: expect.stringMatching(/^mcp_sess_/),
    });
    const valid = await api(server, "POST", "/client/ms-auth/session/validate", {
      body: {
        client_id: client.clientId,
        client_secret: client.secret,
        svc_session_token: polled.body.svc_session_token,
      },
    });
    expect(valid.body).toMatchObject({ valid: true, mc_uuid: offlineUuid("Deck_Player"), mc_username: "Deck_Player" });
  });

  test("a code works once: a second entry, in any browser, is refused", async () => {
    const started = await startDevice(server, client);
    const first = await new Phone(server).enter(started.user_code);
    expect(first.status).toBe(303);
    for (const phone of [new Phone(server), new Phone(server)]) {
      const again = await phone.enter(started.user_code);
      expect(again.status).toBe(400);
      expect(await again.text()).toContain("That code is not valid");
    }
  });

  test("a wrong code and a malformed one are refused with the form shown again", async () => {
    const phone = new Phone(server);
    const wrong = await phone.enter("BBBB-BBBB");
    expect(wrong.status).toBe(400);
    const html = await wrong.text();
    expect(html).toContain('role="alert"');
    expect(html).toContain("That code is not valid");
    expect(html).toContain('value="BBBB-BBBB"');
    const malformed = await phone.enter("12345678");
    expect(malformed.status).toBe(400);
    expect(await malformed.text()).toContain("That is not a code");
  });

  test("the form is bound to the browser that loaded it (no cookie, or another's token: 403)", async () => {
    const started = await startDevice(server, client);
    const a = new Phone(server);
    const { html } = await a.open();
    const csrf = hiddenFields(html).csrf_token!;
    const noCookie = await new Phone(server).submit(started.user_code, csrf);
    expect(noCookie.status).toBe(403);
    const b = new Phone(server);
    await b.open();
    expect((await b.submit(started.user_code, csrf)).status).toBe(403);
    // The code was not spent by the refused forms.
    expect((await a.submit(started.user_code, csrf)).status).toBe(303);
  });

  test("deny on the consent page: the launcher polls denied, the phone is told nothing was shared", async () => {
    const started = await startDevice(server, client);
    const entered = await new Phone(server).enter(started.user_code);
    const s = await signIn(server, entered.headers.get("location")!, { username: "Alex" });
    const denied = await decide(server, s.html, s.cookie, "deny");
    expect(denied.status).toBe(200);
    expect(await denied.text()).toContain("Nothing was shared");
    expect((await poll(server, client, started.auth_request_id)).body).toEqual({
      status: "denied",
      error: "consent_denied",
      mc_username: "Alex",
    });
  });

  test("resume: a device request gets a fresh code and the old one stops working; the flow cannot change", async () => {
    const started = await startDevice(server, client);
    const resumed = await startDevice(server, client, { auth_request_id: started.auth_request_id });
    expect(resumed.auth_request_id).toBe(started.auth_request_id);
    expect(resumed.user_code).toMatch(CODE);
    expect(resumed.user_code).not.toBe(started.user_code);
    expect((await new Phone(server).enter(started.user_code)).status).toBe(400);
    expect((await new Phone(server).enter(resumed.user_code)).status).toBe(303);
    const mismatch = await api(server, "POST", "/client/ms-auth/start", {
      body: {
        client_id: client.clientId,
        client_secret: client.secret,
        flow: "browser",
        auth_request_id: started.auth_request_id,
      },
    });
    expect(mismatch.status).toBe(400);
  });

  test("the browser flow's start answer is unchanged (no device fields)", async () => {
    const res = await api(server, "POST", "/client/ms-auth/start", {
      body: { client_id: client.clientId, client_secret: client.secret },
    });
    expect(Object.keys(res.body).sort()).toEqual(["auth_request_id", "auth_url", "expires_in", "interval"]);
    const explicit = await api(server, "POST", "/client/ms-auth/start", {
      body: { client_id: client.clientId, client_secret: client.secret, flow: "browser" },
    });
    expect(Object.keys(explicit.body).sort()).toEqual(["auth_request_id", "auth_url", "expires_in", "interval"]);
  });

  test("a bad flow value is a 400 in the common envelope", async () => {
    const res = await api(server, "POST", "/client/ms-auth/start", {
      body: { client_id: client.clientId, client_secret: client.secret, flow: "tv" },
    });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBeString();
  });
});

describe("device flow: expiry and the guessing limits (servers of their own)", () => {
  test("a code expires with its request; the launcher polls expired", async () => {
    const idp = await devIdp();
    const srv = await startTestServer({ DEV_IDP_URL: idp.url, LOGIN_REQUEST_TTL_SECONDS: "60" });
    const c = await newClient(srv);
    const started = await startDevice(srv, c);
    expect(started.expires_in).toBe(60);
    srv.services.clock.advance(61_000);
    const late = await new Phone(srv).enter(started.user_code);
    expect(late.status).toBe(400);
    expect(await late.text()).toContain("That code has expired");
    expect((await poll(srv, c, started.auth_request_id)).body).toEqual({ status: "expired", error: "expired" });
    // A code claimed before the deadline whose sign-in ends after it: expired as well.
    const other = await startDevice(srv, c);
    const entered = await new Phone(srv).enter(other.user_code);
    expect(entered.status).toBe(303);
    srv.services.clock.advance(61_000);
    const s = await signIn(srv, entered.headers.get("location")!);
    expect(s.callback.status).toBe(200);
    expect(s.html).toContain("Sign-in expired");
    // The sweep removes codes never claimed (this client's: on PostgreSQL other tests share the table).
    const unclaimed = await startDevice(srv, c);
    srv.services.clock.advance(61_000);
    await srv.services.deviceCodes.sweep();
    expect(
      await srv.services.database.db
        .select()
        .from(deviceCodes)
        .where(eq(deviceCodes.loginRequestId, unclaimed.auth_request_id)),
    ).toHaveLength(0);
  });

  test("per address: after too many wrong codes that address is refused, right code or wrong; others are not", async () => {
    const idp = await devIdp();
    const srv = await startTestServer({
      DEV_IDP_URL: idp.url,
      TRUST_PROXY: "1",
      DEVICE_CODE_FAILURES_PER_ADDRESS: "3",
    });
    const c = await newClient(srv);
    const started = await startDevice(srv, c);
    const guesser = new Phone(srv, "203.0.113.7");
    for (let i = 0; i < 3; i++) expect((await guesser.enter("BBBB-BBBB")).status).toBe(400);
    const refused = await guesser.enter("BBBB-BBBB");
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await refused.text()).toContain("Too many wrong codes");
    // Even the right code, from that address.
    expect((await guesser.enter(started.user_code)).status).toBe(429);
    // The code was not spent: the player, elsewhere, uses it.
    expect((await new Phone(srv, "198.51.100.2").enter(started.user_code)).status).toBe(303);
  });

  test("for everyone: wrong codes from many addresses add up, and then every entry is refused", async () => {
    const idp = await devIdp();
    // On PostgreSQL a database of its own: the refusal for everyone is announced to every
    // instance on the database, and the run's other servers share this one.
    const own = usingPostgres() ? await freshDatabase(process.env.MCP_ADMIN_DATABASE_URL!, "mcp_device_global") : null;
    const srv = await startTestServer({
      DEV_IDP_URL: idp.url,
      TRUST_PROXY: "1",
      DEVICE_CODE_FAILURES_PER_ADDRESS: "100",
      DEVICE_CODE_FAILURES_GLOBAL: "4",
      ...(own && { DATABASE_URL: own.url }),
    });
    const c = await newClient(srv);
    const started = await startDevice(srv, c);
    // Each address is far under its own limit; together they reach the limit for everyone.
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await new Phone(srv, `203.0.113.${10 + i}`).enter("CCCC-CCCC")).status);
    expect(statuses).toEqual([400, 400, 400, 400, 429]);
    expect((await new Phone(srv, "198.51.100.9").enter(started.user_code)).status).toBe(429);
    if (own) {
      await stopTestServer(srv);
      await own.drop();
    }
  });
});
