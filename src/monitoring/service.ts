import { sql, type SQL } from "drizzle-orm";
import type { Config } from "../config";
import type { Db } from "../db/client";
import type { Logger } from "../lib/log";
import type { Metrics } from "../lib/metrics";
import { requireServerRole } from "../servers/access";
import type { Principal } from "../auth/principal";
import { ping, type PingResult } from "./ping";
import { Clock } from "../lib/clock";
import { rollupCtes, type MinuteCloser } from "./history";
import { pruneHistory } from "./retention";
import { rowsOf } from "./sql";
import { metricHistory, uptimeStats, type MetricName, type MetricsWindow, type UptimeWindow } from "./stats";

export interface Target {
  id: string;
  host: string;
  port: number;
}

export type SampleListener = (serverId: string, result: PingResult, changed: boolean) => void;
/** Work a stored sample feeds (player sessions); awaited, so a check is done when its effects are. */
export type SampleConsumer = (serverId: string, result: PingResult) => Promise<void>;

const TICK_MS = 1000;
const RETENTION_EVERY_MS = 3600_000;

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
    private readonly closer?: MinuteCloser,
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
    this.observed?.pingResult(result.online ? "up" : "down");
    const changed = await this.storeOne(target.id, result);
    if (changed === null) return result;
    for (const c of this.consumers)
      await c(target.id, result).catch((err) =>
        this.log.warn("a sample consumer failed", { server_id: target.id, err }),
      );
    for (const l of this.listeners) l(target.id, result, changed);
    return result;
  }

  /** Stores a sample and the latest status in one statement; null when the server is gone meanwhile. */
  private async storeOne(serverId: string, r: PingResult): Promise<boolean | null> {
    const at = this.clock.now();
    const ts = new Date(at).toISOString();
    try {
      const result = await this.db.execute(sql`
        with sample as (
          insert into server_samples (server_id, ts, online, latency_ms, players_online, players_max)
          values (${serverId}, ${ts}::timestamptz, ${r.online}, ${r.latencyMs}, ${r.playersOnline}, ${r.playersMax})
          on conflict do nothing),
        ${rollupCtes(serverId, at, { online: r.online, latency: r.latencyMs, players: r.playersOnline })},
        prev as (select online from server_status where server_id = ${serverId})
        insert into server_status as st (server_id, online, latency_ms, players_online, players_max, version, motd, error, checked_at, changed_at)
        values (${serverId}, ${r.online}, ${r.latencyMs}, ${r.playersOnline}, ${r.playersMax}, ${r.version}, ${r.motd}, ${r.error}, ${ts}::timestamptz, ${ts}::timestamptz)
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
        returning ((select online from prev) is distinct from ${r.online}) as changed,
                  coalesce((select opened from metrics_minute), false) as opened`);
      const row = rowsOf<{ changed: boolean; opened: boolean }>(result)[0];
      if (row?.opened) void this.closer?.opened(serverId, at);
      return row?.changed ?? false;
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
