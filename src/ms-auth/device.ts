import { eq, lte, sql } from "drizzle-orm";
import { LoginThrottle } from "../auth/throttle";
import type { Db } from "../db/client";
import { deviceCodes } from "../db/schema";
import type { Clock } from "../lib/clock";
import { AppError } from "../lib/errors";
import type { RateLimiter, RateLimitPolicy } from "../lib/rate-limit";
import { sha256 } from "../lib/secrets";
import { DeviceQrCodes } from "./device-qr";
import type { Bus } from "../realtime/bus";

/**
 * RFC 8628 section 6.1's example alphabet: 20 consonants, no digits and no vowels, so a code
 * has no 0/O or 1/I to confuse and cannot spell a word. 20^8 = 25.6e9 codes (34.5 bits).
 */
export const USER_CODE_ALPHABET = "BCDFGHJKLMNPQRSTVWXZ";
export const USER_CODE_LENGTH = 8;
/** Where the player types the code: short, on this service. */
export const DEVICE_PATH = "/device";
/** The one key the all-addresses failure counter is kept under. */
const GLOBAL_KEY = "device-code:any";
const MAX_ISSUE_ATTEMPTS = 5;

/** 8 characters of the alphabet, uniform: bytes of 240 and more are drawn again (240 = 12 * 20). */
export function newUserCode(): string {
  let out = "";
  while (out.length < USER_CODE_LENGTH) {
    for (const b of crypto.getRandomValues(new Uint8Array(16))) {
      if (b >= 240) continue;
      out += USER_CODE_ALPHABET[b % 20];
      if (out.length === USER_CODE_LENGTH) break;
    }
  }
  return out;
}

/** `BCDFGHJK` -> `BCDF-GHJK`, as shown to the player. */
export function formatUserCode(code: string): string {
  return `${code.slice(0, 4)}-${code.slice(4)}`;
}

/**
 * What a person typed, as the stored form: case, spaces and dashes do not matter (RFC 8628
 * section 6.1). Null when it cannot be a code (wrong length or a character outside the alphabet).
 */
export function normalizeUserCode(input: string): string | null {
  if (input.length > 32) return null;
  const code = input.toUpperCase().replace(/[\s-]/g, "");
  if (code.length !== USER_CODE_LENGTH) return null;
  for (const ch of code) if (!USER_CODE_ALPHABET.includes(ch)) return null;
  return code;
}

/** `claimed` with the request's status as stored (a request past its deadline may still read `pending`). */
export type ClaimResult =
  | { kind: "claimed"; requestId: string; status: string }
  | { kind: "expired" }
  | { kind: "unknown" };

export interface DeviceCodePolicies {
  /** Wrong codes per client address. */
  perAddress: RateLimitPolicy;
  /** Wrong codes from every address together. */
  global: RateLimitPolicy;
}

/**
 * The device flow's user codes: issued with a login request, typed by the player at
 * `/device`, claimed once. Only SHA-256 of a code is stored; claiming deletes its row in the
 * same statement that finds it, so two browsers racing with one code cannot both have it.
 * Wrong codes are limited per address and for everyone together (docs/device-flow.md works
 * out the bound this puts on guessing).
 */
export class DeviceCodes {
  private readonly claimQuery;
  private readonly throttle: LoginThrottle;
  private qr?: Promise<DeviceQrCodes>;

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly publicUrl: string,
    limiter: RateLimiter,
    bus: Bus,
    policies: DeviceCodePolicies,
  ) {
    // The code and its request in one statement: the claim answers where the browser goes next.
    this.claimQuery = db
      .delete(deviceCodes)
      .where(eq(deviceCodes.codeHash, sql.placeholder("hash")))
      .returning({
        requestId: deviceCodes.loginRequestId,
        expiresAt: deviceCodes.expiresAt,
        status: sql<string>`(select status from login_requests r where r.id = ${deviceCodes.loginRequestId})`,
      })
      .prepare("device_code_claim");
    // Only failures count, and a key over its limit is refused, right code or wrong, until its
    // window ends: the sign-in throttle's rule, with the global counter as its "account".
    this.throttle = new LoginThrottle(limiter, bus, { account: policies.global, address: policies.perAddress });
  }

  get verificationUri() {
    return this.publicUrl + DEVICE_PATH;
  }

  private get completePrefix() {
    return `${this.verificationUri}?code=`;
  }

  verificationUriComplete(code: string) {
    return this.completePrefix + formatUserCode(code);
  }

  /**
   * A fresh code for a request (any code it had before stops working), valid until the
   * request's deadline. A code still held by a live request is never reused: the insert
   * takes over a stored one only when it has expired, and otherwise draws again.
   */
  async issue(requestId: string, expiresAt: Date, opts: { replace?: boolean } = {}): Promise<string> {
    if (opts.replace) await this.db.delete(deviceCodes).where(eq(deviceCodes.loginRequestId, requestId));
    for (let i = 0; i < MAX_ISSUE_ATTEMPTS; i++) {
      const code = newUserCode();
      const taken = await this.db
        .insert(deviceCodes)
        .values({ codeHash: sha256(code), loginRequestId: requestId, expiresAt })
        .onConflictDoUpdate({
          target: deviceCodes.codeHash,
          set: { loginRequestId: requestId, expiresAt },
          where: lte(deviceCodes.expiresAt, this.clock.date()),
        })
        .returning({ id: deviceCodes.loginRequestId });
      if (taken.length === 1) return code;
    }
    throw new AppError("conflict", "Could not issue a device code; try again.");
  }

  /**
   * The QR code of the code's `verification_uri_complete` as an SVG document. The library is
   * loaded, and the differences each code character makes taken from it, on first use only.
   */
  async qrSvg(code: string): Promise<string> {
    this.qr ??= import("qrcode").then((qr) =>
      DeviceQrCodes.build(qr, this.completePrefix, "XXXX-XXXX", USER_CODE_ALPHABET),
    );
    return (await this.qr).svg(formatUserCode(code));
  }

  /** 429 (AppError `rate_limited`) while this address, or everyone, has had too many wrong codes. */
  checkAllowed(address: string) {
    this.throttle.check(GLOBAL_KEY, address);
  }

  /**
   * Takes the code: the request it belongs to, once. A code not found counts as a wrong one
   * (and may answer 429); an expired one does not (it was real, and is gone now).
   */
  async claim(code: string, address: string): Promise<ClaimResult> {
    const [row] = await this.claimQuery.execute({ hash: sha256(code) });
    if (row && row.expiresAt.getTime() > this.clock.now())
      return { kind: "claimed", requestId: row.requestId, status: row.status };
    if (row) return { kind: "expired" };
    await this.throttle.failed(GLOBAL_KEY, address);
    return { kind: "unknown" };
  }

  /** Codes past their deadline, never claimed: their requests have expired. */
  async sweep() {
    await this.db.delete(deviceCodes).where(lte(deviceCodes.expiresAt, this.clock.date()));
  }
}
