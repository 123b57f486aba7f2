import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import AxeBuilder from "@axe-core/playwright";
import type { Browser } from "playwright-core";
import type { RunningServer } from "../src/app";
import { createTeamInBrowser, hasChromium, launchChromium, signUpInBrowser } from "./dashboard-driver";
import { startTestServer } from "./harness";
import { uniqueEmail } from "./helpers";
import { FAST_WEBHOOKS, startReceiver } from "./webhook-receiver";

let server: RunningServer;
let browser: Browser | undefined;
const receiver = startReceiver();

beforeAll(async () => {
  // A server of its own that delivers (the run's shared one does not).
  server = await startTestServer(FAST_WEBHOOKS);
  if (hasChromium) browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  receiver.stop();
  await server.stop();
});

describe("dashboard: webhooks", () => {
  test.skipIf(!hasChromium)(
    "an admin adds an endpoint (secret shown once), sends a test, sees it delivered with its latency, and redelivers it",
    async () => {
      const page = await (await browser!.newContext()).newPage();
      try {
        await signUpInBrowser(page, server.url, uniqueEmail("dash-hooks"));
        await createTeamInBrowser(page, "Hooked");
        await page.getByLabel("Endpoint URL").fill(receiver.url);
        await page.getByLabel("server.down").check();
        await page.getByLabel("server.up").check();
        await page.getByRole("button", { name: "Add endpoint" }).click();
        const secret = await page.getByTestId("secret").textContent();
        expect(secret).toMatch(/^whsec_/);
        await page.getByRole("button", { name: "I saved it" }).click();
        expect(await page.getByTestId("secret").count()).toBe(0);
        const row = page.getByRole("table", { name: "Webhook endpoints" }).getByRole("row").nth(1);
        expect(await row.textContent()).toContain("server.down, server.up");
        await row.getByRole("button", { name: "Send test" }).click();
        await page.waitForSelector('tr[data-testid="delivery"] [data-status="succeeded"]');
        const delivery = page.getByTestId("delivery").first();
        expect(await delivery.textContent()).toMatch(/webhook\.test.*succeeded.*1.*200.*\d+ ms/);
        expect(receiver.got).toHaveLength(1);
        await delivery.getByRole("button", { name: "Redeliver" }).click();
        await receiver.until(2);
        await page.waitForFunction(() => document.querySelectorAll('tr[data-testid="delivery"]').length === 2);
        expect(receiver.got[1]!.headers["webhook-id"]).toBe(receiver.got[0]!.headers["webhook-id"]);
        const result = await new AxeBuilder({ page }).analyze();
        const bad = result.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
        expect(bad.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`)).toEqual([]);
      } finally {
        await page.close();
      }
    },
    120_000,
  );
});
