import { createHmac, hkdfSync, timingSafeEqual } from "node:crypto";

/**
 * Keyed MACs for values we must be able to recompute but never store: the OAuth `state`,
 * the PKCE verifier, CSRF tokens, and launcher session tokens. The key is derived (HKDF)
 * from the service's signing key, so every instance sharing that key agrees, and a copy of
 * the database alone reveals none of these values.
 */
export class Keyring {
  private constructor(private readonly key: Buffer) {}

  static fromSecret(secret: string): Keyring {
    return new Keyring(Buffer.from(hkdfSync("sha256", secret, "mc-platform", "keyring v1", 32)));
  }

  /** base64url HMAC-SHA256 over a purpose label and parts; 256 bits. */
  mac(purpose: string, ...parts: string[]): string {
    const h = createHmac("sha256", this.key).update(purpose);
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
