import { sql, type SQL } from "drizzle-orm";
import type { Config } from "../config";
import type { Db } from "../db/client";
import type { Logger } from "../lib/log";
import type { Metrics } from "../lib/metrics";
import { requireServerRole } from "../servers/access";
import type { Principal } from "../auth/principal";
import { ping, type PingResult } from "./ping";
import TinyQueue from "tinyqueue";
import { Clock } from "../lib/clock";
import { MetricBuffer } from "./buffer";
import { pruneHistory } from "./retention";
import { PLANNED_STOP_SECONDS } from "./planned";
import { rowsOf } from "../db/rows";
import { preparedStatement } from "../db/prepared";
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
 * Servers one claim statement takes, in ping slots: claimed servers wait in the schedule until
 * a slot frees (at most a few hundred ms at full speed), so the claim is paid per several slots'
 * worth of servers, and the next one runs while the schedule still holds a slot's worth.
 */
const CLAIM_SLOTS = 4;

/** A server this instance holds: it checks it from memory every interval until `end`. */
export interface Lease extends Target {
  /**
   * `next_check_at` as the claim set it. Each write carries it and is refused once the row says
   * otherwise: another claim (`checkNow`, a lapsed lease taken over), a new address, a deletion.
   */
  token: string;
  /** Local time from which the row is due for anyone again: no check of it starts after. */
  end: number;
  /** When its next check is due (local ms); 0 when claimed and not yet checked. */
  due: number;
  /**
   * The status row as this lease last wrote it: the shown fields (`shownKey`) and the check's
   * time. Only the lease's holder writes those columns while the lease lasts, so a check that
   * finds the same need not rewrite the row until PING_STATUS_REFRESH_SECONDS have passed. Unset
   * until the lease's first write: a new lease (another instance's, `checkNow`'s) always writes.
   */
  written?: { key: string; at: number };
}

/**
 * What a status row shows of a result, but for `latency_ms` and `checked_at`: a change in any of
 * these rewrites the row at once; the other two are refreshed every PING_STATUS_REFRESH_SECONDS.
 */
const shownKey = (r: PingResult) =>
  `${r.online}|${r.playersOnline}|${r.playersMax}|${r.version}|${r.motdRaw}|${r.error}|${r.reason}`;

interface PendingWrite {
  serverId: string;
  token: string;
  result: PingResult;
  at: number;
  /** Whether the status row is written; false when it already shows this result (`Lease.written`). */
  status: boolean;
  done: (changed: boolean | null) => void;
  failed: (err: unknown) => void;
}

/** drizzle wraps the driver's error ("Failed query: ..."); the code is on its cause. */
function isForeignKeyViolation(err: unknown) {
  const cause = (err as { cause?: { code?: string; message?: string } })?.cause;
  const code = (err as { code?: string })?.code ?? cause?.code;
  return code === "23503" || /foreign key/i.test(`${(err as Error)?.message ?? err} ${cause?.message ?? ""}`);
}

/** Held servers by next check, soonest first. */
const newSchedule = () => new TinyQueue<Lease>([], (a, b) => a.due - b.due);

/** An interval with the ±10% jitter that keeps a fleet's checks from bunching. */
const jittered = (ms: number) => ms * (0.9 + Math.random() * 0.2);

/**
 * The pinger. A claim statement takes due servers with FOR UPDATE SKIP LOCKED and leases them
 * (`next_check_at` pushed PING_LEASE_SECONDS ahead, ±10%): several instances on one database
 * share the work and never check the same server twice in an interval. The instance then checks
 * each leased server every interval (±10%) from an in-memory schedule, with no statement of its
 * own, until the lease ends and the row is due for anyone again: the claim's row update (not a
 * HOT update: `next_check_at` is indexed) is paid once per lease, not once per check. Each ping
 * runs on its own slot, so a server that times out holds one slot and delays nobody else.
 */
export class MonitoringService {
  readonly name = "pinger";
  private timer: ReturnType<typeof setInterval> | undefined;
  private retentionTimer: ReturnType<typeof setInterval> | undefined;
  private inflight = new Set<Promise<void>>();
  /** The servers this instance holds, by id; each is in `schedule` or being checked, not both. */
  private leases = new Map<string, Lease>();
  private schedule = newSchedule();
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
      | "PING_LEASE_SECONDS"
      | "PING_STATUS_REFRESH_SECONDS"
      | "PING_TIMEOUT_MS"
      | "PING_CONCURRENCY"
      | "SAMPLE_RETENTION_DAYS"
      | "AUDIT_RETENTION_DAYS"
      | "PLAYER_DATA_MAX_RETENTION_DAYS"
      | "OUTBOUND_ALLOW_PRIVATE"
      | "METRICS_MINUTE_RETENTION_HOURS"
      | "WEBHOOK_AGENT_SILENCE_SECONDS"
    >,
    private readonly log: Logger,
    private readonly clock: Clock = new Clock(),
    /** Where samples are summed for the metric buckets (flushed by its own background task). */
    readonly buffer: MetricBuffer = new MetricBuffer(db, log),
    private readonly observed: Metrics | null = null,
  ) {
    this.stillLeasedQuery = preparedStatement(
      db,
      "pinger_still_leased",
      ["server_id"],
      sql`select x.server_id from json_to_recordset(${sql.placeholder("rows")}::json) as x(server_id uuid, lease timestamptz)
           where x.lease = (select next_check_at from servers where id = x.server_id)`,
    );
  }

  private get intervalMs() {
    return this.config.PING_INTERVAL_SECONDS * 1000;
  }

  /** Starts the loop, or resumes it after `pause()`; a stopped pinger starts again and claims afresh. */
  start() {
    if (this.timer) return;
    this.stopped = false;
    this.timer = setInterval(() => void this.tick(), Math.min(TICK_MS, this.intervalMs));
    this.retentionTimer = setInterval(
      () => void this.retention().catch((err) => this.log.error("sample retention failed", { err })),
      RETENTION_EVERY_MS,
    );
    void this.tick();
  }

  /**
   * Stops starting checks and waits for those under way to be written, keeping its leases: after
   * `start()` it goes on where it was (a lease that ended meanwhile is let go, not checked).
   */
  async pause() {
    this.stopped = true;
    clearInterval(this.timer);
    clearInterval(this.retentionTimer);
    this.timer = this.retentionTimer = undefined;
    await this.claiming?.catch(() => {});
    await Promise.allSettled([...this.inflight]);
  }

  /**
   * Pauses, hands its leases back (each server due again when its next check was, for whichever
   * instance claims it), and flushes the sums to the buckets.
   */
  async stop() {
    await this.pause();
    await this.release().catch((err) => this.log.error("handing back ping leases failed", { err }));
    // The buffer's own task may have flushed before these results arrived.
    await this.buffer.flush().catch((err) => this.log.error("metric flush failed", { err }));
  }

  /** How many servers this instance holds a lease on. */
  get held(): number {
    return this.leases.size;
  }

  private async release() {
    const held = [...this.leases.values()];
    this.leases.clear();
    this.schedule = newSchedule();
    if (held.length === 0) return;
    const rows = JSON.stringify(
      held.map((l) => ({ id: l.id, token: l.token, due: new Date(Math.max(l.due, this.clock.now())).toISOString() })),
    );
    // Only rows still as this instance's claim left them: a moved or re-claimed one is not ours.
    await this.db.execute(sql`
      update servers s set next_check_at = r.due
        from json_to_recordset(${rows}::json) as r(id uuid, token timestamptz, due timestamptz)
       where s.id = r.id and s.next_check_at = r.token`);
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
      // Each tick claims whether or not held servers are due: past capacity, servers this
      // instance does not hold yet (a new one, a lapsed lease) still get a lease within a tick and
      // join the round, rather than wait until some lease ends.
      await this.fill(true, this.clock.now(), true);
    } catch (err) {
      this.log.error("pinger tick failed", { err });
    } finally {
      this.ticking = false;
    }
  }

  /** Whether a held server's check is due by `by`. */
  private hasDue(by: number) {
    const next = this.schedule.peek();
    return next !== undefined && next.due <= by;
  }

  /**
   * Starts the held servers' checks due by `by` on the free slots; when slots stay free and none
   * is due (or `always`), claims more servers from the database, which are checked first.
   * Returns whether the last claim was full.
   */
  private async fill(claim = true, by = this.clock.now(), always = false): Promise<{ more: boolean }> {
    if (!always && this.config.PING_CONCURRENCY - this.pinging <= 0) return { more: true };
    this.launchDue(by);
    if (claim && (always || (this.config.PING_CONCURRENCY - this.pinging > 0 && !this.hasDue(by)))) {
      await this.claimMore();
      this.launchDue(by);
    }
    return { more: this.dueLeft };
  }

  /** One claim at a time, however many callers want one; a full claim means more may be due. */
  private claimMore(): Promise<void> {
    const size = this.config.PING_CONCURRENCY * CLAIM_SLOTS;
    this.claiming ??= this.claim(size)
      .then((claimed) => {
        this.dueLeft = claimed.length === size;
        for (const lease of claimed) this.hold(lease);
      })
      .finally(() => {
        this.claiming = undefined;
      });
    return this.claiming;
  }

  /** Takes a claimed server into the schedule, replacing a lease it had on it before. */
  private hold(lease: Lease) {
    this.leases.set(lease.id, lease);
    this.schedule.push(lease);
  }

  /** The next held server due by `by`, skipping entries whose lease was dropped or replaced. */
  private nextDue(by: number): Lease | undefined {
    while (this.hasDue(by)) {
      const lease = this.schedule.pop()!;
      if (this.leases.get(lease.id) !== lease) continue;
      // Its row is due for anyone now: another instance may be checking it.
      if (this.clock.now() >= lease.end) {
        this.leases.delete(lease.id);
        continue;
      }
      return lease;
    }
    return undefined;
  }

  private launchDue(by: number) {
    while (!this.stopped && this.config.PING_CONCURRENCY - this.pinging > 0) {
      const lease = this.nextDue(by);
      if (!lease) return;
      this.launch(lease);
    }
  }

  private launch(lease: Lease): Promise<void> {
    this.launched++;
    this.pinging++;
    const startedAt = this.clock.now();
    if (lease.due > 0) this.observed?.pingLagged((startedAt - lease.due) / 1000);
    let pinged = false;
    const slotFree = () => {
      if (pinged) return;
      pinged = true;
      this.pinging--;
      // Start the next due check at once, without waiting for the next tick.
      const now = this.clock.now();
      this.launchDue(now);
      // Nothing held is due while the last claim was full: claim now, so the slots find the
      // next servers held rather than wait for the claim or the next tick (one claim in flight at a time).
      if (!this.stopped && this.dueLeft && !this.claiming && !this.hasDue(now))
        void this.claimMore()
          .then(() => this.launchDue(this.clock.now()))
          .catch((err) => this.log.error("pinger claim failed", { err }));
    };
    const job = this.check(lease, slotFree)
      .then((stored) => {
        // Refused (moved, re-claimed, deleted): the lease is gone. Otherwise the next check is an
        // interval after this one started, if the lease still covers it; else the row's own
        // schedule takes over at the lease's end, about when that check would have been.
        if (this.leases.get(lease.id) !== lease) return;
        const next = startedAt + jittered(this.intervalMs);
        if (stored === null || next >= lease.end) {
          this.leases.delete(lease.id);
          return;
        }
        lease.due = next;
        this.schedule.push(lease);
      })
      .catch((err) => {
        // Only this lease: a claim made meanwhile may hold the server under a new one.
        if (this.leases.get(lease.id) === lease) this.leases.delete(lease.id);
        this.observed?.pingResult("error");
        this.log.warn("storing a ping result failed", { server_id: lease.id, err });
      })
      .finally(() => {
        slotFree();
        this.inflight.delete(job);
      });
    this.inflight.add(job);
    return job;
  }

  /**
   * Claims up to `limit` due servers and leases them for PING_LEASE_SECONDS (±10%; never less
   * than an interval). `only` claims that one server, due or not, for one interval, waiting for a
   * lock another claimer holds rather than skipping it.
   */
  async claim(limit: number, only?: string): Promise<Lease[]> {
    const filter: SQL = only ? sql`id = ${only}` : sql`next_check_at <= now()`;
    const lock: SQL = only ? sql`for update` : sql`for update skip locked`;
    const leaseSeconds = only
      ? this.config.PING_INTERVAL_SECONDS
      : Math.max(this.config.PING_LEASE_SECONDS, this.config.PING_INTERVAL_SECONDS);
    const sentAt = this.clock.now();
    // The old next_check_at comes back too: how late the claim is (the pinger's lag). The update
    // finds its rows by primary key: joining the claimed rows to `servers` made the planner hash
    // them against a sequential scan of the whole table (dead versions included), per claim.
    const result = await this.db.execute(sql`
      with d as materialized (
        select id, next_check_at as due from servers
         where ${filter}
         order by next_check_at
         limit ${limit}
         ${lock}),
      u as (
        update servers s
           set next_check_at = now() + make_interval(secs => ${leaseSeconds}::float8 * (0.9 + random() * 0.2))
         where s.id = any(array(select id from d))
        returning s.id, s.host, s.port, s.next_check_at)
      select u.id, u.host, u.port, u.next_check_at::text as token,
             extract(epoch from u.next_check_at - now())::float8 * 1000 as lease_ms,
             extract(epoch from now() - d.due)::float8 as lag_s
        from u join d using (id)`);
    const rows = rowsOf<Target & { token: string; lease_ms: number; lag_s: number }>(result);
    if (this.observed && !only) for (const r of rows) this.observed.pingLagged(Number(r.lag_s));
    // Timed from before the statement: the lease ends no later here than in the database.
    return rows.map(({ id, host, port, token, lease_ms }) => ({
      id,
      host,
      port,
      token,
      end: sentAt + Number(lease_ms),
      due: 0,
    }));
  }

  /**
   * Runs every check that is due now, held or claimable, and waits for them all (bounded by
   * PING_CONCURRENCY): what the loop does over time, at once. Tests and operators use it
   * instead of waiting.
   */
  async pingDue(): Promise<number> {
    const before = this.launched;
    const by = this.clock.now();
    // Once a claim comes back short, the rest of the round only drains what is held: a claim
    // per finished ping that finds nothing was a statement each.
    let more = true;
    for (;;) {
      if (!(await this.fill(more, by)).more) more = false;
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
    const [lease] = await this.claim(1, serverId);
    if (!lease) return null;
    // The claim moved the row on: a lease this instance held on it is void.
    this.leases.delete(serverId);
    const result = await this.ping(lease);
    await this.store(lease, result);
    await this.buffer.flush();
    return result;
  }

  private async ping(target: Target, pinged?: () => void): Promise<PingResult> {
    const result = await ping(target.host, target.port, this.config.PING_TIMEOUT_MS, {
      allowPrivate: this.config.OUTBOUND_ALLOW_PRIVATE,
    });
    pinged?.();
    this.observed?.pingResult(result.online ? "up" : "down");
    return result;
  }

  /** One check: the ping, its result stored and told to listeners; null when the write was refused. */
  private async check(lease: Lease, pinged?: () => void): Promise<boolean | null> {
    return this.store(lease, await this.ping(lease, pinged));
  }

  /**
   * Queues a result for the next shared write (at most WRITE_WAIT_MS away); resolves with whether
   * up/down flipped, once the consumers and listeners have had it, or null when the write was
   * refused: the server is gone, or its row no longer carries this claim's lease.
   */
  private async store(lease: Lease, result: PingResult): Promise<boolean | null> {
    const at = this.clock.now();
    const key = shownKey(result);
    const { written } = lease;
    const status =
      written === undefined ||
      written.key !== key ||
      at - written.at >= this.config.PING_STATUS_REFRESH_SECONDS * 1000 ||
      // A clock set back: the row's checked_at would go backwards less than it is stale.
      at < written.at;
    const changed = await new Promise<boolean | null>((done, failed) => {
      // One row per server in a write: a multi-row upsert cannot update a row twice.
      if (this.batchServers.has(lease.id)) this.writeBatch();
      this.batch.push({ serverId: lease.id, token: lease.token, result, at, status, done, failed });
      this.batchServers.add(lease.id);
      // With no ping under way no other result is coming to share the write.
      if (this.batch.length >= WRITE_MAX || this.pinging === 0) this.writeBatch();
      else this.batchTimer ??= setTimeout(() => this.writeBatch(), WRITE_WAIT_MS);
    });
    if (changed !== null) {
      if (status) lease.written = { key, at };
      for (const l of this.listeners) l(lease.id, result, changed);
    }
    return changed;
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
   * to the metric buffer. Per write, in order: whether up/down flipped, or null when refused.
   * Only results with `status` are written (a shown field changed, or the row is due a refresh);
   * the others, which the row already shows, are held against their lease by a second, read-only
   * statement and go to the buffer alike: no sample, no status write, never a flip.
   * A result is written only while its server's row still carries the lease it was checked
   * under (one primary-key lookup each, a correlated subquery so the planner cannot turn it into
   * a scan of the table): a deleted server, a new address or another claim refuses it. A server
   * deleted between that lookup and the insert fails the statement on the foreign keys (the
   * caller then writes each alone and drops that one). A flip (or a first status) is when
   * `changed_at` becomes this check's time, so the row's state before the statement need not be read.
   * A flip to down opens an incident at this check (of kind `crash` when the server's agent was
   * reporting, since a server that goes down with its agent alive ended its process), unless the
   * agent read a planned stop just before; a flip to up closes the open one, in the same
   * statement: the incidents and the status never disagree.
   */
  private async storeMany(batch: PendingWrite[]): Promise<(boolean | null)[]> {
    const writes = batch.filter((w) => w.status);
    const checks = batch.length - writes.length;
    // Results the row already shows are only held against their lease: a join on the primary
    // key, a third of what the same rows cost in the write statement (bench/pinger-parts.ts).
    const [written, held] = await Promise.all([
      writes.length > 0 ? this.writeMany(writes) : new Map<string, boolean>(),
      checks > 0 ? this.stillLeased(batch.filter((w) => !w.status)) : new Set<string>(),
    ]);
    return batch.map(({ serverId, result: r, at, status }) => {
      const c = status ? written.get(serverId) : held.has(serverId) ? false : undefined;
      if (c === undefined) return null;
      this.buffer.add(serverId, at, { online: r.online, latency: r.latencyMs, players: r.playersOnline });
      return c;
    });
  }

  /** Of these results, the servers whose row still carries the lease each was checked under. */
  private async stillLeased(batch: PendingWrite[]): Promise<Set<string>> {
    const rows = JSON.stringify(batch.map(({ serverId, token }) => ({ server_id: serverId, lease: token })));
    const result = await this.stillLeasedQuery.execute({ rows });
    return new Set(result.map((r) => r.server_id as string));
  }

  /**
   * Prepared (once per connection): it runs once per shared write of results with nothing new,
   * the statement most checks cost, and PostgreSQL would otherwise parse and plan it every time.
   */
  private readonly stillLeasedQuery;

  /** Writes samples and statuses (see `storeMany`); whether each stored server flipped, by id. */
  private async writeMany(batch: PendingWrite[]): Promise<Map<string, boolean>> {
    const rows = JSON.stringify(
      batch.map(({ serverId, token, result: r, at }) => ({
        server_id: serverId,
        lease: token,
        ts: new Date(at).toISOString(),
        online: r.online,
        latency_ms: r.latencyMs,
        players_online: r.playersOnline,
        players_max: r.playersMax,
        version: r.version,
        motd: r.motd,
        motd_raw: r.motdRaw,
        error: r.error,
        down_reason: r.reason,
      })),
    );
    const result = await this.db.execute(sql`
      with input as materialized (
        select x.* from json_to_recordset(${rows}::json) as x(server_id uuid, lease timestamptz, ts timestamptz, online boolean,
               latency_ms int, players_online int, players_max int, version text, motd text, motd_raw text, error text, down_reason text)
         where x.lease = (select next_check_at from servers where id = x.server_id)),
      sample as (
        insert into server_samples (server_id, ts, online, latency_ms, players_online, players_max)
        select server_id, ts, online, latency_ms, players_online, players_max from input
        on conflict do nothing),
      stored as (
        insert into server_status as st (server_id, online, latency_ms, players_online, players_max, version, motd, motd_raw, error, down_reason, checked_at, changed_at)
        select server_id, online, latency_ms, players_online, players_max, version, motd, motd_raw, error, down_reason, ts, ts from input
         order by server_id
        on conflict (server_id) do update set
          online = excluded.online,
          latency_ms = excluded.latency_ms,
          players_online = excluded.players_online,
          players_max = excluded.players_max,
          version = coalesce(excluded.version, st.version),
          motd = coalesce(excluded.motd, st.motd),
          motd_raw = case when excluded.motd is null then st.motd_raw else excluded.motd_raw end,
          error = excluded.error,
          down_reason = excluded.down_reason,
          checked_at = excluded.checked_at,
          changed_at = case when st.online is distinct from excluded.online then excluded.checked_at else st.changed_at end
        returning st.server_id, st.online, st.down_reason, st.checked_at, st.heartbeat_at, st.changed_at = st.checked_at as changed),
      opened as (
        insert into server_incidents (server_id, team_id, started_at, reason, kind)
        select s.server_id, sv.team_id, s.checked_at, s.down_reason,
               case when s.heartbeat_at > s.checked_at - make_interval(secs => ${this.config.WEBHOOK_AGENT_SILENCE_SECONDS}) then 'crash' else 'down' end
          from stored s join servers sv on sv.id = s.server_id
         where s.changed and not s.online
           and not exists (select 1 from server_alert_state a where a.server_id = s.server_id
                             and a.planned_stop_at > s.checked_at - make_interval(secs => ${PLANNED_STOP_SECONDS}))
        on conflict do nothing),
      closed as (
        update server_incidents i set ended_at = greatest(i.started_at, s.checked_at), updated_at = s.checked_at
          from stored s
         where s.changed and s.online and i.server_id = s.server_id and i.ended_at is null and i.kind <> 'manual')
      select server_id, changed from stored`);
    return new Map(rowsOf<{ server_id: string; changed: boolean }>(result).map((r) => [r.server_id, r.changed]));
  }

  retention(now: Date = this.clock.date()) {
    return pruneHistory(
      this.db,
      {
        minuteHours: this.config.METRICS_MINUTE_RETENTION_HOURS,
        hourDays: this.config.SAMPLE_RETENTION_DAYS,
        auditDays: this.config.AUDIT_RETENTION_DAYS,
        playerDataDays: this.config.PLAYER_DATA_MAX_RETENTION_DAYS,
      },
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
