import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

/** Prefixes make a leaked secret recognisable (and greppable by secret scanners). */
export type SecretKind = "api_key" | "refresh" | "client_secret" | "session" | "agent" | "two_factor";
const PREFIX: Record<SecretKind, string> = {
  api_key: "mcp_key_",
  refresh: "mcp_rt_",
  client_secret: "mcp_cs_",
  session: "mcp_sess_",
  agent: "mcp_agent_",
  two_factor: "mcp_2fa_",
};

/** A fresh 256-bit random secret with its type prefix, base64url. */
export function newSecret(kind: SecretKind): string {
  return PREFIX[kind] + randomBytes(32).toString("base64url");
}

export function hasPrefix(kind: SecretKind, value: string): boolean {
  return value.startsWith(PREFIX[kind]);
}

/** SHA-256 hex: how every handed-out secret is stored and looked up. */
export function sha256(value: string): string {
  return createHash("sha256").update(value).digest("hex");
}

/** Constant-time comparison of two hex digests (or any equal-length strings). */
export function safeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  if (ab.length !== bb.length) return false;
  return timingSafeEqual(ab, bb);
}

/** A short, non-secret label for display, e.g. `mcp_key_AbCd…`. */
export function displayPrefix(secret: string): string {
  const cut = secret.indexOf("_", 4) + 1;
  return `${secret.slice(0, cut + 4)}…`;
}
