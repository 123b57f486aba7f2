import { type AnyColumn, type SQL, sql } from "drizzle-orm";
import type { Db } from "./client";

/**
 * A hand-written statement as a prepared query: `db.execute` sends each statement unnamed, so
 * PostgreSQL parses and plans it on every call (for the CTEs on the login flow's path, five
 * times what running it costs). Wrapped as the one CTE of a select (`with "q" as (<statement>)
 * select <columns> from "q"`), it goes through drizzle's query builder, which prepares it: once
 * per connection. The statement takes its values as `sql.placeholder(name)` and answers
 * `columns` (a select's, or an insert's or update's RETURNING). A statement that modifies data
 * must not carry a WITH of its own that does too (PostgreSQL wants those at the top level):
 * give it the modifying parts as CTEs of its own with `db.$with` instead.
 */
export function preparedStatement<C extends string>(
  db: Db,
  name: string,
  columns: readonly C[],
  statement: SQL,
): { execute(values?: Record<string, unknown>): Promise<Record<C, unknown>[]> } {
  const fields: Record<string, SQL.Aliased> = {};
  for (const c of columns) fields[c] = sql`${sql.identifier(c)}`.as(c);
  const q = db.$with("q", fields).as(statement);
  const selection: Record<string, SQL.Aliased> = {};
  for (const c of columns) selection[c] = (q as unknown as Record<string, SQL.Aliased>)[c]!;
  const prepared = db.with(q).select(selection).from(q).prepare(name);
  return prepared as typeof prepared & { execute(values?: Record<string, unknown>): Promise<Record<C, unknown>[]> };
}

/**
 * `column = $name` as a condition on a row already found by a unique key, written so no index
 * can serve it. Beside a unique key (`id = $1 and team_id = $2`), an index on `column` looks
 * just as selective to the planner while a table has no statistics (PGlite's first minute, a
 * new PostgreSQL table), and a prepared statement can keep a plan that reads every row of one
 * team or client: measured on redeeming OpenID Connect codes, 0.07 -> 0.7 ms within 2,000
 * sign-ins of one client. The value is never null here, so the answer is the same as `=`'s.
 */
export function sameAs(column: AnyColumn, name: string, type: "uuid" | "text"): SQL {
  return sql`${column} is not distinct from ${sql.placeholder(name)}::${sql.raw(type)}`;
}

/** A database handle or a transaction, as `db.transaction` hands one out. */
type Handle = Db | Parameters<Parameters<Db["transaction"]>[0]>[0];

interface DrizzleInternals {
  dialect: { sqlToQuery(query: SQL): unknown };
  session: {
    client?: { unsafe?: unknown };
    prepareQuery(
      query: unknown,
      fields: undefined,
      name: string | undefined,
      arrayMode: boolean,
    ): { execute(): Promise<unknown> };
  };
}

/**
 * `db.execute(query)` (or a transaction's), sent on PostgreSQL as a named prepared statement:
 * postgres.js keeps one per connection and statement text, so a statement the ingest runs once
 * per batch is parsed and planned once per connection instead of every time (its large
 * statements cost PostgreSQL about a quarter of its CPU that way; docs/benchmarks.md). For
 * statements whose text does not vary with the data: values as parameters, a list as one array
 * parameter, never a count or a list written into the text, else each variant is kept on every
 * connection. PGlite's path names repeated statements itself (src/db/pglite-statements.ts).
 */
export function executeNamed(db: Handle, query: SQL): Promise<unknown> {
  const d = db as unknown as DrizzleInternals;
  if (typeof d.session?.client?.unsafe !== "function") return db.execute(query);
  return d.session.prepareQuery(d.dialect.sqlToQuery(query), undefined, "named", false).execute();
}
