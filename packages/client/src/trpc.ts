import { createTRPCClient, httpLink, type TRPCClient } from "@trpc/client";
import type { AppRouter } from "./generated/router";

/** Per-call selectors: the team or server a procedure acts on (`x-team-id` / `x-server-id`). */
export interface Selectors {
  teamId?: string;
  serverId?: string;
}

/**
 * What a call's `context` may hold: its selectors, and for a POST that creates or changes
 * something an `idempotencyKey` (sent as `Idempotency-Key`): retried with the same key and input
 * within 24 hours, the service answers the first answer again instead of running it twice.
 * Never a default: one key belongs to one intent.
 */
export interface CallContext extends Selectors {
  idempotencyKey?: string;
}

export type Credential = string | (() => string | undefined | Promise<string | undefined>);

export interface TrpcClientOptions {
  /** The service's base URL, e.g. `https://mc.example.com` (the client calls `<baseUrl>/trpc`). */
  baseUrl: string;
  /** A user access token or a team API key, or a function returning the current one (called per request). */
  token?: Credential;
  /** Selectors sent on every call unless a call's own `context` overrides them. */
  defaults?: Selectors;
  fetch?: typeof fetch;
}

export type PlatformTrpcClient = TRPCClient<AppRouter>;

export async function resolveCredential(token: Credential | undefined): Promise<string | undefined> {
  return typeof token === "function" ? await token() : token;
}

/**
 * A typed tRPC client for the service's `/trpc` door. The selector headers are read from each
 * call's tRPC `context`, so one client serves every team and server:
 *
 * ```ts
 * await api.servers.list.query(undefined, { context: { teamId } });
 * await api.servers.players.query({}, selectors({ serverId }));
 * ```
 *
 * `httpLink` rather than `httpBatchLink`: the headers belong to the HTTP request, so calls for
 * different servers must not share one.
 */
export function createTrpcClient(options: TrpcClientOptions): PlatformTrpcClient {
  const url = `${options.baseUrl.replace(/\/+$/, "")}/trpc`;
  return createTRPCClient<AppRouter>({
    links: [
      httpLink({
        url,
        ...(options.fetch && { fetch: options.fetch }),
        async headers({ op }) {
          const own = op.context as CallContext;
          const selected = { ...options.defaults, ...own };
          const token = await resolveCredential(options.token);
          const headers: Record<string, string> = {};
          if (token) headers.authorization = `Bearer ${token}`;
          if (selected.teamId) headers["x-team-id"] = selected.teamId;
          if (selected.serverId) headers["x-server-id"] = selected.serverId;
          if (own.idempotencyKey) headers["idempotency-key"] = own.idempotencyKey;
          return headers;
        },
      }),
    ],
  });
}

/** The call options that select a team or server: `api.x.y.query(input, selectors({ serverId }))`. */
export function selectors(selected: Selectors): { context: Selectors & Record<string, unknown> } {
  return { context: { ...selected } };
}
