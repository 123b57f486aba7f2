import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser } from "playwright-core";
import type { RunningServer } from "../src/app";
import { hasChromium, launchChromium, PASSWORD, signUpInBrowser } from "./dashboard-driver";
import { sharedServer } from "./harness";
import { addMember, api, expectError, newTeam, newUser, uniqueEmail } from "./helpers";

let server: RunningServer;
let browser: Browser | undefined;

beforeAll(async () => {
  server = await sharedServer();
  if (hasChromium) browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});

const IPHONE =
  "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1";
const EDGE =
  "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36 Edg/124.0.0.0";

async function signInFrom(email: string, userAgent: string, password = PASSWORD) {
  const res = await api(server, "POST", "/auth/login", {
    body: { email, password },
    headers: { "user-agent": userAgent },
  });
  expect(res.status).toBe(200);
  return res.body.access_token as string;
}

describe("roles, keys and sign-ins in the dashboard", () => {
  test.skipIf(!hasChromium)(
    "the account page lists the devices; Revoke ends one, Sign out all other devices the rest, and a password change keeps this one",
    async () => {
      const page = await (await browser!.newContext()).newPage();
      try {
        const email = uniqueEmail("devices");
        await signUpInBrowser(page, server.url, email);
        const phone = await signInFrom(email, IPHONE);
        const laptop = await signInFrom(email, EDGE);
        await page.getByRole("link", { name: "Account" }).click();
        const devices = page.getByRole("table", { name: "Signed-in devices" });
        await devices.getByRole("cell", { name: "Safari on iOS", exact: true }).waitFor();
        expect(await devices.locator("tbody tr").count()).toBe(3);
        expect(await devices.getByText("(this device)").count()).toBe(1);

        await page.getByRole("button", { name: /^Revoke Safari on iOS/ }).click();
        await page.getByRole("dialog").getByRole("button", { name: "Revoke" }).click();
        await devices.getByRole("cell", { name: "Safari on iOS", exact: true }).waitFor({ state: "detached" });
        expectError(await api(server, "GET", "/auth/me", { token: phone }), 401);
        expect((await api(server, "GET", "/auth/me", { token: laptop })).status).toBe(200);

        await page.getByRole("button", { name: "Sign out all other devices" }).click();
        await page.getByRole("dialog").getByRole("button", { name: "Sign out all other devices" }).click();
        await devices.getByRole("cell", { name: "Edge on Windows", exact: true }).waitFor({ state: "detached" });
        expectError(await api(server, "GET", "/auth/me", { token: laptop }), 401);
        expect(await devices.locator("tbody tr").count()).toBe(1);

        const other = await signInFrom(email, EDGE);
        const form = page.getByRole("form", { name: "Change your password" });
        await form.getByLabel("Current password").fill(PASSWORD);
        await form.getByLabel("New password").fill("a much newer password");
        await form.getByRole("button", { name: "Change password" }).click();
        await page.getByText("Password changed; 1 other device(s) signed out").waitFor();
        expectError(await api(server, "GET", "/auth/me", { token: other }), 401);
        await signInFrom(email, EDGE, "a much newer password");
        // This browser is still signed in: the next page loads.
        await page.getByRole("link", { name: "Team" }).click();
        await page.getByRole("heading", { name: "Welcome" }).waitFor();
      } finally {
        await page.close();
      }
    },
    60_000,
  );

  test.skipIf(!hasChromium)(
    "an owner makes a scoped key limited to one server, and the list shows its scopes, server and last use",
    async () => {
      const owner = await newUser(server, "key-owner");
      const teamId = await newTeam(server, owner, "Keyed");
      const created = await api(server, "POST", "/server/servers", {
        token: owner.token,
        body: { team_id: teamId, name: "Survival", host: "127.0.0.1", port: 9, kind: "single" },
      });
      const serverId = created.body.server_id;
      const page = await (await browser!.newContext()).newPage();
      try {
        await signUpInBrowser(page, server.url, owner.email, true);
        await page.getByRole("link", { name: "Team" }).click();
        const form = page.getByRole("form", { name: "Create an API key" });
        await form.getByLabel("Key name").fill("Ban bot");
        await form.getByLabel("Key access").selectOption("scopes");
        await form.getByRole("checkbox", { name: "servers:read" }).check();
        await form.getByRole("checkbox", { name: "moderation:write" }).check();
        await form.getByRole("checkbox", { name: "Survival" }).check();
        // Limited to a server, the team-wide scopes are no longer offered.
        expect(await form.getByRole("checkbox", { name: "webhooks:read" }).count()).toBe(0);
        await form.getByRole("button", { name: "Create key" }).click();
        const key = (await page.getByTestId("secret").textContent())!;
        expect(key).toStartWith("mcp_key_");
        const row = page.getByRole("table", { name: "API keys" }).getByRole("row", { name: /Ban bot/ });
        await row.waitFor();
        expect(await row.getByRole("cell").nth(1).textContent()).toBe("servers:read, moderation:write");
        expect(await row.getByRole("cell").nth(2).textContent()).toBe("Survival");
        expect(await row.getByRole("cell").nth(4).textContent()).toBe("never");
        // Used once: the list says when.
        const used = await api(server, "GET", "/server/players", { token: key, headers: { "x-server-id": serverId } });
        expect(used.status).toBe(200);
        await page.reload();
        await page.getByRole("link", { name: "Team" }).waitFor();
        await page.getByRole("table", { name: "API keys" }).waitFor();
        expect(await row.getByRole("cell").nth(4).textContent()).not.toBe("never");
      } finally {
        await page.close();
      }
    },
    60_000,
  );

  test.skipIf(!hasChromium)(
    "a moderator kicks an online player and gets the ban and announcement forms, not the rank or server settings",
    async () => {
      const owner = await newUser(server, "mod-owner");
      const moderator = await newUser(server, "mod");
      const teamId = await newTeam(server, owner, "Moderated");
      await addMember(server, owner, teamId, moderator, "moderator");
      const created = await api(server, "POST", "/server/servers", {
        token: owner.token,
        body: { team_id: teamId, name: "Survival", host: "127.0.0.1", port: 9, kind: "single" },
      });
      const agent = { authorization: `Bearer ${created.body.agent_token}` };
      const steve = crypto.randomUUID();
      await api(server, "POST", "/agent/events", {
        headers: agent,
        body: { events: [{ event_id: "join-1", type: "join", uuid: steve, name: "Steve" }] },
      });
      const page = await (await browser!.newContext()).newPage();
      try {
        await signUpInBrowser(page, server.url, moderator.email, true);
        await page.goto(`${server.url}/#/servers/${created.body.server_id}/moderation`);
        await page.getByRole("button", { name: "Kick Steve" }).click();
        await page.getByRole("dialog").getByRole("button", { name: "Kick" }).click();
        await page.getByText("Steve will be kicked by the agent").waitFor();
        const config = await api(server, "GET", "/agent/config", { headers: agent });
        expect(config.body.kicks).toMatchObject([{ uuid: steve, name: "Steve" }]);
        await page.getByRole("form", { name: "Ban a player" }).waitFor();
        await page.getByRole("form", { name: "Add an announcement" }).waitFor();
        expect(await page.getByRole("form", { name: "Add a rank" }).count()).toBe(0);
        await page.getByRole("tab", { name: "Settings" }).click();
        await page.getByRole("heading", { name: "Agent" }).waitFor();
        expect(await page.getByRole("form", { name: "Server settings" }).count()).toBe(0);
        expect(await page.getByRole("button", { name: "Delete server" }).count()).toBe(0);
        await page.getByRole("link", { name: "Team" }).click();
        await page.getByText("Your role: moderator").waitFor();
        expect(await page.getByRole("form", { name: "Create an API key" }).count()).toBe(0);
      } finally {
        await page.close();
      }
    },
    60_000,
  );
});
