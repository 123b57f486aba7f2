import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser, Page } from "playwright-core";
import type { RunningServer } from "../src/app";
import { offlineUuid } from "../src/identity/protocol";
import { checkEverywhere, focused } from "./a11y";
import { hasChromium, launchChromium, signUpInBrowser } from "./dashboard-driver";
import { sharedServer } from "./harness";
import { addMember, api, newTeam, newUser, type TestUser } from "./helpers";

/**
 * The dashboard and the consent page for keyboard and screen reader users, in Chromium: axe
 * (no serious or critical violation) and the checks axe does not make (test/a11y.ts), in light
 * and dark at phone and desktop width; page titles and focus on navigation; buttons that name
 * what they act on; focus after a row is removed.
 */

let server: RunningServer;
let browser: Browser | undefined;
let owner: TestUser;
let member: TestUser;
let teamId: string;
let serverId: string;
let clientId: string;
let clientSecret: string;

beforeAll(async () => {
  server = await sharedServer();
  if (!hasChromium) return;
  browser = await launchChromium();
  // One team with two of everything a row action acts on, so a "Delete" that does not say what
  // it deletes shows up as two buttons of the same name.
  owner = await newUser(server, "a11y-owner");
  member = await newUser(server, "a11y-member");
  teamId = await newTeam(server, owner, "Access Team");
  await addMember(server, owner, teamId, member, "viewer");
  await addMember(server, owner, teamId, await newUser(server, "a11y-admin"), "admin");
  const as = { token: owner.token };
  for (const name of ["ci-key", "deploy-key"])
    expect(
      (await api(server, "POST", `/teams/${teamId}/api-keys`, { ...as, body: { name, role: "viewer" } })).status,
    ).toBe(201);
  for (const path of ["a", "b"])
    expect(
      (await api(server, "POST", `/teams/${teamId}/webhooks`, { ...as, body: { url: `http://127.0.0.1:9/${path}` } }))
        .status,
    ).toBe(201);
  const created = await api(server, "POST", "/server/servers", {
    ...as,
    body: { team_id: teamId, name: "Survival", host: "127.0.0.1", port: 9, kind: "single" },
  });
  expect(created.status).toBe(201);
  serverId = created.body.server_id;
  const srv = { ...as, headers: { "x-server-id": serverId } };
  for (const name of ["Steve", "Alex"])
    expect(
      (
        await api(server, "POST", "/server/bans", {
          ...srv,
          body: { uuid: offlineUuid(name), name, reason: "griefing" },
        })
      ).status,
    ).toBe(201);
  for (const name of ["vip", "mod"])
    expect((await api(server, "POST", "/server/ranks", { ...srv, body: { name, permissions: ["a.b"] } })).status).toBe(
      201,
    );
  for (const message of ["Welcome to Survival", "Vote daily"])
    expect(
      (await api(server, "POST", "/server/announcements", { ...srv, body: { message, schedule: "0 * * * *" } })).status,
    ).toBe(201);
  const app = await api(server, "POST", "/client/apps", {
    ...as,
    body: { team_id: teamId, name: "access-launcher", title: "Access Launcher", description: "Play on Survival." },
  });
  expect(app.status).toBe(201);
  clientId = app.body.app.client_id;
  clientSecret = app.body.client_secret;
  expect(
    (
      await api(server, "POST", `/client/apps/${clientId}/modules/ms-auth`, {
        ...as,
        body: { post_login_redirect_uri: "http://127.0.0.1:9/callback" },
      })
    ).status,
  ).toBe(200);
});

afterAll(async () => {
  await browser?.close();
});

async function signedIn(): Promise<Page> {
  const page = await (await browser!.newContext()).newPage();
  await signUpInBrowser(page, server.url, owner.email, true);
  return page;
}

/** Waits for a page of the dashboard to be whole, by something only it shows once loaded. */
async function open(page: Page, route: string, ready: string) {
  await page.goto(`${server.url}/#/${route}`);
  await page.waitForSelector(ready);
}

describe("accessibility", () => {
  test.skipIf(!hasChromium)(
    "the sign-in page, the provider's page and the consent page pass axe and the field checks, light and dark, phone and desktop",
    async () => {
      const page = await (await browser!.newContext()).newPage();
      try {
        const problems: string[] = [];
        await page.goto(`${server.url}/`);
        await page.getByRole("button", { name: "Sign in", exact: true }).waitFor();
        problems.push(...(await checkEverywhere(page, "sign-in")));
        await page.getByRole("button", { name: "No account yet? Create one" }).click();
        problems.push(...(await checkEverywhere(page, "sign-up")));

        const started = await api(server, "POST", "/client/ms-auth/start", {
          body: { client_id: clientId, client_secret: clientSecret },
        });
        expect(started.status).toBe(200);
        await page.goto(started.body.auth_url);
        await page.waitForSelector('input[name="username"]');
        problems.push(...(await checkEverywhere(page, "provider sign-in")));
        await page.fill('input[name="username"]', "Access_Alex");
        await page.click('button[value="signin"]');
        await page.waitForSelector('button[name="decision"][value="approve"]');
        problems.push(...(await checkEverywhere(page, "consent")));
        expect(problems).toEqual([]);
      } finally {
        await page.close();
      }
    },
    120_000,
  );

  test.skipIf(!hasChromium)(
    "every dashboard page passes axe and the field checks, light and dark, phone and desktop",
    async () => {
      const page = await signedIn();
      try {
        const problems: string[] = [];
        const pages: [string, string, string][] = [
          ["servers", "servers", '[data-server="Survival"]'],
          ["server", `servers/${serverId}`, 'figure.chart[data-chart="memory"] [data-x-min]'],
          ["server moderation", `servers/${serverId}/moderation`, 'tr[data-ban="Alex"]'],
          ["networks", "networks", "text=No networks."],
          ["clients", "clients", "text=Access Launcher"],
          ["client app", `clients/${clientId}`, "text=Enabled."],
          ["team", "team", 'table[aria-label="Webhook endpoints"]'],
          ["account", "account", "text=Signed in as"],
        ];
        for (const [name, route, ready] of pages) {
          await open(page, route, ready);
          if (name === "server moderation") await page.waitForSelector('li:has-text("Vote daily")');
          if (name === "team") await page.waitForSelector('td:text-is("deploy-key")');
          problems.push(...(await checkEverywhere(page, name)));
        }
        // The forms that open on demand.
        await open(page, "servers", '[data-server="Survival"]');
        await page.getByRole("button", { name: "Add server" }).click();
        await page.getByLabel("Server name").waitFor();
        problems.push(...(await checkEverywhere(page, "add server")));
        expect(problems).toEqual([]);
      } finally {
        await page.close();
      }
    },
    240_000,
  );

  test.skipIf(!hasChromium)(
    "row buttons name what they act on",
    async () => {
      const page = await signedIn();
      try {
        const named = async (names: string[]) => {
          const missing = [];
          for (const name of names)
            if ((await page.getByRole("button", { name, exact: true }).count()) !== 1) missing.push(name);
          return missing;
        };
        await open(page, `servers/${serverId}/moderation`, 'tr[data-ban="Alex"]');
        await page.waitForSelector('li:has-text("Vote daily")');
        const missing = await named([
          "Unban Steve",
          "Unban Alex",
          "Delete rank vip",
          "Delete rank mod",
          "Delete announcement Vote daily",
          "Pause announcement Vote daily",
        ]);
        await open(page, "team", 'table[aria-label="Webhook endpoints"]');
        await page.waitForSelector('td:text-is("deploy-key")');
        missing.push(
          ...(await named([
            "Revoke API key ci-key",
            "Revoke API key deploy-key",
            `Remove ${member.email}`,
            `Make owner ${member.email}`,
            "Delete endpoint http://127.0.0.1:9/a",
            "Send test to http://127.0.0.1:9/b",
          ])),
        );
        expect(missing).toEqual([]);
      } finally {
        await page.close();
      }
    },
    60_000,
  );

  test.skipIf(!hasChromium)(
    "navigating sets the page's title and moves focus to its heading",
    async () => {
      const page = await signedIn();
      try {
        expect(await page.title()).toBe("Servers · mc-platform");
        const seen: string[] = [];
        const go = async (click: () => Promise<void>, title: string) => {
          await click();
          await page.waitForFunction((t) => document.title === t, title, { timeout: 5000 }).catch(() => {});
          seen.push(`${await page.title()} | ${await focused(page)}`);
        };
        const nav = (name: string) => () => page.getByRole("navigation").getByRole("link", { name }).click();
        await go(nav("Client apps"), "Client apps · mc-platform");
        await go(() => page.getByRole("link", { name: "Access Launcher" }).click(), "Access Launcher · mc-platform");
        await go(nav("Team"), "Team Access Team · mc-platform");
        await go(nav("Networks"), "Networks · mc-platform");
        await go(nav("Account"), "Account · mc-platform");
        await go(nav("Servers"), "Servers · mc-platform");
        await go(() => page.getByRole("link", { name: "Survival" }).click(), "Survival · mc-platform");
        await go(() => page.getByRole("link", { name: "All servers" }).click(), "Servers · mc-platform");
        expect(seen).toEqual([
          'Client apps · mc-platform | h1 "Client apps"',
          'Access Launcher · mc-platform | h1 "Access Launcher"',
          'Team Access Team · mc-platform | h1 "Team Access Team"',
          'Networks · mc-platform | h1 "Networks"',
          'Account · mc-platform | h1 "Account"',
          'Servers · mc-platform | h1 "Servers"',
          // The server's heading carries its status badge.
          'Survival · mc-platform | h1 "Survival unknown"',
          'Servers · mc-platform | h1 "Servers"',
        ]);
      } finally {
        await page.close();
      }
    },
    60_000,
  );

  test.skipIf(!hasChromium)(
    "after a row is removed focus goes to the next row's button, then to the list's heading, never to the page",
    async () => {
      // A team of its own: this test removes rows.
      const page = await (await browser!.newContext()).newPage();
      const user = await newUser(server, "a11y-remove");
      const team = await newTeam(server, user, "Removal Team");
      for (const name of ["first-key", "second-key"])
        await api(server, "POST", `/teams/${team}/api-keys`, { token: user.token, body: { name, role: "viewer" } });
      const srv = await api(server, "POST", "/server/servers", {
        token: user.token,
        body: { team_id: team, name: "Creative", host: "127.0.0.1", port: 9, kind: "single" },
      });
      const headers = { "x-server-id": srv.body.server_id };
      for (const name of ["Notch", "Jeb"])
        await api(server, "POST", "/server/bans", {
          token: user.token,
          headers,
          body: { uuid: offlineUuid(name), name, reason: "test" },
        });
      try {
        await signUpInBrowser(page, server.url, user.email, true);
        const seen: string[] = [];
        /** Presses a row's button and confirms; waits for the row to go. */
        const remove = async (name: string, confirm: string, gone: string) => {
          await page.getByRole("button", { name, exact: true }).click();
          await page.getByRole("dialog").getByRole("button", { name: confirm, exact: true }).click();
          await page.waitForSelector(gone, { state: "detached" });
          await page
            .waitForFunction(() => document.activeElement !== document.body, undefined, { timeout: 3000 })
            .catch(() => {});
          seen.push(await focused(page));
        };
        await open(page, "team", 'table[aria-label="API keys"]');
        await page.waitForSelector('td:text-is("second-key")');
        await remove("Revoke API key first-key", "Revoke", 'td:text-is("first-key")');
        await remove("Revoke API key second-key", "Revoke", 'td:text-is("second-key")');
        await open(page, `servers/${srv.body.server_id}/moderation`, 'tr[data-ban="Jeb"]');
        await remove("Unban Notch", "Unban", 'tr[data-ban="Notch"]');
        await remove("Unban Jeb", "Unban", 'tr[data-ban="Jeb"]');
        expect(seen).toEqual([
          'button "Revoke API key second-key"',
          'h2 "API keys"',
          'button "Unban Jeb"',
          'h2 "Bans"',
        ]);
      } finally {
        await page.close();
      }
    },
    60_000,
  );
});
