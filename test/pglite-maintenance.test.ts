import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { type Database, openDatabase } from "../src/db/client";
import { PgliteMaintenance } from "../src/db/pglite-maintenance";
import { rowsOf } from "../src/db/rows";
import { createLogger } from "../src/lib/log";
import { tempDir } from "./harness";

/**
 * autovacuum's work for the embedded PGlite, on a real PGlite directory: a statement planned
 * while its table was one page keeps a sequential scan as the table grows, until the table's
 * statistics are renewed; a table is redone once it has grown by a fifth, not before.
 */
let database: Database;
beforeAll(async () => {
  database = await openDatabase({ dataDir: tempDir("mcp-maint-") });
  await database.db.execute(sql`create table maint_t (id int primary key, code text not null unique, note text)`);
});
afterAll(() => database.close());

const plan = async () =>
  rowsOf<{ "QUERY PLAN": string }>(await database.db.execute(sql.raw(`explain execute maint_q('c-77')`)))
    .map((r) => r["QUERY PLAN"])
    .join("\n");

describe("PGlite maintenance", () => {
  test("a plan made on a small table is replaced once the grown table is analysed; only grown tables are redone", async () => {
    const { db } = database;
    const maintenance = new PgliteMaintenance(db, createLogger("error"));
    await db.execute(sql`insert into maint_t values (1, 'c-1', 'x')`);
    // Vacuumed and analysed while small, as a new install's tables are.
    expect(await maintenance.run()).toContain("maint_t");
    await db.execute(sql.raw(`prepare maint_q(text) as select id from maint_t where code = $1`));
    for (let i = 0; i < 6; i++) await db.execute(sql.raw(`execute maint_q('c-1')`));
    expect(await plan()).toContain("Seq Scan");
    // Nothing grew: nothing to do.
    expect(await maintenance.run()).not.toContain("maint_t");

    await db.execute(sql`insert into maint_t select g, 'c-' || g, repeat('n', 40) from generate_series(2, 20000) g`);
    expect(await plan()).toContain("Seq Scan");
    expect(await maintenance.run()).toContain("maint_t");
    expect(await plan()).toContain("Index Scan");
    const [stats] = rowsOf<{ reltuples: number }>(
      await db.execute(sql`select reltuples from pg_class where relname = 'maint_t'`),
    );
    expect(Number(stats!.reltuples)).toBe(20000);
    // A few more rows are not a fifth more.
    await db.execute(sql`insert into maint_t select g, 'c-' || g, null from generate_series(20001, 20100) g`);
    expect(await maintenance.run()).not.toContain("maint_t");
  });
});
