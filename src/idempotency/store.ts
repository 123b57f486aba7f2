import { and, eq, inArray, isNotNull, lt, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { idempotencyKeys } from "../db/schema";
import type { Clock } from "../lib/clock";
import { AppError } from "../lib/errors";
import type { Keyring } from "../lib/keyring";
import { sha256 } from "../lib/secrets";

/** How long a key's answer is replayed; after that the key is free again. */
export const IDEMPOTENCY_TTL_MS = 24 * 3600_000;
/**
 * A key whose first request has run this long without finishing is taken to be abandoned (its
 * instance stopped mid-request) and may run again; until then a repeat is `409`. Longer than any
 * request runs: the slowest wait on an outbound call (webhook test, identity chain) is 60 s at most.
 */
export const IDEMPOTENCY_STALE_MS = 5 * 60_000;

/** 1 to 255 printable ASCII characters (a UUID is what clients usually send). */
const KEY = /^[\x20-\x7e]{1,255}$/;

export function isValidIdempotencyKey(key: string): boolean {
  return KEY.test(key);
}

/** JSON with object keys sorted at every level, so the same body hashes the same in any key order. */
function canonical(value: unknown): string {
  if (value === undefined) return "null";
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`;
}

/** The request a key was first sent with, reduced to its SHA-256. */
export function requestFingerprint(request: unknown): string {
  return sha256(canonical(request));
}

/** A key this request holds: it runs the operation, then `complete`s or `release`s the claim. */
export interface IdempotencyClaim {
  scope: string;
  operation: string;
  keyHash: string;
  createdAt: Date;
}

export type IdempotencyBegin = { claim: IdempotencyClaim } | { replay: unknown };

type Row = typeof idempotencyKeys.$inferSelect;

/**
 * `Idempotency-Key` records in the database, shared by every instance. A request claims its key
 * by inserting the row first: the primary key (credential, operation, key hash) lets one insert
 * win, on PostgreSQL across instances too, so a duplicate sent while the first runs is refused
 * rather than run twice. Only successful answers are kept (sealed: they can hold secrets shown
 * once, such as a new API key); a failure frees the key, so a corrected retry can run.
 */
export class IdempotencyStore {
  constructor(
    private readonly db: Db,
    private readonly keyring: Keyring,
    private readonly clock: Clock,
  ) {}

  /**
   * Claims `key` for `scope` and `operation`, or answers what its first request answered.
   * Throws `idempotency_key_reused` (422) when the key came with another request, and
   * `idempotency_key_in_progress` (409) while its first request is still running.
   */
  async begin(scope: string, operation: string, key: string, request: unknown): Promise<IdempotencyBegin> {
    const keyHash = sha256(key);
    const requestHash = requestFingerprint(request);
    const where = and(
      eq(idempotencyKeys.scope, scope),
      eq(idempotencyKeys.operation, operation),
      eq(idempotencyKeys.keyHash, keyHash),
    );
    // Each pass either claims, answers, or sees a row that another request just changed; the
    // third pass cannot meet a row both expired and freed again in between.
    for (let attempt = 0; attempt < 3; attempt++) {
      const now = this.clock.date();
      const inserted = await this.db
        .insert(idempotencyKeys)
        .values({ scope, operation, keyHash, requestHash, status: "running", createdAt: now })
        .onConflictDoNothing()
        .returning({ createdAt: idempotencyKeys.createdAt });
      if (inserted.length) return { claim: { scope, operation, keyHash, createdAt: now } };

      const [row] = await this.db.select().from(idempotencyKeys).where(where);
      if (!row) continue;
      const age = now.getTime() - row.createdAt.getTime();
      if (age >= IDEMPOTENCY_TTL_MS) {
        await this.db.delete(idempotencyKeys).where(and(where, eq(idempotencyKeys.createdAt, row.createdAt)));
        continue;
      }
      if (row.requestHash !== requestHash)
        throw new AppError(
          "idempotency_key_reused",
          "This Idempotency-Key was already used with a different request; send a new key for a new request.",
        );
      if (row.status === "completed") return { replay: this.answer(row) };
      if (age < IDEMPOTENCY_STALE_MS)
        throw new AppError(
          "idempotency_key_in_progress",
          "A request with this Idempotency-Key is still being processed; retry once it has finished.",
        );
      // Abandoned mid-request: whoever moves its time forward first runs it again.
      const taken = await this.db
        .update(idempotencyKeys)
        .set({ createdAt: now })
        .where(and(where, eq(idempotencyKeys.status, "running"), eq(idempotencyKeys.createdAt, row.createdAt)))
        .returning({ createdAt: idempotencyKeys.createdAt });
      if (taken.length) return { claim: { scope, operation, keyHash, createdAt: now } };
    }
    throw new AppError(
      "idempotency_key_in_progress",
      "A request with this Idempotency-Key is being processed; retry once it has finished.",
    );
  }

  /** Keeps the answer of a claimed key for replay. */
  async complete(claim: IdempotencyClaim, output: unknown): Promise<void> {
    const response = this.keyring.seal(JSON.stringify({ data: output ?? null }), context(claim));
    await this.db.update(idempotencyKeys).set({ status: "completed", response }).where(this.held(claim));
  }

  /** Frees a claimed key whose request failed, so it can be sent again. */
  async release(claim: IdempotencyClaim): Promise<void> {
    await this.db.delete(idempotencyKeys).where(this.held(claim));
  }

  /** Deletes records past their 24 hours. */
  async sweep(now: Date = this.clock.date()): Promise<number> {
    const gone = await this.db
      .delete(idempotencyKeys)
      .where(lt(idempotencyKeys.createdAt, new Date(now.getTime() - IDEMPOTENCY_TTL_MS)))
      .returning({ one: sql`1` });
    return gone.length;
  }

  /**
   * Deletes the kept answers whose text contains one of `needles` (a player's UUID, for an
   * erasure) among those of `scopes` (a team's credentials): answers are sealed, so each is opened
   * here. Rows live 24 hours, so these are few.
   * Runs on `tx` so it is part of the erasure's transaction.
   */
  async forgetMentions(tx: Pick<Db, "select" | "delete">, needles: string[], scopes: string[]): Promise<number> {
    if (scopes.length === 0) return 0;
    const rows = await tx
      .select()
      .from(idempotencyKeys)
      .where(
        and(
          inArray(idempotencyKeys.scope, scopes),
          eq(idempotencyKeys.status, "completed"),
          isNotNull(idempotencyKeys.response),
        ),
      );
    let n = 0;
    for (const row of rows) {
      let text: string;
      try {
        text = this.keyring.open(row.response!, context(row)).toLowerCase();
      } catch {
        continue;
      }
      if (!needles.some((x) => text.includes(x))) continue;
      await tx
        .delete(idempotencyKeys)
        .where(
          and(
            eq(idempotencyKeys.scope, row.scope),
            eq(idempotencyKeys.operation, row.operation),
            eq(idempotencyKeys.keyHash, row.keyHash),
          ),
        );
      n++;
    }
    return n;
  }

  private answer(row: Row): unknown {
    const claim = { scope: row.scope, operation: row.operation, keyHash: row.keyHash };
    return (JSON.parse(this.keyring.open(row.response!, context(claim))) as { data: unknown }).data;
  }

  /** The row this claim inserted (or took over), still running: a later takeover is not touched. */
  private held(claim: IdempotencyClaim) {
    return and(
      eq(idempotencyKeys.scope, claim.scope),
      eq(idempotencyKeys.operation, claim.operation),
      eq(idempotencyKeys.keyHash, claim.keyHash),
      eq(idempotencyKeys.status, "running"),
      eq(idempotencyKeys.createdAt, claim.createdAt),
    );
  }
}

/** The associated data of a sealed answer: a sealed answer copied onto another row does not open. */
function context(c: Pick<IdempotencyClaim, "scope" | "operation" | "keyHash">): string {
  return `idempotency\0${c.scope}\0${c.operation}\0${c.keyHash}`;
}
