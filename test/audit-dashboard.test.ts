import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser, Page } from "playwright-core";
import type { RunningServer } from "../src/app";
import { checkEverywhere } from "./a11y";
import { hasChromium, launchChromium, signUpInBrowser } from "./dashboard-driver";
import { sharedServer } from "./harness";
import { addMember, api, newApiKey, newTeam, newUser } from "./helpers";

let server: RunningServer;
let browser: Browser | undefined;

beforeAll(async () => {
  server = await sharedServer();
  if (hasChromium) browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});

const actions = (page: Page) =>
  page.getByTestId("audit-entry").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-action")));

describe("dashboard: the audit log", () => {
  test.skipIf(!hasChromium)(
    "an owner filters the team's log by action, actor and target, and pages to older entries; a viewer has no Audit page",
    async () => {
      const owner = await newUser(server, "dash-audit");
      const viewer = await newUser(server, "dash-audit-viewer");
      const teamId = await newTeam(server, owner, "Audited");
      await addMember(server, owner, teamId, viewer, "viewer");
      const key = await newApiKey(server, owner, teamId, "admin");
      const srv = await api(server, "POST", "/server/servers", {
        token: key.key,
        body: { team_id: teamId, name: "Survival", host: "127.0.0.1", port: 9, kind: "single" },
      });
      expect(srv.status).toBe(201);
      const griefer = crypto.randomUUID();
      for (let i = 0; i < 26; i++) {
        const res = await api(server, "POST", "/server/bans", {
          token: owner.token,
          headers: { "x-server-id": srv.body.server_id },
          body: { uuid: i === 0 ? griefer : crypto.randomUUID(), name: `Griefer${i}`, reason: "griefing" },
        });
        expect(res.status).toBe(201);
      }
      // team.create, member.invite, member.add (the viewer accepts), api_key.create,
      // server.create (by the key), 26 x player.ban
      const page = await (await browser!.newContext()).newPage();
      try {
        await signUpInBrowser(page, server.url, owner.email, true);
        await page.getByRole("link", { name: "Audit" }).click();
        const table = page.getByRole("table", { name: "Audit entries" });
        await table.waitFor();
        expect(await page.getByTestId("audit-entry").count()).toBe(25);
        await page.getByRole("button", { name: "Older entries" }).click();
        await page.waitForFunction(() => document.querySelectorAll('[data-testid="audit-entry"]').length === 31);
        expect((await actions(page)).slice(-5)).toEqual([
          "server.create",
          "api_key.create",
          "member.add",
          "member.invite",
          "team.create",
        ]);

        await page.getByLabel("Action").selectOption("server.create");
        await page.getByRole("button", { name: "Filter" }).click();
        await page.waitForFunction(() => document.querySelectorAll('[data-testid="audit-entry"]').length === 1);
        const row = page.getByTestId("audit-entry").first();
        expect(await row.textContent()).toContain("admin key");
        expect(await row.textContent()).toContain("api key");
        expect(await row.textContent()).toContain("127.0.0.1");

        await page.getByLabel("Action").selectOption("");
        await page.getByLabel("Actor").selectOption({ label: "Any API key" });
        await page.getByRole("button", { name: "Filter" }).click();
        await page.waitForFunction(() => document.querySelectorAll('[data-testid="audit-entry"]').length === 1);
        expect(await actions(page)).toEqual(["server.create"]);

        await page.getByLabel("Actor").selectOption({ label: owner.email });
        await page.getByLabel("Target").fill(griefer);
        await page.getByRole("button", { name: "Filter" }).click();
        await page.waitForFunction(() => document.querySelectorAll('[data-testid="audit-entry"]').length === 1);
        expect(await actions(page)).toEqual(["player.ban"]);
        expect(await page.getByTestId("audit-entry").first().textContent()).toContain("Griefer0");

        await page.getByLabel("From").fill("yesterday");
        await page.getByRole("button", { name: "Filter" }).click();
        await page.getByText("Write it as YYYY-MM-DD HH:MM").waitFor();
        await page.getByLabel("From").fill("2999-01-01 00:00");
        await page.getByRole("button", { name: "Filter" }).click();
        await page.getByText("No entries match.").waitFor();
        await page.getByRole("button", { name: "Clear" }).click();
        await page.waitForFunction(() => document.querySelectorAll('[data-testid="audit-entry"]').length >= 25);

        expect(await checkEverywhere(page, "audit")).toEqual([]);
      } finally {
        await page.context().close();
      }

      const asViewer = await (await browser!.newContext()).newPage();
      try {
        await signUpInBrowser(asViewer, server.url, viewer.email, true);
        await asViewer.getByRole("link", { name: "Team" }).waitFor();
        expect(await asViewer.getByRole("link", { name: "Audit" }).count()).toBe(0);
      } finally {
        await asViewer.context().close();
      }
    },
    120_000,
  );
});
