/**
 * Regenerates docs/screenshots/: every dashboard page at desktop and phone width, plus the
 * server page in the dark theme. Starts its own server (PGlite in a temporary directory, the
 * development identity provider in-process), a Minecraft status responder and a seeded team.
 *
 *   bun scripts/screenshots.ts
 */
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { offlineUuid } from "../src/identity/protocol";
import { launchChromium, PASSWORD, signUpInBrowser } from "../test/dashboard-driver";
import { startTestServer, stopAll } from "../test/harness";
import { startStatusResponder } from "./demo-mc-server";

const OUT = join(import.meta.dir, "../docs/screenshots");
const SIZES = { desktop: { width: 1280, height: 860 }, phone: { width: 390, height: 844 } } as const;

// This server delivers webhooks (test servers do not by default), to a receiver on loopback.
const server = await startTestServer({ LOG_LEVEL: "error", WEBHOOK_CONCURRENCY: "4", WEBHOOK_POLL_MS: "100" });
const hookReceiver = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("ok") });
const responder = await startStatusResponder({ players: 3, maxPlayers: 40, motd: "Survival" });
const base = server.url;

async function call(
  method: string,
  path: string,
  body?: unknown,
  token?: string,
  headers: Record<string, string> = {},
) {
  const res = await fetch(base + path, {
    method,
    headers: {
      ...(body !== undefined && { "content-type": "application/json" }),
      ...(token && { authorization: `Bearer ${token}` }),
      ...headers,
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await res.json();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

// The seeded team: an owner, a viewer, a client app with its module, three servers (two in a network).
const email = "owner@example.test";
await call("POST", "/auth/signup", { email, password: PASSWORD });
const { access_token: token } = await call("POST", "/auth/login", { email, password: PASSWORD });
await call("POST", "/auth/signup", { email: "viewer@example.test", password: PASSWORD });
const { team_id } = await call("POST", "/teams", { name: "Blocky Realms" }, token);
await call("POST", `/teams/${team_id}/members`, { email: "viewer@example.test", role: "viewer" }, token);
await call("POST", `/teams/${team_id}/api-keys`, { name: "ci-deploy", role: "admin" }, token);
const hook = await call(
  "POST",
  `/teams/${team_id}/webhooks`,
  {
    url: `http://127.0.0.1:${hookReceiver.port}/minecraft`,
    description: "ops alerts",
    event_types: ["server.down", "server.up", "player.banned"],
  },
  token,
);
await call(
  "POST",
  `/teams/${team_id}/webhooks`,
  { url: "https://discord.com/api/webhooks/123/abc", kind: "discord", event_types: ["login.denied"] },
  token,
);
const client = await call(
  "POST",
  "/client/apps",
  { team_id, name: "blocky-launcher", title: "Blocky Launcher", description: "The Blocky Realms launcher" },
  token,
);
await call(
  "POST",
  `/client/apps/${client.app.client_id}/modules/ms-auth`,
  { post_login_redirect_uri: "http://127.0.0.1:7777/callback" },
  token,
);
const servers = [];
for (const [name, kind, network_name] of [
  ["Survival", "single", undefined],
  ["Lobby", "network", "Realms"],
  ["Minigames", "network", "Realms"],
] as const) {
  const s = await call(
    "POST",
    "/server/servers",
    { team_id, name, host: "127.0.0.1", port: responder.port, kind, network_name },
    token,
  );
  servers.push(s);
}
const survival = servers[0]!;
for (const s of servers) await server.services.monitoring.checkNow(s.server_id);
const at = (minutesAgo: number) => new Date(Date.now() - minutesAgo * 60_000).toISOString();
await call(
  "POST",
  "/agent/events",
  {
    events: ["Steve", "Alex", "Notch_Fan"].map((name, i) => ({
      event_id: `join-${name}`,
      type: "join",
      uuid: offlineUuid(name),
      name,
      at: at(40 - i * 10),
    })),
  },
  survival.agent_token,
);
const asServer = { "x-server-id": survival.server_id };
await call(
  "POST",
  "/server/bans",
  { uuid: offlineUuid("Griefer"), name: "Griefer", reason: "griefing spawn" },
  token,
  asServer,
);
await call(
  "POST",
  "/server/ranks",
  { name: "admin", display_name: "Admin", weight: 100, prefix: "[A] ", permissions: ["minecraft.command.ban"] },
  token,
  asServer,
);
await call("POST", "/server/ranks", { name: "default", weight: 0, permissions: ["essentials.spawn"] }, token, asServer);
await call(
  "POST",
  "/server/announcements",
  { message: "Vote for us to get rewards!", schedule: "0 */2 * * *" },
  token,
  asServer,
);

await call("POST", `/teams/${team_id}/webhooks/${hook.endpoint.endpoint_id}/test`, undefined, token);
await server.services.webhooks.flush();
await server.services.webhookWorker.drain();

rmSync(OUT, { recursive: true, force: true });
mkdirSync(OUT, { recursive: true });
const browser = await launchChromium();

async function shoot(page: Page, name: string) {
  await page.waitForLoadState("networkidle");
  await Bun.sleep(300);
  await page.screenshot({ path: join(OUT, `${name}.png`), fullPage: true });
  console.log(`docs/screenshots/${name}.png`);
}

for (const [size, viewport] of Object.entries(SIZES)) {
  const context = await browser.newContext({ viewport, colorScheme: "light" });
  const page = await context.newPage();
  await page.goto(`${base}/`);
  await page.getByRole("button", { name: "Sign in", exact: true }).waitFor();
  await shoot(page, `sign-in-${size}`);
  await signUpInBrowser(page, base, email, true);
  await page.waitForSelector('[data-server="Survival"] .badge[data-status="online"]');
  await shoot(page, `servers-${size}`);
  await page.goto(`${base}/#/networks`);
  await page.getByRole("heading", { name: "Realms" }).waitFor();
  await shoot(page, `networks-${size}`);
  await page.goto(`${base}/#/servers/${survival.server_id}`);
  await page.waitForSelector('[data-live="true"]');
  for (let i = 0; i < 12; i++) {
    await call(
      "POST",
      "/agent/heartbeat",
      {
        tps: 19 + Math.sin(i) * 0.8,
        mspt: 18 + i,
        players_online: 3,
        memory_used_mb: 2600 + i * 40,
        memory_max_mb: 6144,
      },
      survival.agent_token,
    );
    await Bun.sleep(120);
  }
  await shoot(page, `server-${size}`);
  await page.goto(`${base}/#/clients`);
  await page.getByRole("link", { name: "Blocky Launcher" }).waitFor();
  await shoot(page, `clients-${size}`);
  await page.getByRole("link", { name: "Blocky Launcher" }).click();
  await page.getByRole("heading", { name: "Try sign-in" }).waitFor();
  await shoot(page, `client-${size}`);
  await page.goto(`${base}/#/team`);
  await page.getByRole("heading", { name: "API keys" }).waitFor();
  await shoot(page, `team-${size}`);
  const hooks = page.getByRole("region", { name: "Webhooks" });
  await hooks.getByRole("button", { name: "Deliveries" }).first().click();
  await page.waitForSelector('tr[data-testid="delivery"] [data-status="succeeded"]');
  await Bun.sleep(300);
  await hooks.screenshot({ path: join(OUT, `webhooks-${size}.png`) });
  console.log(`docs/screenshots/webhooks-${size}.png`);
  await page.goto(`${base}/#/account`);
  await page.getByText("Signed in as").waitFor();
  await shoot(page, `account-${size}`);
  await context.close();
}

const dark = await browser.newContext({ viewport: SIZES.desktop, colorScheme: "dark" });
const page = await dark.newPage();
await signUpInBrowser(page, base, email, true);
await page.goto(`${base}/#/servers/${survival.server_id}`);
await page.waitForSelector('[data-live="true"]');
await call(
  "POST",
  "/agent/heartbeat",
  { tps: 19.8, mspt: 21, players_online: 3, memory_used_mb: 2900, memory_max_mb: 6144 },
  survival.agent_token,
);
await shoot(page, "server-dark-desktop");

await browser.close();
await responder.close();
hookReceiver.stop(true);
await stopAll();
process.exit(0);
