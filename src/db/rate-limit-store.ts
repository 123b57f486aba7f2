import { eq, sql } from "drizzle-orm";
import { admits, type RateLimitStore, type SlidingWindow, type WindowCounts } from "../lib/rate-limit";
import type { Db } from "./client";
import { rateLimits } from "./schema";

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

interface Counted {
  /** Start of the newest slot the arrays end at. */
  slotMs: number;
  slotWidthMs: number;
  /** The shared counts as last read back from the database (this instance's flushed hits included). */
  shared: Int32Array;
  /** Hits sent in the flush under way, not yet read back. */
  inflight: Int32Array;
  /** Hits admitted here and not yet sent. */
  pending: Int32Array;
  /** Hit since the last flush: the next flush reads its shared counts back even with nothing to add. */
  touched: boolean;
  /** The flush (or read) that last brought `shared` up to date. */
  synced: number;
}

function age(e: Counted, slotMs: number) {
  if (slotMs <= e.slotMs) return;
  const size = e.shared.length;
  const shift = Math.round((slotMs - e.slotMs) / e.slotWidthMs);
  for (const a of [e.shared, e.inflight, e.pending]) {
    if (shift >= size) a.fill(0);
    else {
      a.copyWithin(0, shift);
      a.fill(0, size - shift);
    }
  }
  e.slotMs = slotMs;
}

/**
 * Counters decided in memory and shared through the database in batches: a hit is judged on
 * this instance against the shared counts last read back plus its own hits since, and every
 * `flush()` (a background task, sub-second) adds all keys' new hits in ONE statement that
 * returns the merged counts. A key this instance has not seen, or has not been hit here since
 * before the last flush, is read before its hit is judged, so an instance never judges on
 * counts older than one flush interval.
 *
 * Bound: each instance decides on counts at most one flush interval (plus one round trip) old.
 * Over any window the instances together admit at most `limit + slack` plus what the OTHER
 * instances admit for the same key in one flush interval; on one instance the count is exact.
 */
export class BatchedRateLimitStore implements RateLimitStore {
  private entries = new Map<string, Counted>();
  private loading = new Map<string, Promise<void>>();
  private flushing: Promise<void> | undefined;
  /** Flushes begun; an entry synced before the latest one missed it. */
  private flushes = 0;
  private readonly readOne;

  constructor(private readonly db: Db) {
    this.readOne = db
      .select({ slotMs: rateLimits.slotMs, counts: rateLimits.counts })
      .from(rateLimits)
      .where(eq(rateLimits.key, sql.placeholder("key")))
      .limit(1)
      .prepare("rate_limit_by_key");
  }

  async hit(key: string, w: SlidingWindow): Promise<WindowCounts> {
    let e = this.entries.get(key);
    // Idle through a whole flush: others' hits meanwhile were not read back.
    if (!e || e.shared.length !== w.size || (e.synced < this.flushes && !e.touched)) {
      await this.load(key, w);
      e = this.entries.get(key)!;
    }
    age(e, w.slotMs);
    const counts = new Int32Array(w.size);
    for (let i = 0; i < w.size; i++) counts[i] = e.shared[i]! + e.inflight[i]! + e.pending[i]!;
    const allowed = admits(counts, w.limit, w.slack);
    if (allowed) {
      e.pending[w.size - 1]!++;
      counts[w.size - 1]!++;
    }
    e.touched = true;
    return { allowed, slotMs: e.slotMs, counts };
  }

  private load(key: string, w: SlidingWindow): Promise<void> {
    let p = this.loading.get(key);
    if (!p) {
      p = this.readOne
        .execute({ key })
        .then(([row]) => {
          const read: Counted = {
            slotMs: w.slotMs,
            slotWidthMs: w.slotWidthMs,
            shared: new Int32Array(w.size),
            inflight: new Int32Array(w.size),
            pending: new Int32Array(w.size),
            touched: false,
            synced: this.flushes,
          };
          if (row && row.counts.length === w.size) {
            read.slotMs = Number(row.slotMs);
            read.shared.set(row.counts);
            age(read, w.slotMs);
          }
          const e = this.entries.get(key);
          if (!e || e.shared.length !== w.size) {
            this.entries.set(key, read);
            return;
          }
          // Known but stale: the stored counts replace the shared part; own unsent hits stay.
          const newest = Math.max(read.slotMs, e.slotMs);
          age(read, newest);
          age(e, newest);
          if (e.inflight.some((n) => n > 0)) return;
          e.shared = read.shared;
          e.synced = read.synced;
        })
        .finally(() => this.loading.delete(key));
      this.loading.set(key, p);
    }
    return p;
  }

  /** Sends every key's new hits and reads the merged counts back, in one statement. */
  flush(): Promise<void> {
    this.flushing ??= this.flushOnce().finally(() => (this.flushing = undefined));
    return this.flushing;
  }

  private async flushOnce() {
    const flush = ++this.flushes;
    const batch: { k: string; s: number; w: number; a: number[] }[] = [];
    const sent = new Map<string, Counted>();
    for (const [key, e] of this.entries) {
      if (!e.touched) continue;
      e.touched = false;
      // Brought up to date by this flush: hits while it is under way need no read of their own.
      e.synced = flush;
      for (let i = 0; i < e.pending.length; i++) e.inflight[i]! += e.pending[i]!;
      e.pending.fill(0);
      batch.push({ k: key, s: e.slotMs, w: e.slotWidthMs, a: Array.from(e.inflight) });
      sent.set(key, e);
    }
    if (!batch.length) return;
    // One order for every instance, so two flushes never wait on each other's rows in a cycle.
    batch.sort((x, y) => (x.k < y.k ? -1 : x.k > y.k ? 1 : 0));
    let rows: { key: string; slot_ms: string | number; counts: number[] }[];
    try {
      const result = await this.db.execute(sql`
        with x as (
          select k, s, w, a from jsonb_to_recordset(${JSON.stringify(batch)}::jsonb) as t(k text, s bigint, w bigint, a int[])
        )
        insert into rate_limits as r (key, slot_ms, counts, allowed)
        select k, s, a, true from x order by k
        on conflict (key) do update set (slot_ms, counts) = (
          -- Both sides aged to the newer slot (another instance's clock may be ahead), then added.
          select g.m, array(
            select case when cardinality(r.counts) = cardinality(x.a)
                     then coalesce(r.counts[i + least((g.m - r.slot_ms) / x.w, cardinality(x.a))::int], 0)
                     else 0 end
                 + coalesce(x.a[i + least((g.m - x.s) / x.w, cardinality(x.a))::int], 0)
            from generate_series(1, cardinality(x.a)) i order by i)
          from x, (select greatest(r.slot_ms, excluded.slot_ms) as m) g
          where x.k = excluded.key
        )
        returning key, slot_ms, counts
      `);
      rows = (Array.isArray(result) ? result : (result as unknown as { rows: unknown[] }).rows) as typeof rows;
    } catch (err) {
      // Nothing was added: the hits go out with the next flush.
      for (const e of sent.values()) {
        for (let i = 0; i < e.inflight.length; i++) e.pending[i]! += e.inflight[i]!;
        e.inflight.fill(0);
        e.touched = true;
      }
      throw err;
    }
    for (const row of rows) {
      const e = sent.get(row.key);
      if (!e || this.entries.get(row.key) !== e || row.counts.length !== e.shared.length) continue;
      const stored: Counted = {
        slotMs: Number(row.slot_ms),
        slotWidthMs: e.slotWidthMs,
        shared: Int32Array.from(row.counts),
        inflight: new Int32Array(e.shared.length),
        pending: new Int32Array(e.shared.length),
        touched: false,
        synced: flush,
      };
      const newest = Math.max(stored.slotMs, e.slotMs);
      age(stored, newest);
      age(e, newest);
      e.shared = stored.shared;
      e.inflight.fill(0);
      e.synced = flush;
    }
  }

  async prune(olderThanMs: number) {
    for (const [key, e] of this.entries)
      if (e.slotMs < olderThanMs && !e.touched && !e.pending.some((n) => n > 0)) this.entries.delete(key);
    await this.db.execute(sql`delete from rate_limits where slot_ms < ${olderThanMs}::bigint`);
  }
}
