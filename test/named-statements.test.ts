import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { type Database, openDatabase } from "../src/db/client";
import { executeNamed } from "../src/db/prepared";
import { rowsOf } from "../src/db/rows";

// `executeNamed` answers as `execute` does, on whichever database the run has; on PostgreSQL it
// sends the statement prepared, once per connection and text (pg_prepared_statements shows it).
let database: Database;

beforeAll(async () => {
  database = await openDatabase({ url: process.env.DATABASE_URL, dataDir: "memory://" });
});
afterAll(() => database.close());

describe("executeNamed", () => {
  test("the same rows and errors as execute, in and out of a transaction", async () => {
    const { db } = database;
    const q = (n: number) => sql`
      with x as (select g, 'n''' || g as name from generate_series(1, ${n}::int) g)
      select g::int as g, name, ${JSON.stringify({ a: [n] })}::json as data from x order by g`;
    for (const n of [0, 1, 3, 3, 7]) {
      const named = rowsOf<unknown>(await executeNamed(db, q(n)));
      expect(named).toEqual(rowsOf<unknown>(await db.execute(q(n))));
      expect(named.length).toBe(n);
    }
    const inTx = await db.transaction(async (tx) => rowsOf<{ g: number }>(await executeNamed(tx, q(2))));
    expect(inTx.map((r) => r.g)).toEqual([1, 2]);
    // A failing statement fails the same way, and the transaction it was in is rolled back.
    await db.execute(sql`create table if not exists named_t (id int primary key)`);
    await expect(
      db.transaction(async (tx) => {
        await executeNamed(tx, sql`insert into named_t (id) values (${1}::int)`);
        await executeNamed(tx, sql`insert into named_t (id) values (${1}::int)`);
      }),
    ).rejects.toThrow();
    expect(rowsOf<{ n: number }>(await db.execute(sql`select count(*)::int as n from named_t`))[0]!.n).toBe(0);
    await db.execute(sql`drop table named_t`);
  });

  test.if(Boolean(process.env.DATABASE_URL))(
    "on PostgreSQL the statement is prepared once per connection and reused",
    async () => {
      const marker = `named_marker_${Date.now()}`;
      const seen = await database.db.transaction(async (tx) => {
        for (let i = 0; i < 3; i++) await executeNamed(tx, sql`select ${i}::int as i, ${sql.raw(`'${marker}'`)} as m`);
        await tx.execute(sql`select ${9}::int as i, ${sql.raw(`'${marker}'`)} as m`);
        return rowsOf<{ statement: string }>(
          await tx.execute(sql`select statement from pg_prepared_statements where statement like ${`%${marker}%`}
            and statement not like '%pg_prepared_statements%'`),
        );
      });
      // One prepared statement for the three named calls; the plain execute is not kept.
      expect(seen.length).toBe(1);
    },
  );
});
