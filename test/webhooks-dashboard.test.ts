import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser } from "playwright-core";
import type { RunningServer } from "../src/app";
import { axeViolations } from "./a11y";
import { createTeamInBrowser, hasChromium, launchChromium, signUpInBrowser } from "./dashboard-driver";
import { startTestServer } from "./harness";
import { addMember, api, newTeam, newUser, uniqueEmail } from "./helpers";
import { FAST_WEBHOOKS, startReceiver } from "./webhook-receiver";

let server: RunningServer;
let browser: Browser | undefined;
const receiver = startReceiver();

beforeAll(async () => {
  // A server of its own that delivers (the run's shared one does not); its circuit opens after
  // two failures in a row and stays open until resumed.
  server = await startTestServer({
    ...FAST_WEBHOOKS,
    WEBHOOK_CIRCUIT_FAILURES: "2",
    WEBHOOK_CIRCUIT_PAUSE_SECONDS: "0",
    WEBHOOK_DISABLE_AFTER_FAILURES: "1000",
  });
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
        expect(await axeViolations(page, "webhooks")).toEqual([]);
      } finally {
        await page.close();
      }
    },
    120_000,
  );

  test.skipIf(!hasChromium)(
    "a paused endpoint says so and an admin resumes it; a viewer sees its URL masked and cannot change it",
    async () => {
      const token = "Zq8sEcReTtOkEn-aBcDeFgHiJkLmNoP";
      const failing = startReceiver(`/api/webhooks/1234567890123456789/${token}`);
      // Failing until paused: two deliveries in flight at once could otherwise end in a success.
      failing.plan = Array(20).fill(503);
      const owner = await newUser(server, "dash-owner");
      const viewer = await newUser(server, "dash-viewer");
      const teamId = await newTeam(server, owner, "Paused");
      await addMember(server, owner, teamId, viewer, "viewer");
      const created = await api(server, "POST", `/teams/${teamId}/webhooks`, {
        token: owner.token,
        body: { url: failing.url, kind: "discord" },
      });
      expect(created.status).toBe(201);
      const path = `/teams/${teamId}/webhooks/${created.body.endpoint.endpoint_id}`;
      for (let i = 0; i < 2; i++) await api(server, "POST", `${path}/test`, { token: owner.token });
      for (let deadline = Date.now() + 10_000; ; await Bun.sleep(20)) {
        const now = await api(server, "GET", path, { token: owner.token });
        if (now.body.paused_at) break;
        if (Date.now() > deadline) {
          const log = await api(server, "GET", `${path}/deliveries`, { token: owner.token });
          throw new Error(`not paused after two failures: ${now.text} ${log.text}`);
        }
      }
      // Nothing is sent while it is paused; from now on the receiver answers.
      failing.plan = [];
      const failed = failing.got.length;

      const asViewer = await (await browser!.newContext()).newPage();
      try {
        await signUpInBrowser(asViewer, server.url, viewer.email, true);
        await asViewer.goto(`${server.url}/#/team`);
        const url = (await asViewer.getByTestId("hook-url").textContent())!;
        expect(url).not.toContain(token);
        expect(url).toBe(`http://127.0.0.1:${failing.port}/…mNoP`);
        expect(await asViewer.content()).not.toContain(token);
        expect(await asViewer.getByTestId("hook-state").textContent()).toContain("paused");
        expect(await asViewer.getByRole("button", { name: "Resume" }).count()).toBe(0);
      } finally {
        await asViewer.close();
      }

      const asOwner = await (await browser!.newContext()).newPage();
      try {
        await signUpInBrowser(asOwner, server.url, owner.email, true);
        await asOwner.goto(`${server.url}/#/team`);
        expect(await asOwner.getByTestId("hook-url").textContent()).toBe(failing.url);
        const state = asOwner.getByTestId("hook-state");
        expect(await state.textContent()).toContain("paused: failing");
        expect(await asOwner.getByRole("button", { name: "Send test" }).isDisabled()).toBe(true);
        expect(await axeViolations(asOwner, "paused endpoint")).toEqual([]);
        await asOwner.getByRole("button", { name: "Resume" }).click();
        await asOwner.waitForFunction(
          () => document.querySelector('[data-testid="hook-state"]')?.textContent?.includes("enabled") === true,
        );
        // What waited while it was paused is delivered now.
        await failing.until(failed + 2);
        await server.services.webhookWorker.drain();
        const log = await api(server, "GET", `${path}/deliveries`, { token: owner.token });
        expect(log.body.deliveries.map((d: { status: string }) => d.status)).toEqual(["succeeded", "succeeded"]);
        expect(await asOwner.getByRole("button", { name: "Resume" }).count()).toBe(0);
      } finally {
        await asOwner.close();
        failing.stop();
      }
    },
    120_000,
  );
});
