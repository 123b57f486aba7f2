import { createRemoteJWKSet, errors, type JWTVerifyGetKey, jwtVerify } from "jose";

export interface AssertionOptions {
  /** The service's public base URL: the assertion's `iss`, and where `/.well-known/jwks.json` is. */
  baseUrl: string;
  /** Your client_id: the assertion's `aud`. */
  clientId: string;
  /** Seconds of clock difference tolerated on `exp`/`iat` (default 30). */
  clockTolerance?: number;
}

export interface VerifiedSession {
  mcUuid: string;
  mcUsername: string;
  expiresAt: Date;
}

export type AssertionErrorCode =
  /** Past its `exp`. */
  | "expired"
  /** A claim does not match: wrong `iss`, `aud`, `typ`, or a missing `sub`/`name`/`iat`/`jti`. */
  | "claim_mismatch"
  /** Signed by a key the service's key set does not hold (or no longer holds). */
  | "unknown_key"
  /** Not a compact JWS, a bad signature, or an algorithm other than EdDSA. */
  | "invalid"
  /** The key set could not be fetched. */
  | "jwks_unavailable";

export class AssertionError extends Error {
  override readonly name = "AssertionError";
  constructor(
    readonly code: AssertionErrorCode,
    message: string,
    override readonly cause?: unknown,
  ) {
    super(message);
  }
}

/** One remote key set per service: jose caches its keys and refetches on an unknown `kid`. */
const keySets = new Map<string, JWTVerifyGetKey>();

function keySet(issuer: string): JWTVerifyGetKey {
  let set = keySets.get(issuer);
  if (!set) {
    set = createRemoteJWKSet(new URL(`${issuer}/.well-known/jwks.json`));
    keySets.set(issuer, set);
  }
  return set;
}

/**
 * Verifies a session assertion (from poll or validate with `assertion: true`) offline, against
 * the service's published keys: EdDSA only, `iss` = the base URL, `aud` = the client id, `typ`
 * JWT, not expired. Throws `AssertionError` with a code otherwise.
 */
export async function verifySessionAssertion(token: string, options: AssertionOptions): Promise<VerifiedSession> {
  const issuer = options.baseUrl.replace(/\/+$/, "");
  try {
    const { payload } = await jwtVerify(token, keySet(issuer), {
      issuer,
      audience: options.clientId,
      algorithms: ["EdDSA"],
      typ: "JWT",
      requiredClaims: ["sub", "name", "iat", "exp", "jti"],
      clockTolerance: options.clockTolerance ?? 30,
    });
    if (typeof payload.name !== "string" || typeof payload.sub !== "string")
      throw new AssertionError("claim_mismatch", "sub and name must be strings");
    return { mcUuid: payload.sub, mcUsername: payload.name, expiresAt: new Date(payload.exp! * 1000) };
  } catch (err) {
    if (err instanceof AssertionError) throw err;
    if (err instanceof errors.JWTExpired) throw new AssertionError("expired", "The assertion has expired", err);
    if (err instanceof errors.JWTClaimValidationFailed)
      throw new AssertionError("claim_mismatch", `Claim "${err.claim}" check failed: ${err.reason}`, err);
    if (err instanceof errors.JWKSNoMatchingKey)
      throw new AssertionError("unknown_key", "No key of the service's key set matches the assertion", err);
    if (err instanceof errors.JWKSTimeout || err instanceof errors.JWKSInvalid || isFetchFailure(err))
      throw new AssertionError("jwks_unavailable", "The service's key set could not be fetched", err);
    throw new AssertionError("invalid", err instanceof Error ? err.message : "Invalid assertion", err);
  }
}

function isFetchFailure(err: unknown): boolean {
  // jose raises a plain JOSEError for a non-200 key set answer, and the fetch's own error when unreachable.
  return (
    (err instanceof errors.JOSEError && err.code === "ERR_JOSE_GENERIC" && /response|fetch/i.test(err.message)) ||
    err instanceof TypeError
  );
}
