import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser, Page } from "playwright-core";
import { startStatusResponder } from "../scripts/demo-mc-server";
import type { RunningServer } from "../src/app";
import {
  createServerInBrowser,
  createTeamInBrowser,
  hasChromium,
  launchChromium,
  serverTab,
  signUpInBrowser,
} from "./dashboard-driver";
import { sharedServer } from "./harness";
import { uniqueEmail } from "./helpers";

let server: RunningServer;
let browser: Browser | undefined;

beforeAll(async () => {
  server = await sharedServer();
  if (hasChromium) browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});

/** What each chart's last draw showed: its x range (Unix seconds) and its axes' labels. */
function drawn(page: Page) {
  return page.$$eval("figure.chart [data-points]", (els) =>
    (els as HTMLElement[]).map((el) => ({
      min: Number(el.dataset.xMin),
      max: Number(el.dataset.xMax),
      axes: el.dataset.axes?.split("|"),
    })),
  );
}

/** Waits until every chart has drawn a range `seconds` long. */
const spanOf = (page: Page, seconds: number) =>
  page.waitForFunction((s) => {
    const els = [...document.querySelectorAll<HTMLElement>("figure.chart [data-points]")];
    return els.length === 5 && els.every((el) => Number(el.dataset.xMax) - Number(el.dataset.xMin) === s);
  }, seconds);

describe("a new server on the dashboard", () => {
  test.skipIf(!hasChromium)(
    "its chart spans the window asked for, ending now, with one labelled axis per series; down, the list and its page say why and since when",
    async () => {
      const mc = await startStatusResponder({ players: 2, maxPlayers: 20 });
      const page = await (await browser!.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
      try {
        await signUpInBrowser(page, server.url, uniqueEmail("chart"));
        await createTeamInBrowser(page, "Chart Team");
        const { serverId } = await createServerInBrowser(page, "Fresh", "127.0.0.1", mc.port);
        await page.waitForSelector('[data-live="true"]');
        // Its first check: one bucket of history, the case that drew a span of years.
        await server.services.monitoring.checkNow(serverId);
        await page.waitForSelector('h1 .badge[data-status="online"]');
        await page.reload();
        await serverTab(page, "Overview");
        await page.waitForSelector("figure.chart [data-x-min]");
        await spanOf(page, 3600);
        const hour = await drawn(page);
        for (const chart of hour) expect(Math.abs(chart.max - Date.now() / 1000)).toBeLessThan(120);
        // One chart a series, each with its own labelled y axis, all on the same time axis.
        expect(hour.map((c) => c.axes)).toEqual([
          ["", "Players"],
          ["", "Latency (ms)"],
          ["", "TPS"],
          ["", "MSPT (ms)"],
          ["", "Memory (MB)"],
        ]);
        expect(new Set(hour.map((c) => `${c.min}-${c.max}`)).size).toBe(1);

        await page.getByRole("button", { name: "24h", exact: true }).click();
        await spanOf(page, 86_400);
        for (const chart of await drawn(page)) expect(Math.abs(chart.max - Date.now() / 1000)).toBeLessThan(120);

        // Nothing listens on its port any more: the page learns the flip live and says why.
        await mc.close();
        await server.services.monitoring.checkNow(serverId);
        await page.waitForSelector('[data-testid="down-reason"][data-reason="connection_refused"]');
        const note = await page.getByTestId("down-reason").textContent();
        expect(note).toMatch(/^Down since .+: connection refused/);
        expect(note).toContain("nothing listens on that port");

        await page.goto(`${server.url}/#/servers`);
        const item = page.locator('[data-server="Fresh"]');
        await item.locator('[data-testid="down-reason"][data-reason="connection_refused"]').waitFor();
        expect(await item.getByTestId("down-reason").textContent()).toMatch(/^Down since .+: connection refused$/);
      } finally {
        await page.context().close();
        await mc.close();
      }
    },
    90_000,
  );
});
