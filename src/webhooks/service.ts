import { and, count, eq, sql, type SQL } from "drizzle-orm";
import type { Principal } from "../auth/principal";
import type { Config } from "../config";
import type { Db } from "../db/client";
import { teams, webhookDeliveries, webhookEndpoints } from "../db/schema";
import { literalAddress, refusal } from "../lib/address-guard";
import { AppError } from "../lib/errors";
import type { EventScope, TeamEventSink, TeamEventType } from "../lib/events";
import type { Keyring } from "../lib/keyring";
import { LIMITS, overLimit } from "../lib/limits";
import type { Logger } from "../lib/log";
import { iso } from "../lib/schemas";
import { requireTeamRole } from "../teams/access";
import { rowsOf } from "../db/rows";
import { newMessageId, newWebhookSecret, secretLabel } from "./signing";

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

export const endpointOut = (e: EndpointRow) => ({
  endpoint_id: e.id,
  team_id: e.teamId,
  url: e.url,
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
  created_at: iso(e.createdAt),
  updated_at: iso(e.updatedAt),
});

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

/** Events wait at most this long (or until this many) to be written together. */
const QUEUE_WAIT_MS = 2;
const QUEUE_BATCH = 500;

/** Whether endpoint `e` takes an event of `type`. */
const wants = (type: SQL) => sql`e.enabled and (cardinality(e.event_types) = 0 or ${type} = any(e.event_types))`;

/**
 * Team webhook endpoints and the events queued for them. Queuing is one statement: the event
 * row and a delivery row per interested endpoint; a team with no endpoint for the type stores
 * nothing. The delivery itself is src/webhooks/worker.ts.
 */
export class WebhooksService implements TeamEventSink {
  private readonly pending = new Set<Promise<unknown>>();
  private queued: () => void = () => {};

  constructor(
    private readonly db: Db,
    private readonly keyring: Keyring,
    private readonly config: Pick<Config, "WEBHOOK_ALLOW_PRIVATE">,
    private readonly log: Logger,
  ) {}

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

  /** Waits for every event emitted so far to be queued (tests, shutdown). */
  async flush() {
    while (this.pending.size) await Promise.allSettled([...this.pending]);
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

  private waiting: {
    id: string;
    kind: string;
    ref: string;
    type: TeamEventType;
    ts: string;
    data: Record<string, unknown>;
    resolve: (id: string | null) => void;
    reject: (err: unknown) => void;
  }[] = [];
  private writeTimer: ReturnType<typeof setTimeout> | undefined;

  /**
   * Writes every event waiting, in one statement: the events, and a delivery row for each
   * endpoint that wants one. The team of a server or client event is found in the same
   * statement; a team with no interested endpoint stores nothing. (One statement per event
   * held PGlite to about 400 events a second.)
   */
  private async write() {
    clearTimeout(this.writeTimer);
    this.writeTimer = undefined;
    const batch = this.waiting.splice(0);
    if (batch.length === 0) return;
    const rows = batch.map(({ id, kind, ref, type, ts, data }) => ({ id, kind, ref, type, ts, data }));
    try {
      const result = await this.db.execute(sql`
        with v as (
          select * from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb)
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
            left join client_apps c on v.kind = 'client' and c.id = v.ref),
        m as (
          insert into webhook_messages (id, team_id, type, payload)
          select t.id, t.team_id, t.type, jsonb_build_object('type', t.type, 'timestamp', t.ts, 'data', t.extra || t.data)
            from t
           where t.team_id is not null
             and exists (select 1 from webhook_endpoints e where e.team_id = t.team_id and ${wants(sql`t.type`)})
          returning id, team_id, type)
        insert into webhook_deliveries (message_id, endpoint_id)
        select m.id, e.id from m join webhook_endpoints e on e.team_id = m.team_id and ${wants(sql`m.type`)}
        returning message_id`);
      const stored = new Set(rowsOf<{ message_id: string }>(result).map((r) => r.message_id));
      if (stored.size) this.queued();
      for (const b of batch) b.resolve(stored.has(b.id) ? b.id : null);
    } catch (err) {
      for (const b of batch) b.reject(err);
    }
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

  async create(principal: Principal, teamId: string, input: EndpointInput) {
    await requireTeamRole(this.db, principal, teamId, "admin");
    const url = this.checkUrl(input.url);
    const secret = newWebhookSecret();
    const id = crypto.randomUUID();
    const row = await this.db.transaction(async (tx) => {
      await tx.select({ id: teams.id }).from(teams).where(eq(teams.id, teamId)).for("update");
      const [n] = await tx.select({ n: count() }).from(webhookEndpoints).where(eq(webhookEndpoints.teamId, teamId));
      if (n!.n >= LIMITS.webhooksPerTeam) throw overLimit("webhook endpoints per team", LIMITS.webhooksPerTeam);
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
      return r!;
    });
    return { endpoint: endpointOut(row), secret };
  }

  async list(principal: Principal, teamId: string) {
    await requireTeamRole(this.db, principal, teamId, "viewer");
    const rows = await this.db
      .select()
      .from(webhookEndpoints)
      .where(eq(webhookEndpoints.teamId, teamId))
      .orderBy(webhookEndpoints.createdAt, webhookEndpoints.id)
      .limit(LIMITS.webhooksPerTeam);
    return { endpoints: rows.map(endpointOut) };
  }

  async get(principal: Principal, teamId: string, endpointId: string) {
    await requireTeamRole(this.db, principal, teamId, "viewer");
    return endpointOut(await this.endpoint(teamId, endpointId));
  }

  async update(principal: Principal, teamId: string, endpointId: string, patch: Partial<EndpointInput>) {
    await requireTeamRole(this.db, principal, teamId, "admin");
    await this.endpoint(teamId, endpointId);
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
      if (patch.enabled) Object.assign(set, { failingSince: null, consecutiveFailures: 0 });
    }
    const [row] = await this.db
      .update(webhookEndpoints)
      .set(set)
      .where(and(eq(webhookEndpoints.id, endpointId), eq(webhookEndpoints.teamId, teamId)))
      .returning();
    if (!row) throw new AppError("not_found", "No such webhook endpoint in this team.");
    return endpointOut(row);
  }

  async remove(principal: Principal, teamId: string, endpointId: string) {
    await requireTeamRole(this.db, principal, teamId, "admin");
    const gone = await this.db
      .delete(webhookEndpoints)
      .where(and(eq(webhookEndpoints.id, endpointId), eq(webhookEndpoints.teamId, teamId)))
      .returning({ id: webhookEndpoints.id });
    if (gone.length === 0) throw new AppError("not_found", "No such webhook endpoint in this team.");
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
    const [row] = await this.db
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
    if (!row) throw new AppError("conflict", "The secret changed meanwhile; try again.");
    return { endpoint: endpointOut(row), secret };
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
    await this.endpoint(teamId, endpointId);
    const [old] = await this.db
      .select({ messageId: webhookDeliveries.messageId })
      .from(webhookDeliveries)
      .where(and(eq(webhookDeliveries.id, deliveryId), eq(webhookDeliveries.endpointId, endpointId)))
      .limit(1);
    if (!old) throw new AppError("not_found", "No such delivery for this endpoint.");
    const [row] = await this.db.insert(webhookDeliveries).values({ messageId: old.messageId, endpointId }).returning();
    this.queued();
    return this.deliveryById(row!.id);
  }

  /** A `webhook.test` event to this one endpoint, whatever its event filter. */
  async sendTest(principal: Principal, teamId: string, endpointId: string) {
    await requireTeamRole(this.db, principal, teamId, "admin");
    const ep = await this.endpoint(teamId, endpointId);
    if (!ep.enabled) throw new AppError("conflict", "The endpoint is disabled; enable it to send a test event.");
    const id = newMessageId();
    const payload = {
      type: "webhook.test",
      timestamp: new Date().toISOString(),
      data: { endpoint_id: ep.id, team_id: teamId, message: "This is a test event." },
    };
    const result = await this.db.execute(sql`
      with m as (insert into webhook_messages (id, team_id, type, payload) values (${id}, ${teamId}, 'webhook.test', ${JSON.stringify(payload)}::jsonb) returning id)
      insert into webhook_deliveries (message_id, endpoint_id) select m.id, ${endpointId}::uuid from m returning id`);
    const [row] = rowsOf<{ id: string }>(result);
    this.queued();
    return this.deliveryById(row!.id);
  }

  private async deliveryById(id: string) {
    const rows = await this.db.execute(sql`
      select d.*, m.type as event_type from webhook_deliveries d join webhook_messages m on m.id = d.message_id where d.id = ${id}`);
    return rawDelivery(rowsOf<Record<string, unknown>>(rows)[0]!);
  }
}

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
