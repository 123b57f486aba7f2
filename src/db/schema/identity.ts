import { index, pgTable, text, timestamp } from "drizzle-orm/pg-core";

/**
 * Marks the built-in development identity provider shares between instances: a redeemed code,
 * a `flaky` sign-in's served 429. Each row lives only as long as the token it marks.
 */
export const devIdpGrants = pgTable(
  "dev_idp_grants",
  {
    key: text("key").primaryKey(),
    expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
  },
  (t) => [index("dev_idp_grants_expires_idx").on(t.expiresAt)],
);
