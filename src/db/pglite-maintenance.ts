import { sql } from "drizzle-orm";
import type { Logger } from "../lib/log";
import type { Db } from "./client";
import { rowsOf } from "./rows";

/** A table is vacuumed and analysed again once it has grown past this share of its size then... */
const GROWTH = 0.2;
/** ...and by at least this many 8 KiB pages (so a small table is not redone for a few rows). */
const MIN_PAGES = 8;

/**
 * What autovacuum does for a PostgreSQL server, for the embedded PGlite, which runs none
 * (single-user PostgreSQL has no background workers). Left alone, a table's statistics stay as
 * they were when it was made, so a prepared statement planned while its table held a page (a
 * sequential scan) kept that plan as the table grew: redeeming an OpenID Connect code went from
 * 0.5 to 1.2 ms in a minute of sign-ins, growing with every grant. And the dead rows of every
 * UPDATE and DELETE stay on disk for good.
 *
 * Each run (`PGLITE_MAINTENANCE_SECONDS`, 10) runs `VACUUM (ANALYZE)` on the tables never
 * vacuumed that hold rows, and on those grown by a fifth (and 8 pages) since they last were, one
 * at a time, so requests run between them. New statistics invalidate the plans made with the
 * old. A run with nothing due is one catalog read; the growth rule bounds the vacuuming itself,
 * so runs are frequent: a new table is planned with statistics within seconds of its first
 * rows (without them `uuid in (50 values)` is guessed to be a quarter of the table, and a join
 * batch's month rows were read in full).
 */
export class PgliteMaintenance {
  constructor(
    private readonly db: Db,
    private readonly log: Logger,
  ) {}

  /** The tables it vacuumed and analysed, in the order it did. */
  async run(): Promise<string[]> {
    const rows = rowsOf<{ name: string; pages: number; recorded: number; never: boolean }>(
      await this.db.execute(sql`
        select c.relname as name, (pg_relation_size(c.oid) / 8192)::int as pages, c.relpages as recorded,
               c.reltuples < 0 as never
          from pg_class c
         where c.relkind = 'r' and c.relnamespace = 'public'::regnamespace`),
    );
    const due = rows
      .filter((r) => {
        const pages = Number(r.pages);
        if (r.never) return pages > 0;
        return pages >= Number(r.recorded) * (1 + GROWTH) + MIN_PAGES;
      })
      .map((r) => r.name);
    for (const name of due) {
      const started = performance.now();
      await this.db.execute(sql.raw(`vacuum (analyze) "${name.replace(/"/g, '""')}"`));
      this.log.debug("vacuumed and analysed", { table: name, ms: Math.round(performance.now() - started) });
    }
    return due;
  }
}
