import { index, pgTable, primaryKey, text, timestamp } from "drizzle-orm/pg-core";

/**
 * `Idempotency-Key` records (src/idempotency/store.ts): one row per key a credential sent to
 * one operation. The row is inserted before the operation runs, so the primary key is the lock
 * that keeps two instances from running the same key at once; a completed row holds the answer
 * to replay, sealed, because answers can carry secrets that are shown once. Rows live 24 hours.
 */
export const idempotencyKeys = pgTable(
  "idempotency_keys",
  {
    /** The credential the key belongs to: `user:<id>`, `key:<id>`, `client:<id>` or `agent:<server id>`. */
    scope: text("scope").notNull(),
    /** The procedure (one per REST method and path). */
    operation: text("operation").notNull(),
    /** SHA-256 (hex) of the key as sent. */
    keyHash: text("key_hash").notNull(),
    /** SHA-256 (hex) of the canonical input and selector headers: the same key with another body is refused. */
    requestHash: text("request_hash").notNull(),
    /** `running` while the first request runs; `completed` once its successful answer is stored. */
    status: text("status").notNull().$type<"running" | "completed">(),
    /** The answer, `v1.<iv>.<ciphertext+tag>` (AES-256-GCM with the row's identity as associated data). */
    response: text("response"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.scope, t.operation, t.keyHash] }),
    index("idempotency_keys_created_at_idx").on(t.createdAt),
  ],
);
