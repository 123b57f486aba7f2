import { QueryClient } from "@tanstack/react-query";
import { createTRPCClient, httpLink, TRPCClientError } from "@trpc/client";
import { createTRPCOptionsProxy } from "@trpc/tanstack-react-query";
import type { AppRouter } from "../src/trpc/router";

/**
 * The typed door (/trpc) with the session's access token. Selector headers (`x-team-id`,
 * `x-server-id`) travel as tRPC operation context, so each call carries its own.
 *
 * Tokens: the access token lives in memory only. The refresh token is kept in sessionStorage:
 * it survives a reload of this tab, dies with the tab, is not shared with other tabs, and the
 * page runs no script but its own (CSP `script-src 'self'`, React escapes every value). A stolen
 * refresh token that is used after us revokes the whole login (rotation with reuse detection).
 */

const REFRESH_KEY = "mcp.refresh";

type SessionListener = (s: { signedIn: boolean; ended?: string }) => void;

let accessToken: string | null = null;
let accessExpiresAt = 0;
let refreshing: Promise<boolean> | null = null;
let timer: ReturnType<typeof setTimeout> | undefined;
const listeners = new Set<SessionListener>();

const plain = createTRPCClient<AppRouter>({ links: [httpLink({ url: "/trpc" })] });

function notify(signedIn: boolean, ended?: string) {
  for (const l of listeners) l({ signedIn, ended });
}

export const session = {
  subscribe(l: SessionListener) {
    listeners.add(l);
    return () => listeners.delete(l);
  },
  hasRefresh: () => Boolean(sessionStorage.getItem(REFRESH_KEY)),
  token: () => accessToken,
  /** A token good for at least a few more seconds, refreshing first if needed. */
  async freshToken(): Promise<string | null> {
    if (accessToken && Date.now() < accessExpiresAt - 10_000) return accessToken;
    return (await this.refresh()) ? accessToken : null;
  },
  adopt(pair: { access_token: string; refresh_token: string; expires_in: number }) {
    accessToken = pair.access_token;
    accessExpiresAt = Date.now() + pair.expires_in * 1000;
    sessionStorage.setItem(REFRESH_KEY, pair.refresh_token);
    clearTimeout(timer);
    // Rotate a minute before the access token ends, so requests rarely meet a 401.
    timer = setTimeout(() => void session.refresh(), Math.max(5_000, pair.expires_in * 1000 - 60_000));
    notify(true);
  },
  /** Rotates the refresh token; one rotation at a time, however many requests ask. */
  refresh(): Promise<boolean> {
    refreshing ??= (async () => {
      const token = sessionStorage.getItem(REFRESH_KEY);
      if (!token) return false;
      try {
        session.adopt(await plain.auth.refresh.mutate({ refresh_token: token }));
        return true;
      } catch (err) {
        if (err instanceof TRPCClientError && err.data?.httpStatus === 401) {
          session.end("Your session has ended. Please sign in again.");
        }
        return false;
      }
    })().finally(() => {
      refreshing = null;
    });
    return refreshing;
  },
  end(message?: string) {
    accessToken = null;
    sessionStorage.removeItem(REFRESH_KEY);
    clearTimeout(timer);
    queryClient.clear();
    notify(false, message);
  },
  async logout() {
    const token = sessionStorage.getItem(REFRESH_KEY);
    if (token) await plain.auth.logout.mutate({ refresh_token: token }).catch(() => {});
    session.end();
  },
};

export const publicClient = plain;

/** Adds the bearer token; on a 401 rotates once and retries, or ends the session. */
async function authedFetch(url: URL | RequestInfo, init?: RequestInit): Promise<Response> {
  const send = (token: string | null) => {
    const headers = new Headers(init?.headers);
    if (token) headers.set("authorization", `Bearer ${token}`);
    return fetch(url, { ...init, headers });
  };
  const res = await send(await session.freshToken());
  if (res.status !== 401 || !session.hasRefresh()) return res;
  if (!(await session.refresh())) return res;
  return send(accessToken);
}

export interface CallContext extends Record<string, unknown> {
  teamId?: string;
  serverId?: string;
}

export const client = createTRPCClient<AppRouter>({
  links: [
    httpLink({
      url: "/trpc",
      fetch: authedFetch,
      headers({ op }) {
        const c = op.context as CallContext;
        return {
          ...(c.teamId && { "x-team-id": c.teamId }),
          ...(c.serverId && { "x-server-id": c.serverId }),
        };
      },
    }),
  ],
});

export const queryClient = new QueryClient({
  defaultOptions: {
    queries: {
      staleTime: 5_000,
      refetchOnWindowFocus: false,
      retry: (n, err) => n < 1 && !(err instanceof TRPCClientError && (err.data?.httpStatus ?? 500) < 500),
    },
  },
});

export const trpc = createTRPCOptionsProxy<AppRouter>({ client, queryClient });

/** Per-call selector headers, as tRPC request options. */
export const forTeam = (teamId: string) => ({ trpc: { context: { teamId } } });
export const forServer = (serverId: string) => ({ trpc: { context: { serverId } } });

/** The envelope's message, whatever door or failure produced it. */
export function errorMessage(err: unknown): string {
  if (err instanceof TRPCClientError) return err.message;
  if (err instanceof Error) return err.message;
  return "Something went wrong.";
}

/** Field errors of a validation failure, keyed by the input path. */
export function fieldErrors(err: unknown): Record<string, string> {
  if (!(err instanceof TRPCClientError)) return {};
  const issues = (err.shape as { details?: { issues?: { path: string; message: string }[] } })?.details?.issues ?? [];
  return Object.fromEntries(issues.map((i) => [i.path, i.message]));
}
