/**
 * The ID token signer's thread (src/oidc/signer.ts): holds the private keys it was sent and
 * signs the claims it is given with jose, as the service's own thread would. A 2048-bit RSA
 * signature is about a millisecond of CPU, a third of a whole OpenID Connect flow's on the
 * service's thread; here it runs beside it.
 */
import { createPrivateKey, type KeyObject } from "node:crypto";
import { type JWTPayload, SignJWT } from "jose";

declare const self: Worker;

export type SignerMessage =
  | { kind: "key"; kid: string; der: Uint8Array }
  | { kind: "sign"; id: number; kid: string; alg: string; claims: JWTPayload };
export type SignerReply = { id: number; jwt: string } | { id: number; error: string };

const keys = new Map<string, KeyObject>();

self.onmessage = async (event: MessageEvent<SignerMessage>) => {
  const m = event.data;
  if (m.kind === "key") {
    keys.set(m.kid, createPrivateKey({ key: Buffer.from(m.der), format: "der", type: "pkcs8" }));
    return;
  }
  try {
    const key = keys.get(m.kid);
    if (!key) throw new Error(`no key ${m.kid}`);
    const jwt = await new SignJWT(m.claims).setProtectedHeader({ alg: m.alg, kid: m.kid, typ: "JWT" }).sign(key);
    self.postMessage({ id: m.id, jwt } satisfies SignerReply);
  } catch (err) {
    self.postMessage({ id: m.id, error: err instanceof Error ? err.message : String(err) } satisfies SignerReply);
  }
};
