import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser } from "playwright-core";
import type { RunningServer } from "../src/app";
import { offlineUuid } from "../src/identity/protocol";
import { hasChromium, launchChromium } from "./dashboard-driver";
import { sharedServer } from "./harness";
import { api } from "./helpers";
import { newClient, poll, start } from "./ms-auth-helpers";

/**
 * A real browser signs in: headless Chromium (Debian's `chromium`, installed by .ci/run)
 * driven by playwright-core. It loads auth_url, fills the development provider's form, lands
 * on our consent page through the real redirects and clicks Approve.
 */

let server: RunningServer;
let browser: Browser | undefined;

beforeAll(async () => {
  server = await sharedServer();
  if (hasChromium) {
    browser = await launchChromium();
  }
});

afterAll(async () => {
  await browser?.close();
});

describe("in a real browser", () => {
  test.skipIf(!hasChromium)(
    "a player signs in on the provider's page, approves, and the launcher gets the session",
    async () => {
      // An http loopback redirect URI, as a launcher listening locally would register.
      const launcher = Bun.serve({
        port: 0,
        hostname: "127.0.0.1",
        fetch: (req) => new Response(`launcher got ${new URL(req.url).search}`),
      });
      try {
        const c = await newClient(server, { redirectUri: `http://127.0.0.1:${launcher.port}/callback` });
        const started = await start(server, c, "from-browser");
        const page = await browser!.newPage();
        await page.goto(started.auth_url);
        await page.fill('input[name="username"]', "Browser_Bob");
        await page.click('button[value="signin"]');
        await page.waitForSelector('button[name="decision"][value="approve"]');
        expect(await page.textContent("body")).toContain("Blocky Launcher");
        expect(await page.textContent("body")).toContain("Browser_Bob");
        // The page cannot be framed, and the cookie is out of script's reach.
        const cookies = await page.context().cookies();
        expect(cookies.find((k) => k.name.startsWith("mcp_login_"))).toMatchObject({
          httpOnly: true,
          sameSite: "Strict",
        });
        await page.click('button[name="decision"][value="approve"]');
        await page.waitForURL(/\/callback\?/);
        const landed = new URL(page.url());
        expect(Object.fromEntries(landed.searchParams)).toEqual({
          auth_request_id: started.auth_request_id,
          status: "authorized",
          state: "from-browser",
        });
        await page.close();

        const polled = await poll(server, c, started.auth_request_id);
        expect(polled.body.status).toBe("authorized");
        const v = await api(server, "POST", "/client/ms-auth/session/validate", {
          body: { client_id: c.clientId, client_secret: c.secret, svc_session_token: polled.body.svc_session_token },
        });
        expect(v.body).toMatchObject({ valid: true, mc_username: "Browser_Bob", mc_uuid: offlineUuid("Browser_Bob") });
      } finally {
        launcher.stop(true);
      }
    },
    60_000,
  );

  test.skipIf(!hasChromium)(
    "the consent page refuses to be framed",
    async () => {
      const c = await newClient(server);
      const started = await start(server, c);
      const page = await browser!.newPage();
      await page.goto(started.auth_url);
      await page.fill('input[name="username"]', "Framed");
      await page.click('button[value="signin"]');
      await page.waitForSelector('button[value="approve"]');
      const consentUrl = page.url();
      // Another origin frames the consent page, and (as a control) a page that allows framing.
      const control = Bun.serve({
        port: 0,
        hostname: "127.0.0.1",
        fetch: () => new Response("<p>control-visible</p>", { headers: { "content-type": "text/html" } }),
      });
      const evil = Bun.serve({
        port: 0,
        hostname: "127.0.0.1",
        fetch: () =>
          new Response(
            `<iframe name="victim" src="${consentUrl}"></iframe><iframe name="control" src="http://127.0.0.1:${control.port}/"></iframe>`,
            { headers: { "content-type": "text/html" } },
          ),
      });
      try {
        await page.goto(`http://127.0.0.1:${evil.port}/`);
        await page.waitForLoadState("load");
        await Bun.sleep(300);
        const text = async (name: string) => {
          const f = page.frames().find((x) => x.name() === name);
          return f ? await f.evaluate(() => document.body?.textContent ?? "").catch(() => "") : "";
        };
        expect(await text("control")).toContain("control-visible");
        // None of our page renders in the frame: not the consent form, not even an error page.
        const victim = (await text("victim")).toLowerCase();
        expect(victim).not.toContain("approve");
        expect(victim).not.toContain("sign-in");
      } finally {
        evil.stop(true);
        control.stop(true);
        await page.close();
      }
    },
    60_000,
  );
});
