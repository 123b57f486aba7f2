import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createServer, connect, type Server } from "node:net";
import postgres from "postgres";
import { parseConfig } from "../src/config";
import { openDatabase } from "../src/db/client";
import { DataDirLockedError, lockDataDir } from "../src/db/lock";
import { ciRunsElsewhere, freePort, tempDir, testEnv, usingPostgres } from "./harness";

/**
 * The service as a real process (`bun src/main.ts`), with everything it prints kept: these
 * findings are about how a process starts, refuses to start and says why.
 */
class Proc {
  readonly url: string;
  private readonly proc: ReturnType<typeof Bun.spawn<"ignore", "pipe", "pipe">>;
  output = "";
  readonly exited: Promise<number>;
  readonly startedAt = Date.now();

  constructor(
    readonly port: number,
    env: Record<string, string | undefined>,
  ) {
    this.url = `http://127.0.0.1:${port}`;
    this.proc = Bun.spawn([process.execPath, "src/main.ts"], {
      env: {
        ...process.env,
        ...testEnv({ PORT: String(port), PUBLIC_URL: this.url, LOG_LEVEL: "info", ...env }),
      },
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    });
    const drain = async (stream: ReadableStream<Uint8Array>) => {
      const decoder = new TextDecoder();
      for await (const chunk of stream) this.output += decoder.decode(chunk, { stream: true });
    };
    const drained = Promise.all([drain(this.proc.stdout), drain(this.proc.stderr)]);
    this.exited = this.proc.exited.then(async (code) => {
      await drained;
      return code;
    });
    running.push(this);
  }

  get pid() {
    return this.proc.pid;
  }

  /** Resolves once /health answers 200; throws if the process exits first or `ms` pass. */
  async healthy(ms = 60_000) {
    const deadline = Date.now() + ms;
    for (;;) {
      const ok = await fetch(`${this.url}/health`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) return;
      if (this.proc.exitCode !== null) throw new Error(`exited with ${this.proc.exitCode}:\n${this.output}`);
      if (Date.now() > deadline) throw new Error(`no /health within ${ms} ms:\n${this.output}`);
      await Bun.sleep(50);
    }
  }

  /** The exit code, or null if the process is still running after `ms`. */
  async exitWithin(ms: number): Promise<number | null> {
    return Promise.race([this.exited, Bun.sleep(ms).then(() => null)]);
  }

  /** Resolves once the output contains `text`. */
  async printed(text: string, ms = 20_000) {
    const deadline = Date.now() + ms;
    while (!this.output.includes(text)) {
      if (Date.now() > deadline) throw new Error(`"${text}" not printed within ${ms} ms:\n${this.output}`);
      await Bun.sleep(20);
    }
  }

  lines() {
    return this.output
      .split("\n")
      .filter((l) => l.trim())
      .map((l) => {
        try {
          return JSON.parse(l) as Record<string, any>;
        } catch {
          throw new Error(`not a JSON line: ${l}\nin:\n${this.output}`);
        }
      });
  }

  async kill9() {
    this.proc.kill("SIGKILL");
    await this.exited;
  }
}

const running: Proc[] = [];
const closers: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  await Promise.all(running.map((p) => p.kill9()));
  for (const close of closers) await close();
});

/** A stack trace line as Bun and V8 print them. */
const STACK = /^\s+at .+:\d+:\d+|\n\s+at /m;

async function signup(url: string, email: string) {
  const res = await fetch(`${url}/auth/signup`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email, password: "a long enough password" }),
  });
  expect(res.status).toBe(201);
}

async function canLogIn(url: string, email: string) {
  const res = await fetch(`${url}/auth/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email, password: "a long enough password" }),
  });
  return res.status;
}

describe("a port already in use", () => {
  // The port is the subject, not the database: in CI it runs on PostgreSQL, where a start takes a
  // fraction of PGlite's.
  test.skipIf(ciRunsElsewhere("postgres"))(
    "a second process on a taken port exits non-zero with one JSON line naming the port; the first keeps all the traffic",
    async () => {
      const port = freePort();
      const first = new Proc(port, { DATA_DIR: tempDir() });
      await first.healthy();
      // The first's startup line names what to open, and each of those answers.
      await first.printed('"msg":"listening"');
      const listening = first.lines().find((l) => l.msg === "listening")!;
      expect(listening).toMatchObject({
        dashboard: `${first.url}/`,
        docs: `${first.url}/docs`,
        health: `${first.url}/health`,
      });
      for (const key of ["dashboard", "docs", "health"])
        expect(`${key} ${(await fetch(String(listening[key]))).status}`).toBe(`${key} 200`);
      const second = new Proc(port, { DATA_DIR: tempDir() });
      const code = await second.exitWithin(60_000);
      expect(code).toBe(1);
      const lines = second.lines();
      const refusal = lines.find((l) => l.level === "error");
      expect(refusal?.port).toBe(port);
      expect(String(refusal?.msg)).toContain(`port ${port} is already in use`);
      expect(String(refusal?.msg)).toContain("PORT_SHARING");
      expect(second.output).not.toMatch(STACK);
      // New connections keep reaching the first process: nothing else answers on the port.
      for (let i = 0; i < 10; i++)
        expect((await fetch(`${first.url}/health`, { headers: { connection: "close" } })).status).toBe(200);
    },
    150_000,
  );

  test("PORT_SHARING=true without DATABASE_URL is a configuration error naming the variable", () => {
    expect(() => parseConfig({ PORT_SHARING: "true" })).toThrow(/PORT_SHARING: needs DATABASE_URL/);
    expect(parseConfig({ PORT_SHARING: "true", DATABASE_URL: "postgres://u@h/db" }).PORT_SHARING).toBe(true);
    expect(parseConfig({}).PORT_SHARING).toBe(false);
  });

  test.skipIf(!usingPostgres())(
    "with PORT_SHARING=true two processes on one PostgreSQL listen on one port, and the second serves when the first dies",
    async () => {
      const port = freePort();
      const dir = tempDir();
      const first = new Proc(port, { DATA_DIR: dir, PORT_SHARING: "true", DATABASE_URL: process.env.DATABASE_URL });
      await first.healthy();
      const second = new Proc(port, { DATA_DIR: dir, PORT_SHARING: "true", DATABASE_URL: process.env.DATABASE_URL });
      await second.printed('"msg":"listening"', 60_000);
      expect(await second.exitWithin(500)).toBeNull();
      await first.kill9();
      await second.healthy(5_000);
      const email = `shared-${crypto.randomUUID()}@example.test`;
      await signup(second.url, email);
      expect(await canLogIn(second.url, email)).toBe(200);
    },
    150_000,
  );
});

// PGlite's own directory lock: in CI it runs in the PGlite suite only.
describe.skipIf(ciRunsElsewhere("pglite"))("one process per PGlite data directory", () => {
  // DATABASE_URL empty: PGlite in DATA_DIR, on a PostgreSQL run too.
  const pglite = (dir: string) => ({ DATA_DIR: dir, DATABASE_URL: "" });

  test("a second process on the directory is refused naming it and the holder's pid; every signup survives kill -9 and restart", async () => {
    const dir = tempDir();
    const first = new Proc(freePort(), pglite(dir));
    await first.healthy();
    const emails = Array.from({ length: 6 }, (_, i) => `lock-${i}-${crypto.randomUUID()}@example.test`);
    for (const email of emails.slice(0, 3)) await signup(first.url, email);

    const second = new Proc(freePort(), pglite(dir));
    expect(await second.exitWithin(60_000)).toBe(1);
    const refusal = second.lines().find((l) => l.level === "error")!;
    expect(refusal).toMatchObject({ data_dir: dir, holder_pid: first.pid });
    expect(refusal.msg).toContain(`data directory ${dir} is in use by another process (pid ${first.pid})`);
    expect(second.output).not.toMatch(STACK);

    for (const email of emails.slice(3)) await signup(first.url, email);
    await first.kill9();

    // The lock of a process killed with SIGKILL does not hold the next one back.
    const restarted = new Proc(freePort(), pglite(dir));
    await restarted.healthy();
    for (const email of emails) expect(await canLogIn(restarted.url, email)).toBe(200);
    await restarted.kill9();
    const again = new Proc(freePort(), pglite(dir));
    await again.healthy();
    for (const email of emails) expect(await canLogIn(again.url, email)).toBe(200);
  }, 240_000);

  test("in one process too: the directory opens once at a time, and again after close", async () => {
    const dir = tempDir();
    const a = await openDatabase({ dataDir: dir });
    let refused: unknown;
    try {
      await openDatabase({ dataDir: dir });
    } catch (err) {
      refused = err;
    }
    expect(refused).toBeInstanceOf(DataDirLockedError);
    expect((refused as DataDirLockedError).holderPid).toBe(process.pid);
    await a.close();
    const b = await openDatabase({ dataDir: dir });
    await b.ping();
    await b.close();
  }, 60_000);
});

describe("the pid-file lock, where flock cannot be loaded", () => {
  test("a live holder refuses, a dead holder's file is taken over, and release lets the next one in", async () => {
    const dir = tempDir();
    const child = Bun.spawn([process.execPath, "-e", "await Bun.sleep(60000)"], { stdout: "ignore" });
    const path = join(dir, "pglite.lock");
    writeFileSync(path, `${child.pid}\n`);
    let refused: unknown;
    try {
      lockDataDir(dir, "pid-file");
    } catch (err) {
      refused = err;
    }
    expect(refused).toBeInstanceOf(DataDirLockedError);
    expect((refused as DataDirLockedError).holderPid).toBe(child.pid);

    child.kill("SIGKILL");
    await child.exited;
    const lock = lockDataDir(dir, "pid-file");
    expect(readFileSync(path, "utf8")).toBe(`${process.pid}\n`);
    expect(() => lockDataDir(dir, "pid-file")).toThrow(`(pid ${process.pid})`);
    lock.release();
    expect(existsSync(path)).toBe(false);
    lockDataDir(dir, "pid-file").release();
  });
});

describe("an unreachable DATABASE_URL", () => {
  test("retries with one JSON line per attempt, no stack and no password, then exits non-zero within the bound", async () => {
    const closed = freePort();
    const proc = new Proc(freePort(), {
      DATABASE_URL: `postgres://someone:hunter2-secret@127.0.0.1:${closed}/nowhere`,
      DATABASE_CONNECT_TIMEOUT_SECONDS: "2",
      DATA_DIR: tempDir(),
    });
    const code = await proc.exitWithin(15_000);
    expect(code).toBe(1);
    // Process start-up plus the 2 s bound, with room for a busy machine.
    expect(Date.now() - proc.startedAt).toBeLessThan(12_000);
    expect(proc.output).not.toContain("hunter2-secret");
    expect(proc.output).not.toMatch(STACK);
    const lines = proc.lines();
    const retries = lines.filter((l) => l.msg === "database unreachable, retrying");
    expect(retries.length).toBeGreaterThanOrEqual(2);
    expect(retries.map((l) => l.attempt)).toEqual(retries.map((_, i) => i + 1));
    expect(retries[0]).toMatchObject({ level: "warn", host: "127.0.0.1", port: closed, database: "nowhere" });
    const last = lines.at(-1)!;
    expect(last).toMatchObject({ level: "error", msg: "database unreachable after 2 s, giving up", port: closed });
    expect(last.attempts).toBe(retries.length + 1);
  }, 30_000);

  test.skipIf(!usingPostgres())(
    "a database that becomes reachable during the retry window is used",
    async () => {
      const real = new URL(process.env.DATABASE_URL!);
      const proxyPort = freePort();
      const viaProxy = new URL(real);
      viaProxy.hostname = "127.0.0.1";
      viaProxy.port = String(proxyPort);
      const proc = new Proc(freePort(), {
        DATABASE_URL: viaProxy.toString(),
        DATABASE_CONNECT_TIMEOUT_SECONDS: "30",
        DATA_DIR: tempDir(),
      });
      await proc.printed('"attempt":2', 60_000);
      const proxy = await tcpProxy(proxyPort, real.hostname, Number(real.port || 5432));
      closers.push(() => new Promise((r) => proxy.close(r)));
      await proc.healthy();
      const email = `late-db-${crypto.randomUUID()}@example.test`;
      await signup(proc.url, email);
      const sql = postgres(real.toString(), { max: 1, onnotice: () => {} });
      closers.push(() => sql.end());
      expect((await sql`select count(*)::int as n from users where email = ${email}`)[0]!.n).toBe(1);
      expect(proc.lines().find((l) => l.msg === "database reachable")).toMatchObject({ level: "info" });
      expect(proc.output).not.toMatch(STACK);
    },
    120_000,
  );
});

/** A plain TCP forwarder: the database appearing on an address where nothing listened. */
function tcpProxy(port: number, host: string, targetPort: number): Promise<Server> {
  const server = createServer((client) => {
    const upstream = connect(targetPort, host);
    client.pipe(upstream);
    upstream.pipe(client);
    client.on("error", () => upstream.destroy());
    upstream.on("error", () => client.destroy());
  });
  return new Promise((resolve) => server.listen(port, "127.0.0.1", () => resolve(server)));
}
