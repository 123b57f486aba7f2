import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import postgres from "postgres";
import { openDatabase } from "../src/db/client";
import { startTestServer, tempDir, testEnv, usingPostgres } from "./harness";
import { api, expectError, uniqueEmail } from "./helpers";

describe("health and operations", () => {
  test("GET /health reports ok with version and uptime", async () => {
    const server = await startTestServer();
    const res = await api(server, "GET", "/health");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      status: "ok",
      database: "ok",
      version: expect.any(String),
      uptime_s: expect.any(Number),
    });
  });

  test("GET /health is a 503 naming the database when it is unreachable", async () => {
    const server = await startTestServer();
    await server.services.database.close();
    const err = expectError(await api(server, "GET", "/health"), 503, "unavailable");
    expect(err.details).toEqual({ status: "unavailable", database: "unreachable" });
  });

  test("a restart keeps the data (same DATA_DIR or same database)", async () => {
    const dir = tempDir();
    const email = uniqueEmail("persist");
    const first = await startTestServer({ DATA_DIR: dir });
    expect((await api(first, "POST", "/auth/signup", { body: { email, password: "persist me pw" } })).status).toBe(201);
    await first.stop();
    const second = await startTestServer({ DATA_DIR: dir });
    const login = await api(second, "POST", "/auth/login", { body: { email, password: "persist me pw" } });
    expect(login.status).toBe(200);
    // The signing key lives in DATA_DIR too, so tokens survive the restart.
    expect((await api(second, "GET", "/auth/me", { token: login.body.access_token })).status).toBe(200);
  });

  test("SIGTERM finishes in-flight requests, then exits cleanly and logs without secrets", async () => {
    const dir = tempDir();
    const env = {
      ...process.env,
      ...testEnv({
        DATA_DIR: dir,
        PORT: "0",
        LOG_LEVEL: "info",
        PASSWORD_MEMORY_KIB: "65536",
        PASSWORD_TIME_COST: "3",
      }),
    };
    const proc = Bun.spawn([process.execPath, "src/main.ts"], { env, stdout: "pipe", stderr: "pipe" });
    const reader = proc.stdout.getReader();
    let out = "";
    let port = 0;
    while (!port) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`server exited before listening: ${out}`);
      out += new TextDecoder().decode(value);
      const m = /"port":(\d+)/.exec(out);
      if (m) port = Number(m[1]);
    }
    const base = `http://127.0.0.1:${port}`;
    const password = "s3cret-password-value";
    const email = uniqueEmail("sigterm");
    await fetch(`${base}/auth/signup`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email, password }),
    });
    // A login is slow (argon2id at full cost): send it, then SIGTERM while it runs.
    const inflight = fetch(`${base}/auth/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email, password }),
    });
    await Bun.sleep(20);
    proc.kill("SIGTERM");
    const res = await inflight;
    expect(res.status).toBe(200);
    const body = (await res.json()) as { access_token: string; refresh_token: string };
    expect(await proc.exited).toBe(0);
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      out += new TextDecoder().decode(value);
    }
    const lines = out
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(
      lines.some(
        (l) =>
          l.msg === "request" &&
          l.path === "/auth/login" &&
          l.status === 200 &&
          typeof l.request_id === "string" &&
          typeof l.duration_ms === "number",
      ),
    ).toBe(true);
    expect(lines.at(-1).msg).toBe("stopped");
    for (const secret of [password, body.access_token, body.refresh_token]) expect(out).not.toContain(secret);
  }, 120_000); // a cold PGlite start in a child process takes tens of seconds on a busy 2-core machine

  test.skipIf(!usingPostgres())("several instances starting together apply the migrations once", async () => {
    const admin = postgres(process.env.MCP_ADMIN_DATABASE_URL!, { max: 1, onnotice: () => {} });
    const name = `mcp_migrate_${Date.now()}`;
    await admin.unsafe(`create database "${name}"`);
    const url = new URL(process.env.DATABASE_URL!);
    url.pathname = `/${name}`;
    try {
      const dbs = await Promise.all(
        [1, 2, 3, 4].map(() => openDatabase({ url: url.toString(), dataDir: join(tempDir(), "unused") })),
      );
      const check = postgres(url.toString(), { max: 1, onnotice: () => {} });
      const rows = await check`select hash, count(*)::int as n from drizzle.__drizzle_migrations group by hash`;
      expect(rows.length).toBeGreaterThan(0);
      expect(rows.every((r) => r.n === 1)).toBe(true);
      await check.end();
      await Promise.all(dbs.map((d) => d.close()));
    } finally {
      await admin.unsafe(`drop database if exists "${name}" with (force)`);
      await admin.end();
    }
  });
});
