/** Every error code the service answers with, and its HTTP status. One table, both doors. */
export const ERROR_CODES = {
  bad_request: { status: 400, trpc: "BAD_REQUEST" },
  validation_failed: { status: 400, trpc: "BAD_REQUEST" },
  invalid_json: { status: 400, trpc: "BAD_REQUEST" },
  unauthenticated: { status: 401, trpc: "UNAUTHORIZED" },
  invalid_client: { status: 401, trpc: "UNAUTHORIZED" },
  auth_request_expired: { status: 401, trpc: "UNAUTHORIZED" },
  api_key_expired: { status: 401, trpc: "UNAUTHORIZED" },
  forbidden: { status: 403, trpc: "FORBIDDEN" },
  two_factor_required: { status: 403, trpc: "FORBIDDEN" },
  not_found: { status: 404, trpc: "NOT_FOUND" },
  method_not_allowed: { status: 405, trpc: "METHOD_NOT_SUPPORTED" },
  conflict: { status: 409, trpc: "CONFLICT" },
  idempotency_key_in_progress: { status: 409, trpc: "CONFLICT" },
  invitation_expired: { status: 409, trpc: "CONFLICT" },
  payload_too_large: { status: 413, trpc: "PAYLOAD_TOO_LARGE" },
  unsupported_media_type: { status: 415, trpc: "UNSUPPORTED_MEDIA_TYPE" },
  idempotency_key_reused: { status: 422, trpc: "UNPROCESSABLE_CONTENT" },
  rate_limited: { status: 429, trpc: "TOO_MANY_REQUESTS" },
  internal: { status: 500, trpc: "INTERNAL_SERVER_ERROR" },
  unavailable: { status: 503, trpc: "SERVICE_UNAVAILABLE" },
} as const satisfies Record<string, { status: number; trpc: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

/** The tRPC error code each application code is sent with on the typed door (its JSON-RPC number follows from it). */
export type TrpcCode = (typeof ERROR_CODES)[ErrorCode]["trpc"];

/**
 * The one application error: a plain error with a code from the table above. The doors map
 * it at their boundaries (the tRPC error formatter and response meta, the edge's envelope),
 * so the services that throw it know nothing of tRPC or HTTP.
 */
export class AppError extends Error {
  readonly appCode: ErrorCode;
  readonly details?: unknown;
  /** Extra response headers (Retry-After, RateLimit...). */
  readonly headers?: Record<string, string>;

  constructor(code: ErrorCode, message: string, opts: { details?: unknown; headers?: Record<string, string> } = {}) {
    super(message);
    this.name = "AppError";
    this.appCode = code;
    this.details = opts.details;
    this.headers = opts.headers;
  }

  get status(): number {
    return ERROR_CODES[this.appCode].status;
  }
}

/** tRPC's own errors (an unknown procedure, a malformed batch) in the application's codes. */
const TRPC_TO_APP: Partial<Record<string, ErrorCode>> = {
  BAD_REQUEST: "bad_request",
  PARSE_ERROR: "invalid_json",
  UNAUTHORIZED: "unauthenticated",
  FORBIDDEN: "forbidden",
  NOT_FOUND: "not_found",
  METHOD_NOT_SUPPORTED: "method_not_allowed",
  CONFLICT: "conflict",
  PAYLOAD_TOO_LARGE: "payload_too_large",
  UNSUPPORTED_MEDIA_TYPE: "unsupported_media_type",
  TOO_MANY_REQUESTS: "rate_limited",
  SERVICE_UNAVAILABLE: "unavailable",
};

export interface ErrorBody {
  code: ErrorCode;
  message: string;
  details?: unknown;
}

interface ZodLikeIssue {
  path: PropertyKey[];
  message: string;
  code?: string;
}

function zodIssues(cause: unknown): ZodLikeIssue[] | undefined {
  if (cause && typeof cause === "object" && Array.isArray((cause as { issues?: unknown }).issues)) {
    return (cause as { issues: ZodLikeIssue[] }).issues;
  }
  return undefined;
}

/**
 * Turns anything thrown into the public error body. Unknown errors become `internal`
 * with a generic message: their text and stack go to the log, never to the caller.
 */
export function toErrorBody(err: unknown): {
  body: ErrorBody;
  status: number;
  headers?: Record<string, string>;
  internal: boolean;
} {
  if (err instanceof AppError) {
    return {
      body: { code: err.appCode, message: err.message, ...(err.details !== undefined && { details: err.details }) },
      status: err.status,
      headers: err.headers,
      internal: false,
    };
  }
  if (isTrpcError(err)) {
    if (err.cause instanceof AppError) return toErrorBody(err.cause);
    const issues = zodIssues(err.cause);
    if (issues) {
      return {
        body: {
          code: "validation_failed",
          message: "The request did not match the expected shape.",
          details: {
            issues: issues.map((i) => ({
              path: i.path.map(String).join("."),
              message: i.message,
              ...(i.code && { code: i.code }),
            })),
          },
        },
        status: 400,
        internal: false,
      };
    }
    const code = TRPC_TO_APP[err.code];
    if (code) return { body: { code, message: err.message }, status: ERROR_CODES[code].status, internal: false };
  }
  return { body: { code: "internal", message: "Internal error." }, status: 500, internal: true };
}

/** A tRPC error, recognised by shape so this module needs no tRPC import. */
function isTrpcError(err: unknown): err is Error & { code: string; cause?: unknown } {
  return err instanceof Error && err.name === "TRPCError" && typeof (err as { code?: unknown }).code === "string";
}

export function envelope(body: ErrorBody, requestId: string) {
  return { error: { ...body, request_id: requestId } };
}
