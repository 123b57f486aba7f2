import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import type { RunningServer } from "../src/app";
import { checkEverywhere, SCHEMES, VIEWPORTS } from "./a11y";
import { hasChromium, launchChromium } from "./dashboard-driver";
import { devIdp, freePort, startTestServer } from "./harness";
import { api } from "./helpers";
import { newClient, poll, type TestClient } from "./ms-auth-helpers";

/**
 * The device flow's pages in Debian's Chromium: the code page (from the QR code's link, and
 * typed by hand with a mistake first), the development provider's sign-in, the consent page and
 * the page that sends the player back to their device. Each page is checked with axe and the
 * project's own checks at 390 and 1280 px, light and dark. SCREENSHOTS_DIR, when set, keeps
 * what was seen (docs/screenshots/ holds the last set).
 */
let server: RunningServer;
let browser: Browser | undefined;
let client: TestClient;
const shots = process.env.SCREENSHOTS_DIR;

beforeAll(async () => {
  if (!hasChromium) return;
  const port = String(freePort());
  server = await startTestServer({
    PORT: port,
    PUBLIC_URL: `http://localhost:${port}`,
    DEV_IDP_URL: (await devIdp()).url,
  });
  client = await newClient(server, { redirectUri: "https://launcher.example.com/signed-in" });
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});

async function shot(page: Page, name: string) {
  if (!shots) return;
  for (const scheme of SCHEMES)
    for (const [size, viewport] of Object.entries(VIEWPORTS)) {
      await page.emulateMedia({ colorScheme: scheme });
      await page.setViewportSize(viewport);
      await page.screenshot({ path: join(shots, `${name}-${scheme}-${size}.png`), fullPage: true });
    }
  await page.emulateMedia({ colorScheme: "light" });
  await page.setViewportSize(VIEWPORTS.desktop);
}

async function startDevice(c: TestClient) {
  const res = await api(server, "POST", "/client/ms-auth/start", {
    body: { client_id: c.clientId, client_secret: c.secret, flow: "device" },
  });
  expect(res.status).toBe(200);
  return res.body as { auth_request_id: string; user_code: string; verification_uri_complete: string };
}

describe("device flow pages in a real browser", () => {
  test.skipIf(!hasChromium)(
    "code page, sign-in, consent, done: accessible at both widths in both schemes",
    async () => {
      const started = await startDevice(client);
      const context = await browser!.newContext({ viewport: VIEWPORTS.desktop });
      const page = await context.newPage();
      const problems: string[] = [];

      // A typo first: the page says so, in an alert, and keeps what was typed.
      await page.goto(`${server.services.config.PUBLIC_URL}/device`);
      await page.getByRole("heading", { name: "Sign in on another device" }).waitFor();
      problems.push(...(await checkEverywhere(page, "code page")));
      await shot(page, "device-code");
      await page.getByLabel("Code").fill("BBBB-BBBB");
      await page.getByRole("button", { name: "Continue" }).click();
      await page.getByRole("alert").waitFor();
      expect(await page.getByRole("alert").textContent()).toContain("That code is not valid");
      problems.push(...(await checkEverywhere(page, "code page, wrong code")));
      await shot(page, "device-code-wrong");

      // The QR code's link fills the field; the player confirms.
      await page.goto(started.verification_uri_complete);
      expect(await page.getByLabel("Code").inputValue()).toBe(started.user_code);
      await page.getByRole("button", { name: "Continue" }).click();
      await page.getByLabel("Player name").waitFor();
      await page.getByLabel("Player name").fill("Deck_Player");
      await page.getByRole("button", { name: "Sign in" }).click();

      await page.getByRole("heading", { name: "Sign in to Blocky Launcher" }).waitFor();
      const consent = (await page.locator("main").textContent()) ?? "";
      expect(consent).toContain("you go back to the device that showed you the code");
      expect(consent).toContain("your Minecraft name (Deck_Player)");
      expect(consent).toContain("your Minecraft UUID");
      expect(consent).toContain("Withdraw it at any time on your apps page, or sign out in Blocky Launcher.");
      expect(await page.getByRole("link", { name: "your apps page" }).getAttribute("href")).toEndWith("/account/apps");
      expect((await poll(server, client, started.auth_request_id)).body.status).toBe("authenticated");
      problems.push(...(await checkEverywhere(page, "consent page")));
      await shot(page, "device-consent");

      await page.getByRole("button", { name: "Approve" }).click();
      await page.getByRole("heading", { name: "You are signed in" }).waitFor();
      problems.push(...(await checkEverywhere(page, "signed-in page")));
      await shot(page, "device-done");
      const polled = await poll(server, client, started.auth_request_id);
      expect(polled.body).toMatchObject({ status: "authorized", mc_username: "Deck_Player" });

      expect(problems).toEqual([]);
      await context.close();
    },
    240_000,
  );

  test.skipIf(!hasChromium)(
    "the browser flow's consent page names the host the player goes back to",
    async () => {
      const res = await api(server, "POST", "/client/ms-auth/start", {
        body: { client_id: client.clientId, client_secret: client.secret },
      });
      const context = await browser!.newContext({ viewport: VIEWPORTS.desktop });
      const page = await context.newPage();
      await page.goto(res.body.auth_url);
      await page.getByLabel("Player name").fill("Notch");
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.getByRole("heading", { name: "Sign in to Blocky Launcher" }).waitFor();
      expect(await page.locator(".host").textContent()).toBe("launcher.example.com");
      const problems = await checkEverywhere(page, "consent page (browser flow)");
      await shot(page, "consent");
      expect(problems).toEqual([]);
      await context.close();
    },
    240_000,
  );
});
