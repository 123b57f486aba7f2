import { createPrivateKey, generateKeyPairSync, type KeyObject } from "node:crypto";
import { asc, desc, inArray, lte, sql } from "drizzle-orm";
import { calculateJwkThumbprint, type JWK, SignJWT } from "jose";
import type { Db } from "../db/client";
import { assertionKeys } from "../db/schema";
import { BoundedCache } from "../lib/bounded-cache";
import type { Clock } from "../lib/clock";
import { type Keyring, openBytes, sealBytes } from "../lib/keyring";
import type { Bus } from "../realtime/bus";
import type { TextureClaims } from "./textures";

/** How long a fetched JWKS may be reused (its Cache-Control max-age). */
export const JWKS_MAX_AGE_SECONDS = 300;
/** How often an instance rereads the key table (a notice on the bus rereads it at once). */
export const KEY_REFRESH_SECONDS = 60;
/** Verifiers' clock skew allowed for when a retired key stops being published. */
const SKEW_SECONDS = 60;
/**
 * A rotated-in key is published this long before it signs: a verifier holding a JWKS fetched
 * just before the rotation (cached for max-age, possibly from an instance that had not reread
 * the table yet) already has it when the first assertion signed with it arrives.
 */
export const ROTATION_LEAD_SECONDS = JWKS_MAX_AGE_SECONDS + KEY_REFRESH_SECONDS;
const ALG = "EdDSA";
const LOCK_ID = 0x61737274; // "asrt": rotations from several instances queue

export interface AssertedSession {
  id: string;
  clientId: string;
  mcUuid: string;
  mcUsername: string;
  expiresAt: Date;
}

interface KeyEntry {
  kid: string;
  jwk: JWK;
  notBefore: number;
  createdAt: number;
  sealed: string;
  signer?: KeyObject;
  /** Sealed under another keyring: never tried again by this process. */
  unopenable?: boolean;
}

/**
 * Signed session assertions: short-lived EdDSA JWTs a launcher backend verifies offline against
 * /.well-known/jwks.json instead of calling validate. Keys live in `assertion_keys`, shared by
 * every instance on the database, their private halves sealed with a keyring subkey. The newest
 * key whose `not_before` has passed signs; rotation inserts the next key `ROTATION_LEAD_SECONDS`
 * ahead, and a key stays published until the last assertion it can have signed has expired.
 */
export class SessionAssertions {
  private keys: KeyEntry[] = [];
  private loadedAt = Number.NEGATIVE_INFINITY;
  private loading: Promise<void> | undefined;
  private readonly sealKey: Buffer;
  /** Session id -> its assertion, reused while at least half its lifetime is left. */
  private readonly issued: BoundedCache<string, { jwt: string; exp: number }>;

  constructor(
    private readonly db: Db,
    keyring: Keyring,
    private readonly clock: Clock,
    private readonly opts: { issuer: string; ttlSeconds: number; rotationHours: number },
    private readonly bus?: Bus,
  ) {
    this.sealKey = keyring.subkey("assertion-keys v1");
    const reuseMs = Math.max(1, Math.floor((opts.ttlSeconds * 1000) / 2));
    this.issued = new BoundedCache(100_000, reuseMs, () => clock.now());
    bus?.onNotice((n) => {
      if (n.type === "assertion_keys_changed") this.loadedAt = Number.NEGATIVE_INFINITY;
    });
  }

  get ttlSeconds() {
    return this.opts.ttlSeconds;
  }

  /** A revoked session's cached assertion is not handed out again (those already out live to `exp`). */
  forget(sessionId: string) {
    this.issued.delete(sessionId);
    this.issued.delete(`${sessionId} textures`);
  }

  /**
   * The assertion for a live session: `sub` is its mc_uuid, `aud` its client_id; never outlives the
   * session. With `textures`, it also carries the `skin` and `cape` claims (asked for explicitly,
   * so the default assertion's claims stay as they were).
   */
  async sign(session: AssertedSession, textures?: TextureClaims): Promise<string> {
    const now = this.clock.now();
    const cacheKey = textures ? `${session.id} textures` : session.id;
    const cached = this.issued.get(cacheKey);
    if (cached && cached.exp * 1000 - now >= (this.opts.ttlSeconds * 1000) / 2) return cached.jwt;
    const epoch = this.issued.epoch;
    const key = await this.signingKey();
    const iat = Math.floor(now / 1000);
    const exp = Math.min(iat + this.opts.ttlSeconds, Math.floor(session.expiresAt.getTime() / 1000));
    const jwt = await new SignJWT({ name: session.mcUsername, ...textures })
      .setProtectedHeader({ alg: ALG, kid: key.kid, typ: "JWT" })
      .setIssuer(this.opts.issuer)
      .setAudience(session.clientId)
      .setSubject(session.mcUuid)
      .setIssuedAt(iat)
      .setExpirationTime(exp)
      .setJti(crypto.randomUUID())
      .sign(this.signer(key));
    this.issued.set(cacheKey, { jwt, exp }, epoch);
    return jwt;
  }

  /** The public keys a verifier may meet: the signer, the next one (published early), and retired ones still in use. */
  async jwks(): Promise<{ keys: JWK[] }> {
    // Read from the table each time (concurrent requests share one read): verifiers cache the
    // document for max-age, so this is rare, and a key another instance has just made to sign
    // at once (the first one) is then published everywhere before anyone can hold its assertion.
    await this.reload();
    if (this.keys.length === 0) await this.signingKey();
    const now = this.clock.now();
    return { keys: this.keys.filter((_, i) => this.published(i, now)).map((k) => k.jwk) };
  }

  /**
   * Makes a new signing key, published at once and signing after `leadSeconds` (default: long
   * enough that every cached JWKS has it first). Returns its kid.
   */
  async rotate(leadSeconds = ROTATION_LEAD_SECONDS): Promise<string> {
    const kid = await this.insertKey(leadSeconds);
    await this.changed();
    return kid;
  }

  /**
   * The periodic pass (every `KEY_REFRESH_SECONDS`): rereads the table, rotates when the newest
   * key is older than the rotation interval (one instance does it; the others see it next
   * pass), and deletes keys no assertion can still name.
   */
  async maintain(): Promise<void> {
    await this.reload();
    const now = this.clock.now();
    const newest = Math.max(...this.keys.map((k) => k.createdAt));
    let changed = false;
    if (this.keys.length > 0 && newest + this.opts.rotationHours * 3_600_000 <= now) {
      changed = await this.db.transaction(async (tx) => {
        await tx.execute(sql`select pg_advisory_xact_lock(${LOCK_ID})`);
        const [latest] = await tx
          .select({ createdAt: assertionKeys.createdAt })
          .from(assertionKeys)
          .orderBy(desc(assertionKeys.createdAt))
          .limit(1);
        if (latest && latest.createdAt.getTime() + this.opts.rotationHours * 3_600_000 > now) return false;
        await tx.insert(assertionKeys).values(this.newKeyRow(ROTATION_LEAD_SECONDS, await this.generate()));
        return true;
      });
    }
    const gone = this.keys.filter((_, i) => !this.published(i, now)).map((k) => k.kid);
    if (gone.length > 0) {
      await this.db.delete(assertionKeys).where(inArray(assertionKeys.kid, gone));
      changed = true;
    }
    if (changed) await this.changed();
  }

  /**
   * Key i signs until key i+1's `not_before`; what it signed lives at most the TTL more. The
   * refresh interval covers an instance that learned of the successor late.
   */
  private published(i: number, now: number) {
    const next = this.keys[i + 1];
    if (!next) return true;
    return next.notBefore + (this.opts.ttlSeconds + SKEW_SECONDS + KEY_REFRESH_SECONDS) * 1000 > now;
  }

  private async signingKey(): Promise<KeyEntry> {
    await this.ensureFresh();
    let key = this.current();
    if (!key) {
      // The very first key, or none this instance can open may sign yet: a key nothing could
      // have signed with before needs no lead, so it signs at once.
      const now = this.clock.date();
      await this.db.transaction(async (tx) => {
        await tx.execute(sql`select pg_advisory_xact_lock(${LOCK_ID})`);
        const usable = await tx
          .select({ kid: assertionKeys.kid, privateKey: assertionKeys.privateKey })
          .from(assertionKeys)
          .where(lte(assertionKeys.notBefore, now));
        if (!usable.some((k) => this.opens(k.kid, k.privateKey)))
          await tx.insert(assertionKeys).values(this.newKeyRow(0, await this.generate()));
      });
      await this.changed();
      key = this.current();
      if (!key) throw new Error("no assertion signing key could be loaded");
    }
    return key;
  }

  /**
   * The newest key whose time has come and that this instance can open. One sealed under
   * another keyring (JWT_PRIVATE_KEY replaced, or an instance configured with a different one)
   * is passed over rather than replaced, so instances that disagree do not keep outbidding each
   * other with new keys; each signs with the newest it can open, and every key is published.
   */
  private current(): KeyEntry | undefined {
    const now = this.clock.now();
    for (let i = this.keys.length - 1; i >= 0; i--) {
      const k = this.keys[i]!;
      if (k.notBefore > now || k.unopenable) continue;
      try {
        this.signer(k);
        return k;
      } catch {
        k.unopenable = true;
      }
    }
    return undefined;
  }

  private opens(kid: string, sealed: string): boolean {
    try {
      this.unseal(kid, sealed);
      return true;
    } catch {
      return false;
    }
  }

  private async changed() {
    await this.reload();
    await this.bus?.publishNotice({ type: "assertion_keys_changed" }).catch(() => undefined);
  }

  private ensureFresh(): Promise<void> {
    if (this.clock.now() - this.loadedAt < KEY_REFRESH_SECONDS * 1000) return Promise.resolve();
    return this.reload();
  }

  private reload(): Promise<void> {
    this.loading ??= (async () => {
      try {
        const startedAt = this.clock.now();
        const rows = await this.db
          .select()
          .from(assertionKeys)
          .orderBy(asc(assertionKeys.notBefore), asc(assertionKeys.kid));
        const known = new Map(this.keys.map((k) => [k.kid, k]));
        this.keys = rows.map((r) => ({
          kid: r.kid,
          jwk: r.publicJwk as JWK,
          notBefore: r.notBefore.getTime(),
          createdAt: r.createdAt.getTime(),
          sealed: r.privateKey,
          signer: known.get(r.kid)?.signer,
          unopenable: known.get(r.kid)?.unopenable,
        }));
        this.loadedAt = startedAt;
      } finally {
        this.loading = undefined;
      }
    })();
    return this.loading;
  }

  private async insertKey(leadSeconds: number): Promise<string> {
    const row = this.newKeyRow(leadSeconds, await this.generate());
    await this.db.insert(assertionKeys).values(row);
    return row.kid;
  }

  private async generate() {
    const { publicKey, privateKey } = generateKeyPairSync("ed25519");
    const pub = publicKey.export({ format: "jwk" }) as JWK;
    const kid = await calculateJwkThumbprint({ kty: pub.kty!, crv: pub.crv!, x: pub.x! });
    const der = privateKey.export({ format: "der", type: "pkcs8" });
    return { kid, jwk: { kty: pub.kty!, crv: pub.crv!, x: pub.x!, kid, alg: ALG, use: "sig" }, der };
  }

  private newKeyRow(leadSeconds: number, k: { kid: string; jwk: JWK; der: Buffer }) {
    const now = this.clock.now();
    return {
      kid: k.kid,
      publicJwk: k.jwk as Record<string, string>,
      privateKey: this.seal(k.kid, k.der),
      createdAt: new Date(now),
      notBefore: new Date(now + leadSeconds * 1000),
    };
  }

  private signer(key: KeyEntry): KeyObject {
    key.signer ??= createPrivateKey({ key: this.unseal(key.kid, key.sealed), format: "der", type: "pkcs8" });
    return key.signer;
  }

  private seal(kid: string, der: Buffer): string {
    return sealBytes(this.sealKey, der, kid);
  }

  private unseal(kid: string, sealed: string): Buffer {
    return openBytes(this.sealKey, sealed, kid);
  }
}
