import { sql, type SQL } from "drizzle-orm";
import type { Config } from "../config";
import type { Db } from "../db/client";
import type { Logger } from "../lib/log";
import type { Metrics } from "../lib/metrics";
import { requireServerRole } from "../servers/access";
import type { Principal } from "../auth/principal";
import { ping, type PingResult } from "./ping";
import { Clock } from "../lib/clock";
import { MetricBuffer } from "./buffer";
import { pruneHistory } from "./retention";
import { rowsOf } from "../db/rows";
import { metricHistory, uptimeStats, type MetricName, type MetricsWindow, type UptimeWindow } from "./stats";

export interface Target {
  id: string;
  host: string;
  port: number;
}

export type SampleListener = (serverId: string, result: PingResult, changed: boolean) => void;
export interface StoredSample {
  serverId: string;
  result: PingResult;
  /** Up/down flipped with this sample, or it is the server's first. */
  changed: boolean;
}
/**
 * Work the samples of one shared write feed (player sessions, alerts), at most one per server;
 * awaited, so a check is done when its effects are. A batch rather than a sample: a statement
 * per ping was most of the pinger's database work.
 */
export type SampleConsumer = (samples: StoredSample[]) => Promise<void>;

const TICK_MS = 1000;
const RETENTION_EVERY_MS = 3600_000;
/**
 * How long a ping result waits for others to share its write, and how many one write takes at
 * most. A write costs its three statements (samples and statuses, alert state, player sessions)
 * whatever its size, and on PGlite on the pinger's own thread: 100 ms gathers about a hundred
 * results at 1,000 checks/s, and only delays when a check counts as done, never a ping slot.
 */
const WRITE_WAIT_MS = 100;
const WRITE_MAX = 512;
/**
 * Servers one claim statement takes, in ping slots: claimed rows wait in the queue (at most a
 * few hundred ms at full speed; a crash skips them one interval), so the claim is paid per
 * several slots' worth of checks, and the next one runs while the queue still holds a slot's worth.
 */
const CLAIM_SLOTS = 4;

interface PendingWrite {
  serverId: string;
  result: PingResult;
  at: number;
  done: (changed: boolean | null) => void;
  failed: (err: unknown) => void;
}

/** drizzle wraps the driver's error ("Failed query: ..."); the code is on its cause. */
function isForeignKeyViolation(err: unknown) {
  const cause = (err as { cause?: { code?: string; message?: string } })?.cause;
  const code = (err as { code?: string })?.code ?? cause?.code;
  return code === "23503" || /foreign key/i.test(`${(err as Error)?.message ?? err} ${cause?.message ?? ""}`);
}

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
  private ticking = false;
  private stopped = false;
  private listeners = new Set<SampleListener>();
  private consumers: SampleConsumer[] = [];
  /** Results waiting for their shared write; at most one per server (a second starts the write). */
  private batch: PendingWrite[] = [];
  private batchServers = new Set<string>();
  private batchTimer: ReturnType<typeof setTimeout> | undefined;
  private claiming: Promise<void> | undefined;
  /** The last claim came back full: more servers may be due now. */
  private dueLeft = false;

  constructor(
    private readonly db: Db,
    private readonly config: Pick<
      Config,
      | "PING_INTERVAL_SECONDS"
      | "PING_TIMEOUT_MS"
      | "PING_CONCURRENCY"
      | "SAMPLE_RETENTION_DAYS"
      | "OUTBOUND_ALLOW_PRIVATE"
      | "METRICS_MINUTE_RETENTION_HOURS"
    >,
    private readonly log: Logger,
    private readonly clock: Clock = new Clock(),
    /** Where samples are summed for the metric buckets (flushed by its own background task). */
    readonly buffer: MetricBuffer = new MetricBuffer(db, log),
    private readonly observed: Metrics | null = null,
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

  /** Stops claiming, waits for pings already under way to be written, and flushes their sums to the buckets. */
  async stop() {
    this.stopped = true;
    clearInterval(this.timer);
    clearInterval(this.retentionTimer);
    this.timer = this.retentionTimer = undefined;
    await Promise.allSettled([...this.inflight]);
    // The buffer's own task may have flushed before these results arrived.
    await this.buffer.flush().catch((err) => this.log.error("metric flush failed", { err }));
  }

  /** Called after every stored sample; `changed` when up/down flipped. For live views. */
  onSample(listener: SampleListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Runs after every stored sample, before the check counts as done. */
  consume(consumer: SampleConsumer) {
    this.consumers.push(consumer);
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
    if (this.config.PING_CONCURRENCY - this.pinging <= 0) return { started: 0, more: true };
    // A slot frees as each ping ends; claiming per slot made one claim statement per ping.
    // Claimed rows wait here at most one slot's turn; a crash skips them one round, as before.
    if (claim && this.queue.length < this.config.PING_CONCURRENCY - this.pinging) await this.claimIntoQueue();
    return { started: this.launchQueued(), more: this.dueLeft };
  }

  /** One claim at a time, however many callers want one; a full claim means more may be due. */
  private claimIntoQueue(): Promise<void> {
    const size = this.config.PING_CONCURRENCY * CLAIM_SLOTS;
    this.claiming ??= this.claim(size)
      .then((claimed) => {
        this.dueLeft = claimed.length === size;
        this.queue.push(...claimed);
      })
      .finally(() => {
        this.claiming = undefined;
      });
    return this.claiming;
  }

  private launchQueued(): number {
    const free = this.config.PING_CONCURRENCY - this.pinging;
    const targets = this.stopped || free <= 0 ? [] : this.queue.splice(0, free);
    for (const target of targets) this.launch(target);
    return targets.length;
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
      // The queue runs low while the last claim was full: claim now, so the slots find the
      // next servers queued rather than wait for the claim or the next tick (one claim in flight at a time).
      if (!this.stopped && this.dueLeft && !this.claiming && this.queue.length < this.config.PING_CONCURRENCY)
        void this.claimIntoQueue()
          .then(() => this.launchQueued())
          .catch((err) => this.log.error("pinger claim failed", { err }));
    };
    const job = this.check(target, slotFree)
      .then(() => undefined)
      .catch((err) => {
        this.observed?.pingResult("error");
        this.log.warn("storing a ping result failed", { server_id: target.id, err });
      })
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
    // The old next_check_at comes back too: how late the claim is (the pinger's lag).
    const result = await this.db.execute(sql`
      update servers s
         set next_check_at = now() + make_interval(secs => ${this.config.PING_INTERVAL_SECONDS}::float8 * (0.9 + random() * 0.2))
        from (
         select id, next_check_at as due from servers
          where ${filter}
          order by next_check_at
          limit ${limit}
          ${lock}) d
       where s.id = d.id
      returning s.id, s.host, s.port, extract(epoch from now() - d.due)::float8 as lag_s`);
    const rows = rowsOf<Target & { lag_s: number }>(result);
    if (this.observed && !only) for (const r of rows) this.observed.pingLagged(Number(r.lag_s));
    return rows.map(({ id, host, port }) => ({ id, host, port }));
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
    // Done means readable: the round's samples are in the buckets too.
    await this.buffer.flush();
    return this.launched - before;
  }

  /** Checks one server now, whatever its schedule, and returns what was stored. */
  async checkNow(serverId: string): Promise<PingResult | null> {
    const [target] = await this.claim(1, serverId);
    if (!target) return null;
    const result = await this.check(target);
    await this.buffer.flush();
    return result;
  }

  private async check(target: Target, pinged?: () => void): Promise<PingResult> {
    const result = await ping(target.host, target.port, this.config.PING_TIMEOUT_MS, {
      allowPrivate: this.config.OUTBOUND_ALLOW_PRIVATE,
    });
    pinged?.();
    this.observed?.pingResult(result.online ? "up" : "down");
    const changed = await this.store(target.id, result);
    if (changed === null) return result;
    for (const l of this.listeners) l(target.id, result, changed);
    return result;
  }

  /**
   * Queues a result for the next shared write (at most WRITE_WAIT_MS away); resolves with whether
   * up/down flipped, or null when the server is gone meanwhile, once the consumers have had it.
   */
  private store(serverId: string, result: PingResult): Promise<boolean | null> {
    return new Promise((done, failed) => {
      // One row per server in a write: a multi-row upsert cannot update a row twice.
      if (this.batchServers.has(serverId)) this.writeBatch();
      this.batch.push({ serverId, result, at: this.clock.now(), done, failed });
      this.batchServers.add(serverId);
      // With no ping under way no other result is coming to share the write.
      if (this.batch.length >= WRITE_MAX || this.pinging === 0) this.writeBatch();
      else this.batchTimer ??= setTimeout(() => this.writeBatch(), WRITE_WAIT_MS);
    });
  }

  private writeBatch() {
    clearTimeout(this.batchTimer);
    this.batchTimer = undefined;
    const batch = this.batch;
    this.batch = [];
    this.batchServers = new Set();
    if (batch.length === 0) return;
    void this.storeMany(batch)
      .catch((err) => {
        // A server deleted between the write's check and its insert fails the whole statement:
        // write each alone, so only that one is dropped.
        if (!isForeignKeyViolation(err)) throw err;
        return Promise.all(
          batch.map((w) =>
            this.storeMany([w]).then(
              (c) => c[0]!,
              (e) => {
                if (isForeignKeyViolation(e)) return null;
                throw e;
              },
            ),
          ),
        );
      })
      .then(async (changed) => {
        await this.feed(
          batch.flatMap(({ serverId, result }, i) =>
            changed[i] === null ? [] : [{ serverId, result, changed: changed[i]! }],
          ),
        );
        return changed;
      })
      .then(
        (changed) => {
          for (const [i, w] of batch.entries()) w.done(changed[i]!);
        },
        (err) => {
          for (const w of batch) w.failed(err);
        },
      );
  }

  private async feed(samples: StoredSample[]) {
    if (samples.length === 0) return;
    for (const c of this.consumers)
      await c(samples).catch((err) =>
        this.log.warn("a sample consumer failed", { server_ids: samples.map((s) => s.serverId), err }),
      );
  }

  /**
   * Stores samples and latest statuses of many servers in one statement, then adds the samples
   * to the metric buffer. Per write, in order: whether up/down flipped. A server deleted since
   * its claim fails the statement on the foreign keys (the caller then writes each alone and
   * drops that one): looking each server up first cost a fifth of the statement, for a rare race.
   * A flip (or a first status) is when `changed_at` becomes this check's time, so the row's state
   * before the statement need not be read.
   */
  private async storeMany(batch: PendingWrite[]): Promise<(boolean | null)[]> {
    const rows = JSON.stringify(
      batch.map(({ serverId, result: r, at }) => ({
        server_id: serverId,
        ts: new Date(at).toISOString(),
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
        select x.* from json_to_recordset(${rows}::json) as x(server_id uuid, ts timestamptz, online boolean, latency_ms int,
               players_online int, players_max int, version text, motd text, error text)),
      sample as (
        insert into server_samples (server_id, ts, online, latency_ms, players_online, players_max)
        select server_id, ts, online, latency_ms, players_online, players_max from input
        on conflict do nothing),
      stored as (
        insert into server_status as st (server_id, online, latency_ms, players_online, players_max, version, motd, error, checked_at, changed_at)
        select server_id, online, latency_ms, players_online, players_max, version, motd, error, ts, ts from input
         order by server_id
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
        returning st.server_id, st.changed_at = st.checked_at as changed)
      select server_id, changed from stored`);
    const changed = new Map(
      rowsOf<{ server_id: string; changed: boolean }>(result).map((r) => [r.server_id, r.changed]),
    );
    return batch.map(({ serverId, result: r, at }) => {
      const c = changed.get(serverId);
      if (c === undefined) return null;
      this.buffer.add(serverId, at, { online: r.online, latency: r.latencyMs, players: r.playersOnline });
      return c;
    });
  }

  retention(now: Date = this.clock.date()) {
    return pruneHistory(
      this.db,
      { minuteHours: this.config.METRICS_MINUTE_RETENTION_HOURS, hourDays: this.config.SAMPLE_RETENTION_DAYS },
      now,
    );
  }

  async uptimeStats(principal: Principal, serverId: string, window: UptimeWindow) {
    await requireServerRole(this.db, principal, serverId, "viewer");
    return uptimeStats(this.db, serverId, window, this.clock.date());
  }

  async metrics(principal: Principal, serverId: string, window: MetricsWindow, metrics: MetricName[]) {
    await requireServerRole(this.db, principal, serverId, "viewer");
    return metricHistory(this.db, serverId, window, metrics, this.clock.date());
  }
}
