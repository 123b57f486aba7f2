import type { KeyObject } from "node:crypto";
import { type JWTPayload, SignJWT } from "jose";
import type { Logger } from "../lib/log";
import type { SignerMessage, SignerReply } from "./sign-worker";

export interface SignerKey {
  kid: string;
  alg: string;
  key: KeyObject;
}

/**
 * Signs ID tokens on a thread of their own (./sign-worker.ts), started on the first token, so
 * an idle service pays nothing for it: on the embedded default the database runs on the
 * service's thread too, and an RS256 signature there (about 1 ms of CPU) was what an OpenID
 * Connect flow cost beyond a launcher's browser flow. The JWT is the same jose makes in place,
 * which it does when the thread cannot be had (or `inline` is set).
 */
export class IdTokenSigner {
  private worker: Worker | undefined;
  private broken = false;
  private next = 1;
  private readonly pending = new Map<
    number,
    { key: SignerKey; claims: JWTPayload; resolve(jwt: string): void; reject(err: Error): void }
  >();
  private readonly sent = new Set<string>();

  constructor(
    private readonly log: Logger,
    private readonly inline = false,
  ) {}

  sign(key: SignerKey, claims: JWTPayload): Promise<string> {
    const worker = this.thread();
    if (!worker) return signHere(key, claims);
    if (!this.sent.has(key.kid)) {
      const der = key.key.export({ format: "der", type: "pkcs8" });
      worker.postMessage({ kind: "key", kid: key.kid, der: new Uint8Array(der) } satisfies SignerMessage);
      this.sent.add(key.kid);
    }
    const id = this.next++;
    return new Promise<string>((resolve, reject) => {
      this.pending.set(id, { key, claims, resolve, reject });
      worker.postMessage({ kind: "sign", id, kid: key.kid, alg: key.alg, claims } satisfies SignerMessage);
    });
  }

  /** Ends the thread; tokens being signed fail. */
  close() {
    this.worker?.terminate();
    this.worker = undefined;
    this.sent.clear();
    for (const p of this.pending.values()) p.reject(new Error("the ID token signer stopped"));
    this.pending.clear();
  }

  private thread(): Worker | undefined {
    if (this.inline || this.broken) return undefined;
    if (this.worker) return this.worker;
    try {
      const worker = new Worker(new URL("./sign-worker.ts", import.meta.url).href);
      // Bun: the thread does not keep the process alive on its own.
      (worker as Worker & { unref?(): void }).unref?.();
      worker.onmessage = (event: MessageEvent<SignerReply>) => {
        const r = event.data;
        const p = this.pending.get(r.id);
        if (!p) return;
        this.pending.delete(r.id);
        if ("jwt" in r) p.resolve(r.jwt);
        else p.reject(new Error(`signing an ID token failed: ${r.error}`));
      };
      worker.onerror = (event) => {
        this.log.error("the ID token signer's thread failed; signing in place from now on", {
          error: event.message,
        });
        this.broken = true;
        // What it held is signed here instead: no token request fails for it.
        const held = [...this.pending.values()];
        this.pending.clear();
        this.close();
        for (const p of held) signHere(p.key, p.claims).then(p.resolve, p.reject);
      };
      this.worker = worker;
      return worker;
    } catch (err) {
      this.log.warn("no thread for the ID token signer; signing in place", { error: (err as Error).message });
      this.broken = true;
      return undefined;
    }
  }
}

function signHere(key: SignerKey, claims: JWTPayload): Promise<string> {
  return new SignJWT(claims).setProtectedHeader({ alg: key.alg, kid: key.kid, typ: "JWT" }).sign(key.key);
}
