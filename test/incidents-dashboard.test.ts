import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync } from "node:fs";
import type { Browser, Page } from "playwright-core";
import type { RunningServer } from "../src/app";
import { checkEverywhere, VIEWPORTS } from "./a11y";
import { hasChromium, launchChromium, signUpInBrowser } from "./dashboard-driver";
import { startTestServer, stopTestServer } from "./harness";
import { api } from "./helpers";
import { agentApi, newServer, type ServerFixture } from "./servers-fixture";

/**
 * The incidents, maintenance and alert rules pages in Chromium, as a team owner: a crash
 * incident shows its report lines; an incident posted by hand, updated and resolved; maintenance
 * planned once and on a schedule (its next runs on the team's clock), edited and deleted; an
 * alert rule created and disabled. Axe clean at 390 and 1280 px, light and dark. Screenshots go to
 * INCIDENTS_SHOTS=dir when asked (docs/screenshots/ holds the ones looked at, from the demo).
 */
let srv: RunningServer;
let browser: Browser | undefined;
let f: ServerFixture;
const shots = process.env.INCIDENTS_SHOTS;

beforeAll(async () => {
  srv = await startTestServer();
  f = await newServer(srv);
  for (const name of ["Lobby", "BedWars"]) {
    const res = await api(srv, "POST", "/server/servers", {
      token: f.owner.token,
      body: { team_id: f.teamId, name, host: "127.0.0.1", port: 9, kind: "network", network_name: "Blockworks" },
    });
    expect(res.status).toBe(201);
  }
  // The team plans on Paris time: the schedule's next runs are shown on that clock.
  const tz = await api(srv, "PATCH", `/teams/${f.teamId}`, {
    token: f.owner.token,
    body: { time_zone: "Europe/Paris" },
  });
  expect(tz.status).toBe(200);
  // Survival's agent read a crash report: a crash incident with its lines.
  const crash = await agentApi(srv, f.agentToken, "POST", "/agent/events", {
    events: [
      {
        event_id: "crash.crash-2026-11-27_11.40.00-server.txt",
        type: "crash_report",
        file: "crash-2026-11-27_11.40.00-server.txt",
        description: "Exception in server tick loop",
        lines: [
          "java.lang.IllegalStateException: Lock is no longer valid",
          "\tat net.minecraft.world.level.storage.LevelStorageSource$LevelStorageAccess.checkLock(LevelStorageSource.java:440)",
        ],
      },
    ],
  });
  expect(`${crash.status} ${crash.text}`).toStartWith("200");
  if (hasChromium) browser = await launchChromium();
}, 120_000);
afterAll(async () => {
  await browser?.close();
  if (srv) await stopTestServer(srv);
});

async function shot(page: Page, name: string) {
  if (!shots) return;
  mkdirSync(shots, { recursive: true });
  for (const [size, viewport] of Object.entries(VIEWPORTS)) {
    await page.setViewportSize(viewport);
    await page.screenshot({ path: `${shots}/${name}-${size}.png`, fullPage: true });
  }
  await page.setViewportSize(VIEWPORTS.desktop);
}

const incidentsOf = async () =>
  (
    await api(srv, "GET", "/server/incidents?state=all", {
      token: f.owner.token,
      headers: { "x-team-id": f.teamId },
    })
  ).body.incidents as { incident_id: string; title: string; status: string; kind: string; ended_at: string | null }[];

describe("dashboard: incidents, maintenance, alert rules", () => {
  test.skipIf(!hasChromium)(
    "the owner sees a crash with its report lines, posts an incident, updates and resolves it; axe clean",
    async () => {
      const page = await (await browser!.newContext({ viewport: VIEWPORTS.desktop })).newPage();
      try {
        await signUpInBrowser(page, srv.url, f.owner.email, true);
        await page.getByRole("link", { name: "Incidents" }).click();
        await page.getByRole("heading", { name: "Incidents", level: 1 }).waitFor();

        // The crash: kind, server, and (team only) the report's lines.
        const crash = page.getByTestId("incident").filter({ hasText: "Crash" }).first();
        await crash.waitFor();
        expect(await crash.textContent()).toContain("Survival");
        if ((await crash.getByTestId("crash-report").count()) === 0)
          await crash.getByRole("button", { name: /^Timeline and crash report of / }).click();
        const report = crash.getByTestId("crash-report");
        await report.waitFor();
        expect(await report.textContent()).toContain("Exception in server tick loop");
        expect(await report.textContent()).toContain("java.lang.IllegalStateException: Lock is no longer valid");

        // Post one by hand, for the network.
        await page.getByRole("button", { name: "Post an incident" }).click();
        const form = page.getByRole("form", { name: "Post an incident" });
        await form.getByLabel("Server or network").selectOption({ label: "Blockworks network" });
        await form.getByLabel("Title").fill("Lag spikes on the network");
        await form.getByLabel("Status").selectOption("investigating");
        await form.getByLabel("Message").fill("Players report rubber-banding; we are looking into it.");
        expect(await checkEverywhere(page, "incidents, posting")).toEqual([]);
        await form.getByRole("button", { name: "Post incident" }).click();
        await form.waitFor({ state: "detached" });
        const open = page.getByRole("region", { name: "Open incidents" });
        const card = open.getByTestId("incident").filter({ hasText: "Lag spikes on the network" });
        await card.waitFor();
        expect(await card.textContent()).toContain("Posted by hand");
        expect(await card.textContent()).toContain("Blockworks network");
        const timeline = card.getByRole("list", { name: "Timeline of Lag spikes on the network" });
        await timeline.getByText("Players report rubber-banding").waitFor();

        // An update, then the resolution.
        const update = card.getByRole("form", { name: "Add an update to Lag spikes on the network" });
        await update.getByLabel("Status").selectOption("identified");
        await update.getByLabel("Update").fill("A chunk pregeneration task starves the host of CPU.");
        await update.getByRole("button", { name: "Post update to Lag spikes on the network" }).click();
        await timeline.getByText("A chunk pregeneration task").waitFor();
        await card.locator('.incident-head [data-status="identified"]').waitFor();
        expect(await timeline.locator("li").count()).toBe(2);
        expect(await checkEverywhere(page, "incidents, open")).toEqual([]);

        await update.getByLabel("Status").selectOption("resolved");
        await update.getByLabel("Update").fill("Paused until the nightly window; TPS is back to 20.");
        await update.getByRole("button", { name: "Post and resolve to Lag spikes on the network" }).click();
        // Resolved: it leaves the open incidents for the history.
        const history = page.getByRole("region", { name: "History" });
        const resolved = history.getByTestId("incident").filter({ hasText: "Lag spikes on the network" });
        await resolved.waitFor();
        await open
          .getByTestId("incident")
          .filter({ hasText: "Lag spikes on the network" })
          .waitFor({ state: "detached" });
        expect(await resolved.locator('[data-status="resolved"]').count()).toBe(1);
        await resolved.getByRole("button", { name: "Timeline of Lag spikes on the network" }).click();
        await resolved.getByText("Paused until the nightly window").waitFor();

        const posted = (await incidentsOf()).find((i) => i.title === "Lag spikes on the network")!;
        expect(posted).toMatchObject({ kind: "manual", status: "resolved" });
        expect(posted.ended_at).not.toBeNull();
        const full = await api(srv, "GET", `/server/incidents/${posted.incident_id}`, {
          token: f.owner.token,
          headers: { "x-team-id": f.teamId },
        });
        expect(full.body.updates.map((u: { status: string }) => u.status)).toEqual([
          "investigating",
          "identified",
          "resolved",
        ]);
        expect(await checkEverywhere(page, "incidents, history")).toEqual([]);
        await shot(page, "incidents-test");
      } finally {
        await page.context().close();
      }
    },
    180_000,
  );

  test.skipIf(!hasChromium)(
    "maintenance: planned once and on a schedule (next runs on the team's clock), edited, deleted",
    async () => {
      const page = await (await browser!.newContext({ viewport: VIEWPORTS.desktop })).newPage();
      try {
        await signUpInBrowser(page, srv.url, f.owner.email, true);
        await page.goto(`${srv.url}/#/incidents`);
        const section = page.getByRole("region", { name: "Maintenance windows" });
        await section.getByText("Europe/Paris").first().waitFor();

        // Recurring: Sundays at 03:30 Paris time for 45 minutes.
        await section.getByRole("button", { name: "Plan maintenance" }).click();
        let form = section.getByRole("form", { name: "Plan maintenance" });
        await form.getByLabel("Server or network").selectOption({ label: "Survival" });
        await form.getByLabel("Title").fill("Weekly restart");
        await form.getByLabel("Repeating (cron)").check();
        await form.getByLabel("Schedule").fill("nonsense");
        expect(await form.getByTestId("schedule-preview").textContent()).toBe("Not a five-field cron expression yet.");
        await form.getByLabel("Schedule").fill("30 3 * * 0");
        await form.getByLabel("Duration (minutes)").fill("45");
        const preview = (await form.getByTestId("schedule-preview").textContent())!;
        // Three Sundays at 03:30 on the Paris clock, whatever this machine's zone.
        expect(preview).toStartWith("Next runs: ");
        expect(preview.match(/03:30/g)?.length).toBe(3);
        expect(await checkEverywhere(page, "maintenance form")).toEqual([]);
        await form.getByRole("button", { name: "Plan maintenance" }).click();
        await form.waitFor({ state: "detached" });
        const weekly = section.getByTestId("maintenance-window").filter({ hasText: "Weekly restart" });
        await weekly.waitFor();
        expect(await weekly.textContent()).toContain("every “30 3 * * 0” for 45 min");
        expect(await weekly.textContent()).toMatch(/Next: .*03:30/);

        // One-off: tomorrow 22:00 to 23:00, Paris time, for the network.
        const day = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
        await section.getByRole("button", { name: "Plan maintenance" }).click();
        form = section.getByRole("form", { name: "Plan maintenance" });
        await form.getByLabel("Server or network").selectOption({ label: "Blockworks network" });
        await form.getByLabel("Title").fill("Upgrade to 1.21.5");
        await form.getByLabel("Start (Europe/Paris)").fill(`${day}T22:00`);
        await form.getByLabel("End (Europe/Paris)").fill(`${day}T23:00`);
        await form.getByRole("button", { name: "Plan maintenance" }).click();
        await form.waitFor({ state: "detached" });
        const upgrade = section.getByTestId("maintenance-window").filter({ hasText: "Upgrade to 1.21.5" });
        await upgrade.waitFor();
        expect(await upgrade.textContent()).toContain("Blockworks network");
        const list = await api(srv, "GET", "/server/maintenance", {
          token: f.owner.token,
          headers: { "x-team-id": f.teamId },
        });
        const saved = list.body.windows.find((w: { title: string }) => w.title === "Upgrade to 1.21.5");
        // 22:00 in Paris is 21:00 or 20:00 UTC (winter or summer time).
        expect([20, 21]).toContain(new Date(saved.starts_at).getUTCHours());
        expect(Date.parse(saved.ends_at) - Date.parse(saved.starts_at)).toBe(3_600_000);
        expect(await checkEverywhere(page, "maintenance list")).toEqual([]);

        // Edit: a new title; the times stay.
        await upgrade.getByRole("button", { name: "Edit Upgrade to 1.21.5" }).click();
        const edit = upgrade.getByRole("form", { name: "Edit maintenance window Upgrade to 1.21.5" });
        expect(await edit.getByLabel("Start (Europe/Paris)").inputValue()).toBe(`${day}T22:00`);
        await edit.getByLabel("Title").fill("Upgrade to 1.21.6");
        await edit.getByRole("button", { name: "Save" }).click();
        const renamed = section.getByTestId("maintenance-window").filter({ hasText: "Upgrade to 1.21.6" });
        await renamed.waitFor();
        const after = await api(srv, "GET", "/server/maintenance", {
          token: f.owner.token,
          headers: { "x-team-id": f.teamId },
        });
        const changed = after.body.windows.find((w: { title: string }) => w.title === "Upgrade to 1.21.6");
        expect(changed.starts_at).toBe(saved.starts_at);

        // Delete, after the question.
        await renamed.getByRole("button", { name: "Delete Upgrade to 1.21.6" }).click();
        await page.getByRole("dialog").getByRole("button", { name: "Delete" }).click();
        await renamed.waitFor({ state: "detached" });
        expect(await section.getByTestId("maintenance-window").count()).toBe(1);
        await shot(page, "maintenance-test");
      } finally {
        await page.context().close();
      }
    },
    180_000,
  );

  test.skipIf(!hasChromium)(
    "alert rules: created on a network (memory as a percentage), listed quiet, disabled; axe clean",
    async () => {
      const page = await (await browser!.newContext({ viewport: VIEWPORTS.desktop })).newPage();
      try {
        await signUpInBrowser(page, srv.url, f.owner.email, true);
        await page.getByRole("link", { name: "Alerts" }).click();
        await page.getByRole("heading", { name: "Alert rules", level: 1 }).waitFor();
        await page.getByText("No alert rules yet.").waitFor();
        await page.getByRole("button", { name: "New alert rule" }).click();
        const form = page.getByRole("form", { name: "New alert rule" });
        await form.getByLabel("Name").fill("Memory nearly full");
        await form.getByLabel("Server or network").selectOption({ label: "Blockworks network" });
        await form.getByLabel("Metric").selectOption("memory_share");
        await form.getByLabel("Fires when").selectOption("above");
        await form.getByLabel("Threshold (%)").fill("90");
        await form.getByLabel("For (seconds)").fill("120");
        expect(await checkEverywhere(page, "alert rule form")).toEqual([]);
        await form.getByRole("button", { name: "Create rule" }).click();
        const row = page.getByTestId("alert-rule").filter({ hasText: "Memory nearly full" });
        await row.waitFor();
        expect(await row.textContent()).toContain("each server of Blockworks");
        expect(await row.textContent()).toContain("Memory used above 90% for 2 min; recovers at 85% or less");
        expect(await row.locator('[data-state="quiet"]').count()).toBe(1);
        const rules = await api(srv, "GET", `/teams/${f.teamId}/alert-rules`, { token: f.owner.token });
        expect(rules.body.rules[0]).toMatchObject({
          network_name: "Blockworks",
          metric: "memory_share",
          op: "above",
          threshold: 0.9,
          margin: 0.05,
          duration_seconds: 120,
          enabled: true,
        });
        expect(await checkEverywhere(page, "alert rules")).toEqual([]);
        await shot(page, "alerts-test");

        await row.getByRole("button", { name: "Disable Memory nearly full" }).click();
        await row.locator('[data-state="disabled"]').waitFor();
        const off = await api(srv, "GET", `/teams/${f.teamId}/alert-rules`, { token: f.owner.token });
        expect(off.body.rules[0].enabled).toBe(false);
        await row.getByRole("button", { name: "Enable Memory nearly full" }).waitFor();
      } finally {
        await page.context().close();
      }
    },
    180_000,
  );
});
