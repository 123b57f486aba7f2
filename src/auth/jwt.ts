import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { exportPKCS8, generateKeyPair, importPKCS8, jwtVerify, SignJWT, type CryptoKey } from "jose";
import { createPublicKey, createPrivateKey } from "node:crypto";

const ALG = "EdDSA";
const ISSUER = "mc-platform";
const AUDIENCE = "mc-platform:dashboard";

export interface AccessClaims {
  sub: string;
  /** The login session (refresh-token family) the token was issued under: revoking it ends the token. */
  sid: string;
  exp: number;
}

/**
 * Signs and verifies dashboard access tokens (Ed25519). Verified tokens are cached by their
 * exact text until they expire: a signature check per request is the dominant cost of an
 * authenticated read, and a valid signature stays valid.
 */
export class AccessTokens {
  /** By token text: the claims, and the text itself (`shared`). */
  private cache = new Map<string, { claims: AccessClaims; token: string }>();

  private constructor(
    private readonly privateKey: CryptoKey,
    private readonly publicKey: CryptoKey,
    readonly ttlSeconds: number,
  ) {}

  static async fromPem(pem: string, ttlSeconds: number): Promise<AccessTokens> {
    const privateKey = await importPKCS8(pem, ALG, { extractable: true });
    const spki = createPublicKey(createPrivateKey(pem)).export({ type: "spki", format: "pem" }).toString();
    const { importSPKI } = await import("jose");
    const publicKey = await importSPKI(spki, ALG);
    return new AccessTokens(privateKey, publicKey, ttlSeconds);
  }

  async sign(
    userId: string,
    sessionId: string,
    now = Math.floor(Date.now() / 1000),
    ttl = this.ttlSeconds,
  ): Promise<string> {
    return new SignJWT({ sid: sessionId })
      .setProtectedHeader({ alg: ALG, typ: "JWT" })
      .setSubject(userId)
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setIssuedAt(now)
      .setExpirationTime(now + ttl)
      .sign(this.privateKey);
  }

  /** The claims of a valid, unexpired token, or null. */
  async verify(token: string): Promise<AccessClaims | null> {
    const now = Math.floor(Date.now() / 1000);
    const hit = this.cache.get(token);
    if (hit) {
      if (hit.claims.exp > now) return hit.claims;
      this.cache.delete(token);
      return null;
    }
    try {
      const { payload } = await jwtVerify(token, this.publicKey, {
        issuer: ISSUER,
        audience: AUDIENCE,
        algorithms: [ALG],
      });
      if (typeof payload.sub !== "string" || typeof payload.sid !== "string" || typeof payload.exp !== "number")
        return null;
      const claims = { sub: payload.sub, sid: payload.sid, exp: payload.exp };
      if (this.cache.size >= 10_000) this.cache.clear();
      this.cache.set(token, { claims, token });
      return claims;
    } catch {
      return null;
    }
  }

  /**
   * The cache's own copy of a verified token's text, else the token given. Whoever keeps a token
   * for long (an analytics socket, to check it again) keeps this one: the same text in a second
   * string of its own would cost its size again, for every socket.
   */
  shared(token: string): string {
    return this.cache.get(token)?.token ?? token;
  }
}

/** The configured signing key, or the one kept in DATA_DIR (generated on first start). */
export async function loadSigningPem(opts: { pem?: string; dataDir: string }): Promise<string> {
  return opts.pem ?? loadOrCreatePem(opts.dataDir);
}

async function loadOrCreatePem(dataDir: string): Promise<string> {
  const dir = resolve(dataDir);
  const file = join(dir, "jwt-ed25519.pem");
  if (existsSync(file)) return readFileSync(file, "utf8");
  mkdirSync(dir, { recursive: true });
  const { privateKey } = await generateKeyPair(ALG, { crv: "Ed25519", extractable: true });
  const pem = await exportPKCS8(privateKey);
  try {
    writeFileSync(file, pem, { mode: 0o600, flag: "wx" });
  } catch {
    // Another instance sharing DATA_DIR wrote it first: use theirs so tokens verify everywhere.
    return readFileSync(file, "utf8");
  }
  return pem;
}
