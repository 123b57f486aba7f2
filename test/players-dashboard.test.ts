import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync } from "node:fs";
import type { Browser } from "playwright-core";
import type { RunningServer } from "../src/app";
import { checkEverywhere, VIEWPORTS } from "./a11y";
import { hasChromium, launchChromium, signUpInBrowser } from "./dashboard-driver";
import { sharedServer } from "./harness";
import { api } from "./helpers";
import { agentApi, eventId, newServer } from "./servers-fixture";

let server: RunningServer;
let browser: Browser | undefined;
/** Screenshots for people to look at (not compared): SCREENSHOT_DIR, when set. */
const shots = process.env.SCREENSHOT_DIR;

beforeAll(async () => {
  server = await sharedServer();
  if (hasChromium) browser = await launchChromium();
  if (shots) mkdirSync(shots, { recursive: true });
});
afterAll(async () => {
  await browser?.close();
});

const STEVE = "11111111-1111-4111-8111-111111111111";

describe("dashboard: players", () => {
  test.skipIf(!hasChromium)(
    "the directory pages with Load more and searches; the player page shows names and history, takes a note and bans by name",
    async () => {
      const s = await newServer(server);
      const t0 = Date.now() - 86_400_000;
      // 55 players (a page is 20), and Steve, who was "Steve" before "Steve_MC".
      const events = [
        { type: "join", uuid: STEVE, name: "Steve", at: new Date(t0).toISOString() },
        { type: "leave", uuid: STEVE, at: new Date(t0 + 600_000).toISOString() },
        { type: "join", uuid: STEVE, name: "Steve_MC", at: new Date(t0 + 3_600_000).toISOString() },
        { type: "leave", uuid: STEVE, at: new Date(t0 + 5_400_000).toISOString() },
        ...Array.from({ length: 54 }, (_, i) => ({
          type: "join",
          uuid: crypto.randomUUID(),
          name: `Player${String(i).padStart(2, "0")}`,
          at: new Date(t0 + i * 60_000).toISOString(),
        })),
      ];
      const sent = await agentApi(server, s.agentToken, "POST", "/agent/events", {
        events: events.map((e) => ({ event_id: eventId(), ...e })),
      });
      expect(sent.status).toBe(200);

      const page = await (await browser!.newContext()).newPage();
      try {
        await signUpInBrowser(page, server.url, s.owner.email, true);
        await page.goto(`${server.url}/#/players`);
        const rows = page.getByRole("table", { name: "Players" }).locator("tbody tr");
        await rows.first().waitFor();
        expect(await rows.count()).toBe(20);
        await page.getByRole("button", { name: "Load more" }).click();
        await page.waitForFunction(() => document.querySelectorAll("table[aria-label=Players] tbody tr").length === 40);
        await page.getByRole("button", { name: "Load more" }).click();
        await page.waitForFunction(() => document.querySelectorAll("table[aria-label=Players] tbody tr").length === 55);
        expect(await page.getByRole("button", { name: "Load more" }).count()).toBe(0);

        await page.getByLabel("Search by name or UUID").fill("steve");
        await page.waitForFunction(() => document.querySelectorAll("table[aria-label=Players] tbody tr").length === 1);
        expect(await rows.first().textContent()).toContain("Steve_MC");
        if (shots) {
          await page.setViewportSize(VIEWPORTS.desktop);
          await page.screenshot({ path: `${shots}/players-desktop.png`, fullPage: true });
          await page.setViewportSize(VIEWPORTS.phone);
          await page.screenshot({ path: `${shots}/players-phone.png`, fullPage: true });
          await page.setViewportSize(VIEWPORTS.desktop);
        }
        expect(await checkEverywhere(page, "players")).toEqual([]);

        await page.getByRole("link", { name: "Steve_MC" }).click();
        await page.getByRole("heading", { level: 1, name: "Steve_MC" }).waitFor();
        await page.getByRole("heading", { name: "Names used" }).waitFor();
        const names = await page.locator("section[aria-labelledby=names-h] li").allTextContents();
        expect(names.map((n) => n.split(" — ")[0])).toEqual(["Steve_MC (current)", "Steve"]);
        expect(await page.getByRole("table", { name: "Playtime per server" }).textContent()).toContain("Survival");

        await page.getByLabel("New note").fill("Warned about TNT at spawn");
        await page.getByRole("button", { name: "Add note" }).click();
        await page.getByText("Warned about TNT at spawn", { exact: true }).waitFor();

        await page.getByLabel("Reason").fill("Griefing");
        await page.getByRole("button", { name: "Ban Steve_MC", exact: true }).click();
        await page.getByRole("dialog").getByRole("button", { name: "Ban", exact: true }).click();
        await page.locator('tr[data-moderation="ban"]').waitFor();
        expect(await page.locator('tr[data-moderation="ban"]').textContent()).toContain("Griefing");
        // The ban was made by name and is in force on the server.
        const list = await api(server, "GET", "/server/players", s.as());
        expect(list.body.bans.map((b: any) => [b.uuid, b.name, b.reason])).toEqual([[STEVE, "Steve_MC", "Griefing"]]);
        if (shots) {
          await page.setViewportSize(VIEWPORTS.desktop);
          await page.screenshot({ path: `${shots}/player-desktop.png`, fullPage: true });
          await page.setViewportSize(VIEWPORTS.phone);
          await page.screenshot({ path: `${shots}/player-phone.png`, fullPage: true });
          await page.setViewportSize(VIEWPORTS.desktop);
        }
        expect(await checkEverywhere(page, "player page")).toEqual([]);

        // The server page's table: search and pages.
        await page.goto(`${server.url}/#/servers/${s.serverId}/players`);
        const serverRows = page.getByRole("table", { name: "Players", exact: true }).locator("tbody tr");
        await serverRows.first().waitFor();
        expect(await serverRows.count()).toBe(25);
        await page.getByRole("button", { name: "Next" }).click();
        await page.getByText("26–50 of 55").waitFor();
        await page.getByLabel("Search by name or UUID").fill("player0");
        await page.waitForFunction(() => document.querySelectorAll("table[aria-label=Players] tbody tr").length === 10);
        if (shots) {
          await page.setViewportSize(VIEWPORTS.phone);
          await page.screenshot({ path: `${shots}/server-players-phone.png`, fullPage: true });
          await page.setViewportSize(VIEWPORTS.desktop);
        }
        expect(await checkEverywhere(page, "server players")).toEqual([]);
      } finally {
        await page.close();
      }
    },
    180_000,
  );
});
