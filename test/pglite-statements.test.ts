import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { PGlite } from "@electric-sql/pglite";
import { withNamedStatements } from "../src/db/pglite-statements";

// The named-statement path must answer exactly as PGlite's own query does: rows, types, errors.
let pg: PGlite;
let plain: PGlite["query"];
let named: PGlite["query"];

beforeAll(async () => {
  pg = await PGlite.create("memory://");
  await pg.exec(
    `create table t (id int primary key, name text not null, data jsonb, at timestamptz, tags text[], ok boolean)`,
  );
  plain = pg.query.bind(pg);
  named = withNamedStatements(pg, plain);
});
afterAll(() => pg.close());

describe("PGlite named statements", () => {
  test("the same rows as PGlite's query, from the first call on (then prepared), in both row modes", async () => {
    const insert = "insert into t (id, name, data, at, tags, ok) values ($1, $2, $3, $4, $5, $6) returning *";
    const at = new Date("2026-11-27T12:00:00Z");
    for (let i = 1; i <= 4; i++) {
      const row = [i, `n'${i}`, { a: i, s: 'x"y' }, at, ["a", "b c"], i % 2 === 0];
      const got = await named(insert, row);
      expect(got.rows).toEqual([
        { id: i, name: `n'${i}`, data: { a: i, s: 'x"y' }, at, tags: ["a", "b c"], ok: i % 2 === 0 },
      ]);
      expect(got.affectedRows).toBe(1);
    }
    const select = "select id, name, data, at, tags, ok from t where id >= $1 and name <> $2 order by id";
    for (let i = 0; i < 3; i++) {
      expect((await named(select, [2, "none"])).rows).toEqual((await plain(select, [2, "none"])).rows);
      const arrays = await named(select, [3, "none"], { rowMode: "array" });
      expect(arrays.rows).toEqual((await plain(select, [3, "none"], { rowMode: "array" })).rows);
      expect(arrays.fields.map((f) => f.name)).toEqual(["id", "name", "data", "at", "tags", "ok"]);
    }
    const update = "update t set data = $1 where id = $2";
    for (let i = 0; i < 3; i++) expect((await named(update, [null, 1])).affectedRows).toBe(1);
    expect((await plain("select data from t where id = 1")).rows).toEqual([{ data: null }]);
  });

  test("an error carries PostgreSQL's code and the statement, and the next call works", async () => {
    const insert = "insert into t (id, name) values ($1, $2)";
    await named(insert, [10, "a"]);
    await named(insert, [11, "b"]);
    for (let i = 0; i < 2; i++) {
      const err = await named(insert, [10, "again"]).catch((e) => e);
      expect(err.code).toBe("23505");
      expect(err.query).toBe(insert);
    }
    await named(insert, [12, "c"]);
    expect((await named("select count(*)::int as n from t where id >= $1", [10])).rows).toEqual([{ n: 3 }]);
  });

  test("a statement whose table changed shape is prepared again", async () => {
    const select = "select * from t where id = $1";
    await named(select, [10]);
    expect(Object.keys((await named(select, [10])).rows[0] as object)).not.toContain("extra");
    await pg.exec("alter table t add column extra int default 7");
    expect((await named(select, [10])).rows[0]).toMatchObject({ id: 10, extra: 7 });
    expect((await named(select, [10])).rows[0]).toMatchObject({ id: 10, extra: 7 });
  });

  test("statements inside a transaction and concurrent calls keep their order and isolation", async () => {
    const insert = "insert into t (id, name) values ($1, $2)";
    await Promise.all(Array.from({ length: 20 }, (_, i) => named(insert, [100 + i, `c${i}`])));
    await pg.transaction(async (tx) => {
      await tx.query(insert, [200, "tx"]);
      expect((await tx.query("select name from t where id = $1", [200])).rows).toEqual([{ name: "tx" }]);
    });
    expect((await named("select count(*)::int as n from t where id >= $1", [100])).rows).toEqual([{ n: 21 }]);
  });
});
