import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statfsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServer, type RunningServer } from "../src/app";
import { loadConfig } from "../src/config";
import { startDevProvider } from "../src/identity/dev-provider";
import type { Logger } from "../src/lib/log";
import { freePort } from "./shared";

/** Settings every test server shares: any port, quiet logs, cheap password hashing. */
export function testEnv(overrides: Record<string, string | undefined> = {}) {
  return {
    NODE_ENV: "test",
    PORT: "0",
    HOST: "127.0.0.1",
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? "silent",
    PASSWORD_MEMORY_KIB: "4096",
    PASSWORD_TIME_COST: "1",
    // Suites create many clients and logins per minute; the limits have their own tests.
    RATE_LIMIT_START_PER_MIN: "100000",
    RATE_LIMIT_POLL_PER_MIN: "100000",
    RATE_LIMIT_VALIDATE_PER_MIN: "100000",
    RATE_LIMIT_CLIENT_WRITE_PER_MIN: "100000",
    RATE_LIMIT_CLIENT_AUTH_FAILURES_PER_MIN: "100000",
    RATE_LIMIT_GENERAL_PER_MIN: "10000000",
    // Every suite enters device codes from 127.0.0.1; the guessing limits have their own tests.
    DEVICE_CODE_FAILURES_PER_ADDRESS: "100000",
    DEVICE_CODE_FAILURES_GLOBAL: "100000",
    // Every suite signs in from 127.0.0.1; the failed sign-in limits have their own tests.
    LOGIN_FAILURES_PER_ADDRESS: "100000",
    SIGNUPS_PER_ADDRESS_PER_HOUR: "10000000",
    SIGNUPS_PER_HOUR: "10000000",
    // Fixtures invite (and accept) every member they add; the per-inviter limit has its own test.
    INVITATIONS_PER_HOUR: "10000000",
    // Suites sign up many accounts at once; the hashing bound has its own tests.
    PASSWORD_HASH_CONCURRENCY: "8",
    PASSWORD_HASH_SIGNUP_SLOTS: "4",
    PASSWORD_HASH_SIGNUP_QUEUE: "10000",
    PASSWORD_HASH_QUEUE: "10000",
    // Every suite's sockets come from 127.0.0.1, many on one account; the caps have their own tests.
    WS_MAX_SOCKETS_PER_CREDENTIAL: "100000",
    WS_MAX_SOCKETS_PER_ADDRESS: "100000",
    // Tests run checks themselves (monitoring.checkNow / pingDue), so events arrive when they
    // expect them; the loop itself has a test of its own.
    PINGER_ENABLED: "false",
    // On PostgreSQL the test servers share the login requests, and many tests move a server's
    // clock on by minutes or hours: its background sweep then expired other servers' sign-ins
    // mid-test (seen in CI: a browser test's approval landed on "expired"). Tests sweep by
    // calling `loginRequests.sweep()`; the background task has its own test (crash-recovery).
    LOGIN_SWEEP_SECONDS: "86400",
    // The player-session sweep closes every session of the database silent past the timeout, on
    // the wall clock: many tests keep sessions open from past times (joins hours back, no
    // heartbeat since), and a tick between their writes and their reads closed them (seen in CI).
    // Tests sweep by calling `playerHistory.sweep()`; the task itself has its own test
    // (player-history.test.ts), on a server started with a short interval.
    PLAYER_SESSION_SWEEP_SECONDS: "86400",
    // PostgreSQL: small pools that hand idle connections back keep a run under max_connections.
    DATABASE_POOL_MAX: "3",
    DATABASE_IDLE_TIMEOUT_SECONDS: "20",
    // Status responders listen on loopback: NODE_ENV=test allows private targets, as development
    // does. The refusals have tests on servers started with NODE_ENV=production.
    // On PostgreSQL every test server shares one delivery queue: only servers a webhook test
    // starts (with its own retry timings) deliver, so theirs are not claimed by the others.
    WEBHOOK_CONCURRENCY: "0",
    ...overrides,
  };
}

/**
 * Overrides that make a test server run as in production, where what differs from development
 * is the subject of the test (private outbound targets refused by default). The development
 * identity provider stays on explicitly, as production allows.
 */
export function productionEnv(overrides: Record<string, string | undefined> = {}) {
  return { NODE_ENV: "production", DEV_IDP_ENABLED: "true", ...overrides };
}

export { freePort } from "./shared";

export function tempDir(prefix = "mcp-test-") {
  return mkdtempSync(join(tmpdir(), prefix));
}

/**
 * Where test servers' PGlite directories go: a RAM file system (/dev/shm) while it has 2 GiB
 * free, else the temporary directory. Each directory starts as a 42 MB copy of the template, and
 * writing that to disk was most of a test server's start (0.6 s of 1.8 s on this machine's ext4).
 * They are removed when their server stops.
 */
function dataDirRoot(): string {
  try {
    const fs = statfsSync("/dev/shm");
    if (fs.bavail * fs.bsize > 2 * 1024 ** 3) return "/dev/shm";
  } catch {}
  return tmpdir();
}

function dataDir(prefix = "mcp-test-") {
  return mkdtempSync(join(dataDirRoot(), prefix));
}

const owned: { server: RunningServer; dir?: string; shared?: boolean }[] = [];

/**
 * On PostgreSQL every live server holds connections (its pool and its LISTEN connection) on a
 * server whose max_connections the whole run shares, and servers live until the run ends. Test
 * files run one after another and no file keeps this many servers, so at it the oldest (long
 * finished with) are stopped before a new one starts: 24 servers of 4 connections each, with the
 * processes some tests spawn, went past the default max_connections of 100. CI runs two
 * PostgreSQL processes at once and sets TEST_MAX_LIVE_SERVERS=8 in each.
 */
const MAX_LIVE_ON_POSTGRES = Number(process.env.TEST_MAX_LIVE_SERVERS ?? 16);

/**
 * A new, separately started server. On PGlite it gets its own data dir unless one is given.
 * `log` replaces the logger LOG_LEVEL would make (a test reading what is logged).
 */
export async function startTestServer(
  overrides: Record<string, string | undefined> = {},
  log?: Logger,
): Promise<RunningServer> {
  while (usingPostgres() && owned.filter((o) => !o.shared).length >= MAX_LIVE_ON_POSTGRES)
    await stopTestServer(owned.find((o) => !o.shared)!.server);
  const dir = overrides.DATA_DIR ?? dataDir();
  if (!usingPostgres() && !overrides.DATABASE_URL && (overrides.NODE_ENV ?? "test") === "test") await seedDataDir(dir);
  // A known port up front, so PUBLIC_URL (and with it the login callback URL) is right.
  const port = overrides.PORT ?? String(freePort());
  const server = await startServer(
    loadConfig(testEnv({ DATA_DIR: dir, PORT: port, PUBLIC_URL: `http://127.0.0.1:${port}`, ...overrides })),
    log,
  );
  owned.push({ server, dir: overrides.DATA_DIR ? undefined : dir, shared: overrides.__shared === "1" });
  return server;
}

/**
 * Stops one server before the run ends. A test whose server runs background work on the shared
 * database (a running pinger claims every due server) stops it, so later files' tests do not
 * find it working beside theirs.
 */
export async function stopTestServer(server: RunningServer) {
  const i = owned.findIndex((o) => o.server === server);
  const [entry] = i >= 0 ? owned.splice(i, 1) : [];
  await server.stop();
  if (entry?.dir) rmSync(entry.dir, { recursive: true, force: true });
}

/**
 * Holds the background tasks `names` of every test server of this run while a test needs the
 * state they would move; the function returned starts them again (once, however often it is
 * called). Only servers still running then are started. (The player-session sweep
 * does not run on test servers at all: PLAYER_SESSION_SWEEP_SECONDS in testEnv.)
 */
export async function holdTasks(...names: string[]): Promise<() => void> {
  const held = owned.flatMap((o) =>
    o.server.services.background.filter((t) => names.includes(t.name)).map((task) => ({ server: o.server, task })),
  );
  await Promise.all(held.map((h) => h.task.stop()));
  let released = false;
  return () => {
    if (released) return;
    released = true;
    for (const h of held) if (owned.some((o) => o.server === h.server)) h.task.start();
  };
}

export async function stopAll() {
  if (globalThis.__devIdp) await (await globalThis.__devIdp).stop();
  while (owned.length > 0) await stopTestServer(owned[0]!.server);
  await removePgliteTemplate();
}

/**
 * A PGlite data directory initialised and migrated once per run (in a child process, as a first
 * start in production does it), closed cleanly: a new test server's empty data dir starts as a
 * copy of it. initdb and every migration inside the WASM instance take seconds per directory, a
 * copy a fraction of one; the server still opens (and migrates, finding nothing left to apply)
 * its own directory, so what it runs on is what a first start on an empty directory makes. The
 * first start itself has tests of its own (test/embedded.test.ts, test/startup.test.ts), which
 * do not start their services through this harness.
 *
 * The preload makes it before the first test, outside any test's timeout.
 */
export function pgliteTemplate(): Promise<string> {
  globalThis.__pgliteTemplate ??= (async () => {
    const dir = dataDir("mcp-template-");
    globalThis.__pgliteTemplateDir = dir;
    mkdirSync(join(dir, "pglite"));
    const child = Bun.spawn(
      [process.execPath, join(import.meta.dir, "../src/db/pglite-init.ts"), join(dir, "pglite")],
      {
        stdout: "ignore",
        stderr: "pipe",
      },
    );
    globalThis.__pgliteTemplateChild = child;
    const stderr = await new Response(child.stderr).text();
    if ((await child.exited) !== 0)
      throw new Error(`initialising the template PGlite directory failed (exit ${child.exitCode}): ${stderr.trim()}`);
    return dir;
  })();
  return globalThis.__pgliteTemplate;
}

/** Fills an empty (or missing) PGlite data dir with a copy of the run's migrated template. */
async function seedDataDir(dir: string) {
  if (existsSync(dir) && readdirSync(dir).length > 0) return;
  cpSync(join(await pgliteTemplate(), "pglite"), join(dir, "pglite"), { recursive: true });
}

/** Removes the template; a run that ended before it was made does not wait for it. */
async function removePgliteTemplate() {
  const child = globalThis.__pgliteTemplateChild;
  if (child && child.exitCode === null) {
    child.kill();
    await child.exited;
  }
  if (globalThis.__pgliteTemplateDir) rmSync(globalThis.__pgliteTemplateDir, { recursive: true, force: true });
}

declare global {
  var __mcpServer: Promise<RunningServer> | undefined;
  var __devIdp: Promise<{ url: string; stop(): Promise<void> }> | undefined;
  var __pgliteTemplate: Promise<string> | undefined;
  var __pgliteTemplateChild: ReturnType<typeof Bun.spawn> | undefined;
  var __pgliteTemplateDir: string | undefined;
}

/** The development identity provider as its own HTTP server, shared by the run. */
export function devIdp() {
  globalThis.__devIdp ??= startDevProvider({ port: 0, hostname: "127.0.0.1" });
  return globalThis.__devIdp;
}

/** The run's shared server: started once, on the run's database, reused by every file. */
export function sharedServer(): Promise<RunningServer> {
  globalThis.__mcpServer ??= devIdp().then((idp) => startTestServer({ DEV_IDP_URL: idp.url, __shared: "1" }));
  return globalThis.__mcpServer;
}

export const usingPostgres = () => Boolean(process.env.DATABASE_URL);

/**
 * True in the CI suite that leaves this test to the other one: `.ci/run` runs the suite on both
 * databases at once and sets CI_SUITE_SPLIT=1, and a test whose subject does not change with the
 * database (a port, a linter) runs in the `db` suite only there. Outside CI every test runs.
 */
export const ciRunsElsewhere = (db: "pglite" | "postgres") =>
  process.env.CI_SUITE_SPLIT === "1" && (db === "postgres") !== usingPostgres();
