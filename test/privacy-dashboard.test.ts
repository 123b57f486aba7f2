import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import type { RunningServer } from "../src/app";
import { axeViolations } from "./a11y";
import {
  createServerInBrowser,
  createTeamInBrowser,
  hasChromium,
  launchChromium,
  signUpInBrowser,
} from "./dashboard-driver";
import { sharedServer } from "./harness";
import { uniqueEmail } from "./helpers";
import { agentApi, eventId } from "./servers-fixture";

/** The Privacy section of the team page and a player's export and erase, in Chromium. SCREENSHOTS_DIR keeps what was seen. */
let server: RunningServer;
let browser: Browser | undefined;
const shots = process.env.SCREENSHOTS_DIR;

beforeAll(async () => {
  server = await sharedServer();
  if (hasChromium) browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});

async function shot(page: Page, name: string) {
  if (!shots) return;
  await page.screenshot({ path: join(shots, `${name}-desktop.png`), fullPage: true });
  const size = page.viewportSize();
  await page.setViewportSize({ width: 390, height: 844 });
  await page.screenshot({ path: join(shots, `${name}-phone.png`), fullPage: true });
  if (size) await page.setViewportSize(size);
}

describe("dashboard: privacy", () => {
  test.skipIf(!hasChromium)(
    "an admin exports a player's data as a file, erases them after typing the name, and manages opt-outs and retention",
    async () => {
      const page = await (await browser!.newContext({ acceptDownloads: true })).newPage();
      try {
        await signUpInBrowser(page, server.url, uniqueEmail("dash-privacy"));
        await createTeamInBrowser(page, "Private");
        const { serverId, agentToken } = await createServerInBrowser(page, "Survival", "127.0.0.1", 9);
        const steve = crypto.randomUUID();
        const t = Date.now() - 3600_000;
        const sent = await agentApi(server, agentToken, "POST", "/agent/events", {
          events: [
            { event_id: eventId(), type: "join", uuid: steve, name: "Steve", at: new Date(t).toISOString() },
            { event_id: eventId(), type: "leave", uuid: steve, at: new Date(t + 600_000).toISOString() },
          ],
        });
        expect(sent.status).toBe(200);

        // The actions are on the player's page.
        await page.goto(`${server.url}/#/players/${steve}`);
        const row = page.locator("main");
        await row.getByRole("heading", { name: "Steve" }).waitFor();
        const download = page.waitForEvent("download");
        await row.getByRole("button", { name: "Export data of Steve" }).click();
        const file = await (await download).path();
        const exported = JSON.parse(readFileSync(file!, "utf8"));
        expect(exported.uuid).toBe(steve);
        expect(exported.holders.player_sessions).toHaveLength(1);

        await row.getByRole("button", { name: "Erase Steve" }).click();
        const dialog = page.getByRole("dialog", { name: "Erase Steve?" });
        const confirm = dialog.getByRole("button", { name: "Erase", exact: true });
        expect(await confirm.isDisabled()).toBe(true);
        await dialog.getByLabel("Type their name or UUID to confirm").fill("Stev");
        expect(await confirm.isDisabled()).toBe(true);
        await dialog.getByLabel("Type their name or UUID to confirm").fill("Steve");
        expect(await axeViolations(page, "erase dialog")).toEqual([]);
        await shot(page, "player-erase");
        await confirm.click();
        await page.getByText(/Steve erased/).waitFor();
        await page.goto(`${server.url}/#/servers/${serverId}/players`);
        await page.getByText("No player seen yet").waitFor();

        await page.goto(`${server.url}/#/team`);
        const section = page.getByRole("region", { name: "Privacy" });
        const quiet = crypto.randomUUID();
        await section.getByLabel("Player UUID").fill(quiet);
        await section.getByLabel("Name (optional)").fill("Quiet");
        await section.getByRole("button", { name: "Opt out" }).click();
        await section.getByRole("cell", { name: new RegExp(`^Quiet ${quiet}`) }).waitFor();
        await section.getByLabel(/^Session retention/).fill("30");
        await section.getByLabel(/^Player retention/).fill("180");
        await section.getByRole("button", { name: "Save" }).click();
        await page.getByText("Retention saved").waitFor();
        await section.getByText("Sessions are kept 30 days").waitFor();
        expect(await axeViolations(page, "team privacy")).toEqual([]);
        await shot(page, "team-privacy");

        // Read back from the service after a reload, not the form's own state.
        await page.reload();
        await page.getByRole("region", { name: "Privacy" }).getByText("Sessions are kept 30 days").waitFor();
        expect(await section.getByLabel(/^Player retention/).inputValue()).toBe("180");
        await section.getByRole("button", { name: "Remove Quiet" }).click();
        await page.getByRole("dialog").getByRole("button", { name: "Remove" }).click();
        await section.getByText("Nobody has opted out.").waitFor();
      } finally {
        await page.close();
      }
    },
    120_000,
  );
});
