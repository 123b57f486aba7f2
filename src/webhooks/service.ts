import { and, eq, ne, type Placeholder, sql, type SQL } from "drizzle-orm";
import { type Principal, roleAtLeast } from "../auth/principal";
import type { Config } from "../config";
import type { Db } from "../db/client";
import { teams, webhookDeliveries, webhookEndpoints } from "../db/schema";
import { literalAddress, refusal } from "../lib/address-guard";
import { AppError } from "../lib/errors";
import { type EventScope, OPT_IN_EVENT_TYPES, type TeamEventSink, type TeamEventType } from "../lib/events";
import type { Keyring } from "../lib/keyring";
import { LIMITS, overLimit } from "../lib/limits";
import type { Logger } from "../lib/log";
import type { Metrics } from "../lib/metrics";
import { iso } from "../lib/schemas";
import { requireTeamRole } from "../teams/access";
import { preparedStatement } from "../db/prepared";
import { rowsOf } from "../db/rows";
import { newMessageId, newWebhookSecret, secretLabel } from "./signing";
import { maskUrl, urlKey } from "./urls";
import { audit } from "../audit/entry";

type EndpointRow = typeof webhookEndpoints.$inferSelect;
type DeliveryRow = typeof webhookDeliveries.$inferSelect;

export type WebhookKind = "standard" | "discord" | "slack";

export interface EndpointInput {
  url: string;
  description?: string;
  kind?: WebhookKind;
  event_types?: TeamEventType[];
  enabled?: boolean;
}

/**
 * An endpoint as the API shows it. `full` is for admins and owners: below that the URL is
 * masked, since for many receivers (Discord, Slack) the URL is itself the credential.
 */
export const endpointOut = (e: EndpointRow, full: boolean) => ({
  endpoint_id: e.id,
  team_id: e.teamId,
  url: full ? e.url : maskUrl(e.url),
  url_masked: !full,
  description: e.description,
  kind: e.kind,
  event_types: e.eventTypes as TeamEventType[],
  enabled: e.enabled,
  disabled_reason: e.disabledReason as "failing" | null,
  disabled_at: e.disabledAt ? iso(e.disabledAt) : null,
  secret_prefix: e.secretPrefix,
  previous_secret_expires_at:
    e.previousSecretExpiresAt && e.previousSecretExpiresAt.getTime() > Date.now()
      ? iso(e.previousSecretExpiresAt)
      : null,
  failing_since: e.failingSince ? iso(e.failingSince) : null,
  consecutive_failures: e.consecutiveFailures,
  paused_at: e.pausedAt ? iso(e.pausedAt) : null,
  paused_until: e.pausedAt && e.pausedUntil ? iso(e.pausedUntil) : null,
  created_at: iso(e.createdAt),
  updated_at: iso(e.updatedAt),
});

/**
 * What the audit log records of an endpoint. The URL is masked: for many receivers (Discord,
 * Slack) it is the credential, and entries go out as `audit.entry` events to other receivers.
 */
const endpointFields = (e: EndpointRow) => ({
  url: maskUrl(e.url),
  description: e.description,
  kind: e.kind,
  event_types: e.eventTypes,
  enabled: e.enabled,
});
const endpointTarget = (e: EndpointRow) => ({ type: "webhook", id: e.id, name: maskUrl(e.url) });

export const deliveryOut = (d: DeliveryRow & { eventType: string }) => ({
  delivery_id: d.id,
  endpoint_id: d.endpointId,
  message_id: d.messageId,
  event_type: d.eventType,
  status: d.status,
  attempts: d.attempts,
  next_attempt_at: d.status === "pending" || d.status === "delivering" ? iso(d.nextAttemptAt) : null,
  last_status_code: d.lastStatusCode,
  last_error: d.lastError,
  last_latency_ms: d.lastLatencyMs,
  last_response: d.lastResponse,
  last_attempt_at: d.lastAttemptAt ? iso(d.lastAttemptAt) : null,
  created_at: iso(d.createdAt),
});

/** `OPT_IN_EVENT_TYPES` as a SQL array literal. */
const OPT_IN = sql.raw(`array[${OPT_IN_EVENT_TYPES.map((t) => `'${t}'`).join(",")}]::text[]`);

/**
 * Events wait at most this long (or until this many) to be written together. Nobody waits on
 * them (`emit` returns at once; deliveries are seconds apart anyway), and at a few hundred
 * sign-ins a second 2 ms wrote one statement per event: 10 ms writes a few at a time.
 */
const QUEUE_WAIT_MS = 10;
const QUEUE_BATCH = 500;

/**
 * Whether endpoint `e` takes an event of `type` with `data`. An event about an endpoint (its
 * circuit opened, it was disabled) goes to the team's other endpoints, not to that one.
 */
const wants = (type: SQL, data: SQL) =>
  sql`e.enabled and ((cardinality(e.event_types) = 0 and ${type} <> all(${OPT_IN})) or ${type} = any(e.event_types))
      and not (${type} in ('endpoint.paused', 'endpoint.disabled') and e.id::text = ${data} ->> 'endpoint_id')`;

type BudgetConfig = Pick<Config, "WEBHOOK_TEAM_EVENTS_PER_MIN" | "WEBHOOK_TEAM_DELIVERIES_PER_MIN">;

/**
 * A bucket of `b` (a `webhook_team_budgets` row) refilled for the time since it was last
 * written, at `perMin` a minute, up to one minute's worth.
 */
const refilled = (column: "event_tokens" | "delivery_tokens", perMin: number) =>
  sql`least(${perMin}::float8, b.${sql.raw(column)} + extract(epoch from now() - b.refilled_at) * ${perMin / 60}::float8)`;

/** An event as the queue writes it: `ref` is the team, server or client it is about. */
interface QueuedRow {
  id: string;
  kind: string;
  ref: string;
  type: TeamEventType;
  ts: string;
  data: Record<string, unknown>;
}

/**
 * The CTEs `v` (the events) and `t` (each event with its team, and the server's or client's
 * name for its payload): a server or client event names only its server or client.
 */
const eventTeams = (rows: QueuedRow[] | Placeholder) => sql`
  v as (
    select * from jsonb_to_recordset(${Array.isArray(rows) ? JSON.stringify(rows) : rows}::jsonb)
               as v(id text, kind text, ref uuid, type text, ts text, data jsonb)),
  t as (
    select v.id, v.type, v.ts, v.data, coalesce(tm.id, s.team_id, c.team_id) as team_id,
           case v.kind
             when 'server' then jsonb_build_object('server_id', s.id, 'server_name', s.name)
             when 'client' then jsonb_build_object('client_id', c.id, 'client_name', c.name)
             else '{}'::jsonb end as extra
      from v
      left join teams tm on v.kind = 'team' and tm.id = v.ref
      left join servers s on v.kind = 'server' and s.id = v.ref
      left join client_apps c on v.kind = 'client' and c.id = v.ref)`;

/** Teams whose budget was exceeded are logged at most this often each. */
const BUDGET_LOG_EVERY_MS = 60_000;

/**
 * Team webhook endpoints and the events queued for them. Queuing is one transaction for a
 * batch: the event rows and a delivery row per interested endpoint, within each team's budget;
 * a batch no endpoint takes is one read and stores nothing. The delivery itself is
 * src/webhooks/worker.ts.
 */
export class WebhooksService implements TeamEventSink {
  private readonly pending = new Set<Promise<unknown>>();
  private queued: () => void = () => {};

  /** When each over-budget team was last logged, so a flood is one line a minute, not one per batch. */
  private readonly budgetLogged = new Map<string, number>();

  constructor(
    private readonly db: Db,
    private readonly keyring: Keyring,
    private readonly config: Pick<Config, "WEBHOOK_ALLOW_PRIVATE"> & BudgetConfig,
    private readonly log: Logger,
    private readonly metrics: Metrics | null = null,
    /**
     * This process is the database's only writer (the embedded database): whether any endpoint is
     * enabled is then known from the last read and this process's own changes, and a batch of
     * events when none is takes no statement at all.
     */
    private readonly ownsDatabase = false,
  ) {
    this.wantedQuery = preparedStatement(
      db,
      "webhook_events_wanted",
      ["wanted"],
      sql`
        with ${eventTeams(sql.placeholder("rows"))}
        select exists (
          select 1 from t join webhook_endpoints e on e.team_id = t.team_id and ${wants(sql`t.type`, sql`t.data`)}
        ) as wanted`,
    );
  }

  private readonly wantedQuery;

  /** Called after anything is queued on this instance, so its worker starts at once. */
  onQueued(fn: () => void) {
    this.queued = fn;
  }

  emit(scope: EventScope, type: TeamEventType, data: Record<string, unknown>): void {
    const p = this.enqueue(scope, type, data)
      .catch((err) => this.log.error("queueing a webhook event failed", { type, err }))
      .finally(() => this.pending.delete(p));
    this.pending.add(p);
  }

  /** Waits until nothing emitted is left to queue, including what is emitted meanwhile (tests, shutdown). */
  async flush() {
    while (this.pending.size) await Promise.allSettled([...this.pending]);
  }

  /**
   * Waits for the events emitted before the call to be queued, not for those emitted meanwhile:
   * an erasure scrubs the queued events that name its player, and under a steady stream of
   * events `flush` might not return.
   */
  async emitted() {
    await Promise.allSettled([...this.pending]);
  }

  /** Queues an event; its id, or null when no endpoint of the team wants it. */
  enqueue(scope: EventScope, type: TeamEventType, data: Record<string, unknown>): Promise<string | null> {
    const [kind, ref] =
      "teamId" in scope
        ? ["team", scope.teamId]
        : "serverId" in scope
          ? ["server", scope.serverId]
          : ["client", scope.clientId];
    return new Promise((resolve, reject) => {
      this.waiting.push({ id: newMessageId(), kind, ref, type, ts: new Date().toISOString(), data, resolve, reject });
      if (this.waiting.length >= QUEUE_BATCH) void this.write();
      else this.writeTimer ??= setTimeout(() => void this.write(), QUEUE_WAIT_MS);
    });
  }

  private waiting: (QueuedRow & {
    resolve: (id: string | null) => void;
    reject: (err: unknown) => void;
  })[] = [];
  private writeTimer: ReturnType<typeof setTimeout> | undefined;

  /**
   * Writes every event waiting: the events, and a delivery row for each endpoint that wants
   * one, within each team's budget. Unless a first read finds no endpoint that takes any of
   * them (then nothing is written), a transaction's first statement finds each event's team
   * and how many endpoints take it, and takes
   * the teams' budget rows, refilled, under lock until the end of the transaction; what fits is
   * written by the second, which also stores the buckets and what did not fit. A team with no
   * interested endpoint stores nothing. (One statement per event held PGlite to about 400
   * events a second.)
   */
  private async write() {
    clearTimeout(this.writeTimer);
    this.writeTimer = undefined;
    const batch = this.waiting.splice(0);
    if (batch.length === 0) return;
    const rows = batch.map(({ id, kind, ref, type, ts, data }) => ({ id, kind, ref, type, ts, data }));
    const { WEBHOOK_TEAM_EVENTS_PER_MIN: eventsPerMin, WEBHOOK_TEAM_DELIVERIES_PER_MIN: deliveriesPerMin } =
      this.config;
    try {
      // Most events (a player's sign-in, a server's status) go to no endpoint at all: one read
      // says so, instead of a transaction's begin, budget statement and commit, which take the
      // same answer three round trips to reach. Otherwise the transaction below decides again,
      // under the budget's lock.
      if (!(await this.anyWanted(rows))) {
        for (const b of batch) b.resolve(null);
        return;
      }
      const outcome = await this.db.transaction(async (tx) => {
        const found = rowsOf<{
          id: string;
          team_id: string;
          type: string;
          ts: string;
          data: Record<string, unknown> | string;
          fan: number;
          event_tokens: number;
          delivery_tokens: number;
        }>(
          await tx.execute(sql`
            with ${eventTeams(rows)},
            f as (
              select t.*, (select count(*) from webhook_endpoints e where e.team_id = t.team_id and ${wants(sql`t.type`, sql`t.data`)})::int as fan
                from t where t.team_id is not null),
            budget as (
              insert into webhook_team_budgets as b (team_id, event_tokens, delivery_tokens)
              select distinct team_id, ${eventsPerMin}::float8, ${deliveriesPerMin}::float8 from f where fan > 0
               order by team_id
              on conflict (team_id) do update
                 set event_tokens = ${refilled("event_tokens", eventsPerMin)},
                     delivery_tokens = ${refilled("delivery_tokens", deliveriesPerMin)},
                     refilled_at = now()
              returning b.team_id, b.event_tokens, b.delivery_tokens)
            select f.id, f.team_id, f.type, f.ts, f.extra || f.data as data, f.fan, budget.event_tokens, budget.delivery_tokens
              from f join budget on budget.team_id = f.team_id
             where f.fan > 0`),
        );
        if (found.length === 0) return { stored: new Set<string>(), over: [] };
        const byId = new Map(found.map((r) => [r.id, r]));
        const buckets = new Map<
          string,
          { team_id: string; events: number; deliveries: number; dropped_events: number; dropped_deliveries: number }
        >();
        const admitted: { id: string; team_id: string; type: string; payload: unknown }[] = [];
        // In the order they were emitted: within a team, the first events of a burst go.
        for (const b of batch) {
          const r = byId.get(b.id);
          if (!r) continue;
          let bucket = buckets.get(r.team_id);
          if (!bucket) {
            bucket = {
              team_id: r.team_id,
              events: Number(r.event_tokens),
              deliveries: Number(r.delivery_tokens),
              dropped_events: 0,
              dropped_deliveries: 0,
            };
            buckets.set(r.team_id, bucket);
          }
          const fan = Number(r.fan);
          if (bucket.events >= 1 && bucket.deliveries >= fan) {
            bucket.events -= 1;
            bucket.deliveries -= fan;
            const data = typeof r.data === "string" ? JSON.parse(r.data) : r.data;
            admitted.push({
              id: r.id,
              team_id: r.team_id,
              type: r.type,
              payload: { type: r.type, timestamp: r.ts, data },
            });
          } else {
            bucket.dropped_events++;
            bucket.dropped_deliveries += fan;
          }
        }
        const result = await tx.execute(sql`
          with a as (
            select * from jsonb_to_recordset(${JSON.stringify(admitted)}::jsonb)
                       as a(id text, team_id uuid, type text, payload jsonb)),
          m as (
            insert into webhook_messages (id, team_id, type, payload)
            select id, team_id, type, payload from a
            returning id, team_id, type, payload),
          d as (
            insert into webhook_deliveries (message_id, endpoint_id)
            select m.id, e.id from m join webhook_endpoints e on e.team_id = m.team_id and ${wants(sql`m.type`, sql`(m.payload -> 'data')`)}
            returning message_id),
          u as (
            update webhook_team_budgets b
               set event_tokens = x.events, delivery_tokens = x.deliveries,
                   dropped_events = b.dropped_events + x.dropped_events,
                   dropped_deliveries = b.dropped_deliveries + x.dropped_deliveries,
                   last_dropped_at = case when x.dropped_events > 0 then now() else b.last_dropped_at end
              from jsonb_to_recordset(${JSON.stringify([...buckets.values()])}::jsonb)
                   as x(team_id uuid, events float8, deliveries float8, dropped_events int, dropped_deliveries int)
             where b.team_id = x.team_id)
          select distinct message_id from d`);
        return {
          stored: new Set(rowsOf<{ message_id: string }>(result).map((r) => r.message_id)),
          over: [...buckets.values()].filter((b) => b.dropped_events > 0),
        };
      });
      if (outcome.stored.size) this.queued();
      for (const b of batch) b.resolve(outcome.stored.has(b.id) ? b.id : null);
      for (const o of outcome.over) this.overBudget(o.team_id, o.dropped_events, o.dropped_deliveries);
    } catch (err) {
      for (const b of batch) b.reject(err);
    }
  }

  /**
   * Whether any endpoint takes any of these events: one read, no lock, no transaction; prepared
   * (the events go as one JSON parameter), so it is planned once per connection.
   */
  private async anyWanted(rows: QueuedRow[]): Promise<boolean> {
    if (this.ownsDatabase) {
      if (this.anyEnabled === undefined) {
        // A change made while this read runs moves the generation on, and its answer is not kept.
        const generation = this.endpointsGeneration;
        const [r] = rowsOf<{ any: boolean }>(
          await this.db.execute(sql`select exists (select 1 from webhook_endpoints where enabled) as any`),
        );
        if (generation === this.endpointsGeneration) this.anyEnabled = r?.any === true;
        if (r?.any !== true) return false;
      } else if (!this.anyEnabled) return false;
    }
    const [found] = await this.wantedQuery.execute({ rows: JSON.stringify(rows) });
    return found?.wanted === true;
  }

  /** Whether any endpoint is enabled, when `ownsDatabase`: unknown (read at the next batch) after each change. */
  private anyEnabled: boolean | undefined;
  private endpointsGeneration = 0;

  /** An endpoint was created or changed here: what `anyWanted` knew of them is read again. */
  private endpointsChanged() {
    this.endpointsGeneration++;
    this.anyEnabled = undefined;
  }

  /** Reports events a team's budget had no room for: a metric always, a log line at most once a minute a team. */
  private overBudget(teamId: string, events: number, deliveries: number) {
    this.metrics?.webhookBudgetExceeded(events, deliveries);
    const now = Date.now();
    if (now - (this.budgetLogged.get(teamId) ?? 0) < BUDGET_LOG_EVERY_MS) return;
    if (this.budgetLogged.size >= 10_000) this.budgetLogged.clear();
    this.budgetLogged.set(teamId, now);
    this.log.warn("a team's webhook budget is spent: events past it are not queued", {
      team_id: teamId,
      dropped_events: events,
      dropped_deliveries: deliveries,
      events_per_minute: this.config.WEBHOOK_TEAM_EVENTS_PER_MIN,
      deliveries_per_minute: this.config.WEBHOOK_TEAM_DELIVERIES_PER_MIN,
    });
  }

  /**
   * Takes one event and one delivery from the team's budget for a request that sends one
   * (a test, a redelivery), or answers 429 when the budget is spent.
   */
  private async spendOne(teamId: string) {
    const { WEBHOOK_TEAM_EVENTS_PER_MIN: eventsPerMin, WEBHOOK_TEAM_DELIVERIES_PER_MIN: deliveriesPerMin } =
      this.config;
    const result = await this.db.execute(sql`
      insert into webhook_team_budgets as b (team_id, event_tokens, delivery_tokens)
      values (${teamId}, ${eventsPerMin - 1}::float8, ${deliveriesPerMin - 1}::float8)
      on conflict (team_id) do update
         set event_tokens = ${refilled("event_tokens", eventsPerMin)} - 1,
             delivery_tokens = ${refilled("delivery_tokens", deliveriesPerMin)} - 1,
             refilled_at = now()
       where ${refilled("event_tokens", eventsPerMin)} >= 1 and ${refilled("delivery_tokens", deliveriesPerMin)} >= 1
      returning b.team_id`);
    if (rowsOf(result).length > 0) return;
    const wait = Math.ceil(60 / Math.min(eventsPerMin, deliveriesPerMin));
    throw new AppError(
      "rate_limited",
      `The team's webhook budget (${eventsPerMin} events and ${deliveriesPerMin} deliveries a minute) is spent; try again shortly.`,
      { headers: { "retry-after": String(wait) } },
    );
  }

  // --- endpoints ---

  /** Refuses what could never be delivered, or only to a place the guard forbids. */
  private checkUrl(raw: string) {
    let u: URL;
    try {
      u = new URL(raw);
    } catch {
      throw new AppError("validation_failed", "url must be an absolute http(s) URL.");
    }
    if (u.protocol !== "https:" && u.protocol !== "http:")
      throw new AppError("validation_failed", "url must use https (or http).");
    if (u.username || u.password)
      throw new AppError(
        "validation_failed",
        "url must not carry credentials; the signature authenticates the sender.",
      );
    const literal = literalAddress(u.hostname);
    const policy = { allowPrivate: this.config.WEBHOOK_ALLOW_PRIVATE };
    if (literal) {
      const why = refusal(literal, policy);
      if (why) throw new AppError("validation_failed", `url is not allowed: ${why}.`);
    } else if (!policy.allowPrivate && /(^|\.)localhost\.?$/i.test(u.hostname)) {
      throw new AppError("validation_failed", "url is not allowed: localhost is a loopback name.");
    }
    return u.toString();
  }

  private async endpoint(teamId: string, endpointId: string): Promise<EndpointRow> {
    const [row] = await this.db
      .select()
      .from(webhookEndpoints)
      .where(and(eq(webhookEndpoints.id, endpointId), eq(webhookEndpoints.teamId, teamId)))
      .limit(1);
    if (!row) throw new AppError("not_found", "No such webhook endpoint in this team.");
    return row;
  }

  /**
   * Locks the team (creates and URL changes of its endpoints take turns) and refuses a URL that
   * another of its endpoints already has, however spelled: each would get every event again.
   * Answers how many endpoints the team has.
   */
  private async lockTeamForUrl(tx: Pick<Db, "select">, teamId: string, url: string, except?: string) {
    await tx.select({ id: teams.id }).from(teams).where(eq(teams.id, teamId)).for("update");
    const others = await tx
      .select({ id: webhookEndpoints.id, url: webhookEndpoints.url })
      .from(webhookEndpoints)
      .where(and(eq(webhookEndpoints.teamId, teamId), except ? ne(webhookEndpoints.id, except) : undefined));
    const key = urlKey(url);
    const same = others.find((o) => urlKey(o.url) === key);
    if (same)
      throw new AppError(
        "conflict",
        "Another endpoint of this team has the same URL; every event would be sent to it twice. Change that endpoint's event types instead.",
        { details: { endpoint_id: same.id } },
      );
    return others.length + (except ? 1 : 0);
  }

  async create(principal: Principal, teamId: string, input: EndpointInput) {
    await requireTeamRole(this.db, principal, teamId, "admin");
    const url = this.checkUrl(input.url);
    const secret = newWebhookSecret();
    const id = crypto.randomUUID();
    const row = await this.db.transaction(async (tx) => {
      const n = await this.lockTeamForUrl(tx, teamId, url);
      if (n >= LIMITS.webhooksPerTeam) throw overLimit("webhook endpoints per team", LIMITS.webhooksPerTeam);
      const [r] = await tx
        .insert(webhookEndpoints)
        .values({
          id,
          teamId,
          url,
          description: input.description ?? "",
          kind: input.kind ?? "standard",
          eventTypes: input.event_types ?? [],
          enabled: input.enabled ?? true,
          secretSealed: this.keyring.seal(secret, id),
          secretPrefix: secretLabel(secret),
        })
        .returning();
      await audit(tx, { teamId, target: endpointTarget(r!), after: endpointFields(r!) });
      return r!;
    });
    this.endpointsChanged();
    return { endpoint: endpointOut(row, true), secret };
  }

  /** The team's endpoints, and its budget: what is left of this minute's and what did not fit. */
  async list(principal: Principal, teamId: string) {
    const role = await requireTeamRole(this.db, principal, teamId, "viewer");
    const rows = await this.db
      .select()
      .from(webhookEndpoints)
      .where(eq(webhookEndpoints.teamId, teamId))
      .orderBy(webhookEndpoints.createdAt, webhookEndpoints.id)
      .limit(LIMITS.webhooksPerTeam);
    const { WEBHOOK_TEAM_EVENTS_PER_MIN: eventsPerMin, WEBHOOK_TEAM_DELIVERIES_PER_MIN: deliveriesPerMin } =
      this.config;
    const [budget] = rowsOf<{
      events: number;
      deliveries: number;
      dropped_events: number | string;
      dropped_deliveries: number | string;
      last_dropped_at: Date | string | null;
    }>(
      await this.db.execute(sql`
        select ${refilled("event_tokens", eventsPerMin)} as events, ${refilled("delivery_tokens", deliveriesPerMin)} as deliveries,
               b.dropped_events, b.dropped_deliveries, b.last_dropped_at
          from webhook_team_budgets b where b.team_id = ${teamId}`),
    );
    const full = roleAtLeast(role, "admin");
    return {
      endpoints: rows.map((r) => endpointOut(r, full)),
      usage: {
        events_per_minute: eventsPerMin,
        deliveries_per_minute: deliveriesPerMin,
        events_available: budget ? Math.floor(Number(budget.events)) : eventsPerMin,
        deliveries_available: budget ? Math.floor(Number(budget.deliveries)) : deliveriesPerMin,
        dropped_events: budget ? Number(budget.dropped_events) : 0,
        dropped_deliveries: budget ? Number(budget.dropped_deliveries) : 0,
        last_dropped_at: budget?.last_dropped_at ? iso(asDate(budget.last_dropped_at)!) : null,
      },
    };
  }

  async get(principal: Principal, teamId: string, endpointId: string) {
    const role = await requireTeamRole(this.db, principal, teamId, "viewer");
    return endpointOut(await this.endpoint(teamId, endpointId), roleAtLeast(role, "admin"));
  }

  async update(principal: Principal, teamId: string, endpointId: string, patch: Partial<EndpointInput>) {
    await requireTeamRole(this.db, principal, teamId, "admin");
    const before = await this.endpoint(teamId, endpointId);
    const set: Partial<typeof webhookEndpoints.$inferInsert> = { updatedAt: new Date() };
    if (patch.url !== undefined) set.url = this.checkUrl(patch.url);
    if (patch.description !== undefined) set.description = patch.description;
    if (patch.kind !== undefined) set.kind = patch.kind;
    if (patch.event_types !== undefined) set.eventTypes = patch.event_types;
    if (patch.enabled !== undefined) {
      set.enabled = patch.enabled;
      // Turning it on again starts a fresh count; turning it off is a person's decision, not a failure.
      set.disabledReason = null;
      set.disabledAt = patch.enabled ? null : new Date();
      if (patch.enabled) Object.assign(set, CLOSED_CIRCUIT);
    }
    const row = await this.db.transaction(async (tx) => {
      if (set.url !== undefined) await this.lockTeamForUrl(tx, teamId, set.url, endpointId);
      const [r] = await tx
        .update(webhookEndpoints)
        .set(set)
        .where(and(eq(webhookEndpoints.id, endpointId), eq(webhookEndpoints.teamId, teamId)))
        .returning();
      if (!r) throw new AppError("not_found", "No such webhook endpoint in this team.");
      await audit(tx, { teamId, target: endpointTarget(r), before: endpointFields(before), after: endpointFields(r) });
      return r;
    });
    this.endpointsChanged();
    return endpointOut(row, true);
  }

  /**
   * Closes a paused endpoint's circuit: a clean failure count, and what waited for it due now.
   * Nothing to do for an endpoint that is not paused.
   */
  async resume(principal: Principal, teamId: string, endpointId: string) {
    await requireTeamRole(this.db, principal, teamId, "admin");
    const current = await this.endpoint(teamId, endpointId);
    // Not paused: nothing changes, but the request is still recorded (who pressed resume, and when).
    if (!current.pausedAt) {
      await audit(this.db, { teamId, target: endpointTarget(current) });
      return endpointOut(current, true);
    }
    const row = await this.db.transaction(async (tx) => {
      const [r] = await tx
        .update(webhookEndpoints)
        .set({ ...CLOSED_CIRCUIT, updatedAt: new Date() })
        .where(and(eq(webhookEndpoints.id, endpointId), eq(webhookEndpoints.teamId, teamId)))
        .returning();
      if (!r) throw new AppError("not_found", "No such webhook endpoint in this team.");
      await tx.execute(sql`
        update webhook_deliveries set next_attempt_at = now()
         where endpoint_id = ${endpointId} and status = 'pending' and next_attempt_at > now()`);
      await audit(tx, {
        teamId,
        target: endpointTarget(r),
        before: { paused_at: iso(current.pausedAt!), consecutive_failures: current.consecutiveFailures },
        after: { paused_at: null, consecutive_failures: 0 },
      });
      return r;
    });
    this.log.info("webhook endpoint resumed", { endpoint_id: endpointId });
    this.queued();
    return endpointOut(row, true);
  }

  async remove(principal: Principal, teamId: string, endpointId: string) {
    await requireTeamRole(this.db, principal, teamId, "admin");
    await this.db.transaction(async (tx) => {
      const [gone] = await tx
        .delete(webhookEndpoints)
        .where(and(eq(webhookEndpoints.id, endpointId), eq(webhookEndpoints.teamId, teamId)))
        .returning();
      if (!gone) throw new AppError("not_found", "No such webhook endpoint in this team.");
      await audit(tx, { teamId, target: endpointTarget(gone), before: endpointFields(gone) });
    });
    return { ok: true as const };
  }

  /**
   * A new secret, shown once. The old one keeps signing beside it for `overlapSeconds`, so
   * receivers can switch without rejecting anything in between (0 ends it at once).
   */
  async rotateSecret(principal: Principal, teamId: string, endpointId: string, overlapSeconds: number) {
    await requireTeamRole(this.db, principal, teamId, "admin");
    const current = await this.endpoint(teamId, endpointId);
    const secret = newWebhookSecret();
    const row = await this.db.transaction(async (tx) => {
      const [r] = await tx
        .update(webhookEndpoints)
        .set({
          secretSealed: this.keyring.seal(secret, endpointId),
          secretPrefix: secretLabel(secret),
          previousSecretSealed: overlapSeconds > 0 ? current.secretSealed : null,
          previousSecretExpiresAt: overlapSeconds > 0 ? new Date(Date.now() + overlapSeconds * 1000) : null,
          updatedAt: new Date(),
        })
        .where(and(eq(webhookEndpoints.id, endpointId), eq(webhookEndpoints.secretSealed, current.secretSealed)))
        .returning();
      if (!r) throw new AppError("conflict", "The secret changed meanwhile; try again.");
      await audit(tx, {
        teamId,
        target: endpointTarget(r),
        before: { secret_prefix: current.secretPrefix },
        after: {
          secret_prefix: r.secretPrefix,
          previous_secret_expires_at: r.previousSecretExpiresAt ? iso(r.previousSecretExpiresAt) : null,
        },
      });
      return r;
    });
    return { endpoint: endpointOut(row, true), secret };
  }

  async deliveries(principal: Principal, teamId: string, endpointId: string, limit: number) {
    await requireTeamRole(this.db, principal, teamId, "viewer");
    await this.endpoint(teamId, endpointId);
    const rows = await this.db.execute(sql`
      select d.*, m.type as event_type from webhook_deliveries d join webhook_messages m on m.id = d.message_id
       where d.endpoint_id = ${endpointId}
       order by d.created_at desc, d.id
       limit ${Math.min(limit, LIMITS.webhookDeliveriesListed)}`);
    return { deliveries: rowsOf<Record<string, unknown>>(rows).map(rawDelivery) };
  }

  /** Sends an event again as a new delivery with the same message id (`webhook-id`). */
  async redeliver(principal: Principal, teamId: string, endpointId: string, deliveryId: string) {
    await requireTeamRole(this.db, principal, teamId, "admin");
    const ep = await this.endpoint(teamId, endpointId);
    const [old] = await this.db
      .select({ messageId: webhookDeliveries.messageId })
      .from(webhookDeliveries)
      .where(and(eq(webhookDeliveries.id, deliveryId), eq(webhookDeliveries.endpointId, endpointId)))
      .limit(1);
    if (!old) throw new AppError("not_found", "No such delivery for this endpoint.");
    await this.spendOne(teamId);
    const row = await this.db.transaction(async (tx) => {
      const [r] = await tx.insert(webhookDeliveries).values({ messageId: old.messageId, endpointId }).returning();
      await audit(tx, {
        teamId,
        target: endpointTarget(ep),
        after: { delivery_id: r!.id, message_id: old.messageId },
      });
      return r;
    });
    this.queued();
    return this.deliveryById(row!.id);
  }

  /** A `webhook.test` event to this one endpoint, whatever its event filter. */
  async sendTest(principal: Principal, teamId: string, endpointId: string) {
    await requireTeamRole(this.db, principal, teamId, "admin");
    const ep = await this.endpoint(teamId, endpointId);
    if (!ep.enabled) throw new AppError("conflict", "The endpoint is disabled; enable it to send a test event.");
    if (ep.pausedAt)
      throw new AppError("conflict", "The endpoint is paused after failing; resume it to send a test event.");
    await this.spendOne(teamId);
    const id = newMessageId();
    const payload = {
      type: "webhook.test",
      timestamp: new Date().toISOString(),
      data: { endpoint_id: ep.id, team_id: teamId, message: "This is a test event." },
    };
    const row = await this.db.transaction(async (tx) => {
      const result = await tx.execute(sql`
        with m as (insert into webhook_messages (id, team_id, type, payload) values (${id}, ${teamId}, 'webhook.test', ${JSON.stringify(payload)}::jsonb) returning id)
        insert into webhook_deliveries (message_id, endpoint_id) select m.id, ${endpointId}::uuid from m returning id`);
      const [r] = rowsOf<{ id: string }>(result);
      await audit(tx, { teamId, target: endpointTarget(ep), after: { delivery_id: r!.id, message_id: id } });
      return r;
    });
    this.queued();
    return this.deliveryById(row!.id);
  }

  private async deliveryById(id: string) {
    const rows = await this.db.execute(sql`
      select d.*, m.type as event_type from webhook_deliveries d join webhook_messages m on m.id = d.message_id where d.id = ${id}`);
    return rawDelivery(rowsOf<Record<string, unknown>>(rows)[0]!);
  }
}

/** An endpoint's failure state when it starts afresh: no failures, circuit closed. */
const CLOSED_CIRCUIT = { failingSince: null, consecutiveFailures: 0, pausedAt: null, pausedUntil: null };

const asDate = (v: unknown) => (v === null || v === undefined ? null : v instanceof Date ? v : new Date(String(v)));

/** A raw `webhook_deliveries` row (snake_case, from either driver) in the public shape. */
function rawDelivery(r: Record<string, unknown>) {
  return deliveryOut({
    id: r.id as string,
    messageId: r.message_id as string,
    endpointId: r.endpoint_id as string,
    status: r.status as DeliveryRow["status"],
    attempts: Number(r.attempts),
    nextAttemptAt: asDate(r.next_attempt_at)!,
    lastStatusCode: r.last_status_code === null ? null : Number(r.last_status_code),
    lastError: (r.last_error as string | null) ?? null,
    lastLatencyMs: r.last_latency_ms === null ? null : Number(r.last_latency_ms),
    lastResponse: (r.last_response as string | null) ?? null,
    lastAttemptAt: asDate(r.last_attempt_at),
    createdAt: asDate(r.created_at)!,
    eventType: r.event_type as string,
  });
}
