import {
  bigint,
  boolean,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uuid,
} from "drizzle-orm/pg-core";
import type { PlayerTextures } from "../../../machines/login-request";
import { teams } from "./teams";

/** What an OpenID Connect authorization request asked for, kept on its login request until the code is issued. */
export interface OidcRequest {
  redirectUri: string;
  scope: string;
  state?: string;
  nonce?: string;
  /** S256 challenge (the only method offered). */
  codeChallenge?: string;
}

/** A team's launcher application. `id` is the public client_id. */
export const clientApps = pgTable(
  "client_apps",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    teamId: uuid("team_id")
      .notNull()
      .references(() => teams.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    title: text("title").notNull(),
    description: text("description").notNull(),
    logoUrl: text("logo_url"),
    secretHash: text("secret_hash").notNull(),
    secretRotatedAt: timestamp("secret_rotated_at", { withTimezone: true }).notNull().defaultNow(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index("client_apps_team_idx").on(t.teamId)],
);

export const clientModules = pgTable(
  "client_modules",
  {
    clientId: uuid("client_id")
      .notNull()
      .references(() => clientApps.id, { onDelete: "cascade" }),
    moduleKey: text("module_key").notNull(),
    postLoginRedirectUri: text("post_login_redirect_uri").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.clientId, t.moduleKey] })],
);

/**
 * A login request: the machine's persisted state (`status` + `context`), an optimistic
 * `version`, and the deadline that drives expiry. No upstream token is ever stored here.
 */
export const loginRequests = pgTable(
  "login_requests",
  {
    id: uuid("id").primaryKey(),
    clientId: uuid("client_id")
      .notNull()
      .references(() => clientApps.id, { onDelete: "cascade" }),
    status: text("status").notNull(),
    context: jsonb("context").notNull().$type<import("../../../machines/login-request").LoginContext>(),
    version: integer("version").notNull().default(0),
    expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
    clientState: text("client_state"),
    /** Set when the request came from the OpenID Connect authorization endpoint (src/oidc). */
    oidc: jsonb("oidc").$type<OidcRequest>(),
    /** SHA-256 of the cookie that binds the browser which completed sign-in. */
    browserHash: text("browser_hash"),
    /** Which identity provider authenticated the player: set with the profile (see IdentityProvider). */
    identityProvider: text("identity_provider").$type<"development" | "microsoft">(),
    /** `browser`: the launcher opens auth_url; `device`: the player types a user code on any device (RFC 8628). */
    flow: text("flow").$type<"browser" | "device">().notNull().default("browser"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index("login_requests_status_expires_idx").on(t.status, t.expiresAt),
    index("login_requests_client_idx").on(t.clientId),
  ],
);

/**
 * A device-flow login's user code (RFC 8628), stored only as SHA-256 of its normalised form.
 * Claiming a code deletes its row, so a code is used once; it dies with its request.
 */
export const deviceCodes = pgTable("device_codes", {
  codeHash: text("code_hash").primaryKey(),
  loginRequestId: uuid("login_request_id")
    .notNull()
    .unique()
    .references(() => loginRequests.id, { onDelete: "cascade" }),
  expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
});

/** Service sessions handed to launchers; one per authorized login request at most. */
export const sessions = pgTable(
  "sessions",
  {
    id: uuid("id").primaryKey(),
    tokenHash: text("token_hash").notNull().unique(),
    clientId: uuid("client_id")
      .notNull()
      .references(() => clientApps.id, { onDelete: "cascade" }),
    loginRequestId: uuid("login_request_id")
      .notNull()
      .unique()
      .references(() => loginRequests.id, { onDelete: "cascade" }),
    mcUuid: text("mc_uuid").notNull(),
    mcUsername: text("mc_username").notNull(),
    expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
    revokedAt: timestamp("revoked_at", { withTimezone: true }),
    /**
     * The provider that authenticated the login: a development session stops being valid once
     * the development provider is off.
     */
    identityProvider: text("identity_provider").$type<"development" | "microsoft">().notNull().default("microsoft"),
    /** The active skin and cape the profile showed at sign-in; null for sessions from before they were kept. */
    textures: jsonb("textures").$type<PlayerTextures>(),
    /** When the client last validated the session, to the minute or so (written at most once a minute). */
    lastUsedAt: timestamp("last_used_at", { withTimezone: true }),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index("sessions_client_idx").on(t.clientId), index("sessions_mc_uuid_idx").on(t.mcUuid)],
);

/**
 * Sliding-window request counters, shared by every instance on the same database: per key, the
 * start of its newest slot and one counter per slot, oldest first (see src/lib/rate-limit.ts).
 */
export const rateLimits = pgTable("rate_limits", {
  key: text("key").primaryKey(),
  slotMs: bigint("slot_ms", { mode: "number" }).notNull(),
  counts: integer("counts").array().notNull(),
  /** The last hit's decision, so the one statement that counts can also answer it. */
  allowed: boolean("allowed").notNull(),
});
