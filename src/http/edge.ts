import { Elysia, NotFoundError, ParseError } from "elysia";
import type { Config } from "../config";
import { AppError } from "../lib/errors";
import type { Logger } from "../lib/log";
import type { Metrics } from "../lib/metrics";
import { MemoryRateLimitStore, RateLimiter, type RateLimitPolicy } from "../lib/rate-limit";
import { doorOf } from "./metrics";
import { pathOf, requestInfo } from "./request";
import { errorResponse } from "./responses";

const ALLOW_HEADERS = "authorization, content-type, x-team-id, x-server-id, x-request-id, idempotency-key";
const EXPOSE_HEADERS = "x-request-id, ratelimit, ratelimit-policy, retry-after, idempotent-replayed";

/**
 * The policy of the edge: CORS for the configured browser origins, the client's address
 * (through trusted proxies), and a general per-address rate limit (per instance, in memory)
 * whose headers go on every answer. The specification's per-client and per-token limits
 * are separate and shared between instances.
 */
export class Edge {
  private readonly origins: Set<string>;
  private readonly anyOrigin: boolean;
  private readonly limiter: RateLimiter;
  private readonly policy: RateLimitPolicy;

  constructor(
    private readonly config: Pick<Config, "CORS_ORIGINS" | "RATE_LIMIT_GENERAL_PER_MIN" | "TRUST_PROXY">,
    now: () => number,
    metrics: Metrics | null = null,
  ) {
    this.anyOrigin = config.CORS_ORIGINS.includes("*");
    this.origins = new Set(config.CORS_ORIGINS);
    this.limiter = new RateLimiter(new MemoryRateLimitStore(), now, metrics);
    this.policy = { name: "general", limit: config.RATE_LIMIT_GENERAL_PER_MIN, windowSeconds: 60 };
  }

  /** CORS headers for this request's origin, when it is allowed. */
  cors(request: Request): Record<string, string> {
    const origin = request.headers.get("origin");
    if (!origin || !(this.anyOrigin || this.origins.has(origin))) return {};
    return {
      "access-control-allow-origin": this.anyOrigin ? "*" : origin,
      "access-control-expose-headers": EXPOSE_HEADERS,
      vary: "Origin",
    };
  }

  /** The answer to a CORS preflight (OPTIONS): allowed origins learn what they may send. */
  preflight(request: Request): Response {
    const cors = this.cors(request);
    const headers: Record<string, string> = { ...cors, "x-request-id": requestInfo(request).id };
    if (cors["access-control-allow-origin"]) {
      Object.assign(headers, {
        "access-control-allow-methods": "GET, POST, PATCH, PUT, DELETE",
        "access-control-allow-headers": ALLOW_HEADERS,
        "access-control-max-age": "600",
      });
    }
    return new Response(null, { status: 204, headers });
  }

  /**
   * Admits `calls` calls of one request (a tRPC batch is several): sets its CORS and rate
   * limit headers, and throws a 429 (carrying them) when the client is over the general limit.
   */
  async admit(request: Request, calls = 1) {
    const info = requestInfo(request);
    Object.assign(info.headers, this.cors(request));
    for (let i = 0; i < calls; i++) await this.limiter.enforce(this.policy, info.ip, info.headers);
  }

  /**
   * The client's address. Behind `TRUST_PROXY` = N proxies, each proxy appends the address it
   * saw to `X-Forwarded-For`, so the client is the entry N hops from the right; entries to the
   * left of it were written by the client and are not believed.
   */
  clientAddress(peer: string, request: Request): string {
    const hops = this.config.TRUST_PROXY;
    if (hops === 0) return peer;
    const forwarded = request.headers.get("x-forwarded-for");
    if (!forwarded) return peer;
    const chain = forwarded
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean);
    const at = chain.length - hops;
    return (chain[Math.max(0, at)] ?? peer).slice(0, 64);
  }

  prune() {
    return this.limiter.prune();
  }
}

/** Requests the app is handling right now: graceful shutdown waits for this to reach zero. */
export interface Inflight {
  count: number;
}

type PeerServer = { requestIP(r: Request): { address: string } | null } | null | undefined;

/** One access log line per response; paths only (query strings can carry secrets). */
function logAccess(log: Logger, request: Request, status: number) {
  if (!log.enabled("info")) return;
  const info = requestInfo(request);
  log.info("request", {
    request_id: info.id,
    method: request.method,
    path: pathOf(request.url),
    status,
    duration_ms: Math.round((performance.now() - info.start) * 100) / 100,
  });
}

/**
 * The one request pipeline. Every route of the app, whatever its door (REST, /trpc, browser
 * pages, documents, the WebSocket upgrade, and any route added later), passes these global
 * hooks: a request id, CORS, a declared body over the limit refused (the doors read bodies
 * themselves, `parse: "none"`, through the same bounded reader), the general rate limit,
 * in-flight accounting for graceful shutdown, the error envelope for anything thrown, and one
 * access log line. A route gets all of it by being registered after this plugin.
 */
export function edgePlugin(opts: {
  edge: Edge;
  log: Logger;
  inflight: Inflight;
  maxBodyBytes: number;
  metrics?: Metrics | null;
}) {
  const { edge, log, inflight, maxBodyBytes } = opts;
  const metrics = opts.metrics ?? null;
  /** Counted once the answer is out: a label lookup in a map and two increments. */
  const measure = (request: Request, route: string, status: number) => {
    const info = requestInfo(request);
    const name = info.route ?? (route || "(unmatched)");
    metrics!.request(doorOf(name), name, request.method, status, (performance.now() - info.start) / 1000);
  };
  return new Elysia({ name: "edge" })
    .onRequest(async ({ request, server, set }) => {
      const info = requestInfo(request);
      info.ip = edge.clientAddress((server as PeerServer)?.requestIP(request)?.address ?? "", request);
      // One header set for the request: what the edge and the procedures add is sent.
      info.headers = set.headers as Record<string, string>;
      info.headers["x-request-id"] = info.id;
      if (request.method === "OPTIONS") {
        // Answered here, before any route: nothing runs, so nothing is counted in flight.
        const res = edge.preflight(request);
        logAccess(log, request, res.status);
        if (metrics) measure(request, "(preflight)", res.status);
        return res;
      }
      inflight.count++;
      const declared = request.headers.get("content-length");
      if (declared !== null && Number(declared) > maxBodyBytes) {
        throw new AppError("payload_too_large", `The body is larger than ${maxBodyBytes} bytes.`);
      }
      await edge.admit(request);
    })
    .onError({ as: "global" }, ({ error, request }) => {
      const info = requestInfo(request);
      // Elysia's `code` also reads a thrown error's own `code` (a TRPCError's NOT_FOUND): only its
      // own errors are "no such route" and "unparsable body".
      const err =
        error instanceof NotFoundError
          ? new AppError("not_found", `No route for ${request.method} ${pathOf(request.url)}.`)
          : error instanceof ParseError
            ? new AppError("invalid_json", "The body could not be parsed.")
            : error;
      const res = info.renderError?.(err) ?? errorResponse(err, request, log);
      info.status = res.status;
      return res;
    })
    .onAfterResponse({ as: "global" }, ({ request, responseValue, set, route }) => {
      if (request.method === "OPTIONS") return;
      inflight.count--;
      const info = requestInfo(request);
      const status =
        info.status ??
        (responseValue instanceof Response ? responseValue.status : typeof set.status === "number" ? set.status : 200);
      logAccess(log, request, status);
      if (metrics) measure(request, route, status);
    })
    .as("global");
}
