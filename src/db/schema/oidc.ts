import { boolean, index, jsonb, pgTable, text, timestamp, uniqueIndex, uuid } from "drizzle-orm/pg-core";
import { clientApps, loginRequests } from "./clients";

/**
 * A client app's OpenID Connect settings ("Sign in with Minecraft" for websites). Present =
 * enabled. A confidential client authenticates at the token endpoint with the client app's own
 * secret; a public one (`public`) sends none and must use PKCE.
 */
export const oidcClients = pgTable("oidc_clients", {
  clientId: uuid("client_id")
    .primaryKey()
    .references(() => clientApps.id, { onDelete: "cascade" }),
  redirectUris: text("redirect_uris").array().notNull(),
  public: boolean("public").notNull().default(false),
  /** `RS256` (the default discovery requires) or `EdDSA`. */
  idTokenAlg: text("id_token_alg").$type<"RS256" | "EdDSA">().notNull().default("RS256"),
  createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
});

/**
 * What a player granted a relying party: written with the approval of its login request (one
 * grant per request, same id). The authorization code and the access token are keyed MACs of
 * the id, stored only as SHA-256; the code is redeemed once (`code_used_at`), and a second
 * redemption revokes the grant. Listed and revoked from the player's apps page.
 */
export const oidcGrants = pgTable(
  "oidc_grants",
  {
    id: uuid("id")
      .primaryKey()
      .references(() => loginRequests.id, { onDelete: "cascade" }),
    clientId: uuid("client_id")
      .notNull()
      .references(() => clientApps.id, { onDelete: "cascade" }),
    mcUuid: text("mc_uuid").notNull(),
    mcUsername: text("mc_username").notNull(),
    codeHash: text("code_hash").notNull(),
    codeExpiresAt: timestamp("code_expires_at", { withTimezone: true }).notNull(),
    codeUsedAt: timestamp("code_used_at", { withTimezone: true }),
    accessTokenHash: text("access_token_hash").notNull(),
    accessExpiresAt: timestamp("access_expires_at", { withTimezone: true }),
    redirectUri: text("redirect_uri").notNull(),
    codeChallenge: text("code_challenge"),
    nonce: text("nonce"),
    scope: text("scope").notNull(),
    identityProvider: text("identity_provider").$type<"development" | "microsoft">().notNull().default("microsoft"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    revokedAt: timestamp("revoked_at", { withTimezone: true }),
  },
  (t) => [
    uniqueIndex("oidc_grants_code_hash_idx").on(t.codeHash),
    uniqueIndex("oidc_grants_access_token_hash_idx").on(t.accessTokenHash),
    index("oidc_grants_player_idx").on(t.mcUuid),
    index("oidc_grants_client_idx").on(t.clientId),
  ],
);

/**
 * ID token signing keys (RS256 and EdDSA), shared by every instance on one database; the private
 * half sealed with a keyring subkey like the assertion keys. Kept apart from those so an ID
 * token can never pass as a launcher session assertion.
 */
export const oidcKeys = pgTable("oidc_keys", {
  kid: text("kid").primaryKey(),
  alg: text("alg").$type<"RS256" | "EdDSA">().notNull(),
  publicJwk: jsonb("public_jwk").notNull().$type<Record<string, string>>(),
  privateKey: text("private_key").notNull(),
  createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
});
