import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServer, type RunningServer } from "../src/app";
import { loadConfig } from "../src/config";

/** Settings every test server shares: any port, quiet logs, cheap password hashing. */
export function testEnv(overrides: Record<string, string | undefined> = {}) {
  return {
    NODE_ENV: "test",
    PORT: "0",
    HOST: "127.0.0.1",
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? "silent",
    PASSWORD_MEMORY_KIB: "4096",
    PASSWORD_TIME_COST: "1",
    ...overrides,
  };
}

export function tempDir(prefix = "mcp-test-") {
  return mkdtempSync(join(tmpdir(), prefix));
}

const owned: { server: RunningServer; dir?: string }[] = [];

/** A new, separately started server. On PGlite it gets its own data dir unless one is given. */
export async function startTestServer(overrides: Record<string, string | undefined> = {}): Promise<RunningServer> {
  const dir = overrides.DATA_DIR ?? tempDir();
  const server = await startServer(loadConfig(testEnv({ DATA_DIR: dir, ...overrides })));
  owned.push({ server, dir: overrides.DATA_DIR ? undefined : dir });
  return server;
}

export async function stopAll() {
  for (const { server, dir } of owned.splice(0)) {
    await server.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }
}

declare global {
  var __mcpServer: Promise<RunningServer> | undefined;
}

/** The run's shared server: started once, on the run's database, reused by every file. */
export function sharedServer(): Promise<RunningServer> {
  globalThis.__mcpServer ??= startTestServer();
  return globalThis.__mcpServer;
}

export const usingPostgres = () => Boolean(process.env.DATABASE_URL);
