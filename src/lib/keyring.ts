import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes, timingSafeEqual } from "node:crypto";

/**
 * Keyed MACs for values we must be able to recompute but never store: the OAuth `state`,
 * the PKCE verifier, CSRF tokens, and launcher session tokens. The key is derived (HKDF)
 * from the service's signing key, so every instance sharing that key agrees, and a copy of
 * the database alone reveals none of these values.
 */
export class Keyring {
  private constructor(
    private readonly key: Buffer,
    private readonly sealKey: Buffer,
  ) {}

  static fromSecret(secret: string): Keyring {
    return new Keyring(
      Buffer.from(hkdfSync("sha256", secret, "mc-platform", "keyring v1", 32)),
      Buffer.from(hkdfSync("sha256", secret, "mc-platform", "sealed secrets v1", 32)),
    );
  }

  /**
   * AES-256-GCM encryption for secrets the service must use again in full (webhook signing
   * secrets), where a hash would not do. `context` (the owning row's id) is authenticated with
   * it, so a sealed value copied onto another row does not open. Format: `v1.<iv>.<ciphertext+tag>`.
   */
  seal(plaintext: string, context: string): string {
    return sealBytes(this.sealKey, Buffer.from(plaintext, "utf8"), context);
  }

  /** The plaintext of `seal(plaintext, context)`; throws when the value, key or context differ. */
  open(sealed: string, context: string): string {
    return openBytes(this.sealKey, sealed, context).toString("utf8");
  }

  /**
   * base64url HMAC-SHA256 over a purpose label and parts; 256 bits. Bun's native HMAC: the
   * same digest as node:crypto's createHmac, without its key object made for every call (a
   * login flow computes about seventeen of these).
   */
  mac(purpose: string, ...parts: string[]): string {
    const h = new Bun.CryptoHasher("sha256", this.key).update(purpose);
    for (const p of parts) h.update("\0").update(p);
    return h.digest("base64url");
  }

  /** A 256-bit key for one purpose (e.g. encrypting stored private keys), derived like the MACs. */
  subkey(purpose: string): Buffer {
    return createHmac("sha256", this.key).update("subkey\0").update(purpose).digest();
  }

  verify(expected: string, purpose: string, ...parts: string[]): boolean {
    const a = Buffer.from(this.mac(purpose, ...parts));
    const b = Buffer.from(expected);
    return a.length === b.length && timingSafeEqual(a, b);
  }
}

/**
 * AES-256-GCM under `key` with `context` authenticated beside it: `v1.<iv>.<ciphertext+tag>`.
 * The one sealing format of the service (sealed secrets, stored private signing keys).
 */
export function sealBytes(key: Buffer, plaintext: Buffer, context: string): string {
  const iv = randomBytes(12);
  const c = createCipheriv("aes-256-gcm", key, iv).setAAD(Buffer.from(context));
  const body = Buffer.concat([c.update(plaintext), c.final(), c.getAuthTag()]);
  return `v1.${iv.toString("base64url")}.${body.toString("base64url")}`;
}

/** The bytes `sealBytes(key, bytes, context)` sealed; throws when the value, key or context differ. */
export function openBytes(key: Buffer, sealed: string, context: string): Buffer {
  const [v, ivText, bodyText] = sealed.split(".");
  if (v !== "v1" || !ivText || !bodyText) throw new Error("not a sealed value");
  const body = Buffer.from(bodyText, "base64url");
  const d = createDecipheriv("aes-256-gcm", key, Buffer.from(ivText, "base64url"))
    .setAAD(Buffer.from(context))
    .setAuthTag(body.subarray(body.length - 16));
  return Buffer.concat([d.update(body.subarray(0, body.length - 16)), d.final()]);
}
