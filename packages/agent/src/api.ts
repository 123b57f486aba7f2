import type { AgentConfig } from "./config";

export interface ApiAnswer {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: JSON from the service, read field by field where used
  body: any;
  etag: string | null;
  retryAfterMs: number | null;
}

/** The service's agent API. Network failures and timeouts come back as status 0 so callers decide on retries in one place. */
export class ServiceApi {
  constructor(private readonly config: AgentConfig) {}

  async request(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<ApiAnswer> {
    try {
      const res = await fetch(this.config.url + path, {
        method,
        headers: {
          authorization: `Bearer ${this.config.token}`,
          "user-agent": "mc-platform-agent/0.1",
          ...(body === undefined ? {} : { "content-type": "application/json" }),
          ...headers,
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(this.config.requestTimeoutMs),
      });
      const text = await res.text();
      let parsed: unknown = text;
      try {
        parsed = text ? JSON.parse(text) : null;
      } catch {}
      const retryAfter = Number(res.headers.get("retry-after"));
      return {
        status: res.status,
        body: parsed,
        etag: res.headers.get("etag"),
        retryAfterMs: Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter * 1000 : null,
      };
    } catch (e) {
      return {
        status: 0,
        body: { error: { message: e instanceof Error ? e.message : String(e) } },
        etag: null,
        retryAfterMs: null,
      };
    }
  }
}

/** Exponential backoff with full jitter: a random wait up to min(max, min * 2^attempt). */
export function backoffMs(attempt: number, min: number, max: number, random = Math.random) {
  const cap = Math.min(max, min * 2 ** Math.min(attempt, 30));
  return Math.max(min / 2, Math.floor(random() * cap));
}
