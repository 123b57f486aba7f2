import { createHash } from "node:crypto";
import { and, eq, isNotNull, isNull, sql } from "drizzle-orm";
import { SignJWT } from "jose";
import { audit } from "../audit/entry";
import type { Principal } from "../auth/principal";
import type { Config } from "../config";
import type { Db } from "../db/client";
import { sameAs } from "../db/prepared";
import { clientApps, oidcClients, oidcGrants } from "../db/schema";
import { identityProviderOf } from "../identity/chain";
import { BoundedCache } from "../lib/bounded-cache";
import type { Clock } from "../lib/clock";
import { AppError } from "../lib/errors";
import type { Logger } from "../lib/log";
import { iso } from "../lib/schemas";
import { safeEqual, sha256 } from "../lib/secrets";
import type { LoginLinks } from "../ms-auth/links";
import { OIDC_ACCESS_PREFIX, OIDC_CODE_PREFIX } from "../ms-auth/links";
import type { LoginRequestStore } from "../ms-auth/store";
import type { Bus } from "../realtime/bus";
import { requireResourceRole } from "../teams/access";
import type { IdTokenAlg, OidcKeys } from "./keys";

type OidcRow = typeof oidcClients.$inferSelect;
type AppRow = typeof clientApps.$inferSelect;

/** A client app with OpenID Connect enabled, as the endpoints need it. */
export interface OidcClient {
  app: AppRow;
  oidc: OidcRow;
}

export const ACCESS_TOKEN_TTL_SECONDS = 3600;
export const ID_TOKEN_TTL_SECONDS = 600;
const NOT_FOUND = "No client with this id in your teams.";
const DUMMY_HASH = sha256("no such client");
const PKCE_VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;
const PKCE_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

/** An OAuth error (RFC 6749 section 5.2): `error` is the registered code, the status the endpoint's. */
/** A control character (C0 or DEL): no state or nonce has one, and a NUL cannot even be stored. */
const CONTROL = /[\x00-\x1f\x7f]/;

export class OAuthError extends Error {
  constructor(
    readonly error: string,
    readonly description: string,
    readonly status = 400,
  ) {
    super(description);
  }
}

export type AuthorizeOutcome =
  /** No redirect may be trusted (unknown client, unregistered redirect URI): a page for the person. */
  { kind: "page"; status: number; title: string; message: string } | { kind: "redirect"; location: string };

export interface TokenRequest {
  form: URLSearchParams;
  authorization: string | null;
}

const settingsOut = (o: OidcRow) => ({
  redirect_uris: o.redirectUris,
  public: o.public,
  id_token_signed_response_alg: o.idTokenAlg,
  created_at: iso(o.createdAt),
  updated_at: iso(o.updatedAt),
});

/**
 * The service as an OpenID Provider for client apps that enable it: discovery, the
 * authorization endpoint (which starts an ordinary login request: the same identity chain,
 * consent page and machine as a launcher's), the token endpoint and userinfo.
 */
export class OidcService {
  private readonly cache: BoundedCache<string, OidcClient | null>;
  private readonly clientQuery;
  private readonly redeemQuery;
  private readonly replayQuery;
  private readonly userinfoQuery;
  private readonly developmentProviderOn: boolean;

  constructor(
    private readonly db: Db,
    private readonly requests: LoginRequestStore,
    private readonly links: LoginLinks,
    private readonly keys: OidcKeys,
    private readonly clock: Clock,
    private readonly config: Config,
    private readonly log: Logger,
    private readonly bus?: Bus,
  ) {
    this.cache = new BoundedCache(10_000, 10_000, () => clock.now());
    this.developmentProviderOn = identityProviderOf(config) === "development";
    this.clientQuery = db
      .select({ app: clientApps, oidc: oidcClients })
      .from(oidcClients)
      .innerJoin(clientApps, eq(clientApps.id, oidcClients.clientId))
      .where(eq(oidcClients.clientId, sql.placeholder("id")))
      .limit(1)
      .prepare("oidc_client_by_id");
    // The code by its hash alone (a unique index); the client checked on the row found.
    const sameClient = sameAs(oidcGrants.clientId, "clientId", "uuid");
    this.redeemQuery = db
      .update(oidcGrants)
      .set({
        codeUsedAt: sql`${sql.placeholder("now")}::timestamptz`,
        accessExpiresAt: sql`${sql.placeholder("accessExpiresAt")}::timestamptz`,
      })
      .where(
        and(
          eq(oidcGrants.codeHash, sql.placeholder("codeHash")),
          sameClient,
          isNull(oidcGrants.codeUsedAt),
          isNull(oidcGrants.revokedAt),
        ),
      )
      .returning()
      .prepare("oidc_code_redeem");
    // RFC 6749 section 4.1.2: a code used twice revokes what was issued on it.
    this.replayQuery = db
      .update(oidcGrants)
      .set({ revokedAt: sql`coalesce(${oidcGrants.revokedAt}, ${sql.placeholder("now")}::timestamptz)` })
      .where(and(eq(oidcGrants.codeHash, sql.placeholder("codeHash")), sameClient, isNotNull(oidcGrants.codeUsedAt)))
      .returning({ id: oidcGrants.id })
      .prepare("oidc_code_replay");
    this.userinfoQuery = db
      .select({
        mcUuid: oidcGrants.mcUuid,
        mcUsername: oidcGrants.mcUsername,
        accessExpiresAt: oidcGrants.accessExpiresAt,
        revokedAt: oidcGrants.revokedAt,
        identityProvider: oidcGrants.identityProvider,
      })
      .from(oidcGrants)
      .where(eq(oidcGrants.accessTokenHash, sql.placeholder("hash")))
      .limit(1)
      .prepare("oidc_grant_by_access_token");
    bus?.onNotice((n) => {
      if (n.type === "client_changed") this.cache.delete(n.client_id);
      else if (n.type === "team_clients_gone") this.cache.deleteWhere((c) => c?.app.teamId === n.team_id);
    });
  }

  get issuer() {
    return this.config.PUBLIC_URL;
  }

  discovery() {
    const base = this.config.PUBLIC_URL;
    return {
      issuer: base,
      authorization_endpoint: `${base}/oidc/authorize`,
      token_endpoint: `${base}/oidc/token`,
      userinfo_endpoint: `${base}/oidc/userinfo`,
      jwks_uri: `${base}/oidc/jwks.json`,
      scopes_supported: ["openid", "profile"],
      response_types_supported: ["code"],
      response_modes_supported: ["query"],
      grant_types_supported: ["authorization_code"],
      subject_types_supported: ["public"],
      id_token_signing_alg_values_supported: ["RS256", "EdDSA"],
      token_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "none"],
      code_challenge_methods_supported: ["S256"],
      claims_supported: ["iss", "sub", "aud", "exp", "iat", "auth_time", "nonce", "preferred_username"],
      authorization_response_iss_parameter_supported: true,
      request_parameter_supported: false,
      request_uri_parameter_supported: false,
      claims_parameter_supported: false,
    };
  }

  jwks() {
    return this.keys.jwks();
  }

  /** The client with its OpenID Connect settings; null when unknown or not enabled. Cached. */
  async client(clientId: string): Promise<OidcClient | null> {
    if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(clientId)) return null;
    const hit = this.cache.get(clientId);
    if (hit !== undefined) return hit;
    const epoch = this.cache.epoch;
    const [found] = await this.clientQuery.execute({ id: clientId });
    this.cache.set(clientId, found ?? null, epoch);
    return found ?? null;
  }

  /**
   * The authorization endpoint (OpenID Connect Core 3.1.2). Nothing redirects until the client
   * and the exact redirect URI are known to belong together; after that, errors go back to it.
   */
  async authorize(q: URLSearchParams): Promise<AuthorizeOutcome> {
    const page = (message: string): AuthorizeOutcome => ({
      kind: "page",
      status: 400,
      title: "Sign-in request not valid",
      message,
    });
    for (const name of ["client_id", "redirect_uri", "response_type", "scope", "state", "nonce", "code_challenge"])
      if (q.getAll(name).length > 1) return page(`The parameter ${name} was given more than once.`);
    const clientId = q.get("client_id") ?? "";
    const client = await this.client(clientId);
    if (!client) return page("This website is not registered for Sign in with Minecraft (unknown client_id).");
    const redirectUri = q.get("redirect_uri") ?? "";
    if (!client.oidc.redirectUris.includes(redirectUri))
      return page("The redirect_uri is not one this website registered, so the sign-in cannot go back to it.");
    const state = q.get("state") ?? undefined;
    const fail = (error: string, description: string): AuthorizeOutcome => {
      const url = new URL(redirectUri);
      url.searchParams.set("error", error);
      url.searchParams.set("error_description", description);
      if (state !== undefined) url.searchParams.set("state", state);
      url.searchParams.set("iss", this.issuer);
      return { kind: "redirect", location: url.toString() };
    };
    if (q.get("response_type") !== "code")
      return fail("unsupported_response_type", "Only response_type=code is supported.");
    if (q.has("request") || q.has("request_uri"))
      return fail(q.has("request") ? "request_not_supported" : "request_uri_not_supported", "Not supported.");
    const scope = q.get("scope") ?? "";
    const scopes = scope.split(" ").filter(Boolean);
    if (!scopes.includes("openid")) return fail("invalid_scope", "The scope must include openid.");
    const nonce = q.get("nonce") ?? undefined;
    if ((state?.length ?? 0) > 512 || (nonce?.length ?? 0) > 512)
      return fail("invalid_request", "state and nonce are at most 512 characters.");
    // RFC 6749 appendix A.5 allows state only visible ASCII; control characters are refused
    // in both (other characters pass, as relying parties send them).
    if (CONTROL.test(state ?? "") || CONTROL.test(nonce ?? ""))
      return fail("invalid_request", "state and nonce may not contain control characters.");
    const challenge = q.get("code_challenge") ?? undefined;
    const method = q.get("code_challenge_method") ?? (challenge ? "plain" : undefined);
    if (challenge !== undefined) {
      if (method !== "S256") return fail("invalid_request", "code_challenge_method must be S256.");
      if (!PKCE_CHALLENGE.test(challenge))
        return fail("invalid_request", "code_challenge must be a base64url SHA-256 (43 characters).");
    } else if (client.oidc.public) {
      return fail("invalid_request", "A public client must use PKCE (code_challenge with S256).");
    }
    const row = await this.requests.create({
      id: crypto.randomUUID(),
      clientId: client.app.id,
      ttlSeconds: this.config.LOGIN_REQUEST_TTL_SECONDS,
      clientState: null,
      oidc: {
        redirectUri,
        scope: scopes.filter((s) => s === "openid" || s === "profile").join(" "),
        ...(state !== undefined && { state }),
        ...(nonce !== undefined && { nonce }),
        ...(challenge !== undefined && { codeChallenge: challenge }),
      },
    });
    return { kind: "redirect", location: this.links.authUrl(row.id) };
  }

  /** The token endpoint: authenticate the client, redeem the code once, sign the ID token. */
  async token(req: TokenRequest, onBadSecret: (clientId: string) => Promise<void>) {
    const { form } = req;
    for (const name of ["grant_type", "code", "redirect_uri", "code_verifier", "client_id", "client_secret"])
      if (form.getAll(name).length > 1)
        throw new OAuthError("invalid_request", `The parameter ${name} was given more than once.`);
    const client = await this.authenticate(req, onBadSecret);
    if (form.get("grant_type") !== "authorization_code")
      throw new OAuthError("unsupported_grant_type", "Only grant_type=authorization_code is supported.");
    const code = form.get("code") ?? "";
    if (!code.startsWith(OIDC_CODE_PREFIX) || code.length > 200)
      throw new OAuthError("invalid_grant", "The authorization code is not valid.");
    const now = this.clock.now();
    const codeHash = sha256(code);
    const [grant] = await this.redeemQuery.execute({
      codeHash,
      clientId: client.app.id,
      now: new Date(now).toISOString(),
      accessExpiresAt: new Date(now + ACCESS_TOKEN_TTL_SECONDS * 1000).toISOString(),
    });
    if (!grant) {
      const replayed = await this.replayQuery.execute({
        codeHash,
        clientId: client.app.id,
        now: new Date(now).toISOString(),
      });
      if (replayed.length) {
        this.log.warn("oidc authorization code replayed; its grant is revoked", { client_id: client.app.id });
        throw new OAuthError("invalid_grant", "The authorization code was already used; what it issued is revoked.");
      }
      throw new OAuthError("invalid_grant", "The authorization code is not valid.");
    }
    if (grant.codeExpiresAt.getTime() <= now)
      throw new OAuthError("invalid_grant", "The authorization code has expired.");
    if (form.get("redirect_uri") !== grant.redirectUri)
      throw new OAuthError("invalid_grant", "redirect_uri does not match the authorization request.");
    const verifier = form.get("code_verifier");
    if (grant.codeChallenge) {
      if (!verifier || !PKCE_VERIFIER.test(verifier))
        throw new OAuthError("invalid_grant", "This code needs its PKCE code_verifier.");
      const computed = createHash("sha256").update(verifier).digest("base64url");
      if (!safeEqual(computed, grant.codeChallenge))
        throw new OAuthError("invalid_grant", "The code_verifier does not match the code_challenge.");
    } else if (verifier) {
      throw new OAuthError("invalid_grant", "No code_challenge was sent with the authorization request.");
    }
    if (grant.identityProvider === "development" && !this.developmentProviderOn)
      throw new OAuthError("invalid_grant", "This sign-in was made with the development identity provider.");
    const iat = Math.floor(now / 1000);
    const key = await this.keys.signingKey(client.oidc.idTokenAlg);
    const idToken = await new SignJWT({
      auth_time: Math.floor(grant.createdAt.getTime() / 1000),
      ...(grant.nonce !== null && { nonce: grant.nonce }),
      preferred_username: grant.mcUsername,
    })
      .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: "JWT" })
      .setIssuer(this.issuer)
      .setSubject(grant.mcUuid)
      .setAudience(client.app.id)
      .setIssuedAt(iat)
      .setExpirationTime(iat + ID_TOKEN_TTL_SECONDS)
      .sign(key.key);
    return {
      access_token: this.links.oidcAccessToken(grant.id),
      token_type: "Bearer",
      expires_in: ACCESS_TOKEN_TTL_SECONDS,
      id_token: idToken,
      scope: grant.scope,
    };
  }

  /** RFC 6749 section 2.3.1: HTTP Basic (form-encoded id and secret) or both in the body; a public client sends none. */
  private async authenticate(req: TokenRequest, onBadSecret: (clientId: string) => Promise<void>) {
    const { form, authorization } = req;
    let clientId = form.get("client_id");
    let secret = form.get("client_secret");
    if (authorization) {
      const m = /^Basic ([A-Za-z0-9+/=]+)$/i.exec(authorization.trim());
      if (!m) throw new OAuthError("invalid_client", "The Authorization header is not HTTP Basic.", 401);
      if (secret !== null)
        throw new OAuthError("invalid_request", "Authenticate with one method: Basic or client_secret in the body.");
      const decoded = Buffer.from(m[1]!, "base64").toString("utf8");
      const colon = decoded.indexOf(":");
      if (colon < 0) throw new OAuthError("invalid_client", "The Basic credentials have no secret.", 401);
      let id: string;
      try {
        id = decodeURIComponent(decoded.slice(0, colon).replace(/\+/g, " "));
        secret = decodeURIComponent(decoded.slice(colon + 1).replace(/\+/g, " "));
      } catch {
        throw new OAuthError("invalid_client", "The Basic credentials are not form-encoded.", 401);
      }
      if (clientId !== null && clientId !== id)
        throw new OAuthError("invalid_request", "client_id in the body differs from the one in Basic.");
      clientId = id;
    }
    if (!clientId) throw new OAuthError("invalid_client", "The client is not identified.", 401);
    const client = await this.client(clientId);
    if (client?.oidc.public && secret === null) return client;
    // Hashed and compared even for an unknown client, so both failures cost the same.
    const ok = secret !== null && safeEqual(sha256(secret), client?.app.secretHash ?? DUMMY_HASH);
    if (!client || !ok || client.oidc.public) {
      if (client && secret !== null) await onBadSecret(client.app.id);
      throw new OAuthError("invalid_client", "The client credentials are invalid.", 401);
    }
    return client;
  }

  /** Userinfo (OpenID Connect Core 5.3): the player behind a live access token. */
  async userinfo(token: string | null) {
    if (!token?.startsWith(OIDC_ACCESS_PREFIX) || token.length > 200) return null;
    const [g] = await this.userinfoQuery.execute({ hash: sha256(token) });
    if (!g || g.revokedAt || !g.accessExpiresAt || g.accessExpiresAt.getTime() <= this.clock.now()) return null;
    if (g.identityProvider === "development" && !this.developmentProviderOn) return null;
    return { sub: g.mcUuid, preferred_username: g.mcUsername };
  }

  // -- settings, for the client's team --

  async getSettings(principal: Principal, clientId: string) {
    await this.authorized(principal, clientId, "viewer");
    const [row] = await this.db.select().from(oidcClients).where(eq(oidcClients.clientId, clientId)).limit(1);
    if (!row) throw new AppError("not_found", "OpenID Connect is not enabled for this client.");
    return settingsOut(row);
  }

  async enable(
    principal: Principal,
    input: { client_id: string; redirect_uris: string[]; public?: boolean; id_token_signed_response_alg?: IdTokenAlg },
  ) {
    const app = await this.authorized(principal, input.client_id, "admin");
    const now = this.clock.date();
    const values = {
      redirectUris: [...new Set(input.redirect_uris)],
      public: input.public ?? false,
      idTokenAlg: input.id_token_signed_response_alg ?? ("RS256" as const),
    };
    const row = await this.db.transaction(async (tx) => {
      const [before] = await tx
        .select()
        .from(oidcClients)
        .where(eq(oidcClients.clientId, input.client_id))
        .for("update");
      const [r] = await tx
        .insert(oidcClients)
        .values({ clientId: input.client_id, ...values })
        .onConflictDoUpdate({ target: oidcClients.clientId, set: { ...values, updatedAt: now } })
        .returning();
      await audit(tx, {
        teamId: app.teamId,
        target: { type: "client", id: app.id, name: app.name },
        before: before ? { oidc: true, ...auditFields(before) } : { oidc: false },
        after: { oidc: true, ...auditFields(r!) },
      });
      return r!;
    });
    await this.changed(input.client_id);
    return settingsOut(row);
  }

  async disable(principal: Principal, clientId: string) {
    const app = await this.authorized(principal, clientId, "admin");
    await this.db.transaction(async (tx) => {
      const [gone] = await tx.delete(oidcClients).where(eq(oidcClients.clientId, clientId)).returning();
      if (!gone) throw new AppError("not_found", "OpenID Connect is not enabled for this client.");
      await audit(tx, {
        teamId: app.teamId,
        target: { type: "client", id: app.id, name: app.name },
        before: { oidc: true, ...auditFields(gone) },
        after: { oidc: false },
      });
    });
    await this.changed(clientId);
    return { ok: true as const };
  }

  private async changed(clientId: string) {
    this.cache.delete(clientId);
    await this.bus?.publishNotice({ type: "client_changed", client_id: clientId }).catch(() => undefined);
  }

  private async authorized(principal: Principal, clientId: string, min: "viewer" | "admin"): Promise<AppRow> {
    const [app] = await this.db.select().from(clientApps).where(eq(clientApps.id, clientId)).limit(1);
    await requireResourceRole(this.db, principal, app?.teamId, min, NOT_FOUND);
    return app!;
  }
}

const auditFields = (o: OidcRow) => ({
  redirect_uris: o.redirectUris,
  public: o.public,
  id_token_signed_response_alg: o.idTokenAlg,
});
