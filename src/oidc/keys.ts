import { createPrivateKey, generateKeyPairSync, type KeyObject } from "node:crypto";
import { asc } from "drizzle-orm";
import { calculateJwkThumbprint, type JWK } from "jose";
import type { Db } from "../db/client";
import { oidcKeys } from "../db/schema";
import { type Keyring, openBytes, sealBytes } from "../lib/keyring";

export type IdTokenAlg = "RS256" | "EdDSA";
export const ID_TOKEN_ALGS: readonly IdTokenAlg[] = ["RS256", "EdDSA"];

interface SigningKey {
  kid: string;
  alg: IdTokenAlg;
  jwk: JWK;
  key: KeyObject;
}

/**
 * The ID token signing keys: an RS256 key (which discovery requires every provider to offer) and
 * an EdDSA key, made by the first instance that needs them and shared through `oidc_keys`; two
 * instances racing may each make one, and both are published. Private halves are sealed with a
 * keyring subkey, so the database alone cannot sign. Keys are not rotated yet.
 */
export class OidcKeys {
  private keys: Map<IdTokenAlg, SigningKey> | undefined;
  private published: JWK[] = [];
  private loading: Promise<Map<IdTokenAlg, SigningKey>> | undefined;
  private readonly sealKey: Buffer;

  constructor(
    private readonly db: Db,
    keyring: Keyring,
  ) {
    this.sealKey = keyring.subkey("oidc-keys v1");
  }

  async signingKey(alg: IdTokenAlg): Promise<SigningKey> {
    const keys = this.keys ?? (await this.load());
    return keys.get(alg)!;
  }

  /** Read afresh (verifiers cache it for max-age): a key another instance made since is in it. */
  async jwks(): Promise<{ keys: JWK[] }> {
    await this.load();
    return { keys: this.published };
  }

  private load(): Promise<Map<IdTokenAlg, SigningKey>> {
    this.loading ??= (async () => {
      try {
        let rows = await this.db.select().from(oidcKeys).orderBy(asc(oidcKeys.createdAt));
        let keys = this.open(rows);
        const missing = ID_TOKEN_ALGS.filter((a) => !keys.has(a));
        if (missing.length) {
          for (const alg of missing) await this.db.insert(oidcKeys).values(await this.generate(alg));
          rows = await this.db.select().from(oidcKeys).orderBy(asc(oidcKeys.createdAt));
          keys = this.open(rows);
        }
        this.published = rows.map((r) => r.publicJwk as JWK);
        this.keys = keys;
        return keys;
      } finally {
        this.loading = undefined;
      }
    })();
    return this.loading;
  }

  /**
   * Per algorithm, the newest key this instance can open. One sealed under another keyring (an
   * instance configured with a different JWT_PRIVATE_KEY) is passed over, not replaced, and
   * stays published: instances that disagree each sign with their own and verify alike.
   */
  private open(rows: (typeof oidcKeys.$inferSelect)[]): Map<IdTokenAlg, SigningKey> {
    const keys = new Map<IdTokenAlg, SigningKey>();
    for (const r of rows) {
      try {
        const key = createPrivateKey({ key: this.unseal(r.kid, r.privateKey), format: "der", type: "pkcs8" });
        keys.set(r.alg, { kid: r.kid, alg: r.alg, jwk: r.publicJwk as JWK, key });
      } catch {
        // Sealed under another keyring.
      }
    }
    return keys;
  }

  private async generate(alg: IdTokenAlg) {
    const { publicKey, privateKey } =
      alg === "RS256" ? generateKeyPairSync("rsa", { modulusLength: 2048 }) : generateKeyPairSync("ed25519");
    const pub = publicKey.export({ format: "jwk" }) as JWK;
    const members =
      alg === "RS256" ? { kty: pub.kty!, n: pub.n!, e: pub.e! } : { kty: pub.kty!, crv: pub.crv!, x: pub.x! };
    const kid = await calculateJwkThumbprint(members);
    const der = privateKey.export({ format: "der", type: "pkcs8" });
    return {
      kid,
      alg,
      publicJwk: { ...members, kid, alg, use: "sig" } as unknown as Record<string, string>,
      privateKey: this.seal(kid, der),
    };
  }

  private seal(kid: string, der: Buffer): string {
    return sealBytes(this.sealKey, der, kid);
  }

  private unseal(kid: string, sealed: string): Buffer {
    return openBytes(this.sealKey, sealed, kid);
  }
}
