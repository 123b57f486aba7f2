import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import type { RunningServer } from "../src/app";
import { hasChromium, launchChromium, PASSWORD, signUpInBrowser } from "./dashboard-driver";
import { devIdp, freePort, startTestServer } from "./harness";
import { addMember, api, newTeam, newUser, uniqueEmail } from "./helpers";
import { enableTotp, totpCode } from "./two-factor-helpers";

/**
 * Two-factor sign-in in the real dashboard, in Debian's Chromium: an authenticator app enrolled
 * on the account page and used at sign-in, a passkey made and used by Chromium's virtual
 * authenticator (CDP WebAuthn domain), and a team that requires a factor shown locked to a
 * member without one. The server's PUBLIC_URL is http://localhost:<port>: a passkey's relying
 * party id must be a domain, not an IP address. SCREENSHOTS_DIR, when set, keeps what was seen.
 */
let server: RunningServer;
let browser: Browser | undefined;
const shots = process.env.SCREENSHOTS_DIR;

beforeAll(async () => {
  if (!hasChromium) return;
  const port = String(freePort());
  server = await startTestServer({
    PORT: port,
    PUBLIC_URL: `http://localhost:${port}`,
    DEV_IDP_URL: (await devIdp()).url,
  });
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});

const base = () => server.services.config.PUBLIC_URL;

async function shot(page: Page, name: string) {
  if (!shots) return;
  await page.screenshot({ path: join(shots, `${name}-desktop.png`), fullPage: true });
  const size = page.viewportSize();
  await page.setViewportSize({ width: 390, height: 844 });
  await page.screenshot({ path: join(shots, `${name}-phone.png`), fullPage: true });
  if (size) await page.setViewportSize(size);
}

async function signOut(page: Page) {
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.getByRole("button", { name: "Sign in", exact: true }).waitFor();
}

async function passwordStep(page: Page, email: string) {
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill(PASSWORD);
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  await page.getByRole("heading", { name: "Two-factor sign-in" }).waitFor();
}

/** A browser context with Chromium's virtual authenticator: a platform passkey that says yes. */
async function withAuthenticator(context: BrowserContext, page: Page) {
  const cdp = await context.newCDPSession(page);
  await cdp.send("WebAuthn.enable");
  const { authenticatorId } = await cdp.send("WebAuthn.addVirtualAuthenticator", {
    options: {
      protocol: "ctap2",
      transport: "internal",
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });
  return { cdp, authenticatorId };
}

describe("two-factor sign-in in the dashboard", () => {
  test.skipIf(!hasChromium)(
    "an authenticator app is set up on the account page, its recovery codes shown once, and asked for at sign-in",
    async () => {
      const context = await browser!.newContext();
      const page = await context.newPage();
      const email = uniqueEmail("browser-totp");
      try {
        await signUpInBrowser(page, base(), email);
        await page.goto(`${base()}/#/account`);
        await expect(page.getByTestId("two-factor-state").textContent()).resolves.toContain("Off");
        // Without the password nothing starts.
        await page.getByRole("button", { name: "Set up an authenticator app" }).click();
        await page.getByText("Enter your current password first").waitFor();
        await page.getByLabel("Your password, to change sign-in factors").fill(PASSWORD);
        await page.getByRole("button", { name: "Set up an authenticator app" }).click();
        await page.getByRole("img", { name: "QR code for your authenticator app" }).waitFor();
        const secret = (await page.getByTestId("totp-secret").textContent())!;
        await shot(page, "two-factor-totp-setup");
        await page.getByLabel("Code from the app").fill("000000");
        await page.getByRole("button", { name: "Turn on" }).click();
        await page.getByText("The code does not match").waitFor();
        await page.getByLabel("Code from the app").fill(await totpCode(secret, -1));
        await page.getByRole("button", { name: "Turn on" }).click();
        await page.getByTestId("recovery-codes").waitFor();
        const codes = await page.getByTestId("recovery-codes").locator("code").allTextContents();
        expect(codes).toHaveLength(10);
        await shot(page, "two-factor-recovery-codes");
        await page.getByRole("button", { name: "I saved them" }).click();
        await expect(page.getByTestId("recovery-codes").count()).resolves.toBe(0);
        await expect(page.getByTestId("two-factor-state").textContent()).resolves.toContain("On");

        await signOut(page);
        await passwordStep(page, email);
        await shot(page, "two-factor-sign-in");
        await page.getByLabel("Code from your authenticator app").fill("123456");
        await page.getByRole("button", { name: "Verify" }).click();
        await page.getByText("The code is wrong.").waitFor();
        await page.getByLabel("Code from your authenticator app").fill(await totpCode(secret));
        await page.getByRole("button", { name: "Verify" }).click();
        await page.getByRole("button", { name: "Sign out" }).waitFor();

        // A recovery code works too, once.
        await signOut(page);
        await passwordStep(page, email);
        await page.getByRole("button", { name: "Use a recovery code instead" }).click();
        await page.getByLabel("Recovery code").fill(codes[0]!);
        await page.getByRole("button", { name: "Verify" }).click();
        await page.getByRole("button", { name: "Sign out" }).waitFor();
        await page.goto(`${base()}/#/account`);
        await page.getByText("9 unused.").waitFor();
      } finally {
        await context.close();
      }
    },
    120_000,
  );

  test.skipIf(!hasChromium)(
    "a passkey is added with Chromium's virtual authenticator and signs in after the password",
    async () => {
      const context = await browser!.newContext();
      const page = await context.newPage();
      const email = uniqueEmail("browser-passkey");
      try {
        const { cdp, authenticatorId } = await withAuthenticator(context, page);
        await signUpInBrowser(page, base(), email);
        await page.goto(`${base()}/#/account`);
        await page.getByLabel("Your password, to change sign-in factors").fill(PASSWORD);
        await page.getByLabel("Passkey name").fill("Laptop");
        await page.getByRole("button", { name: "Add a passkey" }).click();
        await page.getByTestId("recovery-codes").waitFor();
        await page.getByRole("button", { name: "I saved them" }).click();
        await page.getByRole("cell", { name: "Laptop" }).waitFor();
        await shot(page, "two-factor-account");
        const { credentials } = await cdp.send("WebAuthn.getCredentials", { authenticatorId });
        expect(credentials).toHaveLength(1);
        expect(credentials[0]!.rpId).toBe("localhost");

        await signOut(page);
        await passwordStep(page, email);
        await page.getByRole("button", { name: "Use a passkey" }).click();
        await page.getByRole("button", { name: "Sign out" }).or(page.getByRole("alert")).first().waitFor();
        expect(await page.getByRole("alert").allTextContents()).toEqual([]);
        const after = await cdp.send("WebAuthn.getCredentials", { authenticatorId });
        expect(after.credentials[0]!.signCount).toBeGreaterThan(credentials[0]!.signCount);
        // The dashboard's account page shows when it was last used.
        await page.goto(`${base()}/#/account`);
        const row = page.getByRole("row", { name: /Laptop/ });
        await expect(row.getByRole("cell").nth(2).textContent()).resolves.not.toBe("never");
      } finally {
        await context.close();
      }
    },
    120_000,
  );

  test.skipIf(!hasChromium)(
    "a team that requires a second factor is locked for a member without one, until they add one",
    async () => {
      const owner = await newUser(server, "lock-owner");
      await enableTotp(server, owner);
      const team = await newTeam(server, owner, "Fortress");
      const member = await newUser(server, "lock-member");
      await addMember(server, owner, team, member, "admin");
      expect(
        (await api(server, "PUT", `/teams/${team}/two-factor`, { token: owner.token, body: { required: true } }))
          .status,
      ).toBe(200);

      const context = await browser!.newContext();
      const page = await context.newPage();
      try {
        // newUser's password is the driver's PASSWORD: the form signs the member in.
        await signUpInBrowser(page, base(), member.email, true);
        await page.goto(`${base()}/#/servers`);
        await page.getByTestId("team-locked").waitFor();
        expect(await page.getByRole("heading", { name: "This team is locked" }).isVisible()).toBe(true);
        expect(await page.getByRole("combobox", { name: "Team" }).textContent()).toContain("Fortress (locked)");
        await shot(page, "two-factor-team-locked");
        await page.getByRole("link", { name: "Set up two-factor sign-in" }).click();
        await page.getByRole("heading", { name: "Two-factor sign-in" }).waitFor();

        const { secret } = await enableTotp(server, member);
        expect(secret).toBeString();
        await page.goto(`${base()}/#/team`);
        await page.reload();
        await page.getByRole("heading", { name: "Team Fortress" }).waitFor();
        await page.getByRole("heading", { name: "Two-factor requirement" }).waitFor();
        await shot(page, "two-factor-team-setting");
      } finally {
        await context.close();
      }
    },
    120_000,
  );
});
