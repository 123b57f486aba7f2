import { sql } from "drizzle-orm";
import type { Config } from "../config";
import type { Db } from "../db/client";
import type { TeamEventSink } from "../lib/events";
import type { Keyring } from "../lib/keyring";
import type { Logger } from "../lib/log";
import { rowsOf } from "../db/rows";
import { discordBody, type EventBody, slackBody } from "./formats";
import { type SendResult, sendOnce } from "./send";
import { signedHeaders } from "./signing";
import { maskUrl } from "./urls";

type WorkerConfig = Pick<
  Config,
  | "WEBHOOK_ALLOW_PRIVATE"
  | "WEBHOOK_CONCURRENCY"
  | "WEBHOOK_POLL_MS"
  | "WEBHOOK_TIMEOUT_MS"
  | "WEBHOOK_RETRY_SCHEDULE_SECONDS"
  | "WEBHOOK_DISABLE_AFTER_SECONDS"
  | "WEBHOOK_DISABLE_AFTER_FAILURES"
  | "WEBHOOK_ENDPOINT_CONCURRENCY"
  | "WEBHOOK_CIRCUIT_FAILURES"
  | "WEBHOOK_CIRCUIT_PAUSE_SECONDS"
>;

interface Claimed {
  id: string;
  message_id: string;
  endpoint_id: string;
  attempts: number;
  payload: EventBody | string;
  url: string;
  kind: "standard" | "discord" | "slack";
  secret_sealed: string;
  previous_secret_sealed: string | null;
  previous_live: boolean;
  consecutive_failures: number;
}

/** Events and deliveries are kept this long once no attempt is left for them. */
const RETENTION_DAYS = 7;
const RETENTION_EVERY_MS = 3600_000;
const SUCCESS_BATCH = 200;
const SUCCESS_WAIT_MS = 5;

/**
 * Drains the delivery queue. Each tick claims as many due deliveries as there are free slots,
 * in one statement with FOR UPDATE SKIP LOCKED that also moves their `next_attempt_at` a lease
 * ahead: any instance can deliver any event, two never claim one row at once, and a row whose
 * instance died mid-request becomes due again when the lease runs out. Each endpoint gets at
 * most WEBHOOK_ENDPOINT_CONCURRENCY deliveries in flight and the claim takes turns between
 * teams and endpoints, so an endpoint that never answers cannot hold every worker; one that
 * keeps failing is paused (its circuit opens) until a probe succeeds or a person resumes it.
 */
export class DeliveryWorker {
  readonly name = "webhook-delivery";
  private timer: ReturnType<typeof setInterval> | undefined;
  private retentionTimer: ReturnType<typeof setInterval> | undefined;
  private readonly inflight = new Set<Promise<void>>();
  /** Claimed, waiting for a slot: at most one batch, each waits at most one attempt's time. */
  private queue: Claimed[] = [];
  /** The claim (and start) under way, if any: one at a time. */
  private filling: Promise<unknown> | undefined;
  private again = false;
  /** Drains under way: they claim in turn themselves, and kicks wait for them. */
  private draining = 0;
  private stopped = false;
  /** Attempts this instance has made since it started (tests and benches read it). */
  attempts = 0;

  constructor(
    private readonly db: Db,
    private readonly keyring: Keyring,
    private readonly config: WorkerConfig,
    private readonly log: Logger,
    private readonly events: TeamEventSink,
  ) {}

  /**
   * Long enough for a claimed delivery to wait for a slot (at most one attempt's time, as the
   * local queue holds one batch), then to be attempted (the timeout), plus the writes around it.
   */
  private get leaseMs() {
    return 2 * this.config.WEBHOOK_TIMEOUT_MS + 5000;
  }

  start() {
    if (this.timer || this.stopped || this.config.WEBHOOK_CONCURRENCY === 0) return;
    this.timer = setInterval(() => this.kick(), this.config.WEBHOOK_POLL_MS);
    this.retentionTimer = setInterval(
      () => void this.prune().catch((err) => this.log.error("webhook retention failed", { err })),
      RETENTION_EVERY_MS,
    );
    this.kick();
  }

  /**
   * Stops claiming, hands back what was claimed but not started (uncounted, due at once, so
   * another instance need not wait for the lease), and waits for the attempts under way.
   */
  async stop() {
    this.stopped = true;
    clearInterval(this.timer);
    clearInterval(this.retentionTimer);
    this.timer = this.retentionTimer = undefined;
    // A claim under way lands in the queue first, so it is handed back too.
    await this.filling;
    const unstarted = this.queue.splice(0).map((c) => c.id);
    if (unstarted.length)
      await this.db
        .execute(sql`
          update webhook_deliveries set status = 'pending', attempts = attempts - 1, next_attempt_at = now()
           where id in (select jsonb_array_elements_text(${JSON.stringify(unstarted)}::jsonb)::uuid)`)
        .catch((err) => this.log.error("handing back claimed webhook deliveries failed", { err }));
    while (this.inflight.size) await Promise.allSettled([...this.inflight]);
  }

  /** Look for due deliveries now (something was just queued, or a slot freed). */
  kick() {
    if (this.stopped || !this.timer) return;
    if (this.filling || this.draining) {
      this.again = true;
      return;
    }
    this.filling = this.fill()
      .catch((err) => this.log.error("webhook claim failed", { err }))
      .finally(() => {
        this.filling = undefined;
        if (this.again) {
          this.again = false;
          this.kick();
        }
      });
  }

  /** Runs every due delivery now and waits for them (tests and operators use it instead of waiting). */
  async drain(): Promise<number> {
    // The timer's kicks wait while this runs (`again`): a drain that waited for a moment with no
    // claim under way never saw one once each claim outlasted the poll interval, as the kick
    // that came meanwhile started the next claim as soon as one ended.
    this.draining++;
    try {
      let total = 0;
      for (;;) {
        // A background claim in flight may hold the very rows this one would find (skip locked):
        // wait for it, or this drain ends before what it claimed has run.
        while (this.filling) await this.filling;
        const own = this.fill();
        this.filling = own;
        let started: number;
        try {
          started = await own;
        } finally {
          this.filling = undefined;
        }
        total += started;
        if (started === 0 && this.inflight.size === 0 && this.queue.length === 0) return total;
        if (this.inflight.size) await Promise.race([...this.inflight]);
      }
    } finally {
      this.draining--;
      if (this.again && this.draining === 0) {
        this.again = false;
        this.kick();
      }
    }
  }

  /**
   * Claims when the local queue cannot fill the free slots, then starts what fits. One claim
   * takes a whole batch (as many as there are slots), which wait here for a slot: claiming
   * per freed slot made one claim statement per delivery.
   */
  private async fill(): Promise<number> {
    const free = this.config.WEBHOOK_CONCURRENCY - this.inflight.size;
    if (free <= 0) return 0;
    if (this.queue.length < free) this.queue.push(...(await this.claim(this.config.WEBHOOK_CONCURRENCY)));
    let started = 0;
    while (!this.stopped && this.inflight.size < this.config.WEBHOOK_CONCURRENCY && this.queue.length) {
      this.launch(this.queue.shift()!);
      started++;
    }
    return started;
  }

  private launch(c: Claimed) {
    const job = this.attempt(c)
      .catch((err) => this.log.error("a webhook attempt failed to record", { delivery_id: c.id, err }))
      .finally(() => {
        this.inflight.delete(job);
        // The next claimed delivery starts at once; the database is asked only when none is left.
        const next = !this.stopped && this.queue.shift();
        if (next) this.launch(next);
        else this.kick();
      });
    this.inflight.add(job);
  }

  /**
   * Claims up to `limit` due deliveries, taking turns: the first due delivery of every team,
   * then the second, and within a team its endpoints in turn. An endpoint gets no more than its
   * share in flight (counting what every instance holds) and a paused one nothing until its
   * pause ends, then one delivery: the probe.
   *
   * The endpoints with waiting deliveries are found by skipping through the (endpoint, due)
   * index one endpoint at a time, so the cost follows the endpoints with work, not the rows
   * waiting; the first entry of each says whether anything of it is due (in-flight rows carry
   * their lease's end). Those with something due are locked FOR NO KEY UPDATE SKIP LOCKED, so
   * two instances do not count and claim one endpoint's share at the same time (queueing, which
   * only reads them, is not held up). The count is of the statement's snapshot: an instance
   * that committed its claim between that snapshot and this lock is not seen, so the share can
   * be exceeded briefly, by one claim, when instances race for one endpoint. The deliveries
   * chosen are locked SKIP LOCKED as before, and their due condition is checked again on the
   * row then current.
   */
  async claim(limit: number): Promise<Claimed[]> {
    const K = this.config.WEBHOOK_ENDPOINT_CONCURRENCY;
    const result = await this.db.execute(sql`
      with recursive waiting(endpoint_id, first_due) as (
        (select endpoint_id, next_attempt_at from webhook_deliveries
          where status in ('pending', 'delivering') order by endpoint_id, next_attempt_at limit 1)
        union all
        select n.endpoint_id, n.next_attempt_at
          from waiting w
          cross join lateral (
            select q.endpoint_id, q.next_attempt_at from webhook_deliveries q
             where q.status in ('pending', 'delivering') and q.endpoint_id > w.endpoint_id
             order by q.endpoint_id, q.next_attempt_at limit 1) n),
      open as (
        select e.id, e.team_id, case when e.paused_at is null then ${K} else 1 end as share
          from webhook_endpoints e
         where e.id in (select endpoint_id from waiting where first_due <= now())
           and e.enabled and (e.paused_at is null or e.paused_until <= now())
           for no key update of e skip locked),
      candidates as (
        select p.id, o.id as endpoint_id, o.team_id, p.next_attempt_at,
               row_number() over (partition by o.id order by p.next_attempt_at) as turn
          from open o
          cross join lateral (
            select q.id, q.next_attempt_at from webhook_deliveries q
             where q.endpoint_id = o.id and q.status in ('pending', 'delivering') and q.next_attempt_at <= now()
             order by q.next_attempt_at
             limit greatest(0, o.share - (
               select count(*) from (
                 select 1 from webhook_deliveries b
                  where b.endpoint_id = o.id and b.status = 'delivering' and b.next_attempt_at > now()
                  limit o.share) busy))) p),
      turns as (
        select id, next_attempt_at,
               row_number() over (partition by team_id order by turn, next_attempt_at) as team_turn
          from candidates),
      c as (
        select q.id from webhook_deliveries q
         where q.id in (select id from turns order by team_turn, next_attempt_at limit ${limit})
           and q.status in ('pending', 'delivering') and q.next_attempt_at <= now()
           for update of q skip locked)
      update webhook_deliveries d
         set status = 'delivering', attempts = d.attempts + 1, last_attempt_at = now(),
             next_attempt_at = now() + make_interval(secs => ${this.leaseMs / 1000}::float8)
        from c, webhook_messages m, webhook_endpoints e
       where d.id = c.id and m.id = d.message_id and e.id = d.endpoint_id
      returning d.id, d.message_id, d.endpoint_id, d.attempts, m.payload, e.url, e.kind,
                e.secret_sealed, e.previous_secret_sealed,
                coalesce(e.previous_secret_expires_at > now(), false) as previous_live, e.consecutive_failures`);
    return rowsOf<Claimed>(result);
  }

  private body(c: Claimed): string {
    const event = (typeof c.payload === "string" ? JSON.parse(c.payload) : c.payload) as EventBody;
    if (c.kind === "discord") return JSON.stringify(discordBody(event));
    if (c.kind === "slack") return JSON.stringify(slackBody(event));
    return JSON.stringify(event);
  }

  private async attempt(c: Claimed) {
    this.attempts++;
    const body = this.body(c);
    // Both secrets sign during a rotation's overlap, so a receiver with either one verifies.
    let secrets: string[];
    try {
      secrets = [this.keyring.open(c.secret_sealed, c.endpoint_id)];
      if (c.previous_secret_sealed && c.previous_live)
        secrets.push(this.keyring.open(c.previous_secret_sealed, c.endpoint_id));
    } catch {
      // Sealed under another key: this instance does not share the others' JWT_PRIVATE_KEY.
      // The attempt is handed back uncounted for an instance that can sign it.
      this.log.error("cannot open a webhook signing secret: every instance must share JWT_PRIVATE_KEY", {
        endpoint_id: c.endpoint_id,
      });
      await this.db.execute(sql`
        update webhook_deliveries
           set status = 'pending', attempts = attempts - 1, next_attempt_at = now() + interval '5 seconds'
         where id = ${c.id}`);
      return;
    }
    const headers = signedHeaders(secrets, c.message_id, Math.floor(Date.now() / 1000), body);
    const result = await sendOnce(c.url, body, headers, {
      timeoutMs: this.config.WEBHOOK_TIMEOUT_MS,
      policy: { allowPrivate: this.config.WEBHOOK_ALLOW_PRIVATE },
    });
    await this.record(c, result);
  }

  /** Seconds until the next attempt after the `attempts`-th failed, with up to 20% jitter; null when none is left. */
  retryDelay(attempts: number): number | null {
    const base = this.config.WEBHOOK_RETRY_SCHEDULE_SECONDS[attempts - 1];
    if (base === undefined) return null;
    return base * (1 + Math.random() * 0.2);
  }

  /** Successes waiting for the one statement that records them all. */
  private successes: { c: Claimed; r: SendResult; done: () => void; fail: (err: unknown) => void }[] = [];
  private successTimer: ReturnType<typeof setTimeout> | undefined;

  /**
   * Records a success. Successes are most of the writes, so they are recorded together: one
   * statement for every success of the last few milliseconds (measured: one statement each
   * held delivery to well under a thousand a second on PGlite).
   */
  private recordSuccess(c: Claimed, r: SendResult): Promise<void> {
    return new Promise((done, fail) => {
      this.successes.push({ c, r, done, fail });
      if (this.successes.length >= SUCCESS_BATCH) void this.flushSuccesses();
      else this.successTimer ??= setTimeout(() => void this.flushSuccesses(), SUCCESS_WAIT_MS);
    });
  }

  private async flushSuccesses() {
    clearTimeout(this.successTimer);
    this.successTimer = undefined;
    const batch = this.successes.splice(0);
    if (batch.length === 0) return;
    const rows = batch.map(({ c, r }) => ({
      id: c.id,
      code: r.status,
      latency: r.latencyMs,
      response: r.response === null ? null : r.response.replace(/\0/g, ""),
    }));
    const recovered = [...new Set(batch.filter(({ c }) => c.consecutive_failures > 0).map(({ c }) => c.endpoint_id))];
    try {
      await this.db.execute(sql`
        update webhook_deliveries d
           set status = 'succeeded', last_status_code = v.code, last_error = null, last_latency_ms = v.latency, last_response = v.response
          from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as v(id uuid, code int, latency int, response text)
         where d.id = v.id`);
      if (recovered.length)
        await this.db.execute(sql`
          update webhook_endpoints set failing_since = null, consecutive_failures = 0, paused_at = null, paused_until = null
           where id in (select jsonb_array_elements_text(${JSON.stringify(recovered)}::jsonb)::uuid) and consecutive_failures > 0`);
      for (const b of batch) b.done();
    } catch (err) {
      for (const b of batch) b.fail(err);
    }
  }

  /**
   * Records a failed attempt and counts it against the endpoint, in one statement: were the
   * delivery written first, a claim in between could find it due and the endpoint not yet
   * paused, and send once more into an open circuit.
   *
   * At WEBHOOK_CIRCUIT_FAILURES failures in a row the circuit opens: the endpoint is paused (its
   * deliveries wait, nothing is claimed for it) and the team's other endpoints get
   * `endpoint.paused`; a failed probe pauses it again, quietly. Attempts already in flight when
   * it opened fail without extending the pause. Past both disabling thresholds (failing for
   * WEBHOOK_DISABLE_AFTER_SECONDS, at least WEBHOOK_DISABLE_AFTER_FAILURES attempts in a row) it
   * is disabled instead.
   */
  private async record(c: Claimed, r: SendResult) {
    if (r.ok) return this.recordSuccess(c, r);
    const delay = r.retryable ? this.retryDelay(c.attempts) : null;
    const next =
      delay === null
        ? sql`status = 'failed'`
        : sql`status = 'pending', next_attempt_at = now() + make_interval(secs => ${delay}::float8)`;
    const { WEBHOOK_CIRCUIT_FAILURES: threshold, WEBHOOK_CIRCUIT_PAUSE_SECONDS: pause } = this.config;
    // Evaluated on the endpoint as it was before this failure.
    const opens = sql`(e.enabled and e.consecutive_failures + 1 >= ${threshold}
                       and (e.paused_at is null or e.paused_until <= now()))`;
    const result = await this.db.execute(sql`
      with d as (
        update webhook_deliveries
           set ${next}, last_status_code = ${r.status}, last_error = ${r.error}, last_latency_ms = ${r.latencyMs},
               last_response = ${r.response === null ? null : r.response.replace(/\0/g, "")}
         where id = ${c.id}
        returning endpoint_id)
      update webhook_endpoints e
         set failing_since = coalesce(e.failing_since, now()), consecutive_failures = e.consecutive_failures + 1,
             paused_at = case when ${opens} then coalesce(e.paused_at, now()) else e.paused_at end,
             paused_until = case when ${opens} then case when ${pause}::float8 > 0
                                                         then now() + make_interval(secs => ${pause}::float8) end
                                 else e.paused_until end
        from d
       where e.id = d.endpoint_id
      returning e.team_id, e.url, e.enabled, e.consecutive_failures, e.paused_until,
                e.paused_at = now() as opened,
                e.failing_since <= now() - make_interval(secs => ${this.config.WEBHOOK_DISABLE_AFTER_SECONDS}::float8) as long_enough`);
    const [ep] = rowsOf<{
      team_id: string;
      url: string;
      enabled: boolean;
      consecutive_failures: number;
      paused_until: Date | string | null;
      opened: boolean | null;
      long_enough: boolean;
    }>(result);
    if (!ep?.enabled) return;
    if (ep.long_enough && ep.consecutive_failures >= this.config.WEBHOOK_DISABLE_AFTER_FAILURES)
      return this.disable(c.endpoint_id);
    if (!ep.opened) return;
    this.log.warn("webhook endpoint paused after failing", {
      endpoint_id: c.endpoint_id,
      consecutive_failures: ep.consecutive_failures,
    });
    this.events.emit({ teamId: ep.team_id }, "endpoint.paused", {
      endpoint_id: c.endpoint_id,
      url: maskUrl(ep.url),
      consecutive_failures: ep.consecutive_failures,
      paused_until: ep.paused_until ? new Date(ep.paused_until).toISOString() : null,
    });
  }

  private async disable(endpointId: string) {
    const disabled = rowsOf<{ team_id: string; url: string; failing_since: Date | string }>(
      await this.db.execute(sql`
        update webhook_endpoints set enabled = false, disabled_reason = 'failing', disabled_at = now(), updated_at = now(),
                                     paused_at = null, paused_until = null
         where id = ${endpointId} and enabled
        returning team_id, url, failing_since`),
    );
    const [ep] = disabled;
    if (!ep) return; // another instance disabled it first
    await this.db.execute(sql`
      update webhook_deliveries set status = 'failed', last_error = coalesce(last_error, 'endpoint disabled')
       where endpoint_id = ${endpointId} and status = 'pending'`);
    this.log.warn("webhook endpoint disabled after failing", { endpoint_id: endpointId });
    this.events.emit({ teamId: ep.team_id }, "endpoint.disabled", {
      endpoint_id: endpointId,
      url: maskUrl(ep.url),
      failing_since: new Date(ep.failing_since).toISOString(),
      reason: "failing",
    });
  }

  /** Drops events (and their deliveries) older than the retention with nothing left to attempt. */
  async prune() {
    await this.db.execute(sql`
      delete from webhook_messages m
       where m.created_at < now() - make_interval(days => ${RETENTION_DAYS})
         and not exists (select 1 from webhook_deliveries d where d.message_id = m.id and d.status in ('pending', 'delivering'))`);
  }
}
