import { envelope, toErrorBody } from "../lib/errors";
import type { Logger } from "../lib/log";
import { requestInfo } from "./request";

/**
 * A JSON answer. The headers every answer carries (request id, CORS, rate limit state) are
 * added by the edge; `extra` wins over them (an error's own Retry-After and RateLimit).
 */
export function json(body: unknown, status: number, extra?: Record<string, string>): Response {
  return new Response(JSON.stringify(body), { status, headers: { ...extra, "content-type": "application/json" } });
}

/** The common error envelope for anything thrown; internal errors are logged, not shown. */
export function errorResponse(err: unknown, request: Request, log: Logger): Response {
  const info = requestInfo(request);
  const { body, status, headers, internal } = toErrorBody(err);
  if (internal) log.error("unhandled error", { request_id: info.id, err });
  return json(envelope(body, info.id), status, headers);
}

/** A static body (a document, a script) with its type; nothing to sniff. */
export function staticResponse(body: BodyInit, type: string, extra: Record<string, string> = {}): Response {
  return new Response(body, { headers: { "content-type": type, "x-content-type-options": "nosniff", ...extra } });
}

/**
 * Whether the request's If-None-Match names this entity tag (RFC 9110 13.1.2: weak comparison,
 * a list of tags, or `*`), so the answer is a 304 with no body.
 */
export function notModified(request: Request, etag: string): boolean {
  const header = request.headers.get("if-none-match");
  if (!header) return false;
  const opaque = (tag: string) => tag.trim().replace(/^W\//, "");
  return header.trim() === "*" || header.split(",").some((tag) => opaque(tag) === opaque(etag));
}
