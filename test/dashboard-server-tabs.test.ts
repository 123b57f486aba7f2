import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser, Page } from "playwright-core";
import type { RunningServer } from "../src/app";
import { offlineUuid } from "../src/identity/protocol";
import { checkEverywhere, focused } from "./a11y";
import { hasChromium, launchChromium, signUpInBrowser } from "./dashboard-driver";
import { sharedServer } from "./harness";
import { api, newTeam, newUser, type TestUser } from "./helpers";

/**
 * The server page's tabs (WAI-ARIA tabs: keyboard, one tab in the Tab order, the selection in the
 * address and the history) and its charts (one a series, each with its labelled axis and its
 * summary in words), in Chromium at desktop and phone width.
 */

let server: RunningServer;
let browser: Browser | undefined;
let owner: TestUser;
let serverId: string;
let agentToken: string;

beforeAll(async () => {
  server = await sharedServer();
  if (!hasChromium) return;
  browser = await launchChromium();
  owner = await newUser(server, "tabs-owner");
  const teamId = await newTeam(server, owner, "Tabs Team");
  const created = await api(server, "POST", "/server/servers", {
    token: owner.token,
    body: { team_id: teamId, name: "Tabbed", host: "127.0.0.1", port: 9, kind: "single" },
  });
  expect(created.status).toBe(201);
  serverId = created.body.server_id;
  agentToken = created.body.agent_token;
  const srv = { token: owner.token, headers: { "x-server-id": serverId } };
  expect(
    (await api(server, "POST", "/server/bans", { ...srv, body: { uuid: offlineUuid("Herobrine"), name: "Herobrine" } }))
      .status,
  ).toBe(201);
  expect(
    (
      await api(server, "POST", "/agent/events", {
        token: agentToken,
        body: { events: [{ event_id: "tabs-join", type: "join", uuid: offlineUuid("Steve"), name: "Steve" }] },
      })
    ).status,
  ).toBe(200);
});

afterAll(async () => {
  await browser?.close();
});

/** The selected tab's name, the focused element and the address's tab segment. */
async function state(page: Page) {
  const selected = await page.locator('[role="tab"][aria-selected="true"]').textContent();
  const inTabOrder = await page.locator('[role="tab"][tabindex="0"]').allTextContents();
  const hash = new URL(page.url()).hash;
  return { selected, inTabOrder, focus: await focused(page), hash: hash.split("/").slice(3).join("/") };
}

const panel = (page: Page) => page.locator('[role="tabpanel"]:not([hidden])');

describe("the server page's tabs", () => {
  test.skipIf(!hasChromium)(
    "arrow keys, Home and End move between the tabs; the address keeps the tab through a reload and the back button; the tablist names its panel",
    async () => {
      const page = await (await browser!.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
      try {
        await signUpInBrowser(page, server.url, owner.email, true);
        await page.goto(`${server.url}/#/servers/${serverId}`);
        const tabs = page.getByRole("tablist", { name: "Server sections" }).getByRole("tab");
        await tabs.first().waitFor();
        expect(await tabs.allTextContents()).toEqual(["Overview", "Players", "Moderation", "Settings"]);
        expect(await state(page)).toMatchObject({ selected: "Overview", inTabOrder: ["Overview"], hash: "" });
        await panel(page).getByRole("heading", { name: "History" }).waitFor();

        // The panel is labelled by its tab, and the tab controls the panel.
        const overview = page.getByRole("tab", { name: "Overview" });
        const panelId = await overview.getAttribute("aria-controls");
        expect(await page.locator(`[id="${panelId}"]`).getAttribute("aria-labelledby")).toBe(
          await overview.getAttribute("id"),
        );

        await overview.focus();
        const seen = [];
        for (const key of ["ArrowRight", "ArrowRight", "ArrowRight", "ArrowRight", "ArrowLeft", "Home", "End"]) {
          await page.keyboard.press(key);
          await page.waitForFunction(
            () => document.activeElement?.getAttribute("aria-selected") === "true",
            undefined,
            { timeout: 3000 },
          );
          const s = await state(page);
          seen.push(`${key}: ${s.selected} ${s.hash || "-"} ${s.focus} ${s.inTabOrder.join(",")}`);
        }
        expect(seen).toEqual([
          'ArrowRight: Players players button "Players" Players',
          'ArrowRight: Moderation moderation button "Moderation" Moderation',
          'ArrowRight: Settings settings button "Settings" Settings',
          // Past the last, the first again; the overview is the page's own address.
          'ArrowRight: Overview - button "Overview" Overview',
          'ArrowLeft: Settings settings button "Settings" Settings',
          'Home: Overview - button "Overview" Overview',
          'End: Settings settings button "Settings" Settings',
        ]);
        // Each panel shows its sections.
        await panel(page).getByRole("heading", { name: "Agent" }).waitFor();
        await panel(page).getByRole("form", { name: "Server settings" }).waitFor();
        await panel(page).getByRole("button", { name: "Delete server" }).waitFor();

        // Tab from the selected tab goes into its panel, not to the other tabs.
        await page.keyboard.press("Tab");
        expect(await page.evaluate(() => document.activeElement?.getAttribute("role"))).toBe("tabpanel");

        // Back walks the tabs in the order they were shown.
        const back = [];
        for (let i = 0; i < 4; i++) {
          const from = new URL(page.url()).hash;
          await page.goBack();
          await page.waitForFunction(
            (h) => location.hash !== h && document.querySelector('[role="tab"][aria-selected="true"]'),
            from,
          );
          back.push((await state(page)).selected);
        }
        expect(back).toEqual(["Overview", "Settings", "Overview", "Settings"]);
        await page.goForward();
        await page.waitForSelector('[role="tab"][aria-selected="true"]:text-is("Overview")');

        // A link to a tab opens it, after a reload too; focus is not taken from where the browser put it.
        await page.goto(`${server.url}/#/servers/${serverId}/moderation`);
        await page.reload();
        await panel(page).locator('tr[data-ban="Herobrine"]').waitFor();
        expect((await state(page)).selected).toBe("Moderation");
        await panel(page).getByRole("button", { name: "Kick Steve" }).waitFor();
        // A click selects too, and the page heading keeps its place (no focus jump on a tab change).
        await page.getByRole("tab", { name: "Players" }).click();
        await panel(page).getByRole("table", { name: "Players", exact: true }).waitFor();
        expect(await focused(page)).toBe('button "Players"');
        // An unknown tab in the address is the overview.
        await page.goto(`${server.url}/#/servers/${serverId}/nonsense`);
        await page.waitForSelector('[role="tab"][aria-selected="true"]:text-is("Overview")');
      } finally {
        await page.context().close();
      }
    },
    90_000,
  );

  test.skipIf(!hasChromium)(
    "every tab passes axe and the field checks, light and dark, and at 390 px nothing is wider than the screen",
    async () => {
      const page = await (await browser!.newContext({ viewport: { width: 390, height: 844 } })).newPage();
      try {
        await signUpInBrowser(page, server.url, owner.email, true);
        const problems: string[] = [];
        const ready: Record<string, string> = {
          overview: 'figure.chart[data-chart="memory"] [data-x-min]',
          players: 'table[aria-label="Players"]',
          moderation: 'tr[data-ban="Herobrine"]',
          settings: '[data-testid="agent-command"]',
        };
        for (const [tab, selector] of Object.entries(ready)) {
          await page.goto(`${server.url}/#/servers/${serverId}${tab === "overview" ? "" : `/${tab}`}`);
          await page.waitForSelector(`[role="tabpanel"]:not([hidden]) ${selector}`);
          problems.push(...(await checkEverywhere(page, `server ${tab}`)));
          await page.setViewportSize({ width: 390, height: 844 });
          await page.waitForTimeout(100);
          const wide = await page.evaluate(() => ({
            page: document.documentElement.scrollWidth,
            tabs: document.querySelector('[role="tablist"]')!.getBoundingClientRect().right,
            bar: document.querySelector(".tab-bar")!.getBoundingClientRect().right,
          }));
          if (wide.page > 390 || wide.bar > 390) problems.push(`${tab}: wider than 390 px: ${JSON.stringify(wide)}`);
        }
        expect(problems).toEqual([]);
      } finally {
        await page.context().close();
      }
    },
    180_000,
  );
});

describe("the server page's charts", () => {
  test.skipIf(!hasChromium)(
    "one chart a series with its own labelled axis on the same time axis; the summaries follow the data; hovering one shows the moment on all",
    async () => {
      const page = await (await browser!.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
      try {
        await signUpInBrowser(page, server.url, owner.email, true);
        await page.goto(`${server.url}/#/servers/${serverId}`);
        await page.waitForSelector('[data-live="true"]');
        await page.waitForSelector('figure.chart[data-chart="memory"] [data-x-min]');
        const charts = await page.$$eval("figure.chart", (figs) =>
          figs.map((f) => {
            const plot = f.querySelector<HTMLElement>("[data-points]")!;
            return {
              chart: f.dataset.chart,
              title: f.querySelector("h3")!.textContent,
              axes: plot.dataset.axes,
              span: Number(plot.dataset.xMax) - Number(plot.dataset.xMin),
              name: plot.getAttribute("aria-label"),
            };
          }),
        );
        expect(charts).toEqual([
          { chart: "players", title: "Players online", axes: "|Players", span: 3600, name: "Players online, last 1h" },
          { chart: "latency", title: "Latency", axes: "|Latency (ms)", span: 3600, name: "Latency, last 1h" },
          {
            chart: "tps",
            title: "TPS (ticks per second)",
            axes: "|TPS",
            span: 3600,
            name: "TPS (ticks per second), last 1h",
          },
          {
            chart: "mspt",
            title: "MSPT (milliseconds per tick)",
            axes: "|MSPT (ms)",
            span: 3600,
            name: "MSPT (milliseconds per tick), last 1h",
          },
          { chart: "memory", title: "Memory", axes: "|Memory (MB)", span: 3600, name: "Memory, last 1h" },
        ]);

        const summary = (chart: string) =>
          page.locator(`figure.chart[data-chart="${chart}"] [data-testid="chart-summary"]`);
        // Each summary is the chart's description for a screen reader.
        const plot = page.locator('figure.chart[data-chart="tps"] [role="img"]');
        expect(await page.locator(`[id="${await plot.getAttribute("aria-describedby")}"]`).textContent()).toBe(
          await summary("tps").textContent(),
        );

        for (const [tps, mspt, players, memory] of [
          [19.8, 20.5, 3, 1500],
          [18.9, 48.5, 7, 2048],
          [19.6, 30, 5, 1800],
        ] as const) {
          const before = await page.locator('figure.chart[data-chart="tps"] [data-points]').getAttribute("data-points");
          const hb = await api(server, "POST", "/agent/heartbeat", {
            token: agentToken,
            body: { tps, mspt, players_online: players, memory_used_mb: memory, memory_max_mb: 4096 },
          });
          expect(hb.status).toBe(200);
          await page.waitForFunction(
            (n) =>
              document.querySelector('figure.chart[data-chart="tps"] [data-points]')?.getAttribute("data-points") !== n,
            before,
          );
        }
        expect(await summary("tps").textContent()).toMatch(/^TPS min 18\.9 at .+, average 19\.4, latest 19\.6\.$/);
        expect(await summary("mspt").textContent()).toMatch(/^MSPT max 48\.5 ms at .+, average 33 ms, latest 30 ms\.$/);
        expect(await summary("players").textContent()).toMatch(/^Peak 7 players at .+, fewest 3 at .+, latest 5\.$/);
        expect(await summary("memory").textContent()).toMatch(
          /^Memory peak 2,048 MB of 4,096 MB at .+, latest 1,800 MB\.$/,
        );
        // Nothing pings port 9 here: the latency chart says it has nothing yet.
        expect(await summary("latency").textContent()).toBe("No pings in this window yet.");

        // One cursor: the pointer over the TPS chart shows that moment's figure on the memory chart too.
        const over = page.locator('figure.chart[data-chart="tps"] .u-over');
        await over.scrollIntoViewIfNeeded();
        const box = (await over.boundingBox())!;
        await page.mouse.move(box.x + box.width - 2, box.y + box.height / 2);
        const readout = (chart: string) => page.locator(`figure.chart[data-chart="${chart}"] .readout`);
        await page.waitForFunction(() =>
          /MB at /.test(document.querySelector('figure.chart[data-chart="memory"] .readout')?.textContent ?? ""),
        );
        // The heartbeats came within a second: whichever the cursor found, every chart shows that one.
        const tpsAt = (await readout("tps").textContent())!;
        const memoryOf: Record<string, string> = { "19.8": "1,500", "18.9": "2,048", "19.6": "1,800" };
        const [tpsValue, when] = tpsAt.split(" at ");
        expect(Object.keys(memoryOf)).toContain(tpsValue!);
        expect(await readout("memory").textContent()).toBe(`${memoryOf[tpsValue!]} / 4,096 MB at ${when}`);
        // No ping, no latency figure at that moment.
        expect(await readout("latency").textContent()).toBe("");
      } finally {
        await page.context().close();
      }
    },
    90_000,
  );
});
