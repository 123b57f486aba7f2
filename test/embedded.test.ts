import { describe, expect, test } from "bun:test";
import { eq, sql } from "drizzle-orm";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { MIGRATIONS_DIR, openDatabase, PGLITE_SHARED_BUFFERS } from "../src/db/client";
import { users } from "../src/db/schema";
import { HealthService } from "../src/health/service";
import { AppError } from "../src/lib/errors";
import { tempDir, usingPostgres } from "./harness";

const rowsOf = (r: unknown) => (Array.isArray(r) ? r : (r as { rows: unknown[] }).rows) as Record<string, unknown>[];

describe.skipIf(usingPostgres())("the embedded database (PGlite)", () => {
  test("starts with small shared buffers instead of PostgreSQL's 128 MB", async () => {
    const database = await openDatabase({ dataDir: tempDir() });
    try {
      const rows = rowsOf(await database.db.execute(sql`show shared_buffers`));
      expect(rows[0]!.shared_buffers).toBe(PGLITE_SHARED_BUFFERS);
    } finally {
      await database.close();
    }
  }, 60_000);

  test("queries carry no parser table of their own: the instance's parsers answer", async () => {
    const database = await openDatabase({ dataDir: "memory://" });
    try {
      const client = database.db.$client;
      // A per-query parser would turn this int into "per-query"; the instance's table is used.
      const r = await client.query<{ n: unknown }>("select 1::int as n", [], { parsers: { 23: () => "per-query" } });
      expect(r.rows[0]!.n).toBe(1);
      // drizzle's mapping is unchanged: timestamps typed as dates come back as Date, raw ones as text.
      const email = `parsers-${Date.now()}@example.test`;
      await database.db.transaction(async (tx) => {
        await tx.insert(users).values({ email, passwordHash: "x" });
      });
      const [row] = await database.db.select().from(users).where(eq(users.email, email));
      expect(row!.createdAt).toBeInstanceOf(Date);
      const raw = rowsOf(
        await database.db.execute(sql`select now()::timestamptz as t, array[now()]::timestamptz[] as a`),
      );
      expect(typeof raw[0]!.t).toBe("string");
      expect(typeof raw[0]!.a).toBe("string");
    } finally {
      await database.close();
    }
  }, 60_000);
});

describe.skipIf(usingPostgres())("a first start on an empty PGlite directory", () => {
  test("is initialised in a child process: every migration is applied, and writes survive a restart", async () => {
    const dataDir = tempDir();
    const journal = (await Bun.file(join(MIGRATIONS_DIR, "meta/_journal.json")).json()) as { entries: unknown[] };
    const first = await openDatabase({ dataDir, initInChild: true });
    const email = `first-start-${Date.now()}@example.test`;
    try {
      expect(existsSync(join(dataDir, "pglite", "PG_VERSION"))).toBe(true);
      const rows = rowsOf(await first.db.execute(sql`select count(*)::int as n from drizzle.__drizzle_migrations`));
      expect(rows[0]!.n).toBe(journal.entries.length);
      await first.db.insert(users).values({ email, passwordHash: "x" });
    } finally {
      await first.close();
    }
    const again = await openDatabase({ dataDir, initInChild: true });
    try {
      expect(await again.db.select({ email: users.email }).from(users).where(eq(users.email, email))).toEqual([
        { email },
      ]);
    } finally {
      await again.close();
    }
  }, 120_000);

  test("whose initialisation fails is refused naming the directory, and the directory is not left locked", async () => {
    const dataDir = tempDir();
    // A file where initdb must create a directory.
    mkdirSync(join(dataDir, "pglite"));
    writeFileSync(join(dataDir, "pglite", "base"), "not a directory");
    const open = () => openDatabase({ dataDir, initInChild: true });
    const refused = await open().then(
      () => "opened",
      (err: Error) => err.message,
    );
    expect(refused).toContain(`initialising the PGlite directory ${join(dataDir, "pglite")} failed`);
    // Refused for the same reason again, not for a lock the first attempt kept.
    expect(
      await open().then(
        () => "opened",
        (err: Error) => err.message,
      ),
    ).toContain("initialising the PGlite directory");
  }, 120_000);
});

describe("health probe", () => {
  test("one query answers many /health calls within its TTL", async () => {
    const database = await openDatabase({ url: process.env.DATABASE_URL, dataDir: "memory://" });
    let pings = 0;
    const health = new HealthService({
      alive: () => database.alive(),
      ping: async () => {
        pings++;
        await database.ping();
      },
    });
    try {
      await Promise.all(Array.from({ length: 50 }, () => health.check()));
      for (let i = 0; i < 50; i++) await health.check();
      expect(pings).toBe(1);
    } finally {
      await database.close();
    }
  }, 60_000);

  test("a database that stops answering turns health 503 once the TTL has passed", async () => {
    const database = await openDatabase({ url: process.env.DATABASE_URL, dataDir: "memory://" });
    // alive() stays true: the failure is only seen by a real round trip, as with a lost server.
    const health = new HealthService({ alive: () => true, ping: () => database.ping() }, { ttlMs: 100 });
    expect((await health.check()).database).toBe("ok");
    await database.close();
    await Bun.sleep(150);
    let err: unknown;
    await health.check().catch((e) => {
      err = e;
    });
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).appCode).toBe("unavailable");
    expect((err as AppError).details).toEqual({ status: "unavailable", database: "unreachable" });
  }, 60_000);
});
