import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync } from "node:fs";
import type { Browser, Page } from "playwright-core";
import type { RunningServer } from "../src/app";
import { checkEverywhere } from "./a11y";
import { hasChromium, launchChromium } from "./dashboard-driver";
import { sharedServer } from "./harness";
import { api, type TestUser } from "./helpers";
import { agentApi, eventId, newServer } from "./servers-fixture";

let server: RunningServer;
let browser: Browser | undefined;
beforeAll(async () => {
  server = await sharedServer();
  if (hasChromium) browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});

/** Where the page's screenshots go when asked (NETWORK_SHOTS=dir), to be looked at. */
const shots = process.env.NETWORK_SHOTS;

async function shot(page: Page, name: string) {
  if (!shots) return;
  mkdirSync(shots, { recursive: true });
  await page.screenshot({ path: `${shots}/${name}-desktop.png`, fullPage: true });
  await page.setViewportSize({ width: 390, height: 844 });
  await page.screenshot({ path: `${shots}/${name}-phone.png`, fullPage: true });
  await page.setViewportSize({ width: 1280, height: 860 });
}

async function signIn(page: Page, user: TestUser) {
  await page.goto(`${server.url}/`);
  await page.getByLabel("Email").fill(user.email);
  await page.getByLabel("Password").fill(user.password);
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  await page.getByRole("button", { name: "Sign out", exact: true }).waitFor();
}

describe("the network page in a real browser", () => {
  test.skipIf(!hasChromium)(
    "reached from the Networks page: who is online across it, shares, sessions with hops; a ban made and lifted, a rank added; axe clean",
    async () => {
      const network = "Blockworks / EU";
      const lobby = await newServer(server, { name: "Lobby", kind: "network", network_name: network });
      const created = await api(server, "POST", "/server/servers", {
        token: lobby.owner.token,
        body: {
          team_id: lobby.teamId,
          name: "Survival",
          host: "127.0.0.1",
          port: 9,
          kind: "network",
          network_name: network,
        },
      });
      const survival = { token: created.body.agent_token as string };
      const send = (token: string, e: Record<string, unknown>) =>
        agentApi(server, token, "POST", "/agent/events", { events: [{ event_id: eventId(), ...e }] });
      const notch = crypto.randomUUID();
      // Within the last PLAYER_SESSION_TIMEOUT_SECONDS (300): a sweep would close an open
      // session with older news and take Notch off the online list.
      const t0 = Date.now() - 180_000;
      const at = (s: number) => new Date(t0 + s * 1000).toISOString();
      await send(lobby.agentToken, { type: "join", uuid: notch, name: "Notch", at: at(0) });
      await send(survival.token, { type: "join", uuid: notch, name: "Notch", at: at(120) });
      await send(lobby.agentToken, { type: "leave", uuid: notch, at: at(121) });
      const jeb = crypto.randomUUID();
      await send(lobby.agentToken, { type: "join", uuid: jeb, name: "jeb_", at: at(10) });
      await send(lobby.agentToken, { type: "leave", uuid: jeb, at: at(100) });

      const context = await browser!.newContext({ viewport: { width: 1280, height: 860 } });
      const page = await context.newPage();
      try {
        await signIn(page, lobby.owner);
        await page.goto(`${server.url}/#/networks`);
        await page.getByRole("link", { name: network }).click();
        await page.getByRole("heading", { name: `Network ${network}` }).waitFor();
        expect(page.url()).toEndWith(`#/networks/${encodeURIComponent(network)}`);

        const online = page.getByRole("table", { name: "Players online" });
        await online.getByRole("row", { name: /Notch/ }).waitFor();
        expect(await online.getByRole("row").count()).toBe(2);
        expect(await online.getByRole("row", { name: /Notch/ }).textContent()).toContain("Survival");
        await page.getByRole("heading", { name: "Online now: 1" }).waitFor();
        // Lobby: 121 s + 90 s; Survival: the running session.
        const lobbyRow = page.locator('tr[data-server="Lobby"]');
        expect(await lobbyRow.textContent()).toContain("0.1 h");
        expect(await lobbyRow.textContent()).toContain("2 (67%)");
        const hops = page.locator(`tr[data-session="Notch"] ol.hops li`);
        expect(await hops.allTextContents()).toEqual(["Lobby", "Survival"]);

        const form = page.getByRole("form", { name: "Ban a player on the network" });
        await form.getByLabel("Player name").fill("jeb_");
        await form.getByLabel("Reason").fill("Griefing spawn");
        await form.getByRole("button", { name: "Ban on the network" }).click();
        await page.locator('tr[data-ban="jeb_"]').waitFor();
        const config = await agentApi(server, survival.token, "GET", "/agent/config");
        expect(config.body.bans.map((b: any) => [b.name, b.reason])).toEqual([["jeb_", "Griefing spawn"]]);

        const ranks = page.getByRole("form", { name: "Add a network rank" });
        await ranks.getByLabel("Rank name").fill("vip");
        await ranks.getByLabel("Prefix").fill("[VIP] ");
        await ranks.getByRole("button", { name: "Add rank" }).click();
        await page
          .getByRole("table", { name: "Network ranks" })
          .getByRole("cell", { name: "vip", exact: true })
          .waitFor();

        expect(await checkEverywhere(page, "network page")).toEqual([]);
        await shot(page, "network");

        await page.getByRole("button", { name: "Lift jeb_" }).click();
        await page.getByRole("dialog").getByRole("button", { name: "Lift" }).click();
        await page.getByText("No network bans in force.").waitFor();
        const after = await agentApi(server, survival.token, "GET", "/agent/config");
        expect([after.body.bans, after.body.pardons.map((p: any) => p.uuid)]).toEqual([[], [jeb]]);
      } catch (e) {
        if (shots) await page.screenshot({ path: `${shots}/network-failed.png`, fullPage: true });
        throw e;
      } finally {
        await context.close();
      }
    },
    120_000,
  );

  test.skipIf(!hasChromium)(
    "a busy network lists its first 12 players online, and all of them on asking",
    async () => {
      const network = "Busy";
      const lobby = await newServer(server, { name: "Hub", kind: "network", network_name: network });
      const at = new Date(Date.now() - 60_000).toISOString();
      const names = Array.from({ length: 14 }, (_, i) => `Player${String(i).padStart(2, "0")}`);
      const joined = await agentApi(server, lobby.agentToken, "POST", "/agent/events", {
        events: names.map((name) => ({ event_id: eventId(), type: "join", uuid: crypto.randomUUID(), name, at })),
      });
      expect(joined.status).toBe(200);
      const context = await browser!.newContext({ viewport: { width: 390, height: 844 } });
      const page = await context.newPage();
      try {
        await signIn(page, lobby.owner);
        await page.goto(`${server.url}/#/networks/${network}`);
        await page.getByRole("heading", { name: "Online now: 14" }).waitFor();
        const rows = page.getByRole("table", { name: "Players online" }).getByRole("row");
        expect(await rows.count()).toBe(1 + 12);
        await page.getByRole("button", { name: "Show all 14" }).click();
        expect(await rows.count()).toBe(1 + 14);
        await page.getByRole("button", { name: "Show the first 12" }).click();
        expect(await rows.count()).toBe(1 + 12);
      } finally {
        await context.close();
      }
    },
    60_000,
  );
});
