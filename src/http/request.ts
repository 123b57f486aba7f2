/**
 * Per-request bookkeeping shared by every door: id, start time, the client's address, the
 * headers every answer carries, and what the edge needs to log the answer.
 */
export interface RequestInfo {
  id: string;
  start: number;
  /** The client's address: the peer, or the configured number of trusted proxy hops back. */
  ip: string;
  /**
   * Headers every response to this request carries (request id, CORS, rate limit state).
   * It is the router's own `set.headers`, so a procedure that adds a header here (a route's
   * rate limit) needs nothing else for it to be sent.
   */
  headers: Record<string, string>;
  /** The status of an answer made by the edge's error handler (the router's record of it is not reliable). */
  status?: number;
  /** A door's finer name for what was called (a tRPC procedure), for metrics; else the route pattern. */
  route?: string;
  /** A door that answers people rather than programs renders its errors itself (an HTML page). */
  renderError?: (err: unknown) => Response | undefined;
}

const infos = new WeakMap<Request, RequestInfo>();
const SAFE_ID = /^[A-Za-z0-9._-]{1,64}$/;

export function requestInfo(request: Request): RequestInfo {
  let info = infos.get(request);
  if (!info) {
    const given = request.headers.get("x-request-id");
    info = {
      id: given && SAFE_ID.test(given) ? given : crypto.randomUUID(),
      start: performance.now(),
      ip: "",
      headers: {},
    };
    infos.set(request, info);
  }
  return info;
}

/** A rebuilt request keeps the original's bookkeeping. */
export function adoptRequestInfo(from: Request, to: Request) {
  infos.set(to, requestInfo(from));
}

/** The path of a request URL without its query (query strings can carry secrets). */
export function pathOf(url: string): string {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  const q = url.indexOf("?", start);
  return q === -1 ? url.slice(start) : url.slice(start, q);
}
