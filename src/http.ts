import type { Logger } from "./lib/log";
import { envelope, toErrorBody } from "./lib/errors";

/** Per-request bookkeeping shared by every door: id, start time, headers every answer carries. */
export interface RequestInfo {
  id: string;
  start: number;
  /** CORS and general rate limit headers, set when the request is admitted. */
  headers: Record<string, string>;
}

const infos = new WeakMap<Request, RequestInfo>();
const SAFE_ID = /^[A-Za-z0-9._-]{1,64}$/;

export function requestInfo(request: Request): RequestInfo {
  let info = infos.get(request);
  if (!info) {
    const given = request.headers.get("x-request-id");
    info = { id: given && SAFE_ID.test(given) ? given : crypto.randomUUID(), start: performance.now(), headers: {} };
    infos.set(request, info);
  }
  return info;
}

/** A rebuilt request keeps the original's id and start time. */
export function adoptRequestInfo(from: Request, to: Request) {
  infos.set(to, requestInfo(from));
}

/** The headers every response to this request carries, with `extra` on top. */
export function responseHeaders(request: Request, extra?: Record<string, string>): Record<string, string> {
  const info = requestInfo(request);
  return { ...info.headers, ...extra, "x-request-id": info.id };
}

export function json(request: Request, body: unknown, status: number, extra?: Record<string, string>): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: responseHeaders(request, { ...extra, "content-type": "application/json" }),
  });
}

/** Requests one app is handling right now: graceful shutdown waits for this to reach zero. */
export interface Inflight {
  count: number;
}

/** The common error envelope for anything thrown; internal errors are logged, not shown. */
export function errorResponse(err: unknown, request: Request, log: Logger): Response {
  const info = requestInfo(request);
  const { body, status, headers, internal } = toErrorBody(err);
  if (internal) log.error("unhandled error", { request_id: info.id, err });
  return json(request, envelope(body, info.id), status, headers);
}

/** One access log line per response; paths only (query strings can carry secrets). */
export function logAccess(log: Logger, request: Request, status: number) {
  if (!log.enabled("info")) return;
  const info = requestInfo(request);
  const url = request.url;
  const start = url.indexOf("/", url.indexOf("//") + 2);
  const q = url.indexOf("?", start);
  log.info("request", {
    request_id: info.id,
    method: request.method,
    path: q === -1 ? url.slice(start) : url.slice(start, q),
    status,
    duration_ms: Math.round((performance.now() - info.start) * 100) / 100,
  });
}
