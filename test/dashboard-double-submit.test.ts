import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { and, eq } from "drizzle-orm";
import type { Browser } from "playwright-core";
import type { RunningServer } from "../src/app";
import { apiKeys, teams } from "../src/db/schema";
import { sha256 } from "../src/lib/secrets";
import { createTeamInBrowser, hasChromium, launchChromium, signUpInBrowser } from "./dashboard-driver";
import { sharedServer } from "./harness";
import { uniqueEmail } from "./helpers";

/**
 * The dashboard's creates in a real browser: one submit is one request with its own
 * Idempotency-Key, the button is disabled while it runs, and a retry after a lost answer gets
 * the first answer (and its secret) rather than a second resource.
 */

let server: RunningServer;
let browser: Browser | undefined;

beforeAll(async () => {
  server = await sharedServer();
  if (hasChromium) browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});

async function keysOfTeam(teamName: string, keyName: string) {
  const db = server.services.database.db;
  return db
    .select({ id: apiKeys.id, keyHash: apiKeys.keyHash })
    .from(apiKeys)
    .innerJoin(teams, eq(teams.id, apiKeys.teamId))
    .where(and(eq(teams.name, teamName), eq(apiKeys.name, keyName)));
}

describe("double submits in the dashboard", () => {
  test.skipIf(!hasChromium)(
    "a double click on Create key makes one key; the button says Creating… and is disabled while it runs",
    async () => {
      const page = await browser!.newPage();
      await signUpInBrowser(page, server.url, uniqueEmail("dbl"));
      const teamName = `Double Click ${crypto.randomUUID().slice(0, 8)}`;
      await createTeamInBrowser(page, teamName);

      // Each request to create a key is held until the test has seen the button while it runs.
      const sent: (string | undefined)[] = [];
      let release!: () => void;
      const held = new Promise<void>((r) => {
        release = r;
      });
      await page.route("**/trpc/teams.createApiKey", async (route) => {
        sent.push(route.request().headers()["idempotency-key"]);
        await held;
        await route.continue();
      });
      await page.getByLabel("Key name").fill("deploy");
      await page.getByRole("button", { name: "Create key" }).dblclick();
      const busy = page.getByRole("button", { name: "Creating…" });
      await busy.waitFor();
      expect(await busy.isDisabled()).toBe(true);
      release();
      await page.getByTestId("secret").waitFor();
      const shown = (await page.getByTestId("secret").textContent())!;

      expect(sent).toHaveLength(1);
      expect(sent[0]).toMatch(/^[0-9a-f]{32}$/);
      const made = await keysOfTeam(teamName, "deploy");
      expect(made).toHaveLength(1);
      expect(made[0]!.keyHash).toBe(sha256(shown));
      await page.getByRole("button", { name: "I saved it" }).click();
      await page.close();
    },
    60_000,
  );

  test.skipIf(!hasChromium)(
    "a retry after a lost answer sends the same key and shows the secret of the one key made; the next create is new",
    async () => {
      const page = await browser!.newPage();
      await signUpInBrowser(page, server.url, uniqueEmail("lost"));
      const teamName = `Lost Answer ${crypto.randomUUID().slice(0, 8)}`;
      await createTeamInBrowser(page, teamName);

      const sent: (string | undefined)[] = [];
      let lose = true;
      await page.route("**/trpc/teams.createApiKey", async (route) => {
        sent.push(route.request().headers()["idempotency-key"]);
        if (!lose) return route.continue();
        lose = false;
        // The service makes the key; its answer never reaches the page.
        await route.fetch();
        await route.abort("connectionreset");
      });
      await page.getByLabel("Key name").fill("flaky");
      await page.getByRole("button", { name: "Create key" }).click();
      await page.getByText("The service cannot be reached right now").waitFor();
      await page.getByRole("button", { name: "Create key" }).click();
      await page.getByTestId("secret").waitFor();
      const shown = (await page.getByTestId("secret").textContent())!;

      expect(sent).toHaveLength(2);
      expect(sent[1]).toBe(sent[0]);
      const made = await keysOfTeam(teamName, "flaky");
      expect(made).toHaveLength(1);
      expect(made[0]!.keyHash).toBe(sha256(shown));

      // A success ends the intent: the next key is another key, under another Idempotency-Key.
      await page.getByRole("button", { name: "I saved it" }).click();
      await page.getByLabel("Key name").fill("flaky");
      await page.getByRole("button", { name: "Create key" }).click();
      await page.getByTestId("secret").waitFor();
      expect(sent).toHaveLength(3);
      expect(sent[2]).not.toBe(sent[0]);
      expect(await keysOfTeam(teamName, "flaky")).toHaveLength(2);
      await page.close();
    },
    60_000,
  );
});
