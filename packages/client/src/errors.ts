import type { components } from "./generated/openapi";

export type ErrorEnvelope = components["schemas"]["Error"];
export type ErrorCode = ErrorEnvelope["error"]["code"];

/** A non-2xx answer from the service, with its error envelope's code and request id. */
export class PlatformError extends Error {
  override readonly name = "PlatformError";
  constructor(
    readonly status: number,
    /** The envelope's stable code (`invalid_client`, `rate_limited`, ...); `unknown` if the body had none. */
    readonly code: ErrorCode | "unknown",
    message: string,
    /** Quote it in support requests: the service's log has the request under it. */
    readonly requestId?: string,
    readonly details?: unknown,
    /** Seconds, from `Retry-After` (429, 503). */
    readonly retryAfter?: number,
  ) {
    super(message);
  }

  static async from(res: Response): Promise<PlatformError> {
    const body = (await res.json().catch(() => undefined)) as Partial<ErrorEnvelope> | undefined;
    const err = body?.error;
    return new PlatformError(
      res.status,
      err?.code ?? "unknown",
      err?.message ?? `HTTP ${res.status}`,
      err?.request_id ?? res.headers.get("x-request-id") ?? undefined,
      err?.details,
      retryAfterSeconds(res),
    );
  }
}

export function retryAfterSeconds(res: Response): number | undefined {
  const value = res.headers.get("retry-after");
  if (value === null) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, (date - Date.now()) / 1000);
}
