import { QueryClient } from "@tanstack/react-query";
import { createTRPCClient, httpLink, TRPCClientError } from "@trpc/client";
import { createTRPCOptionsProxy } from "@trpc/tanstack-react-query";
import type { AppRouter } from "../src/trpc/router";
import { connection, watchedFetch } from "./connection";

/**
 * The typed door (/trpc) with the session's access token. Selector headers (`x-team-id`,
 * `x-server-id`) travel as tRPC operation context, so each call carries its own.
 *
 * Tokens: the access token lives in memory only. The refresh token never reaches script: the
 * session routes (`/dashboard/session`, src/auth/browser.ts) keep it in an HttpOnly, SameSite=Strict
 * cookie scoped to their path, so a reload or a new tab restores the sign-in by asking
 * `/dashboard/session/refresh` for an access token. Rotation has reuse detection (a refresh token
 * used twice ends the login), and tabs share the cookie: a Web Lock makes the tabs of a browser
 * rotate one at a time, each with the cookie the previous rotation left.
 */

const SESSION = "/dashboard/session";
const LOCK = "mcp-dashboard-refresh";
const ENDED = "Your session has ended. Please sign in again.";

type SessionListener = (s: { signedIn: boolean; ended?: string }) => void;
type TokenAnswer = { access_token: string; expires_in: number };
/** What the password step answers for an account with a second factor. */
export interface SecondFactorChallenge {
  second_factor_required: true;
  challenge_token: string;
  expires_in: number;
  methods: ("totp" | "recovery_code" | "passkey")[];
  passkey_options: Record<string, unknown> | null;
}
export interface SecondFactor {
  challenge_token: string;
  code?: string;
  recovery_code?: string;
  passkey?: unknown;
}
type Rotation = "ok" | "signed-out" | "ended" | "unreachable";

let accessToken: string | null = null;
let accessExpiresAt = 0;
let signedIn = false;
let refreshing: Promise<boolean> | null = null;
let timer: ReturnType<typeof setTimeout> | undefined;
const listeners = new Set<SessionListener>();
// Tells the other tabs of this browser about sign-ins and sign-outs made here.
const tabs = typeof BroadcastChannel === "function" ? new BroadcastChannel("mcp-dashboard-session") : null;

/** An error answer of the session routes, in the envelope's terms. */
export class SessionError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly details?: { issues?: { path: string; message: string }[] },
  ) {
    super(message);
  }
}

function sessionCall(path: string, body?: unknown): Promise<Response> {
  return watchedFetch(SESSION + path, {
    method: "POST",
    credentials: "same-origin",
    headers: { "x-mcp-dashboard": "1", ...(body !== undefined && { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

async function sessionError(res: Response): Promise<SessionError> {
  const body = (await res.json().catch(() => null)) as {
    error?: { message?: string; details?: SessionError["details"] };
  } | null;
  return new SessionError(
    body?.error?.message ?? `The service answered ${res.status}.`,
    res.status,
    body?.error?.details,
  );
}

/** One tab at a time per browser, where the browser has Web Locks (every current one, on https and localhost). */
function oneTabAtATime<T>(fn: () => Promise<T>): Promise<T> {
  return typeof navigator !== "undefined" && navigator.locks ? navigator.locks.request(LOCK, fn) : fn();
}

/** Exchanges the cookie for an access token (and a new cookie). */
function rotate(): Promise<Rotation> {
  return oneTabAtATime(async () => {
    let res: Response;
    try {
      res = await sessionCall("/refresh");
    } catch {
      return "unreachable";
    }
    if (res.status === 200) {
      adopt((await res.json()) as TokenAnswer);
      return "ok";
    }
    if (res.status === 204) return "signed-out";
    if (res.status === 401) return "ended";
    return "unreachable";
  });
}

function notify(value: boolean, ended?: string) {
  signedIn = value;
  for (const l of listeners) l({ signedIn: value, ended });
}

function adopt(pair: TokenAnswer) {
  accessToken = pair.access_token;
  accessExpiresAt = Date.now() + pair.expires_in * 1000;
  clearTimeout(timer);
  // Rotate a minute before the access token ends, so requests rarely meet a 401.
  timer = setTimeout(() => void session.refresh(), Math.max(5_000, pair.expires_in * 1000 - 60_000));
  if (!signedIn) notify(true);
}

export const session = {
  subscribe(l: SessionListener) {
    listeners.add(l);
    return () => listeners.delete(l);
  },
  signedIn: () => signedIn,
  token: () => accessToken,
  /** A token good for at least a few more seconds, refreshing first if needed. */
  async freshToken(): Promise<string | null> {
    if (accessToken && Date.now() < accessExpiresAt - 10_000) return accessToken;
    return (await this.refresh()) ? accessToken : null;
  },
  /**
   * On page load: the sign-in this browser holds, if any. While the service cannot be reached it
   * keeps trying, so a reload during an outage does not show the sign-in form to a signed-in user.
   */
  async restore(): Promise<boolean> {
    for (;;) {
      const r = await rotate();
      if (r === "ok") return true;
      if (r === "signed-out") return false;
      if (r === "ended") {
        session.end(ENDED);
        return false;
      }
      await connection.back();
    }
  },
  /** Signs in, or answers the challenge of an account with a second factor (then `secondFactor`). */
  async signIn(email: string, password: string): Promise<SecondFactorChallenge | null> {
    const res = await sessionCall("", { email, password });
    if (res.status !== 200) throw await sessionError(res);
    const body = (await res.json()) as TokenAnswer | SecondFactorChallenge;
    if ("second_factor_required" in body) return body;
    adopt(body);
    tabs?.postMessage("signed-in");
    return null;
  },
  async secondFactor(input: SecondFactor) {
    const res = await sessionCall("/second-factor", input);
    if (res.status !== 200) throw await sessionError(res);
    adopt((await res.json()) as TokenAnswer);
    tabs?.postMessage("signed-in");
  },
  /** Rotates the refresh cookie; one rotation at a time, however many requests ask. */
  refresh(): Promise<boolean> {
    refreshing ??= rotate()
      .then((r) => {
        if (r === "signed-out" || r === "ended") session.end(ENDED);
        return r === "ok";
      })
      .finally(() => {
        refreshing = null;
      });
    return refreshing;
  },
  end(message?: string) {
    accessToken = null;
    clearTimeout(timer);
    queryClient.clear();
    notify(false, message);
  },
  async logout() {
    await sessionCall("/logout").catch(() => {});
    tabs?.postMessage("signed-out");
    session.end();
  },
};

if (tabs)
  tabs.onmessage = (m) => {
    if (m.data === "signed-out" && signedIn) session.end("You signed out in another tab.");
    else if (m.data === "signed-in") {
      // Another tab's sign-in replaced this browser's login, perhaps with another account: what
      // this tab shows is read again under the new one.
      const was = signedIn;
      void session.restore().then((ok) => {
        if (ok && was) void queryClient.resetQueries();
      });
    }
  };

const plain = createTRPCClient<AppRouter>({ links: [httpLink({ url: "/trpc", fetch: watchedFetch })] });
export const publicClient = plain;

/** Adds the bearer token; on a 401 rotates once and retries, or ends the session. */
async function authedFetch(url: URL | RequestInfo, init?: RequestInit): Promise<Response> {
  const send = (token: string | null) => {
    const headers = new Headers(init?.headers);
    if (token) headers.set("authorization", `Bearer ${token}`);
    return watchedFetch(url, { ...init, headers });
  };
  const res = await send(await session.freshToken());
  if (res.status !== 401 || !signedIn) return res;
  if (!(await session.refresh())) return res;
  return send(accessToken);
}

export interface CallContext extends Record<string, unknown> {
  teamId?: string;
  serverId?: string;
  /** One submit's Idempotency-Key (`useIntent` in ui.tsx): its retries get the first answer. */
  idempotencyKey?: string;
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
          ...(c.idempotencyKey && { "idempotency-key": c.idempotencyKey }),
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

// Back from an outage: read again whatever is on screen (failed reads included).
connection.subscribe((ok) => {
  if (ok) void queryClient.invalidateQueries();
});

/** Per-call selector headers, as tRPC request options. */
export const forTeam = (teamId: string) => ({ trpc: { context: { teamId } } });
export const forServer = (serverId: string) => ({ trpc: { context: { serverId } } });

/** No answer from the service (or not one of its own): the network, a proxy, a restart. */
export function isUnreachable(err: unknown): boolean {
  return (err instanceof TRPCClientError && !err.data && !err.shape) || err instanceof TypeError;
}

/** The envelope's message, whatever door or failure produced it. */
export function errorMessage(err: unknown): string {
  if (isUnreachable(err)) return "The service cannot be reached right now; the page reconnects by itself.";
  if (err instanceof TRPCClientError) return err.message;
  if (err instanceof Error) return err.message;
  return "Something went wrong.";
}

/** The service's error code (`idempotency_key_reused`, `conflict`, ...) of a failed call. */
export function errorCode(err: unknown): string | undefined {
  return err instanceof TRPCClientError ? (err.data as { code?: string } | undefined)?.code : undefined;
}

/** Field errors of a validation failure, keyed by the input path. */
export function fieldErrors(err: unknown): Record<string, string> {
  if (err instanceof SessionError)
    return Object.fromEntries((err.details?.issues ?? []).map((i) => [i.path, i.message]));
  if (!(err instanceof TRPCClientError)) return {};
  const issues = (err.shape as { details?: { issues?: { path: string; message: string }[] } })?.details?.issues ?? [];
  return Object.fromEntries(issues.map((i) => [i.path, i.message]));
}
