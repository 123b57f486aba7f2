import { expect } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "../../../test/harness";
import type { FakeRcon } from "./fake-rcon";

export const CLI = join(import.meta.dir, "..", "src", "cli.ts");

/** A line as the vanilla server writes it, stamped with the current time of day. */
export function vanilla(message: string, thread = "Server thread") {
  const d = new Date();
  const p = (n: number) => String(n).padStart(2, "0");
  return `[${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}] [${thread}/INFO]: ${message}\n`;
}

/** A Minecraft server directory with a fresh logs/latest.log. */
export function serverDir() {
  const dir = tempDir("mcp-agent-");
  mkdirSync(join(dir, "logs"));
  writeFileSync(join(dir, "logs", "latest.log"), vanilla(`Starting minecraft server version 1.21.4 ${Math.random()}`));
  return dir;
}

/** The fake answers `list` / `list uuids` from the players the test says are online. */
export function trackPlayers(rcon: FakeRcon) {
  const online = new Map<string, string>();
  rcon.answers.set("list", (cmd) => {
    const names = [...online].map(([name, uuid]) => (cmd === "list uuids" ? `${name} (${uuid})` : name));
    return `There are ${online.size} of a max of 20 players online: ${names.join(", ")}`;
  });
  return online;
}

export interface AgentProcess {
  proc: ReturnType<typeof Bun.spawn>;
  lines: any[];
  stderr: () => Promise<string>;
}

/** The agent from source under Bun, or `command` (an installed bin, a bundle under Node). */
export function spawnAgent(
  env: Record<string, string>,
  args: string[] = [],
  command: string[] = [process.execPath, CLI],
): AgentProcess {
  const proc = Bun.spawn([...command, ...args], {
    env: { PATH: process.env.PATH ?? "", MCP_AGENT_LOG_LEVEL: "debug", ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const lines: any[] = [];
  void (async () => {
    let rest = "";
    for await (const chunk of proc.stdout as ReadableStream<Uint8Array>) {
      rest += new TextDecoder().decode(chunk);
      const parts = rest.split("\n");
      rest = parts.pop()!;
      for (const p of parts) lines.push(p.startsWith("{") ? JSON.parse(p) : { raw: p });
    }
  })();
  return { proc, lines, stderr: () => new Response(proc.stderr as ReadableStream).text() };
}

export async function until<T>(
  what: string,
  fn: () => Promise<T | undefined | false> | T | undefined | false,
  ms = 20_000,
): Promise<T> {
  const deadline = Date.now() + ms;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    await Bun.sleep(100);
  }
  expect(`timed out waiting for ${what}${last ? `: ${last}` : ""}`).toBe("");
  throw new Error("unreachable");
}
