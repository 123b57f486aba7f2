import { existsSync } from "node:fs";
import { chromium, type Browser, type Page } from "playwright-core";

/**
 * Drives the dashboard in Debian's Chromium: shared by the end-to-end test, the screenshot
 * script and the dashboard bench, so all three walk the same screens the same way.
 */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
export const hasChromium = existsSync(CHROMIUM);
// CI installs Chromium and sets this, so a missing browser there is a failure, not a skip.
if (process.env.REQUIRE_CHROMIUM && !hasChromium)
  throw new Error(`REQUIRE_CHROMIUM is set but ${CHROMIUM} does not exist`);

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}

export const PASSWORD = "correct horse battery";

/** Signs up (or in, with `existing`) through the dashboard's own form. */
export async function signUpInBrowser(page: Page, baseUrl: string, email: string, existing = false) {
  await page.goto(`${baseUrl}/`);
  if (!existing) await page.getByRole("button", { name: "No account yet? Create one" }).click();
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill(PASSWORD);
  await page.getByRole("button", { name: existing ? "Sign in" : "Create account", exact: true }).click();
  await page.getByRole("button", { name: "Sign out", exact: true }).waitFor();
}

export async function createTeamInBrowser(page: Page, name: string) {
  await page.goto(`${new URL(page.url()).origin}/#/team`);
  await page.getByLabel("Team name").last().fill(name);
  await page.getByRole("button", { name: "Create team" }).click();
  await page.getByRole("heading", { name: `Team ${name}` }).waitFor();
}

/** Creates a client app; returns its id and the secret shown once. */
export async function createClientInBrowser(page: Page, title: string) {
  await page.goto(`${new URL(page.url()).origin}/#/clients`);
  await page.getByRole("button", { name: "New client app" }).click();
  await page.getByLabel("Name", { exact: true }).fill(title.toLowerCase().replace(/\W+/g, "-"));
  await page.getByLabel("Title").fill(title);
  await page.getByLabel("Description").fill(`${title}, the launcher of the test team`);
  await page.getByRole("button", { name: "Create", exact: true }).click();
  const secret = (await page.getByTestId("secret").textContent())!;
  const clientId = (await page.getByTestId("client-id").textContent())!;
  await page.getByRole("button", { name: "I saved it" }).click();
  await page.getByRole("heading", { name: "Sign in with Microsoft (ms_auth)" }).waitFor();
  return { clientId, secret };
}

/** Registers a server; returns its id (from the page address) and the agent token shown once (on its Settings tab). */
export async function createServerInBrowser(page: Page, name: string, host: string, port: number) {
  await page.goto(`${new URL(page.url()).origin}/#/servers`);
  await page.getByRole("button", { name: "Add server" }).first().click();
  await page.getByLabel("Server name").fill(name);
  await page.getByLabel("Host").fill(host);
  await page.getByLabel("Port").fill(String(port));
  await page.getByRole("button", { name: "Add server" }).last().click();
  await page.getByRole("heading", { name: "Agent" }).waitFor();
  const agentToken = (await page.getByTestId("secret").textContent())!;
  const serverId = new URL(page.url()).hash.split("/")[2]!;
  return { serverId, agentToken };
}

/** Points drawn on the history charts (the players chart: every chart draws the same times). */
export async function chartPoints(page: Page): Promise<number> {
  return Number(await page.locator('figure.chart[data-chart="players"] [data-points]').getAttribute("data-points"));
}

/** Opens a tab of the server page (Overview, Players, Moderation, Settings) and waits for its panel. */
export async function serverTab(page: Page, name: string) {
  await page.getByRole("tab", { name, exact: true }).click();
  await page.waitForSelector(`[role="tab"][aria-selected="true"]:text-is("${name}")`);
}
