import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { appendFileSync, mkdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startFakeRcon } from "../packages/agent/test/fake-rcon";
import { serverDir, spawnAgent, trackPlayers, until, vanilla } from "../packages/agent/test/support";
import { startStatusResponder } from "../scripts/demo-mc-server";
import {
  createServerInBrowser,
  createTeamInBrowser,
  hasChromium,
  launchChromium,
  serverTab,
  signUpInBrowser,
} from "./dashboard-driver";
import { sharedServer, tempDir } from "./harness";
import { api, uniqueEmail } from "./helpers";
import { newServer } from "./servers-fixture";
import { runCommand } from "./shared";

/**
 * The downloads as a server owner and a launcher developer use them: npm installs them from
 * the service's URL and Node runs them, on a PATH that has node, npm and npx and no Bun.
 */

const work = tempDir("mcp-install-");
const cleanup: (() => unknown)[] = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** A directory holding only node, npm, npx and a shell (npx runs the bin through sh), to be the whole PATH. */
function nodeOnlyPath(): string {
  const bin = join(work, "node-only-bin");
  mkdirSync(bin, { recursive: true });
  for (const tool of ["node", "npm", "npx", "sh"]) {
    const found = Bun.which(tool);
    if (!found) throw new Error(`${tool} is not on PATH`);
    symlinkSync(realpathSync(found), join(bin, tool));
  }
  expect(Bun.which("bun", { PATH: bin })).toBeNull();
  return bin;
}
const PATH = nodeOnlyPath();

/** npm's settings for these runs: no audit, fund or update checks, an empty cache of its own. */
const npmEnv = (extra: Record<string, string> = {}) => ({
  PATH,
  HOME: join(work, "home"),
  NO_COLOR: "1",
  npm_config_cache: join(work, "npm-cache"),
  npm_config_update_notifier: "false",
  npm_config_audit: "false",
  npm_config_fund: "false",
  npm_config_loglevel: "error",
  ...extra,
});

const run = (cmd: string[], cwd: string, env: Record<string, string>) => runCommand(cmd, { cwd, env });

function project(name: string, manifest: Record<string, unknown> = {}) {
  const dir = join(work, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name, private: true, ...manifest }));
  return dir;
}

describe("the agent from /downloads on a host with only Node.js", () => {
  test("npm installs the tarball from the service's URL (no registry), its bin runs under Node, and a join written to the log shows through the API", async () => {
    const service = await sharedServer();
    const responder = await startStatusResponder();
    cleanup.push(() => responder.close());
    const s = await newServer(service, { host: "127.0.0.1", port: responder.port });
    expect((await service.services.monitoring.checkNow(s.serverId))?.online).toBe(true);

    // The registry is a closed port: the install must need nothing but the tarball.
    const host = project("agent-host");
    const noRegistry = npmEnv({ npm_config_registry: "http://127.0.0.1:9/" });
    const url = `${service.url}/downloads/mc-platform-agent.tgz`;
    const installed = await run(["npm", "install", url], host, noRegistry);
    expect(`${installed.code} ${installed.err}`).toBe("0 ");
    const bin = join(host, "node_modules/.bin/mc-platform-agent");

    const rcon = startFakeRcon();
    cleanup.push(() => rcon.stop());
    const online = trackPlayers(rcon);
    const dir = serverDir();
    const env = {
      PATH,
      MCP_AGENT_URL: service.url,
      MCP_AGENT_TOKEN: s.agentToken,
      MCP_AGENT_RCON_PORT: String(rcon.port),
      MCP_AGENT_RCON_PASSWORD: rcon.password,
      MCP_AGENT_SERVER_DIR: dir,
      MCP_AGENT_HEARTBEAT_SECONDS: "1",
      MCP_AGENT_LOG_POLL_MS: "100",
    };

    // The command the dashboard prints, from a directory where nothing is installed: npx fetches the URL.
    const empty = join(work, "npx-here");
    mkdirSync(empty);
    const npx = await run(["npx", "--yes", url, "--check"], empty, { ...noRegistry, ...env });
    expect(`${npx.code} ${npx.err}`).toBe("0 ");
    const verdicts = npx.out.split("\n").filter((l) => /^(ok {2}|FAIL) /.test(l));
    expect(verdicts.map((l) => l.split(":")[0])).toEqual(["ok   service", "ok   rcon", "ok   log"]);

    const agent = spawnAgent(env, [], [bin]);
    cleanup.push(() => agent.proc.kill("SIGKILL"));
    await until("the agent to be ready", () => agent.lines.some((l) => l.msg === "agent_ready"));
    const uuid = crypto.randomUUID();
    appendFileSync(join(dir, "logs/latest.log"), vanilla(`UUID of player Steve is ${uuid}`, "User Authenticator #1"));
    appendFileSync(join(dir, "logs/latest.log"), vanilla("Steve joined the game"));
    online.set("Steve", uuid);

    const players = await until("Steve online", async () => {
      const r = await api(service, "GET", "/server/players", s.as());
      return r.body.players?.some((p: { name: string; online: boolean }) => p.name === "Steve" && p.online) && r.body;
    });
    expect(players.players.map((p: { name: string; uuid: string }) => [p.name, p.uuid])).toEqual([["Steve", uuid]]);
    const sessions = await until("Steve's session", async () => {
      const r = await api(service, "GET", "/server/players/sessions", s.as());
      return r.body.sessions?.length > 0 && r.body.sessions;
    });
    expect(sessions[0]).toMatchObject({ uuid, name: "Steve", online: true, source: "agent", left_at: null });

    // Run by Node: the process behind the bin is node, and it exited for nothing.
    const exe = realpathSync(`/proc/${agent.proc.pid}/exe`);
    expect(exe).toBe(realpathSync(Bun.which("node")!));
    expect(agent.proc.exitCode).toBeNull();
    agent.proc.kill("SIGTERM");
    expect(await agent.proc.exited).toBe(0);
  });

  test("the single-file download runs with `node file.mjs` and with Bun", async () => {
    const service = await sharedServer();
    const s = await newServer(service);
    const rcon = startFakeRcon();
    cleanup.push(() => rcon.stop());
    trackPlayers(rcon);
    const dir = serverDir();
    const file = join(work, "mc-platform-agent.mjs");
    writeFileSync(
      file,
      new Uint8Array(await (await fetch(`${service.url}/downloads/mc-platform-agent.mjs`)).arrayBuffer()),
    );
    const env = {
      MCP_AGENT_URL: service.url,
      MCP_AGENT_TOKEN: s.agentToken,
      MCP_AGENT_RCON_PORT: String(rcon.port),
      MCP_AGENT_RCON_PASSWORD: rcon.password,
      MCP_AGENT_SERVER_DIR: dir,
    };
    for (const runtime of [join(PATH, "node"), process.execPath]) {
      const checked = await run([runtime, file, "--check"], work, { PATH, ...env });
      expect(`${runtime}: ${checked.code} ${checked.err}`).toBe(`${runtime}: 0 `);
      expect(checked.out).toContain(`ok   service: ${service.url}`);
    }
  });
});

describe("the SDK from /downloads", () => {
  test("npm installs the tarball from the service's URL into a Node project, and its import is the SDK talking to the service", async () => {
    const service = await sharedServer();
    const s = await newServer(service);
    const app = project("launcher-backend", { type: "module" });
    // Its four dependencies come from npm's cache when another run left them there, else the registry.
    const installed = await run(
      ["npm", "install", "--prefer-offline", `${service.url}/downloads/mc-platform-client.tgz`],
      app,
      npmEnv({ npm_config_cache: join(process.env.HOME ?? work, ".npm") }),
    );
    expect(`${installed.code} ${installed.err}`).toBe("0 ");
    writeFileSync(
      join(app, "main.js"),
      `import * as sdk from "@mc-platform/client";
const { BASE_URL, TOKEN, TEAM_ID } = process.env;
const trpc = sdk.createTrpcClient({ baseUrl: BASE_URL, token: TOKEN, defaults: { teamId: TEAM_ID } });
const { servers } = await trpc.servers.list.query();
const rest = sdk.createRestClient({ baseUrl: BASE_URL, token: "not-a-token" });
const denied = await rest.GET("/teams");
console.log(JSON.stringify({
  exports: Object.keys(sdk).sort(),
  servers: servers.map((x) => x.server_id),
  denied: [denied.response.status, denied.error.error.code],
}));
`,
    );
    const ran = await run(["node", "main.js"], app, {
      PATH,
      BASE_URL: service.url,
      TOKEN: s.owner.token,
      TEAM_ID: s.teamId,
    });
    expect(`${ran.code} ${ran.err}`).toBe("0 ");
    const out = JSON.parse(ran.out);
    expect(out.exports).toEqual(
      expect.arrayContaining([
        "createTrpcClient",
        "createRestClient",
        "createLauncherBackend",
        "verifySessionAssertion",
      ]),
    );
    expect(out.servers).toEqual([s.serverId]);
    expect(out.denied).toEqual([401, "unauthenticated"]);
  });
});

describe("the dashboard's agent card", () => {
  test.skipIf(!hasChromium)(
    "its command, copied with the RCON password and server folder filled in and run by sh with only Node, starts the agent, and a join written to the log shows on the dashboard",
    async () => {
      const service = await sharedServer();
      const responder = await startStatusResponder();
      cleanup.push(() => responder.close());
      const browser = await launchChromium();
      cleanup.push(() => browser.close());
      const page = await browser.newPage({ viewport: { width: 390, height: 844 } });
      await signUpInBrowser(page, service.url, uniqueEmail("agent-card"));
      await createTeamInBrowser(page, "Card Team");
      const { serverId, agentToken } = await createServerInBrowser(page, "Survival", "127.0.0.1", responder.port);
      await service.services.monitoring.checkNow(serverId);
      await page.waitForSelector('h1 .badge[data-status="online"]');

      const command = (await page.getByTestId("agent-command").textContent())!;
      expect(command).toContain(`MCP_AGENT_TOKEN=${agentToken} \\\n`);
      expect(command).toEndWith(`npx --yes ${service.url}/downloads/mc-platform-agent.tgz`);
      const systemd = (await page.getByTestId("agent-systemd").textContent())!;
      expect(systemd).toContain(`MCP_AGENT_TOKEN=${agentToken}\n`);
      expect(systemd).toContain("ExecStart=/usr/bin/env node /usr/local/lib/mc-platform-agent.mjs");

      const rcon = startFakeRcon();
      cleanup.push(() => rcon.stop());
      const online = trackPlayers(rcon);
      const dir = serverDir();
      // What the owner edits: the two placeholders the card names.
      const edited = command.replace("your-rcon-password", rcon.password).replace("/path/to/server", dir);
      const empty = join(work, "card-host");
      mkdirSync(empty);
      // The RCON stand-in is not on the default port; everything else is the card's.
      const agent = Bun.spawn(["sh", "-c", edited], {
        cwd: empty,
        env: npmEnv({ npm_config_registry: "http://127.0.0.1:9/", MCP_AGENT_RCON_PORT: String(rcon.port) }),
        stdout: "pipe",
        stderr: "pipe",
        detached: true,
      });
      cleanup.push(() => process.kill(-agent.pid, "SIGKILL"));
      let out = "";
      void (async () => {
        for await (const chunk of agent.stdout) out += new TextDecoder().decode(chunk);
      })();
      await until("the agent to be ready", () => out.includes('"msg":"agent_ready"'));

      const uuid = crypto.randomUUID();
      appendFileSync(join(dir, "logs/latest.log"), vanilla(`UUID of player Steve is ${uuid}`, "User Authenticator #1"));
      appendFileSync(join(dir, "logs/latest.log"), vanilla("Steve joined the game"));
      online.set("Steve", uuid);
      // The dashboard's player list, on the Players tab, live: no reload.
      await serverTab(page, "Players");
      const row = page
        .getByRole("table", { name: "Players", exact: true })
        .getByRole("row")
        .filter({ has: page.getByRole("cell", { name: "Steve", exact: true }) });
      await row.waitFor({ timeout: 20_000 });
      expect(await row.getByRole("cell").nth(1).textContent()).toBe("online");
      expect(await row.getByRole("link", { name: "Steve" }).getAttribute("title")).toBe(uuid);
      expect(agent.exitCode).toBeNull();
    },
    90_000,
  );
});
