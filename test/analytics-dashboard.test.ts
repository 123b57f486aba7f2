import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import type { Browser } from "playwright-core";
import type { RunningServer } from "../src/app";
import { csvField, toCsv } from "../web/csv";
import { checkEverywhere } from "./a11y";
import { hasChromium, launchChromium, signUpInBrowser } from "./dashboard-driver";
import { sharedServer } from "./harness";
import { api } from "./helpers";
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

describe("CSV export", () => {
  test("RFC 4180 quoting, CRLF lines, and text cells that a spreadsheet would run as a formula made text", () => {
    expect(csvField('say "hi", then go')).toBe('"say ""hi"", then go"');
    expect(csvField("two\nlines")).toBe('"two\nlines"');
    expect(csvField('=HYPERLINK("x")')).toBe('"\'=HYPERLINK(""x"")"');
    expect(["+1", "-1", "@SUM(A1)", "\tx"].map(csvField)).toEqual(["'+1", "'-1", "'@SUM(A1)", "'\tx"]);
    // Numbers are numbers: a negative one is not a formula.
    expect(csvField(-5)).toBe("-5");
    expect(csvField(null)).toBe("");
    expect(toCsv(["a", "b"], [[1, "x,y"]])).toBe('a,b\r\n1,"x,y"\r\n');
  });
});

describe("dashboard: player analytics", () => {
  test.skipIf(!hasChromium)(
    "the server page shows the analytics with summaries, a CSV of the leaderboard, and the team's zone is set on the team page; axe clean",
    async () => {
      const s = await newServer(server);
      const now = server.services.clock.now();
      const h = 3_600_000;
      const names = ["Alex", "=cmd|' /C calc'!A0", "Steve"];
      const events = names.flatMap((name, i) => {
        const uuid = i === 2 ? "00000000-0000-0000-0009-000000000042" : crypto.randomUUID();
        const a = now - (3 * 24 - i) * h;
        return [
          { event_id: eventId(), type: "join", uuid, name, at: new Date(a).toISOString() },
          { event_id: eventId(), type: "leave", uuid, name, at: new Date(a + (i + 1) * h).toISOString() },
        ];
      });
      events.sort((x, y) => Date.parse(x.at) - Date.parse(y.at));
      expect((await agentApi(server, s.agentToken, "POST", "/agent/events", { events })).status).toBe(200);

      const page = await (await browser!.newContext({ acceptDownloads: true })).newPage();
      await signUpInBrowser(page, server.url, s.owner.email, true);
      await page.goto(`${server.url}/#/servers/${s.serverId}/players`);
      await page.getByRole("heading", { name: "Player analytics" }).waitFor();
      await page.getByText("3 players: 3 new").waitFor();
      await page.getByText(/^Busiest: /).waitFor();
      expect(await page.getByRole("img", { name: /Bar chart of session lengths\. 3 sessions/ }).count()).toBe(1);
      const board = page.getByRole("table").filter({ hasText: "Playtime" }).last();
      await board.getByText("Steve").waitFor();

      const download = page.waitForEvent("download");
      await page.getByRole("button", { name: "Download CSV of the leaderboard" }).click();
      const file = await (await download).path();
      const csv = readFileSync(file, "utf8");
      expect(csv.split("\r\n")[0]).toBe("rank,uuid,name,edition,playtime_seconds");
      expect(csv).toContain(`,'=cmd|' /C calc'!A0,java,7200\r\n`);
      expect(csv).toContain(",Steve,bedrock,10800\r\n");

      expect(await checkEverywhere(page, "server page with analytics")).toEqual([]);
      if (process.env.SCREENSHOTS_DIR) {
        const section = page.locator("section.analytics");
        await section.screenshot({ path: `${process.env.SCREENSHOTS_DIR}/analytics-desktop.png` });
        await page.setViewportSize({ width: 390, height: 844 });
        await section.screenshot({ path: `${process.env.SCREENSHOTS_DIR}/analytics-phone.png` });
        await page.setViewportSize({ width: 1280, height: 860 });
      }

      await page.goto(`${server.url}/#/team`);
      await page.getByLabel("Time zone for analytics (days, weeks, hours)").selectOption("Europe/Berlin");
      await page.getByRole("button", { name: "Save time zone" }).click();
      await page.getByText("Time zone saved").waitFor();
      const team = await api(server, "GET", `/teams/${s.teamId}`, { token: s.owner.token });
      expect(team.body.time_zone).toBe("Europe/Berlin");
      expect(await checkEverywhere(page, "team page")).toEqual([]);
    },
  );
});
