import { sql } from "drizzle-orm";
import type { RateLimitStore, SlidingWindow, WindowCounts } from "../lib/rate-limit";
import type { Db } from "./client";

/**
 * Counters in the database: every instance on the same PostgreSQL counts together. One statement
 * a hit: the upsert locks the key's row, so racing hits (from any instance) are judged one after
 * another against the counts the previous one left. It states `admits` (src/lib/rate-limit.ts)
 * in SQL.
 */
export class DbRateLimitStore implements RateLimitStore {
  constructor(private readonly db: Db) {}

  async hit(key: string, w: SlidingWindow): Promise<WindowCounts> {
    const size = sql`${w.size}::int`;
    const slot = sql`${w.slotMs}::bigint`;
    const first = w.limit > 0 ? 1 : 0;
    const result = await this.db.execute(sql`
      insert into rate_limits as r (key, slot_ms, counts, allowed)
      values (${key}, ${slot}, array_fill(0, array[${size} - 1]) || ${first}::int, ${first === 1})
      on conflict (key) do update set (slot_ms, counts, allowed) = (
        select slot_ms, case when ok then aged[1:${size} - 1] || (aged[${size}] + 1) else aged end, ok
        from (
          select slot_ms, aged,
            total - aged[1] < ${w.limit}::bigint and total < ${w.limit + w.slack}::bigint as ok
          from (
            select slot_ms, aged, (select sum(c) from unnest(aged) c) as total
            from (
              -- Another instance's clock may be ahead: its newest slot stays the newest.
              select greatest(r.slot_ms, ${slot}) as slot_ms,
                case
                  when shift >= ${size} or cardinality(r.counts) <> ${size} then array_fill(0, array[${size}])
                  else r.counts[shift + 1:${size}] || array_fill(0, array[shift])
                end as aged
              from (select greatest(0, (${slot} - r.slot_ms) / ${w.slotWidthMs}::bigint)::int as shift) s
            ) a
          ) b
        ) d
      )
      returning slot_ms, counts, allowed
    `);
    const rows = Array.isArray(result) ? result : (result as unknown as { rows: unknown[] }).rows;
    const row = rows[0] as { slot_ms: string | number; counts: number[]; allowed: boolean };
    return { allowed: row.allowed, slotMs: Number(row.slot_ms), counts: row.counts };
  }

  async prune(olderThanMs: number) {
    await this.db.execute(sql`delete from rate_limits where slot_ms < ${olderThanMs}::bigint`);
  }
}
