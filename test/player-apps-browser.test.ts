import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import type { RunningServer } from "../src/app";
import { checkEverywhere, SCHEMES, VIEWPORTS } from "./a11y";
import { hasChromium, launchChromium } from "./dashboard-driver";
import { sharedServer } from "./harness";
import { api } from "./helpers";
import { fullLogin, newClient } from "./ms-auth-helpers";

/**
 * The player's apps page in headless Chromium: signed out, the Microsoft sign-in through the
 * development provider's real page, the list, a revocation. Axe-clean at phone and desktop
 * width in both colour schemes; screenshots of each go to SHOTS for a person to look at.
 */
const SHOTS = process.env.SCREENSHOTS_DIR ?? join(tmpdir(), "mcp-player-apps-shots");
let server: RunningServer;
let browser: Browser | undefined;

beforeAll(async () => {
  server = await sharedServer();
  mkdirSync(SHOTS, { recursive: true });
  if (hasChromium) browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});

async function shots(page: import("playwright-core").Page, name: string) {
  for (const scheme of SCHEMES)
    for (const [size, viewport] of Object.entries(VIEWPORTS)) {
      await page.emulateMedia({ colorScheme: scheme });
      await page.setViewportSize(viewport);
      await page.screenshot({ path: join(SHOTS, `${name}-${size}-${scheme}.png`), fullPage: true });
    }
  await page.emulateMedia({ colorScheme: "light" });
}

describe("the player's apps page in a real browser", () => {
  test.skipIf(!hasChromium)(
    "sign in with Microsoft, see the apps, revoke one: accessible at 390 and 1280 px, light and dark",
    async () => {
      const launcher = await newClient(server, { redirectUri: "https://play.blocky.example/signed-in" });
      const site = await newClient(server);
      const renamed = await api(server, "PATCH", `/client/apps/${site.clientId}`, {
        token: site.owner.token,
        body: { title: "Craft Stats Website" },
      });
      expect(renamed.status).toBe(200);
      const kept = await fullLogin(server, launcher, "Page_Player");
      const gone = await fullLogin(server, site, "Page_Player");
      const validate = (c: typeof launcher, token: string) =>
        api(server, "POST", "/client/ms-auth/session/validate", {
          body: { client_id: c.clientId, client_secret: c.secret, svc_session_token: token },
        });
      expect((await validate(launcher, kept.token)).body.valid).toBe(true);

      const page = await browser!.newPage();
      try {
        await page.goto(`${server.url}/account/apps`);
        expect(await checkEverywhere(page, "signed out")).toEqual([]);
        await shots(page, "signed-out");

        await page.getByRole("link", { name: "Sign in with Microsoft" }).click();
        await page.fill('input[name="username"]', "Page_Player");
        await page.click('button[value="signin"]');
        await page.waitForURL(`${server.url}/account/apps`);
        await page.getByRole("list", { name: "Apps with access" }).waitFor();
        const body = await page.textContent("main");
        expect(body).toContain("Signed in as Page_Player");
        expect(body).toContain("Blocky Launcher");
        expect(body).toContain("play.blocky.example");
        expect(body).toContain("Craft Stats Website");
        expect(await checkEverywhere(page, "signed in")).toEqual([]);
        await shots(page, "apps");

        await page.getByRole("button", { name: "Revoke Craft Stats Website" }).click();
        await page.getByRole("status").waitFor();
        expect(await page.getByRole("status").textContent()).toContain("Access revoked");
        expect(await page.getByRole("listitem").count()).toBe(1);
        expect(await checkEverywhere(page, "after revoking")).toEqual([]);
        await shots(page, "revoked");
        expect((await validate(site, gone.token)).body).toEqual({ valid: false });
        expect((await validate(launcher, kept.token)).body.valid).toBe(true);

        const cookie = (await page.context().cookies()).find((c) => c.name === "mcp_player");
        expect(cookie).toMatchObject({ httpOnly: true, sameSite: "Lax", path: "/account" });
      } finally {
        await page.close();
      }
    },
  );
});
