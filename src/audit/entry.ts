import { sql, type SQL } from "drizzle-orm";
import type { Db } from "../db/client";
import { auditLog } from "../db/schema";
import { AppError } from "../lib/errors";
import type { AuditAction } from "./actions";
import { type AuditActor, type AuditEntryOut, type AuditScope, currentAuditScope } from "./scope";

/** A database handle or an open transaction: the entry is written in the change's own transaction. */
export type Tx = Parameters<Parameters<Db["transaction"]>[0]>[0] | Db;
type Row = typeof auditLog.$inferSelect;

export type Changes = AuditEntryOut["changes"];

const asIso = (v: Date | string) => (v instanceof Date ? v : new Date(v)).toISOString();

/** An entry as the API, the dashboard and the `audit.entry` webhook show it. */
export const entryOut = (r: Row): AuditEntryOut => ({
  entry_id: String(r.id),
  team_id: r.teamId,
  at: asIso(r.at),
  actor: { kind: r.actorKind, id: r.actorId, name: r.actorName },
  action: r.action as AuditAction,
  target: { type: r.targetType, id: r.targetId, name: r.targetName },
  server_id: r.serverId,
  changes: r.changes as Changes,
  ip: r.ip,
  user_agent: r.userAgent,
  request_id: r.requestId,
});

/** An `audit_log` row read by raw SQL (snake_case, from either driver) in the public shape. */
export const rawEntryOut = (r: Record<string, unknown>): AuditEntryOut =>
  entryOut({
    id: Number(r.id),
    teamId: r.team_id as string,
    at: r.at as Date,
    actorKind: r.actor_kind as Row["actorKind"],
    actorId: (r.actor_id as string | null) ?? null,
    actorName: r.actor_name as string,
    action: r.action as string,
    targetType: r.target_type as string,
    targetId: r.target_id as string,
    targetName: (r.target_name as string | null) ?? null,
    serverId: (r.server_id as string | null) ?? null,
    changes: typeof r.changes === "string" ? JSON.parse(r.changes) : r.changes,
    ip: (r.ip as string | null) ?? null,
    userAgent: (r.user_agent as string | null) ?? null,
    requestId: (r.request_id as string | null) ?? null,
  });

/** The system's name as an actor: the pinger deciding a server is down or up. */
export const PINGER = "pinger";

/**
 * Field names never recorded, whatever a caller passes: secrets and what stands for them
 * (hashes, sealed values). A `_prefix` (shown in lists to tell keys apart) and a time (`_at`)
 * are not secret. Callers pass the API's own shapes, which hold no secret anyway: this is the
 * second lock.
 */
const SECRET_FIELD = /secret|password|token|hash|sealed|^key$/i;
const SAFE_FIELD = /(_prefix|_at)$/;
/** Bookkeeping every row has; its change says nothing. */
const IGNORED = new Set(["created_at", "updated_at"]);

export const recordable = (field: string) =>
  !IGNORED.has(field) && (SAFE_FIELD.test(field) || !SECRET_FIELD.test(field));

const same = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

/**
 * The fields that differ between two versions of a thing (null before: created; null after:
 * deleted), secrets left out.
 */
export function diff(before: Record<string, unknown> | null, after: Record<string, unknown> | null): Changes {
  const out: Changes = {};
  const keys = new Set([...Object.keys(before ?? {}), ...Object.keys(after ?? {})]);
  for (const k of keys) {
    if (!recordable(k)) continue;
    const b = before?.[k] ?? null;
    const a = after?.[k] ?? null;
    if (!same(b, a)) out[k] = { before: b, after: a };
  }
  return out;
}

/** The actor's name as it is now, read by the entry's own insert (no read before it). */
export function actorName(actor: AuditActor): SQL {
  switch (actor.kind) {
    case "user":
      return sql`coalesce((select email from users where id = ${actor.id}), '(deleted account)')`;
    case "api_key":
      return sql`coalesce((select name from api_keys where id = ${actor.id}), '(deleted key)')`;
    case "agent":
      return sql`coalesce((select 'agent of ' || name from servers where id = ${actor.id}), 'agent')`;
    case "system":
      return sql`${actor.name}`;
  }
}

export interface AuditChange {
  teamId: string;
  /** Only where the procedure declares no single action (the agent's events); else it must match. */
  action?: AuditAction;
  target: { type: string; id: string; name?: string | null };
  serverId?: string | null;
  before?: Record<string, unknown> | null;
  after?: Record<string, unknown> | null;
  /** Changes already computed (several rows at once, as a transfer of ownership). */
  changes?: Changes;
}

/**
 * Writes the audit entry of a change, in the change's transaction: one insert, the actor's name
 * read inside it. The request (actor, address, user agent, request id, action) comes from the
 * scope the tRPC layer opened for the mutation. Outside any scope it refuses: an audited change
 * with no one to name is a bug.
 */
export async function audit(tx: Tx, change: AuditChange): Promise<void> {
  const scope = currentAuditScope();
  if (!scope) throw new AppError("internal", "An audited change was made outside an audit scope.");
  if (scope.skip) return;
  const action = resolveAction(scope, change.action);
  const [row] = await tx
    .insert(auditLog)
    .values({
      teamId: change.teamId,
      actorKind: scope.actor.kind,
      actorId: scope.actor.kind === "system" ? null : scope.actor.id,
      actorName: actorName(scope.actor),
      action,
      targetType: change.target.type,
      targetId: change.target.id,
      targetName: wellFormed(change.target.name ?? null),
      serverId: change.serverId ?? null,
      changes: wellFormed(change.changes ?? diff(change.before ?? null, change.after ?? null)),
      ip: scope.ip,
      userAgent: wellFormed(scope.userAgent),
      requestId: scope.requestId,
    })
    .returning();
  scope.written.push(entryOut(row!));
}

/**
 * Lone UTF-16 surrogates replaced by U+FFFD, as a text column stores them: a JSON escape of one
 * (`"\udfff"`) is refused by PostgreSQL's jsonb, which would fail the change the entry records.
 */
function wellFormed<T>(v: T): T {
  if (typeof v === "string") return v.toWellFormed() as T;
  if (Array.isArray(v)) return v.map(wellFormed) as T;
  if (v && typeof v === "object" && !(v instanceof Date))
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k.toWellFormed(), wellFormed(x)])) as T;
  return v;
}

function resolveAction(scope: AuditScope, given: AuditAction | undefined): AuditAction {
  const action = given ?? scope.action;
  if (!action) throw new AppError("internal", "An audit entry needs an action.");
  if (scope.action && action !== scope.action)
    throw new AppError("internal", `This procedure records ${scope.action}, not ${action}.`);
  return action;
}
