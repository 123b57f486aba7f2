import { DENIAL_CODES, type DenialCode } from "../../../machines/denials";
import { PlatformError } from "./errors";
import type { paths } from "./generated/openapi";

export { DENIAL_CODES, type DenialCode };

type JsonBody<P extends keyof paths> = paths[P] extends {
  post: { responses: { 200: { content: { "application/json": infer B } } } };
}
  ? B
  : never;

export type StartResponse = JsonBody<"/client/ms-auth/start">;
/** Poll's answer; `assertion` only when asked for and the login is authorized (services that sign them). */
export type PollResponse = JsonBody<"/client/ms-auth/poll"> & { assertion?: string };
/** Validate's answer; `assertion` only when asked for and the session is valid (services that sign them). */
export type ValidateResponse = JsonBody<"/client/ms-auth/session/validate"> & { assertion?: string };
export type LoginStatus = PollResponse["status"];

export interface LauncherBackendOptions {
  /** The service's base URL, e.g. `https://mc.example.com`. */
  baseUrl: string;
  clientId: string;
  /** The client secret: keep it on the launcher's backend, never in the launcher itself. */
  clientSecret: string;
  fetch?: typeof fetch;
}

export interface SignInOptions {
  /** Hand the URL to the player's browser (open it, show it as a link or QR code). */
  openUrl: (authUrl: string, started: StartResponse) => void | Promise<void>;
  /** Opaque state returned as `state` on the redirect to the post-login URI. */
  clientState?: string;
  /** The auth_request_id of a login this backend started before a restart: resume it. */
  resume?: string;
  /** Ask for a signed session assertion (`verifySessionAssertion`) with the result. */
  assertion?: boolean;
  /** Called on every status the poll reads (`pending`, `authenticated`, ...). */
  onStatus?: (status: LoginStatus) => void;
  signal?: AbortSignal;
}

/** What the player needs to sign in on another device (the device flow). */
export interface DeviceCode {
  /** Show it as is (`XXXX-XXXX`); the player types it at `verificationUri`. */
  userCode: string;
  /** The short address to show beside the code. */
  verificationUri: string;
  /** The address with the code filled in: for a link, or what `qrCodeSvg` encodes. */
  verificationUriComplete: string;
  /** `verificationUriComplete` as a QR code, an SVG document (black on white). */
  qrCodeSvg: string;
  /** Seconds the code (and the login) has left. */
  expiresIn: number;
}

export interface DeviceSignInOptions extends Omit<SignInOptions, "openUrl" | "clientState"> {
  /** Show the code to the player (text, and the QR code if there is a screen for it). */
  showCode: (code: DeviceCode, started: StartResponse) => void | Promise<void>;
}

export interface PlayerSession {
  authRequestId: string;
  /** `svc_session_token`: store it server-side; validate it whenever the player is needed. */
  sessionToken: string;
  mcUuid: string;
  mcUsername: string;
  expiresAt?: Date;
  /** A compact JWS verifiable offline, when asked for and the service signs them. */
  assertion?: string;
}

/** The player (or an identity service) ended the login: `code` says why, for the launcher's own text. */
export class LoginDeniedError extends Error {
  override readonly name = "LoginDeniedError";
  constructor(
    readonly code: DenialCode,
    readonly authRequestId: string,
  ) {
    super(`Sign-in denied: ${code}`);
  }
}

/** The login request outlived its time (LOGIN_REQUEST_TTL_SECONDS) before it was authorized. */
export class LoginExpiredError extends Error {
  override readonly name = "LoginExpiredError";
  constructor(readonly authRequestId: string) {
    super("Sign-in expired before it was completed");
  }
}

export function isDenialCode(value: unknown): value is DenialCode {
  return typeof value === "string" && (DENIAL_CODES as readonly string[]).includes(value);
}

/** How many network failures or 5xx answers in a row the poll rides out before giving up. */
const MAX_TRANSIENT_FAILURES = 5;

/**
 * The launcher backend's half of `ms_auth`: start, poll, validate and revoke with the client's
 * credentials, and `signIn`, the whole loop.
 */
export function createLauncherBackend(options: LauncherBackendOptions) {
  const base = options.baseUrl.replace(/\/+$/, "");
  const doFetch = options.fetch ?? fetch;
  const creds = { client_id: options.clientId, client_secret: options.clientSecret };

  async function post<T>(path: keyof paths, body: Record<string, unknown>, signal?: AbortSignal): Promise<T> {
    const res = await doFetch(`${base}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify({ ...creds, ...body }),
      ...(signal && { signal }),
    });
    if (!res.ok) throw await PlatformError.from(res);
    return (await res.json()) as T;
  }

  const start = (
    opts: { clientState?: string; resume?: string; flow?: "browser" | "device"; signal?: AbortSignal } = {},
  ) =>
    post<StartResponse>(
      "/client/ms-auth/start",
      {
        ...(opts.clientState !== undefined && { client_state: opts.clientState }),
        ...(opts.resume !== undefined && { auth_request_id: opts.resume }),
        ...(opts.flow !== undefined && { flow: opts.flow }),
      },
      opts.signal,
    );

  const poll = (authRequestId: string, opts: { assertion?: boolean; signal?: AbortSignal } = {}) =>
    post<PollResponse>(
      "/client/ms-auth/poll",
      { auth_request_id: authRequestId, ...(opts.assertion && { assertion: true }) },
      opts.signal,
    );

  const validate = (sessionToken: string, opts: { assertion?: boolean; signal?: AbortSignal } = {}) =>
    post<ValidateResponse>(
      "/client/ms-auth/session/validate",
      { svc_session_token: sessionToken, ...(opts.assertion && { assertion: true }) },
      opts.signal,
    );

  const revoke = (sessionToken: string, opts: { signal?: AbortSignal } = {}) =>
    post<{ ok: true }>("/client/ms-auth/session/revoke", { svc_session_token: sessionToken }, opts.signal);

  /**
   * start -> `openUrl(auth_url)` -> poll every `interval` seconds (waiting `Retry-After` on a
   * 429, riding out a few network failures or 5xx) -> validate the session token. Throws
   * `LoginDeniedError` (typed `code`), `LoginExpiredError`, or `PlatformError` for other answers.
   */
  async function signIn(opts: SignInOptions): Promise<PlayerSession> {
    const started = await start({ clientState: opts.clientState, resume: opts.resume, signal: opts.signal });
    await opts.openUrl(started.auth_url, started);
    return waitForSession(started, opts);
  }

  /**
   * The device flow: start with `flow: "device"` -> `showCode` (the code, the short address, the
   * QR code) -> the player signs in on any other device -> the same poll loop as `signIn`.
   */
  async function signInWithDeviceCode(opts: DeviceSignInOptions): Promise<PlayerSession> {
    const started = await start({ resume: opts.resume, flow: "device", signal: opts.signal });
    if (!started.user_code || !started.verification_uri || !started.verification_uri_complete || !started.qr_code_svg)
      throw new PlatformError(500, "unknown", "The service answered no device code: it predates the device flow");
    await opts.showCode(
      {
        userCode: started.user_code,
        verificationUri: started.verification_uri,
        verificationUriComplete: started.verification_uri_complete,
        qrCodeSvg: started.qr_code_svg,
        expiresIn: started.expires_in,
      },
      started,
    );
    return waitForSession(started, opts);
  }

  async function waitForSession(
    started: StartResponse,
    opts: Pick<SignInOptions, "assertion" | "onStatus" | "signal">,
  ): Promise<PlayerSession> {
    const { signal } = opts;
    const id = started.auth_request_id;
    const interval = Math.max(1, started.interval) * 1000;
    let failures = 0;
    let lastStatus: LoginStatus | undefined;
    for (;;) {
      await sleep(interval, signal);
      let polled: PollResponse;
      try {
        polled = await poll(id, { assertion: opts.assertion, signal });
        failures = 0;
      } catch (err) {
        if (signal?.aborted) throw err;
        if (err instanceof PlatformError && err.status === 429) {
          // The wait the limit advises, less the interval the loop waits anyway.
          await sleep(Math.max(0, (err.retryAfter ?? 0) * 1000 - interval), signal);
          continue;
        }
        const transient = !(err instanceof PlatformError) || err.status >= 500;
        if (transient && ++failures <= MAX_TRANSIENT_FAILURES) continue;
        throw err;
      }
      if (polled.status !== lastStatus) opts.onStatus?.(polled.status);
      lastStatus = polled.status;
      if (polled.status === "denied")
        throw isDenialCode(polled.error) ? new LoginDeniedError(polled.error, id) : new LoginExpiredError(id);
      if (polled.status === "expired") throw new LoginExpiredError(id);
      if (polled.status !== "authorized" || !polled.svc_session_token) continue;
      const token = polled.svc_session_token;
      const checked = await validate(token, { assertion: opts.assertion, signal });
      if (!checked.valid || !checked.mc_uuid || !checked.mc_username)
        throw new PlatformError(500, "unknown", "The new session did not validate");
      const assertion = checked.assertion ?? polled.assertion;
      return {
        authRequestId: id,
        sessionToken: token,
        mcUuid: checked.mc_uuid,
        mcUsername: checked.mc_username,
        ...(checked.expires_at && { expiresAt: new Date(checked.expires_at) }),
        ...(assertion && { assertion }),
      };
    }
  }

  return { start, poll, validate, revoke, signIn, signInWithDeviceCode };
}

export type LauncherBackend = ReturnType<typeof createLauncherBackend>;

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
