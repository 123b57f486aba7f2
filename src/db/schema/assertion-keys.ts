import { index, jsonb, pgTable, text, timestamp } from "drizzle-orm/pg-core";

/**
 * Ed25519 keys that sign launcher session assertions, shared by every instance on one database.
 * The newest key whose `not_before` has passed signs; a key stays published until its
 * successor's `not_before` plus the assertion TTL (src/ms-auth/assertions.ts). The private key
 * is encrypted with a key derived from the service keyring, so the database alone cannot sign.
 */
export const assertionKeys = pgTable(
  "assertion_keys",
  {
    kid: text("kid").primaryKey(),
    /** The public JWK as published at /.well-known/jwks.json. */
    publicJwk: jsonb("public_jwk").notNull().$type<Record<string, string>>(),
    /** `v1.<iv>.<ciphertext+tag>`: AES-256-GCM of the PKCS#8 DER, with the kid as associated data. */
    privateKey: text("private_key").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    /** From when it may sign; a rotation publishes the next key ahead of this. */
    notBefore: timestamp("not_before", { withTimezone: true }).notNull(),
  },
  (t) => [index("assertion_keys_not_before_idx").on(t.notBefore)],
);
