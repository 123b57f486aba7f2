import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { startStatusResponder } from "../scripts/demo-mc-server";
import type { RunningServer } from "../src/app";
import { axeViolations } from "./a11y";
import { hasChromium, launchChromium, PASSWORD, signUpInBrowser } from "./dashboard-driver";
import { sharedServer, startTestServer, stopTestServer, tempDir } from "./harness";
import { api, expectError, newTeam, newUser, type TestUser, uniqueEmail } from "./helpers";
import { pastOutage } from "./servers-fixture";

/**
 * The dashboard's first minutes: the session in an HttpOnly cookie (reloads, new tabs, two tabs
 * rotating at once, sign-out), deep links through sign-in, recovery after the service was down,
 * and what the page is served as (compressed, ETags, an icon), with no console errors.
 */

let server: RunningServer;
let browser: Browser | undefined;
const SHOTS = join(tmpdir(), "mcp-dashboard-shots");

beforeAll(async () => {
  server = await sharedServer();
  if (hasChromium) browser = await launchChromium();
  mkdirSync(SHOTS, { recursive: true });
});
afterAll(async () => {
  await browser?.close();
});

const DASH = { "x-mcp-dashboard": "1" };

/** Signs in through the session route; returns the answer and the cookie it set. */
async function dashboardSignIn(email: string, password = PASSWORD, headers: Record<string, string> = DASH) {
  const res = await api(server, "POST", "/dashboard/session", { body: { email, password }, headers });
  return { res, cookie: parseSetCookie(res.headers.get("set-cookie")) };
}

function parseSetCookie(header: string | null) {
  if (!header) return null;
  const [pair, ...attrs] = header.split(";").map((s) => s.trim());
  const [name, value] = [pair!.slice(0, pair!.indexOf("=")), pair!.slice(pair!.indexOf("=") + 1)];
  const a = Object.fromEntries(
    attrs.map((x) => {
      const i = x.indexOf("=");
      return i < 0 ? [x.toLowerCase(), true] : [x.slice(0, i).toLowerCase(), x.slice(i + 1)];
    }),
  );
  return { name, value, attrs: a as Record<string, string | true> };
}

const withCookie = (value: string) => ({ ...DASH, cookie: `mcp_dashboard_refresh=${value}` });

describe("the dashboard session routes", () => {
  test("sign-in puts the refresh token in an HttpOnly, Secure, SameSite=Strict cookie scoped to /dashboard/session, never in the body", async () => {
    const user = await newUser(server, "cookie");
    const { res, cookie } = await dashboardSignIn(user.email);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(["access_token", "expires_in", "token_type"]);
    expect(res.text).not.toContain("mcp_rt_");
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(cookie!.name).toBe("mcp_dashboard_refresh");
    expect(cookie!.value).toStartWith("mcp_rt_");
    expect(cookie!.attrs).toMatchObject({
      path: "/dashboard/session",
      httponly: true,
      secure: true,
      samesite: "Strict",
    });
    expect(Number(cookie!.attrs["max-age"])).toBeGreaterThan(86_400);
    // The access token is a working one.
    expect((await api(server, "GET", "/auth/me", { token: res.body.access_token })).body.email).toBe(user.email);
  });

  test("refresh: no cookie is 204; the cookie rotates; the old cookie again ends the whole login and is cleared", async () => {
    const none = await api(server, "POST", "/dashboard/session/refresh", { headers: DASH });
    expect(none.status).toBe(204);
    expect(none.headers.get("set-cookie")).toBeNull();

    const user = await newUser(server, "rotate");
    const first = (await dashboardSignIn(user.email)).cookie!.value;
    const rotated = await api(server, "POST", "/dashboard/session/refresh", { headers: withCookie(first) });
    expect(rotated.status).toBe(200);
    const second = parseSetCookie(rotated.headers.get("set-cookie"))!.value;
    expect(second).not.toBe(first);
    expect((await api(server, "GET", "/auth/me", { token: rotated.body.access_token })).status).toBe(200);

    // Reuse detection: the used token again ends the login, the newer token with it.
    const reused = await api(server, "POST", "/dashboard/session/refresh", { headers: withCookie(first) });
    expectError(reused, 401, "unauthenticated");
    const cleared = parseSetCookie(reused.headers.get("set-cookie"))!;
    expect(cleared.value).toBe("");
    expect(cleared.attrs["max-age"]).toBe("0");
    expectError(await api(server, "POST", "/dashboard/session/refresh", { headers: withCookie(second) }), 401);
    expect((await api(server, "GET", "/auth/me", { token: rotated.body.access_token })).status).toBe(401);
  });

  test("logout revokes the login (its access token stops working) and clears the cookie", async () => {
    const user = await newUser(server, "logout");
    const { res, cookie } = await dashboardSignIn(user.email);
    const out = await api(server, "POST", "/dashboard/session/logout", { headers: withCookie(cookie!.value) });
    expect(out.status).toBe(200);
    expect(out.body).toEqual({ ok: true });
    const cleared = parseSetCookie(out.headers.get("set-cookie"))!;
    expect(cleared.value).toBe("");
    expect(cleared.attrs).toMatchObject({ "max-age": "0", path: "/dashboard/session" });
    expectError(await api(server, "GET", "/auth/me", { token: res.body.access_token }), 401);
    expectError(await api(server, "POST", "/dashboard/session/refresh", { headers: withCookie(cookie!.value) }), 401);
    // Without a cookie it still answers (a second click on Sign out), and clears.
    expect((await api(server, "POST", "/dashboard/session/logout", { headers: DASH })).status).toBe(200);
  });

  test("a new sign-in in a browser that holds a login ends that login", async () => {
    const user = await newUser(server, "replace");
    const old = await dashboardSignIn(user.email);
    const again = await api(server, "POST", "/dashboard/session", {
      body: { email: user.email, password: PASSWORD },
      headers: withCookie(old.cookie!.value),
    });
    expect(again.status).toBe(200);
    expectError(await api(server, "GET", "/auth/me", { token: old.res.body.access_token }), 401);
    expect((await api(server, "GET", "/auth/me", { token: again.body.access_token })).status).toBe(200);
  });

  test("CSRF: without the dashboard header, or from another origin, every route is 403 and nothing happens", async () => {
    const user = await newUser(server, "csrf");
    const { cookie } = await dashboardSignIn(user.email);
    const cases: [string, Record<string, string>, unknown][] = [
      ["/dashboard/session", {}, { email: user.email, password: PASSWORD }],
      ["/dashboard/session", { ...DASH, origin: "https://evil.example" }, { email: user.email, password: PASSWORD }],
      ["/dashboard/session/refresh", { cookie: `mcp_dashboard_refresh=${cookie!.value}` }, undefined],
      ["/dashboard/session/refresh", { ...withCookie(cookie!.value), origin: "https://evil.example" }, undefined],
      ["/dashboard/session/refresh", { ...withCookie(cookie!.value), "x-mcp-dashboard": "yes" }, undefined],
      ["/dashboard/session/logout", { cookie: `mcp_dashboard_refresh=${cookie!.value}` }, undefined],
      ["/dashboard/session/logout", { ...withCookie(cookie!.value), origin: "null" }, undefined],
    ];
    for (const [path, headers, body] of cases) {
      const res = await api(server, "POST", path, { headers, body });
      expectError(res, 403, "forbidden");
      expect(res.headers.get("set-cookie")).toBeNull();
    }
    // The cookie was neither rotated nor revoked by any of them.
    const ok = await api(server, "POST", "/dashboard/session/refresh", {
      headers: { ...withCookie(cookie!.value), origin: server.url },
    });
    expect(ok.status).toBe(200);
    // A cross-origin page cannot send the header at all: the preflight does not allow it.
    const preflight = await fetch(`${server.url}/dashboard/session/refresh`, {
      method: "OPTIONS",
      headers: {
        origin: "https://evil.example",
        "access-control-request-method": "POST",
        "access-control-request-headers": "x-mcp-dashboard",
      },
    });
    expect(preflight.headers.get("access-control-allow-headers") ?? "").not.toContain("x-mcp-dashboard");
    expect(preflight.headers.get("access-control-allow-credentials")).toBeNull();
  });

  test("bad input is a 4xx in the envelope: field issues, not JSON, too large, wrong password", async () => {
    const bad = expectError(
      await api(server, "POST", "/dashboard/session", { headers: DASH, body: { email: "nope", password: "" } }),
      400,
      "validation_failed",
    );
    expect(bad.details.issues.map((i: { path: string }) => i.path).sort()).toEqual(["email", "password"]);
    expectError(
      await api(server, "POST", "/dashboard/session", {
        headers: { ...DASH, "content-type": "text/plain" },
        rawBody: "email=a",
      }),
      415,
      "unsupported_media_type",
    );
    expectError(
      await api(server, "POST", "/dashboard/session", {
        headers: { ...DASH, "content-type": "application/json" },
        rawBody: "{",
      }),
      400,
      "invalid_json",
    );
    expectError(
      await api(server, "POST", "/dashboard/session", {
        headers: DASH,
        body: { email: "a@example.test", password: "x".repeat(5_000) },
      }),
      413,
      "payload_too_large",
    );
    const user = await newUser(server, "wrongpw");
    const wrong = await dashboardSignIn(user.email, "not the password");
    expectError(wrong.res, 401, "unauthenticated");
    expect(wrong.cookie).toBeNull();
  });

  test("plain http at an address other than loopback gets the cookie without Secure (a browser would drop it there)", async () => {
    const user = await newUser(server, "lan");
    const res = await fetch(`${server.url}/dashboard/session`, {
      method: "POST",
      headers: { ...DASH, "content-type": "application/json", host: `192.168.1.20:${server.port}` },
      body: JSON.stringify({ email: user.email, password: PASSWORD }),
    });
    expect(res.status).toBe(200);
    const cookie = parseSetCookie(res.headers.get("set-cookie"))!;
    expect(cookie.attrs).toMatchObject({ httponly: true, samesite: "Strict", path: "/dashboard/session" });
    expect(cookie.attrs.secure).toBeUndefined();
  });

  test("the API's own /auth/login, /auth/refresh and /auth/logout still answer tokens in JSON and set no cookie", async () => {
    const user = await newUser(server, "api");
    const login = await api(server, "POST", "/auth/login", { body: { email: user.email, password: PASSWORD } });
    expect(login.body.refresh_token).toStartWith("mcp_rt_");
    expect(login.headers.get("set-cookie")).toBeNull();
    const refresh = await api(server, "POST", "/auth/refresh", { body: { refresh_token: login.body.refresh_token } });
    expect(refresh.body.refresh_token).toStartWith("mcp_rt_");
    expect(refresh.headers.get("set-cookie")).toBeNull();
    expect(
      (await api(server, "POST", "/auth/logout", { body: { refresh_token: refresh.body.refresh_token } })).status,
    ).toBe(200);
  });
});

/** Fetches without decoding, so the bytes on the wire and their headers are what is checked. */
const raw = (path: string, headers: Record<string, string> = {}) =>
  fetch(server.url + path, { headers: { "accept-encoding": "identity", ...headers }, decompress: false });

describe("serving the dashboard: compression, ETags, an icon", () => {
  test("assets come as brotli or gzip by Accept-Encoding, each with its own ETag, Vary, and a 304 for If-None-Match", async () => {
    const page = await (await raw("/")).text();
    const js = /\/assets\/main-[a-z0-9]+\.js/.exec(page)![0];
    const plain = await raw(js);
    expect(plain.headers.get("content-encoding")).toBeNull();
    expect(plain.headers.get("vary")).toBe("Accept-Encoding");
    const original = new Uint8Array(await plain.arrayBuffer());

    const br = await raw(js, { "accept-encoding": "gzip, deflate, br" });
    expect(br.headers.get("content-encoding")).toBe("br");
    const brBytes = new Uint8Array(await br.arrayBuffer());
    const gz = await raw(js, { "accept-encoding": "gzip" });
    expect(gz.headers.get("content-encoding")).toBe("gzip");
    const gzBytes = new Uint8Array(await gz.arrayBuffer());
    // Each decodes to the very same script, and is much smaller.
    expect(Buffer.from(Bun.gunzipSync(gzBytes)).equals(Buffer.from(original))).toBe(true);
    const { brotliDecompressSync } = await import("node:zlib");
    expect(brotliDecompressSync(brBytes).equals(Buffer.from(original))).toBe(true);
    expect(brBytes.length).toBeLessThan(original.length / 3);
    expect(gzBytes.length).toBeLessThan(original.length / 3);
    // q=0 refuses an encoding.
    expect((await raw(js, { "accept-encoding": "br;q=0, gzip" })).headers.get("content-encoding")).toBe("gzip");

    const tags = [plain, br, gz].map((r) => r.headers.get("etag")!);
    expect(new Set(tags).size).toBe(3);
    for (const t of tags) expect(t).toMatch(/^"[A-Za-z0-9_-]+"$/);
    const again = await raw(js, { "accept-encoding": "br", "if-none-match": tags[1]! });
    expect(again.status).toBe(304);
    expect(again.headers.get("etag")).toBe(tags[1]!);
    expect(again.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    expect((await again.arrayBuffer()).byteLength).toBe(0);
    // Another representation's tag does not match.
    expect((await raw(js, { "accept-encoding": "br", "if-none-match": tags[2]! })).status).toBe(200);
  });

  test("the page itself: an ETag and a 304 on reload with the security headers kept, and an icon linked from it", async () => {
    const first = await raw("/", { "accept-encoding": "br" });
    const html = await first.text();
    const etag = first.headers.get("etag")!;
    expect(etag).toMatch(/^"/);
    expect(first.headers.get("cache-control")).toBe("no-cache");
    expect(html).toContain('<link rel="icon" href="/favicon.svg" type="image/svg+xml">');
    const second = await raw("/", { "accept-encoding": "br", "if-none-match": etag });
    expect(second.status).toBe(304);
    expect(second.headers.get("content-security-policy")).toContain("script-src 'self'");
    for (const path of ["/favicon.svg", "/favicon.ico"]) {
      const icon = await raw(path);
      expect(icon.status).toBe(200);
      expect(icon.headers.get("content-type")).toBe("image/svg+xml");
      expect(await icon.text()).toStartWith("<svg");
      expect((await raw(path, { "if-none-match": icon.headers.get("etag")! })).status).toBe(304);
    }
  });
});

/** Console errors, uncaught page errors, failed requests and error answers, as they happen. */
function watch(page: Page) {
  const problems: { at: number; text: string }[] = [];
  const add = (text: string) => problems.push({ at: Date.now(), text });
  page.on("console", (m) => {
    if (m.type() === "error") add(`console: ${m.text()}`);
  });
  page.on("pageerror", (e) => add(`page error: ${e.message}`));
  page.on("requestfailed", (r) => {
    // A reload or navigation cancels what the page was still fetching (often the icon): not a failure.
    if (r.failure()?.errorText !== "net::ERR_ABORTED")
      add(`failed: ${r.method()} ${r.url()} ${r.failure()?.errorText}`);
  });
  page.on("response", (r) => {
    if (r.status() >= 400) add(`answer ${r.status()}: ${r.request().method()} ${r.url()}`);
  });
  return problems;
}

/** The sign-in form the page shows when signed out, filled and sent. */
async function signInOnForm(page: Page, email: string) {
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill(PASSWORD);
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
}

/** A server of a new team of `user`, registered through the API. */
async function addServer(srv: RunningServer, user: TestUser, name: string, port: number): Promise<string> {
  const teamId = await newTeam(srv, user, `${name} Team`);
  const created = await api(srv, "POST", "/server/servers", {
    token: user.token,
    body: { team_id: teamId, name, host: "127.0.0.1", port, kind: "single" },
  });
  expect(created.status).toBe(201);
  return created.body.server_id;
}

async function signedInContext(email: string): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser!.newContext();
  const page = await context.newPage();
  await signUpInBrowser(page, server.url, email, true);
  return { context, page };
}

describe("the dashboard session in a real browser", () => {
  test.skipIf(!hasChromium)(
    "a reload and a new tab stay signed in; two tabs rotating at the same moment both stay signed in; nothing readable holds the token; sign-out and sign-in reach the other tab",
    async () => {
      const user = await newUser(server, "tabs");
      const teamId = await newTeam(server, user, "Tab Team");
      const { context, page: a } = await signedInContext(user.email);
      const problems = watch(a);
      try {
        await a.getByRole("heading", { name: "Servers" }).waitFor();
        await a.reload();
        await a.getByRole("button", { name: "Sign out" }).waitFor();
        await a.getByRole("heading", { name: "Servers" }).waitFor();

        const b = await context.newPage();
        const bProblems = watch(b);
        await b.goto(`${server.url}/#/team`);
        await b.getByRole("heading", { name: "Team Tab Team" }).waitFor();

        // Both tabs restore at once, several times: each ask rotates the one cookie they share.
        for (let i = 0; i < 4; i++) {
          await Promise.all([a.reload(), b.reload()]);
          await Promise.all([
            a.getByRole("heading", { name: "Servers" }).waitFor(),
            b.getByRole("heading", { name: "Team Tab Team" }).waitFor(),
          ]);
        }
        // And each tab's token works on the API after the last rotation.
        for (const p of [a, b]) {
          await p.goto(`${server.url}/#/account`);
          await p.getByText(`Signed in as`).waitFor();
        }
        const login = await api(server, "POST", "/auth/login", { body: { email: user.email, password: PASSWORD } });
        expect((await api(server, "GET", `/teams/${teamId}`, { token: login.body.access_token })).status).toBe(200);

        // The refresh token is only in the HttpOnly cookie: no script-readable place holds it.
        const cookie = (await context.cookies()).find((c) => c.name === "mcp_dashboard_refresh")!;
        expect(cookie).toMatchObject({ httpOnly: true, secure: true, sameSite: "Strict", path: "/dashboard/session" });
        const readable = await a.evaluate(() =>
          JSON.stringify({ cookie: document.cookie, local: { ...localStorage }, session: { ...sessionStorage } }),
        );
        expect(readable).not.toContain(cookie.value);
        expect(readable).not.toContain("mcp_rt_");

        // Signing out in one tab signs the other out too, and the cookie is gone.
        await a.getByRole("button", { name: "Sign out" }).click();
        await a.getByRole("button", { name: "Sign in", exact: true }).waitFor();
        await b.getByText("You signed out in another tab.").waitFor();
        expect((await context.cookies()).find((c) => c.name === "mcp_dashboard_refresh")).toBeUndefined();
        await b.reload();
        await b.getByRole("button", { name: "Sign in", exact: true }).waitFor();
        // And a sign-in in one tab signs the other in, without a reload.
        await signInOnForm(a, user.email);
        await b.getByRole("button", { name: "Sign out" }).waitFor();
        await b.getByRole("heading", { name: "Account" }).waitFor();
        expect([...problems, ...bProblems].map((p) => p.text)).toEqual([]);
      } finally {
        await context.close();
      }
    },
    90_000,
  );

  test.skipIf(!hasChromium)(
    "a deep link opened while signed out shows sign-in, then lands on the linked server",
    async () => {
      const user = await newUser(server, "deeplink");
      const serverId = await addServer(server, user, "Linked Survival", 25565);
      const context = await browser!.newContext();
      const page = await context.newPage();
      const problems = watch(page);
      try {
        const link = `${server.url}/#/servers/${serverId}`;
        await page.goto(link);
        await signInOnForm(page, user.email);
        await page.getByRole("heading", { name: /Linked Survival/ }).waitFor();
        expect(page.url()).toBe(link);
        // A reload of the deep link stays there, signed in.
        await page.reload();
        await page.getByRole("heading", { name: /Linked Survival/ }).waitFor();
        expect(problems.map((p) => p.text)).toEqual([]);
      } finally {
        await context.close();
      }
    },
    60_000,
  );

  test.skipIf(!hasChromium)(
    "the API stopped and restarted on the same port: the page says reconnecting and the badge unknown, then recovers without a reload",
    async () => {
      const dir = tempDir("mcp-outage-");
      // A short grace: a stop otherwise waits up to 10 s for the page's open socket to finish.
      let own = await startTestServer({ DATA_DIR: dir, SHUTDOWN_GRACE_MS: "500" });
      const port = String(own.port);
      const responder = await startStatusResponder({ players: 3, maxPlayers: 20 });
      const user = await newUser(own, "outage");
      const serverId = await addServer(own, user, "Uptime", responder.port);
      const context = await browser!.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2 });
      const page = await context.newPage();
      const problems = watch(page);
      try {
        await page.goto(`${own.url}/#/servers/${serverId}`);
        await signInOnForm(page, user.email);
        await page.waitForSelector('[data-live="true"]');
        await own.services.monitoring.checkNow(serverId);
        const badge = page.locator("h1 .badge");
        await page.waitForSelector('h1 .badge[data-status="online"]');
        await page.screenshot({ path: join(SHOTS, "signed-in-phone.png") });
        // Proof that the page is never reloaded: this survives only in the same document.
        await page.evaluate(() => {
          (window as unknown as { stayed: boolean }).stayed = true;
        });
        const beforeOutage = problems.length;

        const outageStart = Date.now();
        await stopTestServer(own);
        await page.getByTestId("reconnecting").waitFor({ timeout: 15_000 });
        expect(await badge.getAttribute("data-status")).toBe("unknown");
        expect(await page.locator('[data-live="false"]').textContent()).toContain("· reconnecting…");
        expect(await page.locator(".stats.stale").count()).toBe(1);
        await page.screenshot({ path: join(SHOTS, "reconnecting-phone.png") });
        expect(await axeViolations(page, "reconnecting")).toEqual([]);
        // A click during the outage says so plainly rather than failing silently.
        await page.getByRole("button", { name: "24h" }).click();

        own = await startTestServer({ DATA_DIR: dir, PORT: port, SHUTDOWN_GRACE_MS: "500" });
        const outageEnd = Date.now();
        await page.getByTestId("reconnecting").waitFor({ state: "detached", timeout: 20_000 });
        await page.waitForSelector('[data-live="true"]', { timeout: 20_000 });
        await own.services.monitoring.checkNow(serverId);
        await page.waitForSelector('h1 .badge[data-status="online"]', { timeout: 10_000 });
        await page.getByRole("heading", { name: "History" }).waitFor();
        expect(await page.locator(".state.error").count()).toBe(0);
        expect(await page.evaluate(() => (window as unknown as { stayed?: boolean }).stayed)).toBe(true);
        await page.screenshot({ path: join(SHOTS, "recovered-phone.png") });

        // Before and after the outage: nothing. During it: only the refused connections themselves.
        expect(problems.slice(0, beforeOutage).map((p) => p.text)).toEqual([]);
        const during = problems.slice(beforeOutage).filter((p) => p.at <= outageEnd + 1_000);
        const after = problems.slice(beforeOutage).filter((p) => p.at > outageEnd + 1_000);
        expect(during.length).toBeGreaterThan(0);
        for (const p of during)
          expect(p.text).toMatch(/ERR_CONNECTION_REFUSED|ERR_CONNECTION_RESET|ERR_EMPTY_RESPONSE/);
        expect(after.map((p) => p.text)).toEqual([]);
        expect(outageEnd).toBeGreaterThan(outageStart);
      } finally {
        await context.close();
        await responder.close();
        await stopTestServer(own);
      }
    },
    120_000,
  );

  test.skipIf(!hasChromium)(
    "an outage three days ago is listed under the 7d and 30d uptime, with its length and reason, beside the uptime it cost",
    async () => {
      const user = await newUser(server, "incidents");
      const mc = await startStatusResponder({ players: 1 });
      const serverId = await addServer(server, user, "Incident Survival", mc.port);
      const { responder } = await pastOutage(server, serverId, mc);
      const context = await browser!.newContext();
      const page = await context.newPage();
      const problems = watch(page);
      try {
        await page.goto(`${server.url}/#/servers/${serverId}`);
        await signInOnForm(page, user.email);
        await page.getByRole("heading", { name: /Incident Survival/ }).waitFor();
        const uptime = page.locator('section[aria-labelledby="uptime-h"]');
        await uptime.getByText("No incidents in this window.").waitFor();
        for (const w of ["7d", "30d"]) {
          await page.getByRole("button", { name: w, exact: true }).click();
          await page.getByRole("heading", { name: `Uptime (${w})` }).waitFor();
          const item = uptime.getByRole("list", { name: "Incidents" }).getByRole("listitem");
          await item.first().waitFor();
          expect(await item.count()).toBe(1);
          expect(await item.textContent()).toMatch(/^Down from .+ to .+ \(\d+ min\): connection refused$/);
          expect(await uptime.locator("strong").first().textContent()).toBe("50.00 %");
        }
        await page.getByRole("button", { name: "1h", exact: true }).click();
        await uptime.getByText("No incidents in this window.").waitFor();
        expect(problems.map((p) => p.text)).toEqual([]);
      } finally {
        await context.close();
        await responder.close();
      }
    },
    60_000,
  );

  test.skipIf(!hasChromium)(
    "a signed-in walk through every page: the icon, compressed assets, no console errors, failed requests or error answers",
    async () => {
      const context = await browser!.newContext();
      const page = await context.newPage();
      const problems = watch(page);
      const encodings = new Map<string, string | undefined>();
      page.on("response", async (r) => {
        if (new URL(r.url()).pathname.startsWith("/assets/"))
          encodings.set(new URL(r.url()).pathname, (await r.allHeaders())["content-encoding"]);
      });
      try {
        await signUpInBrowser(page, server.url, uniqueEmail("walk"));
        await page.goto(`${server.url}/#/team`);
        await page.getByLabel("Team name").last().fill("Walk Team");
        await page.getByRole("button", { name: "Create team" }).click();
        await page.getByRole("heading", { name: "Team Walk Team" }).waitFor();
        for (const [route, ready] of [
          ["servers", "Servers"],
          ["networks", "Networks"],
          ["clients", "Client apps"],
          ["account", "Account"],
        ] as const) {
          await page.goto(`${server.url}/#/${route}`);
          await page.getByRole("heading", { name: ready, exact: true }).first().waitFor();
        }
        await page.reload();
        await page.getByRole("button", { name: "Sign out" }).waitFor();
        const icon = await page.evaluate(async () => {
          const link = document.querySelector<HTMLLinkElement>('link[rel="icon"]')!;
          const res = await fetch(link.href);
          return { href: link.getAttribute("href"), status: res.status, type: res.headers.get("content-type") };
        });
        expect(icon).toEqual({ href: "/favicon.svg", status: 200, type: "image/svg+xml" });
        expect(encodings.size).toBeGreaterThanOrEqual(2);
        for (const [path, enc] of encodings) expect(`${path} ${enc}`).toBe(`${path} br`);
        expect(problems.map((p) => p.text)).toEqual([]);
      } finally {
        await context.close();
      }
    },
    60_000,
  );
});
