import type { Services } from "../services";

export type Role = "owner" | "admin" | "viewer";

export type Principal =
  | { kind: "user"; userId: string }
  | { kind: "api_key"; keyId: string; teamId: string; role: Role };

export interface Context {
  requestId: string;
  headers: Headers;
  ip: string;
  services: Services;
  /** Response headers a procedure wants sent (rate limit state and the like). */
  resHeaders: Record<string, string>;
}
