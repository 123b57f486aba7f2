import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser } from "playwright-core";
import { startStatusResponder } from "../scripts/demo-mc-server";
import type { RunningServer } from "../src/app";
import { offlineUuid } from "../src/identity/protocol";
import {
  chartPoints,
  createClientInBrowser,
  createServerInBrowser,
  createTeamInBrowser,
  hasChromium,
  launchChromium,
  PASSWORD,
  serverTab,
  signUpInBrowser,
} from "./dashboard-driver";
import { axeViolations } from "./a11y";
import { sharedServer } from "./harness";
import { api, expectError, newUser, uniqueEmail } from "./helpers";

let server: RunningServer;
let browser: Browser | undefined;

beforeAll(async () => {
  server = await sharedServer();
  if (hasChromium) browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});

describe("serving the dashboard", () => {
  test("/ is the dashboard page: strict CSP, not cached; its assets are hashed and cached for a year", async () => {
    const page = await api(server, "GET", "/");
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toContain("text/html");
    const csp = page.headers.get("content-security-policy")!;
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain("unsafe");
    expect(page.headers.get("cache-control")).toBe("no-cache");
    const assets = [...page.text.matchAll(/\/assets\/([^"]+)/g)].map((m) => m[1]!);
    expect(assets.some((a) => /^main-[a-z0-9]+\.js$/.test(a))).toBe(true);
    expect(assets.some((a) => /^main-[a-z0-9]+\.css$/.test(a))).toBe(true);
    for (const a of assets) {
      const res = await fetch(`${server.url}/assets/${a}`);
      expect(res.status).toBe(200);
      expect(res.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
      // Nothing is fetched from elsewhere at run time.
      expect(await res.text()).not.toMatch(/https:\/\/(cdn|unpkg|fonts)\./);
    }
  });

  test("an unknown asset is a 404 in the envelope, and the API's own paths stay the API's", async () => {
    expectError(await api(server, "GET", "/assets/nope-123.js"), 404, "not_found");
    expectError(await api(server, "GET", "/teams"), 401);
    expect((await api(server, "GET", "/health")).status).toBe(200);
  });
});

describe("the dashboard in a real browser", () => {
  test.skipIf(!hasChromium)(
    "sign up, team, client app, ms_auth module with an inline error, and Try sign-in to authorized",
    async () => {
      const launcher = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("launcher") });
      const page = await (await browser!.newContext()).newPage();
      try {
        await signUpInBrowser(page, server.url, uniqueEmail("dash"));
        await createTeamInBrowser(page, "Blocky Team");
        await createClientInBrowser(page, "Blocky Launcher");

        // The server's validation error appears beside the field. The new client's page settles
        // first (a refetch re-renders the module form and would reset a field filled before it).
        await page.waitForLoadState("networkidle");
        // On a loaded machine a late refetch can still reset the field between fill and click:
        // the form is then refused by the browser (required field) and no request goes out. Try again.
        for (let attempt = 0; attempt < 3; attempt++) {
          await page.getByLabel("Post-login redirect URI").fill("http://example.com/callback");
          await page.getByRole("button", { name: "Enable module" }).click();
          const shown = await page
            .locator(".field-error")
            .waitFor({ timeout: 15_000 })
            .then(
              () => true,
              () => false,
            );
          if (shown) break;
        }
        await expect(page.locator(".field-error").textContent()).resolves.toContain("post_login_redirect_uri");

        await page.getByLabel("Post-login redirect URI").fill(`http://127.0.0.1:${launcher.port}/callback`);
        await page.getByRole("button", { name: "Enable module" }).click();
        await page.getByText("Enabled.").waitFor();

        const [popup] = await Promise.all([
          page.waitForEvent("popup"),
          page.getByRole("button", { name: "Try sign-in" }).click(),
        ]);
        await popup.waitForSelector('input[name="username"]');
        await popup.fill('input[name="username"]', "Dash_Tester");
        await popup.click('button[value="signin"]');
        await popup.click('button[name="decision"][value="approve"]');

        const result = page.getByTestId("signin-result");
        await result.waitFor({ timeout: 20_000 });
        expect(await result.textContent()).toContain("Dash_Tester");
        expect(await result.textContent()).toContain(offlineUuid("Dash_Tester"));
        const steps = await page
          .locator(".steps li")
          .evaluateAll((els) => els.map((e) => e.getAttribute("data-status")));
        expect(steps[0]).toBe("pending");
        expect(steps.at(-1)).toBe("authorized");
      } finally {
        await page.close();
        launcher.stop(true);
      }
    },
    90_000,
  );

  test.skipIf(!hasChromium)(
    "a server goes online live, an agent heartbeat moves TPS and adds a chart point, a ban appears; a viewer sees no write actions; 0 serious axe violations",
    async () => {
      const responder = await startStatusResponder({ players: 4, maxPlayers: 50 });
      const page = await (await browser!.newContext()).newPage();
      const viewerPage = await (await browser!.newContext()).newPage();
      const violations: string[] = [];
      try {
        const email = uniqueEmail("dash-owner");
        await signUpInBrowser(page, server.url, email);
        violations.push(...(await axeViolations(page, "servers (no team)")));
        await createTeamInBrowser(page, "Live Team");
        violations.push(...(await axeViolations(page, "team")));
        const { serverId, agentToken } = await createServerInBrowser(page, "Survival", "127.0.0.1", responder.port);
        expect(agentToken).toStartWith("mcp_agent_");
        await serverTab(page, "Overview");

        // Not yet checked, then the pinger's result arrives over the socket.
        const badge = page.locator("h1 .badge");
        expect(await badge.getAttribute("data-status")).toBe("unknown");
        await page.waitForSelector('[data-live="true"]');
        await server.services.monitoring.checkNow(serverId);
        await page.waitForSelector('h1 .badge[data-status="online"]');
        expect(await page.getByText("4 / 50").count()).toBe(1);

        const before = await chartPoints(page);
        const hb = await api(server, "POST", "/agent/heartbeat", {
          token: agentToken,
          body: { tps: 19.7, mspt: 12.5, players_online: 4, memory_used_mb: 2048, memory_max_mb: 4096 },
        });
        expect(hb.status).toBe(200);
        await page.waitForFunction(() => document.querySelector('[data-testid="tps"]')?.textContent === "19.7");
        await page.waitForFunction(
          (n) =>
            Number(
              document.querySelector('figure.chart[data-chart="players"] [data-points]')?.getAttribute("data-points"),
            ) ===
            n + 1,
          before,
        );

        await serverTab(page, "Moderation");
        await page.getByLabel("Player UUID").fill(offlineUuid("Griefer"));
        await page.getByLabel("Player name").fill("Griefer");
        await page.getByLabel("Reason").fill("griefing spawn");
        await page.getByLabel("Duration").selectOption({ label: "7 days" });
        await page.getByRole("button", { name: "Ban", exact: true }).click();
        await page.waitForSelector('tr[data-ban="Griefer"]');
        expect(await page.locator('tr[data-ban="Griefer"]').textContent()).toContain("griefing spawn");
        violations.push(...(await axeViolations(page, "server")));

        // The ban is in the database the agent reads from, not only on screen.
        const players = await api(server, "GET", "/server/players", {
          token: (await api(server, "POST", "/auth/login", { body: { email, password: PASSWORD } })).body.access_token,
          headers: { "x-server-id": serverId },
        });
        expect(players.body.bans.map((b: { name: string }) => b.name)).toEqual(["Griefer"]);

        await page.goto(`${server.url}/#/servers`);
        await page.waitForSelector('[data-server="Survival"] .badge[data-status="online"]');
        // Without players reported by an agent, the list shows the ping's count, not zero.
        await page.waitForFunction(
          () => document.querySelector('[data-server="Survival"] [data-testid="players"]')?.textContent === "4",
          undefined,
          { timeout: 10_000 },
        );
        violations.push(...(await axeViolations(page, "servers")));
        await page.goto(`${server.url}/#/networks`);
        await page.getByText("No networks.").waitFor();
        violations.push(...(await axeViolations(page, "networks")));
        await createClientInBrowser(page, "Axe Launcher");
        violations.push(...(await axeViolations(page, "client app")));
        await page.goto(`${server.url}/#/clients`);
        await page.getByRole("link", { name: "Axe Launcher" }).waitFor();
        violations.push(...(await axeViolations(page, "client apps")));
        await page.goto(`${server.url}/#/account`);
        await page.getByText("Signed in as").waitFor();
        violations.push(...(await axeViolations(page, "account")));

        // A viewer of the same team, invited from the team page: they join only by accepting.
        const viewer = await newUser(server, "dash-viewer");
        await page.goto(`${server.url}/#/team`);
        await page.getByLabel("Invite by email").fill(viewer.email);
        await page.getByRole("button", { name: "Invite", exact: true }).click();
        await page.waitForSelector(`tr[data-invitation="${viewer.email}"]`);
        violations.push(...(await axeViolations(page, "team (pending invitation)")));
        await signUpInBrowser(viewerPage, server.url, viewer.email, true);
        const acceptButton = viewerPage.getByRole("button", { name: "Accept invitation to Live Team" });
        await acceptButton.waitFor();
        expect(await viewerPage.getByRole("button", { name: "Decline invitation to Live Team" }).count()).toBe(1);
        expect((await api(server, "GET", "/teams", { token: viewer.token })).body.teams).toEqual([]);
        violations.push(...(await axeViolations(viewerPage, "invitation")));
        await acceptButton.click();
        await viewerPage.getByRole("heading", { name: "Invitations" }).waitFor({ state: "detached" });
        // Everything readable, nothing writable.
        await viewerPage.waitForSelector('[data-server="Survival"]');
        expect(await viewerPage.getByRole("button", { name: "Add server" }).count()).toBe(0);
        await viewerPage.goto(`${server.url}/#/servers/${serverId}/moderation`);
        await viewerPage.waitForSelector('tr[data-ban="Griefer"]');
        await viewerPage.waitForSelector('h1 .badge[data-status="online"]');
        for (const name of ["Ban", "Unban", "Add rank", "Add announcement"])
          expect(await viewerPage.getByRole("button", { name, exact: true }).count()).toBe(0);
        await serverTab(viewerPage, "Settings");
        await viewerPage.getByTestId("agent-command").waitFor();
        for (const name of ["Rotate agent token", "Delete server", "Save"])
          expect(await viewerPage.getByRole("button", { name, exact: true }).count()).toBe(0);
        await viewerPage.goto(`${server.url}/#/clients`);
        await viewerPage.getByRole("link", { name: "Axe Launcher" }).click();
        await viewerPage.getByRole("heading", { name: "Details" }).waitFor();
        for (const name of ["New client app", "Save", "Enable module", "Rotate secret", "Delete app", "Try sign-in"])
          expect(await viewerPage.getByRole("button", { name, exact: true }).count()).toBe(0);
        await viewerPage.goto(`${server.url}/#/team`);
        await viewerPage.getByRole("heading", { name: "Members" }).waitFor();
        expect(await viewerPage.getByRole("button", { name: "Invite" }).count()).toBe(0);
        expect(await viewerPage.getByRole("button", { name: "Remove" }).count()).toBe(0);
        violations.push(...(await axeViolations(viewerPage, "team (viewer)")));

        expect(violations).toEqual([]);
      } finally {
        await page.close();
        await viewerPage.close();
        await responder.close();
      }
    },
    120_000,
  );

  test.skipIf(!hasChromium)(
    "the server list shows the ping's player count from a check made while the list was not on screen",
    async () => {
      const responder = await startStatusResponder({ players: 7, maxPlayers: 20 });
      const page = await (await browser!.newContext()).newPage();
      try {
        const email = uniqueEmail("dash-list");
        await signUpInBrowser(page, server.url, email);
        await createTeamInBrowser(page, "List Team");
        const { serverId } = await createServerInBrowser(page, "Creative", "127.0.0.1", responder.port);
        await page.getByRole("link", { name: "Servers", exact: true }).click();
        await page.waitForSelector('[data-server="Creative"] .badge[data-status="unknown"]');
        await page.getByRole("link", { name: "Account" }).click();
        await page.getByText("Signed in as").waitFor();
        await server.services.monitoring.checkNow(serverId);
        // Back within the query's fresh time: the list must still be read again, not served from cache.
        await page.getByRole("link", { name: "Servers", exact: true }).click();
        await page.waitForFunction(
          () => document.querySelector('[data-server="Creative"] [data-testid="players"]')?.textContent === "7",
          undefined,
          { timeout: 3_000 },
        );
        expect(await page.locator('[data-server="Creative"] .badge').getAttribute("data-status")).toBe("online");
      } finally {
        await page.close();
        await responder.close();
      }
    },
    60_000,
  );

  test.skipIf(!hasChromium)(
    "a session revoked elsewhere ends with a clear message, and a reload keeps a live session",
    async () => {
      const context = await browser!.newContext();
      const page = await context.newPage();
      const refreshCookie = async () => (await context.cookies()).find((c) => c.name === "mcp_dashboard_refresh");
      try {
        await signUpInBrowser(page, server.url, uniqueEmail("dash-session"));
        await createTeamInBrowser(page, "Session Team");
        await page.reload();
        await page.getByRole("button", { name: "Sign out", exact: true }).waitFor();
        // The dashboard's refresh token is the API's too: ending it there ends this login.
        const refresh = (await refreshCookie())!.value;
        expect((await api(server, "POST", "/auth/logout", { body: { refresh_token: refresh } })).status).toBe(200);
        // Next request: the access token is dead, the rotation is refused, the session ends.
        await page.getByRole("link", { name: "Client apps" }).click();
        await page.getByText("Your session has ended. Please sign in again.").waitFor();
        expect(await refreshCookie()).toBeUndefined();
      } finally {
        await context.close();
      }
    },
    60_000,
  );
});
