/**
 * Regenerates docs/screenshots/ from the demo's data (`npm run demo`, scripts/demo.ts): every
 * dashboard page at desktop and phone width, the server page in the dark theme, and a server
 * that is down saying why. Starts its own service (PGlite in a temporary directory, the
 * development identity provider in-process) with the demo's settings, fills it with `runDemo()`
 * and signs in as the demo's owner.
 *
 *   bun scripts/screenshots.ts
 *   bun scripts/screenshots.ts incidents alerts   # only these pages, the others left as they are
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { launchChromium } from "../test/dashboard-driver";
import { startTestServer, stopAll } from "../test/harness";
import { emptyReads, runDemo } from "./demo";

const OUT = join(import.meta.dir, "../docs/screenshots");
const SIZES = { desktop: { width: 1280, height: 860 }, phone: { width: 390, height: 844 } } as const;

// The demo's settings (scripts/demo.ts): frequent checks and flushes, webhooks delivered.
const server = await startTestServer({
  LOG_LEVEL: "error",
  PINGER_ENABLED: "true",
  PING_INTERVAL_SECONDS: "10",
  METRICS_FLUSH_MS: "1000",
  WEBHOOK_CONCURRENCY: "4",
  WEBHOOK_POLL_MS: "200",
});
const base = server.url;
// Living (heartbeats, joins and leaves), without the timed crash: the down server is shot on purpose below.
const demo = await runDemo({ baseUrl: base, live: true, incidents: false });
for (let missing = await emptyReads(base); missing.length > 0; missing = await emptyReads(base)) await Bun.sleep(250);
const survival = demo.servers.find((s) => s.key === "survival")!;
const bedwars = demo.servers.find((s) => s.key === "bedwars")!;

// The team and account pages with something to show: a scoped key limited to one server that a
// ban bot has used, and the owner signed in on two more devices.
async function post(path: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${base}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as Record<string, any>;
}
const devices = [
  "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1",
  "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36 Edg/124.0.0.0",
];
let owner = "";
for (const ua of devices)
  owner = (await post("/auth/login", { email: demo.email, password: demo.password }, { "user-agent": ua }))
    .access_token;
const bot = await post(
  `/teams/${demo.teamId}/api-keys`,
  {
    name: "Ban bot",
    scopes: ["servers:read", "moderation:write"],
    server_ids: [survival.serverId],
    expires_at: new Date(Date.now() + 90 * 86_400_000).toISOString(),
  },
  { authorization: `Bearer ${owner}` },
);
await fetch(`${base}/server/players`, {
  headers: { authorization: `Bearer ${bot.key}`, "x-server-id": survival.serverId },
});

// Named pages only (the operations pages: incidents with maintenance, alert rules), or every page
// this script shoots. Nothing else is removed: other shots in the folder come from browser tests
// (the device flow, the consent page, the reconnecting banner).
const ONLY = process.argv.slice(2);
mkdirSync(OUT, { recursive: true });
const browser = await launchChromium();

async function shoot(page: Page, name: string) {
  await page.waitForLoadState("networkidle");
  await Bun.sleep(400);
  await page.screenshot({ path: join(OUT, `${name}.png`), fullPage: true });
  console.log(`docs/screenshots/${name}.png`);
}

async function signIn(page: Page) {
  await page.goto(`${base}/`);
  await page.getByLabel("Email").fill(demo.email);
  await page.getByLabel("Password").fill(demo.password);
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  await page.getByRole("button", { name: "Sign out", exact: true }).waitFor();
}

/** The server page once its charts have drawn the window and its live socket is up. */
async function serverPage(page: Page, serverId: string) {
  await page.goto(`${base}/#/servers/${serverId}`);
  await page.waitForSelector('[data-live="true"]');
  await page.waitForSelector('figure.chart[data-chart="memory"] [data-x-min]');
}

/** The server page's other tabs, each once its content is on screen. */
const SERVER_TABS = [
  ["players", 'table[aria-label="Players"]'],
  ["moderation", 'table[aria-label="Bans"]'],
  ["settings", '[data-testid="agent-command"]'],
] as const;

/** The incidents page (the demo's resolved incident opened, its maintenance below) and the alert rules. */
async function operationsPages(page: Page, size: string) {
  if (ONLY.length === 0 || ONLY.includes("incidents")) {
    await page.goto(`${base}/#/incidents`);
    const incident = page.getByTestId("incident").filter({ hasText: "Lag spikes on the network" });
    await incident.getByRole("button", { name: /^Timeline of / }).click();
    await incident
      .getByRole("list", { name: /^Timeline of / })
      .locator("li")
      .nth(2)
      .waitFor();
    await page.getByTestId("maintenance-window").first().waitFor();
    await shoot(page, `incidents-${size}`);
  }
  if (ONLY.length === 0 || ONLY.includes("alerts")) {
    await page.goto(`${base}/#/alerts`);
    await page.getByTestId("alert-rule").first().waitFor();
    await shoot(page, `alerts-${size}`);
  }
}

if (ONLY.length > 0) {
  for (const [size, viewport] of Object.entries(SIZES)) {
    const context = await browser.newContext({ viewport, colorScheme: "light" });
    const page = await context.newPage();
    await signIn(page);
    await operationsPages(page, size);
    await context.close();
  }
  await browser.close();
  await demo.stop();
  await stopAll();
  process.exit(0);
}

for (const [size, viewport] of Object.entries(SIZES)) {
  const context = await browser.newContext({ viewport, colorScheme: "light" });
  const page = await context.newPage();
  await page.goto(`${base}/`);
  await page.getByRole("button", { name: "Sign in", exact: true }).waitFor();
  await shoot(page, `sign-in-${size}`);
  await signIn(page);
  await page.waitForSelector('[data-server="Survival"] .badge[data-status="online"]');
  await shoot(page, `servers-${size}`);
  await page.goto(`${base}/#/networks`);
  await page.getByRole("heading", { name: "Blockworks" }).waitFor();
  await shoot(page, `networks-${size}`);
  await page.goto(`${base}/#/networks/Blockworks`);
  await page.getByRole("table", { name: "Network sessions" }).waitFor();
  await page.getByRole("heading", { name: "Player analytics" }).waitFor();
  await page.waitForLoadState("networkidle");
  await shoot(page, `network-${size}`);
  await page.goto(`${base}/#/players`);
  const firstPlayer = page.getByRole("table", { name: "Players", exact: true }).locator("tbody tr a").first();
  await firstPlayer.waitFor();
  await shoot(page, `players-${size}`);
  await firstPlayer.click();
  await page.getByRole("heading", { name: "Bans, lifts and kicks" }).waitFor();
  await page.waitForLoadState("networkidle");
  await shoot(page, `player-${size}`);
  await serverPage(page, survival.serverId);
  await shoot(page, `server-${size}`);
  for (const [tab, ready] of SERVER_TABS) {
    await page.getByRole("tab", { name: tab[0]!.toUpperCase() + tab.slice(1), exact: true }).click();
    await page.waitForSelector(`[role="tabpanel"]:not([hidden]) ${ready}`);
    await shoot(page, `server-${tab}-${size}`);
  }
  await page.goto(`${base}/#/clients`);
  await page.getByRole("link", { name: "Blockworks Launcher" }).waitFor();
  await shoot(page, `clients-${size}`);
  await page.getByRole("link", { name: "Blockworks Launcher" }).click();
  await page.getByRole("heading", { name: "Try sign-in" }).waitFor();
  await shoot(page, `client-${size}`);
  await page.goto(`${base}/#/team`);
  await page.getByRole("heading", { name: "API keys" }).waitFor();
  await shoot(page, `team-${size}`);
  const hooks = page.getByRole("region", { name: "Webhooks" });
  await hooks.getByRole("button", { name: "Deliveries" }).first().click();
  await page.waitForSelector('tr[data-testid="delivery"] [data-status="succeeded"]');
  await Bun.sleep(300);
  await hooks.screenshot({ path: join(OUT, `webhooks-${size}.png`) });
  console.log(`docs/screenshots/webhooks-${size}.png`);
  await page.goto(`${base}/#/audit`);
  await page.getByRole("table", { name: "Audit entries" }).waitFor();
  // The first screen: the filters and the newest entries (the whole page is 25 entries long).
  await page.waitForLoadState("networkidle");
  await page.screenshot({ path: join(OUT, `audit-${size}.png`) });
  console.log(`docs/screenshots/audit-${size}.png`);
  await page.goto(`${base}/#/account`);
  await page.getByRole("table", { name: "Signed-in devices" }).waitFor();
  await shoot(page, `account-${size}`);
  await operationsPages(page, size);
  await page.goto(`${base}/#/status-pages`);
  await page.getByRole("table", { name: "Status pages" }).waitFor();
  await shoot(page, `status-pages-${size}`);
  // The public status page, as a player sees it (no sign-in).
  await page.goto(`${base}/status/${demo.statusSlug}`);
  await shoot(page, `status-page-${size}`);
  await context.close();
}

const darkStatus = await browser.newContext({ viewport: SIZES.desktop, colorScheme: "dark" });
const statusPage = await darkStatus.newPage();
await statusPage.goto(`${base}/status/${demo.statusSlug}`);
await shoot(statusPage, "status-page-dark-desktop");
await darkStatus.close();

const dark = await browser.newContext({ viewport: SIZES.desktop, colorScheme: "dark" });
const page = await dark.newPage();
await signIn(page);
await serverPage(page, survival.serverId);
await shoot(page, "server-dark-desktop");

// BedWars crashes: its page says why it is down, from when.
const restart = await demo.crash("bedwars");
await server.services.monitoring.checkNow(bedwars.serverId);
await serverPage(page, bedwars.serverId);
await page.waitForSelector('[data-testid="down-reason"][data-reason="connection_refused"]');
await dark.close();
const light = await browser.newContext({ viewport: SIZES.desktop, colorScheme: "light" });
const downPage = await light.newPage();
await signIn(downPage);
await downPage.waitForSelector('[data-server="BedWars"] [data-testid="down-reason"]');
await shoot(downPage, "servers-down-desktop");
await restart();

await browser.close();
await demo.stop();
await stopAll();
process.exit(0);
