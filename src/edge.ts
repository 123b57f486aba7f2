import type { Config } from "./config";
import { requestInfo } from "./http";
import { MemoryRateLimitStore, RateLimiter, type RateLimitPolicy } from "./lib/rate-limit";

const ALLOW_HEADERS = "authorization, content-type, x-team-id, x-server-id, x-request-id";
const EXPOSE_HEADERS = "x-request-id, ratelimit, ratelimit-policy, retry-after";

/**
 * What every request meets first, on every door: CORS for the configured browser origins, and
 * a general per-client rate limit (per instance, in memory) whose headers go on every answer.
 * The seed's per-client and per-token limits are separate and shared between instances.
 */
export class Edge {
  private readonly origins: Set<string>;
  private readonly anyOrigin: boolean;
  private readonly limiter: RateLimiter;
  private readonly policy: RateLimitPolicy;

  constructor(
    private readonly config: Pick<Config, "CORS_ORIGINS" | "RATE_LIMIT_GENERAL_PER_MIN" | "TRUST_PROXY">,
    now: () => number,
  ) {
    this.anyOrigin = config.CORS_ORIGINS.includes("*");
    this.origins = new Set(config.CORS_ORIGINS);
    this.limiter = new RateLimiter(new MemoryRateLimitStore(), now);
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
   * Admits a request: sets its CORS and rate limit headers, and throws a 429 (carrying them)
   * when the client is over the general limit.
   */
  async admit(request: Request, address: string) {
    const info = requestInfo(request);
    Object.assign(info.headers, this.cors(request));
    await this.limiter.enforce(this.policy, this.clientKey(request, address), info.headers);
  }

  prune() {
    return this.limiter.prune();
  }

  private clientKey(request: Request, address: string) {
    if (this.config.TRUST_PROXY) {
      const forwarded = request.headers.get("x-forwarded-for")?.split(",")[0]?.trim();
      if (forwarded) return forwarded.slice(0, 64);
    }
    return address;
  }
}
