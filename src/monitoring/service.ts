import { sql, type SQL } from "drizzle-orm";
import type { Config } from "../config";
import type { Db } from "../db/client";
import type { Logger } from "../lib/log";
import { requireServerRole } from "../servers/access";
import type { Principal } from "../auth/principal";
import { ping, type PingResult } from "./ping";
import { pruneAndRollUp } from "./retention";
import { rowsOf } from "./sql";
import { uptimeStats, type UptimeWindow } from "./stats";

export interface Target {
  id: string;
  host: string;
  port: number;
}

export type SampleListener = (serverId: string, result: PingResult, changed: boolean) => void;

const TICK_MS = 1000;
const RETENTION_EVERY_MS = 3600_000;
/** How long a ping result may wait for others to share its write. */
const STORE_BATCH_WAIT_MS = 20;

/**
 * The pinger. Each tick claims as many due servers as there are free ping slots and starts
 * each ping on its own, so a server that times out holds one slot and delays nobody else.
 * Claiming pushes `next_check_at` forward (with jitter) in the same statement that selects
 * the rows with FOR UPDATE SKIP LOCKED: several instances on one database share the work
 * and never check the same server twice in an interval.
 */
export class MonitoringService {
  readonly name = "pinger";
  private timer: ReturnType<typeof setInterval> | undefined;
  private retentionTimer: ReturnType<typeof setInterval> | undefined;
  private inflight = new Set<Promise<void>>();
  /** Claimed, not yet started: one claim statement feeds many slots instead of one each. */
  private queue: Target[] = [];
  private launched = 0;
  /** Pings under way: a slot is free once its ping is answered, while the result waits for its write. */
  private pinging = 0;
  /** Results waiting for the next batched write, and whether a write is under way. */
  private pending: {
    serverId: string;
    result: PingResult;
    done: (changed: boolean | null) => void;
    fail: (err: unknown) => void;
  }[] = [];
  private writing = false;
  private ticking = false;
  private stopped = false;
  private listeners = new Set<SampleListener>();

  constructor(
    private readonly db: Db,
    private readonly config: Pick<
      Config,
      | "PING_INTERVAL_SECONDS"
      | "PING_TIMEOUT_MS"
      | "PING_CONCURRENCY"
      | "SAMPLE_RETENTION_DAYS"
      | "OUTBOUND_ALLOW_PRIVATE"
    >,
    private readonly log: Logger,
  ) {}

  start() {
    if (this.timer || this.stopped) return;
    this.timer = setInterval(() => void this.tick(), Math.min(TICK_MS, this.config.PING_INTERVAL_SECONDS * 1000));
    this.retentionTimer = setInterval(
      () => void this.retention().catch((err) => this.log.error("sample retention failed", { err })),
      RETENTION_EVERY_MS,
    );
    void this.tick();
  }

  /** Stops claiming, then waits for pings already under way to be written. */
  async stop() {
    this.stopped = true;
    clearInterval(this.timer);
    clearInterval(this.retentionTimer);
    this.timer = this.retentionTimer = undefined;
    await Promise.allSettled([...this.inflight]);
  }

  /** Called after every stored sample; `changed` when up/down flipped. For live views. */
  onSample(listener: SampleListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private async tick() {
    if (this.ticking || this.stopped) return;
    this.ticking = true;
    try {
      await this.fill();
    } catch (err) {
      this.log.error("pinger tick failed", { err });
    } finally {
      this.ticking = false;
    }
  }

  /** Claims as many due servers as there are free slots and starts their checks; how many it started. */
  private async fill(claim = true): Promise<{ started: number; more: boolean }> {
    const free = this.config.PING_CONCURRENCY - this.pinging;
    if (free <= 0) return { started: 0, more: true };
    let more = true;
    // A slot frees as each ping ends; claiming per slot made one claim statement per ping.
    // Claimed rows wait here at most one slot's turn; a crash skips them one round, as before.
    if (claim && this.queue.length < free) {
      const claimed = await this.claim(this.config.PING_CONCURRENCY);
      // A short claim means nothing else is due now.
      more = claimed.length === this.config.PING_CONCURRENCY;
      this.queue.push(...claimed);
    }
    const targets = this.queue.splice(0, free);
    for (const target of targets) this.launch(target);
    return { started: targets.length, more };
  }

  private launch(target: Target): Promise<void> {
    this.launched++;
    this.pinging++;
    let pinged = false;
    const slotFree = () => {
      if (pinged) return;
      pinged = true;
      this.pinging--;
      // Start the next claimed target at once, without waiting for the next tick.
      const next = !this.stopped && this.queue.shift();
      if (next) this.launch(next);
    };
    const job = this.check(target, slotFree)
      .then(() => undefined)
      .catch((err) => this.log.warn("storing a ping result failed", { server_id: target.id, err }))
      .finally(() => {
        slotFree();
        this.inflight.delete(job);
      });
    this.inflight.add(job);
    return job;
  }

  /** Claims up to `limit` due servers and schedules each one's next check an interval (±10%) ahead. */
  async claim(limit: number, only?: string): Promise<Target[]> {
    // One named server waits for a lock another claimer holds rather than skipping it.
    const filter: SQL = only ? sql`id = ${only}` : sql`next_check_at <= now()`;
    const lock: SQL = only ? sql`for update` : sql`for update skip locked`;
    const result = await this.db.execute(sql`
      update servers
         set next_check_at = now() + make_interval(secs => ${this.config.PING_INTERVAL_SECONDS}::float8 * (0.9 + random() * 0.2))
       where id in (
         select id from servers
          where ${filter}
          order by next_check_at
          limit ${limit}
          ${lock})
      returning id, host, port`);
    return rowsOf<Target>(result);
  }

  /**
   * Runs every check that is due now and waits for them all (bounded by PING_CONCURRENCY):
   * what the loop does over time, at once. Tests and operators use it instead of waiting.
   */
  async pingDue(): Promise<number> {
    const before = this.launched;
    // Once a claim comes back short, the rest of the round only drains what is claimed: a claim
    // per finished ping that finds nothing was a statement each.
    let more = true;
    for (;;) {
      if (!(await this.fill(more)).more) more = false;
      // Checks the background loop started count as due too: wait for them as well.
      if (this.inflight.size === 0) break;
      await Promise.race(this.inflight);
    }
    return this.launched - before;
  }

  /** Checks one server now, whatever its schedule, and returns what was stored. */
  async checkNow(serverId: string): Promise<PingResult | null> {
    const [target] = await this.claim(1, serverId);
    return target ? this.check(target) : null;
  }

  private async check(target: Target, pinged?: () => void): Promise<PingResult> {
    const result = await ping(target.host, target.port, this.config.PING_TIMEOUT_MS, {
      allowPrivate: this.config.OUTBOUND_ALLOW_PRIVATE,
    });
    pinged?.();
    const changed = await this.store(target.id, result);
    if (changed !== null) for (const l of this.listeners) l(target.id, result, changed);
    return result;
  }

  /**
   * Queues a result for the next batched write. One write runs at a time and takes everything
   * that arrived meanwhile, after a short wait for company: at 32 pings in flight, one statement
   * stores many results instead of one statement each (the database writes, on the same thread
   * as the pings, bounded the pinger). Null when the
   * server is gone meanwhile.
   */
  private store(serverId: string, result: PingResult): Promise<boolean | null> {
    return new Promise((done, fail) => {
      this.pending.push({ serverId, result, done, fail });
      if (this.writing) return;
      // Pings end one by one, and a write is faster than the gap between them: without a short
      // wait every batch held one result (measured), a statement per ping as before.
      this.writing = true;
      setTimeout(() => void this.flush(), STORE_BATCH_WAIT_MS);
    });
  }

  private async flush() {
    try {
      while (this.pending.length > 0) {
        // One row per server per statement: ON CONFLICT cannot update a row twice.
        const batch: typeof this.pending = [];
        const later: typeof this.pending = [];
        const ids = new Set<string>();
        for (const p of this.pending.splice(0)) {
          if (ids.has(p.serverId)) later.push(p);
          else {
            ids.add(p.serverId);
            batch.push(p);
          }
        }
        this.pending.unshift(...later);
        try {
          const changed = await this.storeMany(batch);
          for (const p of batch) p.done(changed.get(p.serverId) ?? null);
        } catch {
          // One deleted server fails the whole statement: store each alone to find it.
          for (const p of batch) await this.storeOne(p.serverId, p.result).then(p.done, p.fail);
        }
      }
    } finally {
      this.writing = false;
    }
  }

  /** Samples and latest statuses for many servers in one statement; whether each flipped up/down. */
  private async storeMany(batch: { serverId: string; result: PingResult }[]): Promise<Map<string, boolean>> {
    const input = JSON.stringify(
      batch.map(({ serverId, result: r }) => ({
        server_id: serverId,
        online: r.online,
        latency_ms: r.latencyMs,
        players_online: r.playersOnline,
        players_max: r.playersMax,
        version: r.version,
        motd: r.motd,
        error: r.error,
      })),
    );
    const result = await this.db.execute(sql`
      with input as (
        select * from jsonb_to_recordset(${input}::jsonb) as x(server_id uuid, online boolean, latency_ms integer,
          players_online integer, players_max integer, version text, motd text, error text)),
      sample as (
        insert into server_samples (server_id, ts, online, latency_ms, players_online, players_max)
        select server_id, now(), online, latency_ms, players_online, players_max from input
        on conflict do nothing),
      prev as (select s.server_id, s.online from server_status s join input i on i.server_id = s.server_id)
      insert into server_status as st (server_id, online, latency_ms, players_online, players_max, version, motd, error, checked_at, changed_at)
      select server_id, online, latency_ms, players_online, players_max, version, motd, error, now(), now() from input
      on conflict (server_id) do update set
        online = excluded.online,
        latency_ms = excluded.latency_ms,
        players_online = excluded.players_online,
        players_max = excluded.players_max,
        version = coalesce(excluded.version, st.version),
        motd = coalesce(excluded.motd, st.motd),
        error = excluded.error,
        checked_at = excluded.checked_at,
        changed_at = case when st.online is distinct from excluded.online then excluded.checked_at else st.changed_at end
      returning st.server_id, ((select p.online from prev p where p.server_id = st.server_id) is distinct from st.online) as changed`);
    return new Map(rowsOf<{ server_id: string; changed: boolean }>(result).map((r) => [r.server_id, r.changed]));
  }

  /** Stores a sample and the latest status in one statement; null when the server is gone meanwhile. */
  private async storeOne(serverId: string, r: PingResult): Promise<boolean | null> {
    try {
      const result = await this.db.execute(sql`
        with sample as (
          insert into server_samples (server_id, ts, online, latency_ms, players_online, players_max)
          values (${serverId}, now(), ${r.online}, ${r.latencyMs}, ${r.playersOnline}, ${r.playersMax})
          on conflict do nothing),
        prev as (select online from server_status where server_id = ${serverId})
        insert into server_status as st (server_id, online, latency_ms, players_online, players_max, version, motd, error, checked_at, changed_at)
        values (${serverId}, ${r.online}, ${r.latencyMs}, ${r.playersOnline}, ${r.playersMax}, ${r.version}, ${r.motd}, ${r.error}, now(), now())
        on conflict (server_id) do update set
          online = excluded.online,
          latency_ms = excluded.latency_ms,
          players_online = excluded.players_online,
          players_max = excluded.players_max,
          version = coalesce(excluded.version, st.version),
          motd = coalesce(excluded.motd, st.motd),
          error = excluded.error,
          checked_at = excluded.checked_at,
          changed_at = case when st.online is distinct from excluded.online then excluded.checked_at else st.changed_at end
        returning ((select online from prev) is distinct from ${r.online}) as changed`);
      return rowsOf<{ changed: boolean }>(result)[0]?.changed ?? false;
    } catch (err) {
      // The server was deleted while its ping was in flight: nothing to record.
      // drizzle wraps the driver's error ("Failed query: ..."); the code is on its cause.
      const cause = (err as { cause?: { code?: string; message?: string } })?.cause;
      const code = (err as { code?: string })?.code ?? cause?.code;
      if (code === "23503" || /foreign key/i.test(`${(err as Error)?.message ?? err} ${cause?.message ?? ""}`))
        return null;
      throw err;
    }
  }

  retention(now?: Date) {
    return pruneAndRollUp(this.db, this.config.SAMPLE_RETENTION_DAYS, now);
  }

  async uptimeStats(principal: Principal, serverId: string, window: UptimeWindow) {
    await requireServerRole(this.db, principal, serverId, "viewer");
    return uptimeStats(this.db, serverId, window);
  }
}
