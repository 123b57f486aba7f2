import type { Services } from "../services";

export interface Context {
  requestId: string;
  headers: Headers;
  ip: string;
  services: Services;
  /** Response headers a procedure wants sent (rate limit state and the like). */
  resHeaders: Record<string, string>;
}
