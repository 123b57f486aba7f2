import { AsyncLocalStorage } from "node:async_hooks";
import type { AuditAction } from "./actions";

/** Who made a change. An agent is named by its server's id; the system by a fixed name. */
export type AuditActor =
  | { kind: "user"; id: string }
  | { kind: "api_key"; id: string }
  | { kind: "agent"; id: string }
  | { kind: "system"; name: string };

/** An entry in the shape the API, the dashboard and the `audit.entry` webhook show it. */
export interface AuditEntryOut {
  entry_id: string;
  team_id: string;
  at: string;
  actor: { kind: AuditActor["kind"]; id: string | null; name: string };
  action: AuditAction;
  target: { type: string; id: string; name: string | null };
  server_id: string | null;
  changes: Record<string, { before: unknown; after: unknown }>;
  ip: string | null;
  user_agent: string | null;
  request_id: string | null;
}

/**
 * The request an audited mutation runs in. The tRPC layer opens one for every mutation
 * (src/trpc/procedures.ts), so services record their change without the request's details
 * passing through every signature: they add only what changed.
 */
export interface AuditScope {
  actor: AuditActor;
  /** The procedure's declared action; null where the writer names it (the agent's events). */
  action: AuditAction | null;
  ip: string | null;
  userAgent: string | null;
  requestId: string | null;
  /** Entries written so far in this request (their transactions may not have committed yet). */
  written: AuditEntryOut[];
  /** The benchmark's baseline: the same mutation with the write left out. */
  skip?: boolean;
}

export const auditScopes = new AsyncLocalStorage<AuditScope>();

export const currentAuditScope = () => auditScopes.getStore();

/** Runs `fn` as `actor` outside any request (scripts, the demo), so its changes are recorded too. */
export function auditAs<T>(actor: AuditActor, fn: () => Promise<T>): Promise<T> {
  return auditScopes.run({ actor, action: null, ip: null, userAgent: null, requestId: null, written: [] }, fn);
}

/** Runs `fn` with no audit entry written: only for the benchmark's baseline (bench/audit.ts). */
export function withoutAudit<T>(fn: () => Promise<T>): Promise<T> {
  const scope = currentAuditScope();
  return scope ? auditScopes.run({ ...scope, skip: true }, fn) : fn();
}
