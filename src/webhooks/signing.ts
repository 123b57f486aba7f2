import { createHmac, randomBytes } from "node:crypto";

/**
 * Standard Webhooks signing (https://www.standardwebhooks.com): the secret is `whsec_` + base64
 * of random bytes; the signature is `v1,` + base64 HMAC-SHA256 of `id.timestamp.body` keyed
 * with those bytes. Any Standard Webhooks library verifies it.
 */
export const SECRET_PREFIX = "whsec_";

export function newWebhookSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString("base64");
}

/** `v1,<base64>` for one secret. */
export function signature(secret: string, id: string, timestampSeconds: number, body: string): string {
  const key = Buffer.from(secret.slice(SECRET_PREFIX.length), "base64");
  const mac = createHmac("sha256", key).update(`${id}.${timestampSeconds}.${body}`).digest("base64");
  return `v1,${mac}`;
}

/** The three headers for a body, signed with every secret given (space-separated, as the spec allows during rotation). */
export function signedHeaders(secrets: string[], id: string, timestampSeconds: number, body: string) {
  return {
    "webhook-id": id,
    "webhook-timestamp": String(timestampSeconds),
    "webhook-signature": secrets.map((s) => signature(s, id, timestampSeconds, body)).join(" "),
  };
}

/** A short, non-secret label for display. */
export const secretLabel = (secret: string) => `${secret.slice(0, SECRET_PREFIX.length + 4)}…`;

/** `msg_` + 128 random bits, base64url: the event id every endpoint and every retry gets. */
export const newMessageId = () => `msg_${randomBytes(16).toString("base64url")}`;
