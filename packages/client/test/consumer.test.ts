import { afterAll, expect, test } from "bun:test";
import { cpSync, readdirSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { api } from "../../../test/helpers";
import { sharedServer, tempDir } from "../../../test/harness";
import { runCommand } from "../../../test/shared";
import { decide, newClient, signIn } from "../../../test/ms-auth-helpers";
import { build } from "../scripts/build";

const PACKAGE = resolve(import.meta.dir, "..");
const work = tempDir("mcp-sdk-consumer-");
afterAll(() => rmSync(work, { recursive: true, force: true }));

async function run(cmd: string[], cwd: string) {
  const { code, out, err } = await runCommand(cmd, { cwd, env: { ...process.env, NO_COLOR: "1" } });
  if (code !== 0) throw new Error(`${cmd.join(" ")} exited ${code}\n${out}\n${err}`);
  return out;
}

test("a Node project (NodeNext, strict, no Bun types) installs the packed SDK, type-checks, and signs a player in with it", async () => {
  // Build and pack as a publisher would.
  await build();
  await run(["npm", "pack", "--ignore-scripts", "--pack-destination", work], PACKAGE);
  const tarball = join(work, readdirSync(work).find((f) => f.endsWith(".tgz"))!);
  const files = await run(["tar", "tzf", tarball], work);
  expect(files.split("\n").sort()).toEqual(
    [
      "",
      "package/LICENSE",
      "package/README.md",
      "package/dist/index.d.ts",
      "package/dist/index.js",
      "package/package.json",
    ].sort(),
  );

  // A copy of the consumer project, with the tarball installed from the file like a registry package.
  const project = join(work, "consumer");
  cpSync(join(PACKAGE, "consumer"), project, {
    recursive: true,
    filter: (src) => !/[/\\](node_modules|out)$/.test(src),
  });
  await run(["npm", "install", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error", tarball], project);
  // No server source and no Bun types anywhere the consumer can see.
  expect(readdirSync(join(project, "node_modules"))).not.toContain("bun-types");
  await run([join(project, "node_modules/.bin/tsc"), "--noEmit"], project);
  await run([join(project, "node_modules/.bin/tsc"), "--noCheck"], project);

  // The launcher backend under Node, against a running service; the test plays the browser.
  const server = await sharedServer();
  const c = await newClient(server);
  const login = Bun.spawn(["node", "out/login.js"], {
    cwd: project,
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, BASE_URL: server.url, CLIENT_ID: c.clientId, CLIENT_SECRET: c.secret },
  });
  const lines: string[] = [];
  const decoder = new TextDecoder();
  let buffered = "";
  for await (const chunk of login.stdout) {
    buffered += decoder.decode(chunk, { stream: true });
    const parts = buffered.split("\n");
    buffered = parts.pop()!;
    for (const line of parts) {
      lines.push(line);
      if (line.startsWith("AUTH_URL ")) {
        const s = await signIn(server, line.slice("AUTH_URL ".length), { username: "Notch" });
        expect((await decide(server, s, "approve")).status).toBe(303);
      }
    }
  }
  const code = await login.exited;
  const stderr = await new Response(login.stderr).text();
  expect(`${code} ${stderr}`).toBe("0 ");
  const result = JSON.parse(lines.find((l) => l.startsWith("SESSION "))!.slice("SESSION ".length));
  expect(result).toMatchObject({ mcUsername: "Notch", validated: true });

  // The service agrees: the token the consumer got is a live session of that player.
  const validated = await api(server, "POST", "/client/ms-auth/session/validate", {
    body: { client_id: c.clientId, client_secret: c.secret, svc_session_token: result.sessionToken },
  });
  expect(validated.body).toMatchObject({ valid: true, mc_uuid: result.mcUuid, mc_username: "Notch" });
}, 110_000);
