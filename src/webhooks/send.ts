import { checkServerIdentity } from "node:tls";
import { type OutboundPolicy, OutboundRefused, resolveAllowed, type Lookup } from "../lib/address-guard";

/** The most of a response body kept for the delivery log; the rest is not read. */
export const RESPONSE_CAP_BYTES = 4096;

export interface SendResult {
  ok: boolean;
  /** A timeout, a network error, 5xx or 429: worth another attempt later. */
  retryable: boolean;
  status: number | null;
  error: string | null;
  latencyMs: number;
  response: string | null;
}

export interface SendOptions {
  timeoutMs: number;
  policy: OutboundPolicy;
  lookup?: Lookup;
}

/** Reads at most `cap` bytes of a body and drops the rest unread. */
async function capped(res: Response, cap: number): Promise<string> {
  if (!res.body) return "";
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < cap) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.byteLength;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
  return Buffer.concat(chunks).subarray(0, cap).toString("utf8");
}

/**
 * One POST to a webhook URL. The host is resolved once and checked against the outbound
 * policy, and the request goes to that checked address (the Host header and TLS name stay the
 * URL's), so a name that resolves differently a moment later cannot redirect it inside the
 * network. Redirects are answered, never followed.
 */
export async function sendOnce(
  url: string,
  body: string,
  headers: Record<string, string>,
  opts: SendOptions,
): Promise<SendResult> {
  const started = performance.now();
  const done = (r: Omit<SendResult, "latencyMs">): SendResult => ({
    ...r,
    latencyMs: Math.round(performance.now() - started),
  });
  const u = new URL(url);
  let address: string;
  try {
    address = await resolveAllowed(u.hostname, opts.policy, opts.lookup);
  } catch (err) {
    // A refused address is refused next time too; a failed lookup may not be. Neither says
    // what the name resolved to: the team would learn addresses inside the network.
    const refused = err instanceof OutboundRefused && err.kind === "policy";
    return done({
      ok: false,
      retryable: !refused,
      status: null,
      error: refused
        ? `refused by policy: ${u.hostname} may not be reached from this service`
        : `could not resolve ${u.hostname}`,
      response: null,
    });
  }
  const target = new URL(u);
  target.hostname = address.includes(":") ? `[${address}]` : address;
  const signal = AbortSignal.timeout(opts.timeoutMs);
  try {
    const res = await fetch(target, {
      method: "POST",
      body,
      headers: { ...headers, host: u.host, "content-type": "application/json", "user-agent": "mc-platform-webhooks/1" },
      redirect: "manual",
      signal,
      keepalive: true,
      ...(u.protocol === "https:"
        ? {
            tls: {
              serverName: u.hostname,
              checkServerIdentity: (_: string, cert: never) => checkServerIdentity(u.hostname, cert),
            },
          }
        : {}),
    } as RequestInit);
    const text = await capped(res, RESPONSE_CAP_BYTES);
    const ok = res.status >= 200 && res.status < 300;
    return done({
      ok,
      retryable: !ok && (res.status >= 500 || res.status === 429),
      status: res.status,
      error: ok ? null : res.status >= 300 && res.status < 400 ? "redirects are not followed" : `HTTP ${res.status}`,
      response: text,
    });
  } catch (err) {
    const timedOut = signal.aborted;
    return done({
      ok: false,
      retryable: true,
      status: null,
      // Neither the URL (a credential for many receivers, and viewers read delivery errors) nor
      // the address it resolved to is repeated.
      error: timedOut
        ? `timed out after ${opts.timeoutMs} ms`
        : errorText(err).split(target.href).join(u.host).split(url).join(u.host).split(address).join(u.hostname),
      response: null,
    });
  }
}

const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err)).slice(0, 500);
