import { createHash, randomBytes } from "node:crypto";
import type { Keyring } from "../../lib/keyring";
import { isOutcome, type DevOutcome, USERNAME } from "./outcomes";

/**
 * Codes and tokens carry everything the later steps need and are signed (HMAC), so any
 * instance sharing the key can check one without having seen it issued. The little that a
 * signature cannot express (a code is redeemed once; `flaky` answers one 429 per sign-in)
 * goes through a `GrantStore` that every instance shares.
 */

/** One sign-in, shared by every token issued for it. */
export interface Player {
  /** Random per sign-in: what single-use and one-429 marks are keyed by. */
  grant: string;
  username: string;
  outcome: DevOutcome;
}

export interface PendingCode extends Player {
  clientId: string;
  redirectUri: string;
  codeChallenge: string;
}

export type TokenKind = "code" | "ms" | "xbl" | "xsts" | "mc";

/**
 * Microsoft's codes and consumer access tokens are opaque strings; Xbox Live's tokens (user,
 * device, XSTS) and the Minecraft access token are JWTs (Xbox's encrypted, Minecraft's signed),
 * and clients split and decode them (the Minecraft token's `exp`, for one). So the first two
 * keep a type prefix, the others are compact JWS: a header naming the kind, the claims, and
 * the HMAC as the signature.
 */
const PREFIX: Partial<Record<TokenKind, string>> = {
  code: "dev_code_",
  ms: "dev_ms_",
};

const b64json = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64url");
const jwtHeader = (kind: string) => b64json({ alg: "HS256", typ: "JWT", kid: `dev-idp-${kind}` });

interface Claims {
  g: string;
  u: string;
  o: string;
  /** Expiry, epoch milliseconds. */
  e: number;
  c?: string;
  r?: string;
  ch?: string;
}

export const newGrantId = () => randomBytes(16).toString("base64url");

/** The Xbox user hash of a player; stable, so the XSTS token and identityToken can be matched. */
export const userHash = (username: string) => createHash("sha256").update(`uhs:${username}`).digest("hex").slice(0, 19);

export class GrantTokens {
  constructor(
    private readonly keyring: Keyring,
    private readonly now: () => number = Date.now,
  ) {}

  issueCode(code: PendingCode, ttlMs: number): string {
    return this.sign("code", {
      g: code.grant,
      u: code.username,
      o: code.outcome,
      e: this.now() + ttlMs,
      c: code.clientId,
      r: code.redirectUri,
      ch: code.codeChallenge,
    });
  }

  issue(kind: Exclude<TokenKind, "code">, player: Player, ttlMs: number): string {
    return this.sign(kind, { g: player.grant, u: player.username, o: player.outcome, e: this.now() + ttlMs });
  }

  /** The code's contents and expiry, or undefined when forged, altered or expired. */
  readCode(token: string): (PendingCode & { expires: number }) | undefined {
    const c = this.verify("code", token);
    if (!c || typeof c.c !== "string" || typeof c.r !== "string" || typeof c.ch !== "string") return undefined;
    return { ...c.player, expires: c.e, clientId: c.c, redirectUri: c.r, codeChallenge: c.ch };
  }

  read(kind: Exclude<TokenKind, "code">, token: string): (Player & { expires: number }) | undefined {
    const c = this.verify(kind, token);
    return c && { ...c.player, expires: c.e };
  }

  /** A device token: JWT-shaped like the others, naming the device, not a player. */
  issueDevice(deviceId: string, ttlMs: number): string {
    const header = jwtHeader("device");
    const now = this.now();
    const body = b64json({ did: deviceId, iat: Math.floor(now / 1000), exp: Math.floor((now + ttlMs) / 1000) });
    return `${header}.${body}.${this.keyring.mac("dev-idp device", `${header}.${body}`)}`;
  }

  /** Whether `token` is a live device token this provider (or one sharing its key) issued. */
  readDevice(token: string): boolean {
    const parts = token.length <= 8192 ? token.split(".") : [];
    if (parts.length !== 3 || parts[0] !== jwtHeader("device")) return false;
    if (!this.keyring.verify(parts[2]!, "dev-idp device", `${parts[0]}.${parts[1]}`)) return false;
    try {
      const exp = (JSON.parse(Buffer.from(parts[1]!, "base64url").toString("utf8")) as { exp?: unknown }).exp;
      return typeof exp === "number" && exp * 1000 > this.now();
    } catch {
      return false;
    }
  }

  private sign(kind: TokenKind, claims: Claims): string {
    const prefix = PREFIX[kind];
    if (prefix) {
      const body = Buffer.from(JSON.stringify(claims)).toString("base64url");
      return `${prefix}${body}.${this.keyring.mac(`dev-idp ${kind}`, body)}`;
    }
    const header = jwtHeader(kind);
    const iat = Math.floor(this.now() / 1000);
    // The registered claims a JWT reader looks for, beside the provider's own.
    const body = b64json({ ...claims, iss: "dev-idp", sub: claims.g, iat, nbf: iat, exp: Math.floor(claims.e / 1000) });
    return `${header}.${body}.${this.keyring.mac(`dev-idp ${kind}`, `${header}.${body}`)}`;
  }

  private verify(kind: TokenKind, token: string): (Claims & { player: Player }) | undefined {
    if (token.length > 8192) return undefined;
    const prefix = PREFIX[kind];
    let body: string | undefined;
    if (prefix) {
      if (!token.startsWith(prefix)) return undefined;
      const [b, mac, extra] = token.slice(prefix.length).split(".");
      if (!b || !mac || extra !== undefined) return undefined;
      // The purpose label binds the kind, so an Xbox token cannot be replayed as a Minecraft one.
      if (!this.keyring.verify(mac, `dev-idp ${kind}`, b)) return undefined;
      body = b;
    } else {
      const [header, b, mac, extra] = token.split(".");
      if (header !== jwtHeader(kind) || !b || !mac || extra !== undefined) return undefined;
      if (!this.keyring.verify(mac, `dev-idp ${kind}`, `${header}.${b}`)) return undefined;
      body = b;
    }
    let claims: Claims;
    try {
      claims = JSON.parse(Buffer.from(body, "base64url").toString("utf8")) as Claims;
    } catch {
      return undefined;
    }
    if (typeof claims.e !== "number" || claims.e <= this.now()) return undefined;
    if (typeof claims.g !== "string" || typeof claims.u !== "string" || !USERNAME.test(claims.u)) return undefined;
    if (typeof claims.o !== "string" || !isOutcome(claims.o)) return undefined;
    return { ...claims, player: { grant: claims.g, username: claims.u, outcome: claims.o } };
  }
}

/** What instances must agree on beyond a signature. */
export interface GrantStore {
  /**
   * Marks `key` as used until `expiresAt` (epoch ms). True only for the first claim while the
   * mark lives, whichever instance made it.
   */
  claim(key: string, expiresAt: number): Promise<boolean>;
}

/**
 * One process: the standalone server, and the service on its embedded database (which one process
 * owns). Marks are kept in the order made; the expired ones at the front are dropped as claims
 * come, so memory follows the sign-ins of the last few minutes, up to `maxEntries`.
 */
export class MemoryGrantStore implements GrantStore {
  private readonly marks = new Map<string, number>();

  constructor(
    /** A flood cannot grow memory past it: at the cap, claims fail (closed) until marks expire. */
    private readonly maxEntries = 10_000,
    private readonly now: () => number = Date.now,
  ) {}

  get size() {
    return this.marks.size;
  }

  async claim(key: string, expiresAt: number): Promise<boolean> {
    const now = this.now();
    for (const [k, exp] of this.marks) {
      if (exp > now) break;
      this.marks.delete(k);
    }
    const existing = this.marks.get(key);
    if (existing !== undefined && existing > now) return false;
    if (this.marks.size >= this.maxEntries) {
      for (const [k, exp] of this.marks) if (exp <= now) this.marks.delete(k);
      // Dropping a live mark would make its code redeemable again; refusing fails closed.
      if (this.marks.size >= this.maxEntries) return false;
    }
    this.marks.set(key, expiresAt);
    return true;
  }
}
