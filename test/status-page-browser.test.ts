import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync } from "node:fs";
import type { Browser, Page } from "playwright-core";
import { type Demo, runDemo } from "../scripts/demo";
import type { RunningServer } from "../src/app";
import { axeViolations, checkEverywhere, SCHEMES, VIEWPORTS } from "./a11y";
import { hasChromium, launchChromium } from "./dashboard-driver";
import { startTestServer, stopTestServer } from "./harness";

/**
 * The demo's published status page in Chromium, with and without JavaScript, at phone and desktop
 * width, light and dark; and the dashboard page that manages status pages. Screenshots go to
 * STATUS_SHOTS=dir when asked (docs/screenshots/ holds the ones looked at).
 */
let srv: RunningServer;
let demo: Demo;
let browser: Browser | undefined;
const shots = process.env.STATUS_SHOTS;

beforeAll(async () => {
  srv = await startTestServer({
    PINGER_ENABLED: "true",
    PING_INTERVAL_SECONDS: "5",
    METRICS_FLUSH_MS: "1000",
  });
  // Tagged: on PostgreSQL the suite shares one database, where demo.test.ts runs its own demo.
  demo = await runDemo({ baseUrl: srv.url, live: false, incidents: false, tag: "status" });
  if (hasChromium) browser = await launchChromium();
}, 300_000);
afterAll(async () => {
  await browser?.close();
  await demo?.stop();
  await stopTestServer(srv);
});

/** The widget until `ok` holds of it (the page and the widget are read again every 10 s at most). */
async function widgetUntil(ok: (servers: { name: string; status: string }[]) => boolean, ms = 90_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const res = await fetch(`${srv.url}/status-pages/${demo.statusSlug}/widget`);
    const body = (await res.json()) as { servers: { name: string; status: string }[] };
    if (ok(body.servers)) return body.servers;
    if (Date.now() > deadline) throw new Error(`the widget never got there: ${JSON.stringify(body.servers)}`);
    await Bun.sleep(500);
  }
}

async function shot(page: Page, name: string) {
  if (!shots) return;
  mkdirSync(shots, { recursive: true });
  await page.screenshot({ path: `${shots}/${name}.png`, fullPage: true });
}

describe("status page in a browser", () => {
  test.skipIf(!hasChromium)(
    "a crash followed live without a reload; with and without JavaScript, 390 and 1280 px, light and dark: complete, axe clean; a bar's figures on keyboard focus",
    async () => {
      // An outage for the history: BedWars crashes, is found down, comes back and is found up. A
      // page opened before the crash (with JavaScript) follows it without a reload.
      await widgetUntil((s) => s.length === 4 && s.every((x) => x.status === "up"));
      const live = await browser!.newContext({ viewport: VIEWPORTS.desktop });
      try {
        const page = await live.newPage();
        await page.goto(`${srv.url}/status/${demo.statusSlug}`);
        const state = page.locator('li.server:has(h3:text-is("BedWars")) [data-field="state"]');
        expect(await state.textContent()).toBe("Operational");
        const restart = await demo.crash("bedwars");
        await page.waitForFunction(
          () =>
            [...document.querySelectorAll("li.server")].some(
              (li) =>
                li.querySelector("h3")?.textContent === "BedWars" &&
                li.querySelector('[data-field="state"]')?.textContent === "Down",
            ),
          undefined,
          { timeout: 150_000 },
        );
        expect(await page.locator("#overall").textContent()).toBe("1 of 4 servers down");
        await widgetUntil((s) => s.find((x) => x.name === "BedWars")?.status === "down");
        await restart();
      } finally {
        await live.close();
      }
      await widgetUntil((s) => s.every((x) => x.status === "up"));

      const url = `${srv.url}/status/${demo.statusSlug}`;
      const problems: string[] = [];
      for (const javaScriptEnabled of [false, true])
        for (const scheme of SCHEMES)
          for (const [size, viewport] of Object.entries(VIEWPORTS)) {
            const context = await browser!.newContext({ viewport, colorScheme: scheme, javaScriptEnabled });
            const page = await context.newPage();
            const where = `status page (${javaScriptEnabled ? "JS" : "no JS"}, ${scheme}, ${size})`;
            try {
              await page.goto(url);
              expect(await page.getByRole("heading", { level: 1 }).textContent()).toBe("Blockworks");
              expect(await page.locator("li.server").count()).toBe(4);
              expect(await page.locator("ol.bars").first().locator("li").count()).toBe(90);
              expect(await page.getByRole("heading", { name: "Incident history" }).count()).toBe(1);
              expect(await page.locator('section[aria-labelledby="incidents-h"] li.inc h3').first().textContent()).toBe(
                "BedWars was down",
              );
              expect(await page.locator(".motd .mc-c6").first().textContent()).toContain("Blockworks Network");
              // Keyboard: the first bar takes focus and shows its figures.
              await page.locator("ol.bars li").last().focus();
              const tip = page.locator("ol.bars li:focus .tip");
              expect(await tip.textContent()).toMatch(/^\d+ \w{3} \d{4}: (\d+\.\d\d% uptime|no data)/);
              expect((await tip.boundingBox())!.width).toBeGreaterThan(60);
              if (javaScriptEnabled) problems.push(...(await axeViolations(page, where)));
              await page.locator("ol.bars li").last().blur();
              if (size === "desktop" || scheme === "light")
                await shot(
                  page,
                  `status-page${scheme === "dark" ? "-dark" : ""}-${size}${javaScriptEnabled ? "" : "-nojs"}`,
                );
            } finally {
              await context.close();
            }
          }
      expect(problems).toEqual([]);
    },
    300_000,
  );
});

describe("dashboard: status pages", () => {
  test.skipIf(!hasChromium)(
    "the owner sees the demo's page, creates another, publishes it and it answers; axe clean everywhere",
    async () => {
      const context = await browser!.newContext({ viewport: VIEWPORTS.desktop });
      const page = await context.newPage();
      try {
        await page.goto(`${srv.url}/`);
        await page.getByLabel("Email").fill(demo.email);
        await page.getByLabel("Password").fill(demo.password);
        await page.getByRole("button", { name: "Sign in", exact: true }).click();
        await page.getByRole("button", { name: "Sign out", exact: true }).waitFor();
        await page.getByRole("link", { name: "Status pages" }).click();
        const table = page.getByRole("table", { name: "Status pages" });
        await table.waitFor();
        expect(await table.textContent()).toContain(`/status/${demo.statusSlug}`);
        expect(await table.textContent()).toContain("published");
        expect(await checkEverywhere(page, "status pages")).toEqual([]);
        for (const [size, viewport] of Object.entries(VIEWPORTS)) {
          await page.setViewportSize(viewport);
          await shot(page, `status-pages-${size}`);
        }
        await page.setViewportSize(VIEWPORTS.desktop);

        await page.getByRole("button", { name: "New status page" }).click();
        const form = page.getByRole("form", { name: "New status page" });
        await form.getByLabel("Title").fill("Creative only");
        await form.getByLabel("Slug").fill("creative-only");
        await form.getByLabel("Creative Plots").check();
        await form.getByLabel("Players online").check();
        expect(await checkEverywhere(page, "new status page form")).toEqual([]);
        await form.getByRole("button", { name: "Create page" }).click();
        const row = page.getByTestId("status-page-row").filter({ hasText: "Creative only" });
        await row.waitFor();
        expect(await row.textContent()).toContain("draft");
        expect((await fetch(`${srv.url}/status/creative-only`)).status).toBe(404);
        await row.getByRole("button", { name: "Publish Creative only" }).click();
        await row.getByText("published").waitFor();
        const res = await fetch(`${srv.url}/status/creative-only`);
        expect(res.status).toBe(200);
        const html = await res.text();
        expect(html).toContain("Creative Plots");
        expect(html).not.toContain("BedWars");
      } finally {
        await context.close();
      }
    },
    200_000,
  );
});
