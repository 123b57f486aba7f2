import type { ClientsService } from "../clients/service";
import type { Config } from "../config";
import { identityProviderOf, runChain } from "../identity/chain";
import type { DenialCode } from "../identity/types";
import type { Clock } from "../lib/clock";
import type { Logger } from "../lib/log";
import { sha256 } from "../lib/secrets";
import type { OidcRequest } from "../db/schema";
import { type LoginLinks, OIDC_CODE_TTL_SECONDS } from "./links";
import type { LoginRequestRow, LoginRequestStore, TransitionResult } from "./store";

/**
 * The browser's half of the flow (used by src/ms-auth/browser.ts): the identity provider's
 * callback, the consent page and its decision. Every status change goes through the store,
 * with the row the caller already loaded.
 */
export class SignInFlow {
  constructor(
    private readonly requests: LoginRequestStore,
    private readonly clients: ClientsService,
    private readonly links: LoginLinks,
    private readonly clock: Clock,
    private readonly config: Config,
    private readonly log: Logger,
  ) {}

  /** The identity provider's sign-in address for a request (where a claimed device code leads). */
  authUrl(requestId: string) {
    return this.links.authUrl(requestId);
  }

  /** The identity provider's authorize endpoint, for the device page's form-action. */
  get providerAuthorizeUrl() {
    return this.links.identity.endpoints.authorize;
  }

  deviceFormToken(browserSecret: string) {
    return this.links.deviceFormToken(browserSecret);
  }

  deviceFormValid(browserSecret: string, token: string) {
    return this.links.deviceFormValid(browserSecret, token);
  }

  requestIdFromState(state: string | null): string | null {
    return this.links.requestIdFromState(state);
  }

  loadCurrent(id: string): Promise<LoginRequestRow | null> {
    return this.requests.loadCurrent(id);
  }

  /** For the consent decision, whose approve or deny is a versioned write: see the store's `loadForSend`. */
  loadForDecision(id: string): Promise<LoginRequestRow | null> {
    return this.requests.loadForSend(id);
  }

  /** Runs the identity chain for a callback and moves the request on. */
  async completeSignIn(row: LoginRequestRow, code: string, browserSecret: string): Promise<TransitionResult | null> {
    if (row.status !== "pending") return { row, applied: false };
    const result = await runChain(this.links.identity, {
      code,
      redirectUri: this.links.callbackUrl,
      codeVerifier: this.links.pkceVerifier(row.id),
    });
    if (!result.ok) {
      this.log.info("sign-in denied", { auth_request_id: row.id, error: result.error, detail: result.detail });
      return this.requests.send(row, { type: "DENY", error: result.error });
    }
    return this.requests.send(
      row,
      {
        type: "AUTHENTICATE",
        mcUuid: result.profile.id,
        mcUsername: result.profile.name,
        textures: result.profile.textures,
      },
      // The provider is recorded with the profile, not at approval: a restart in between may switch it.
      { browserHash: sha256(browserSecret), identityProvider: identityProviderOf(this.config) },
    );
  }

  deny(row: LoginRequestRow, error: DenialCode) {
    return this.requests.send(row, { type: "DENY", error });
  }

  /**
   * Approve: authorized with a fresh session (or, for an OpenID Connect request, its grant),
   * written in the same statement as the status change.
   */
  approve(row: LoginRequestRow) {
    if (row.oidc)
      return this.requests.send(row, { type: "APPROVE" }, undefined, {
        codeHash: sha256(this.links.oidcCode(row.id)),
        codeExpiresAt: new Date(this.clock.now() + OIDC_CODE_TTL_SECONDS * 1000),
        accessTokenHash: sha256(this.links.oidcAccessToken(row.id)),
      });
    const id = crypto.randomUUID();
    return this.requests.send(row, { type: "APPROVE" }, undefined, {
      id,
      tokenHash: sha256(this.links.sessionToken(id)),
      expiresAt: new Date(this.clock.now() + this.config.SESSION_TTL_SECONDS * 1000),
    });
  }

  /** Whether this browser (by its cookie) is the one that signed in on this request. */
  browserMatches(row: LoginRequestRow, browserSecret: string | undefined): boolean {
    return Boolean(browserSecret && row.browserHash && row.browserHash === sha256(browserSecret));
  }

  csrfToken(requestId: string, browserSecret: string) {
    return this.links.csrfToken(requestId, browserSecret);
  }

  csrfValid(requestId: string, browserSecret: string, token: string) {
    return this.links.csrfValid(requestId, browserSecret, token);
  }

  async consentView(row: LoginRequestRow) {
    return (await this.clients.withMsAuth(row.clientId))?.app;
  }

  async redirectTarget(row: LoginRequestRow): Promise<string | null> {
    if (row.oidc) return this.oidcRedirect(row, row.oidc);
    const module = (await this.clients.withMsAuth(row.clientId))?.msAuth;
    if (!module) return null;
    const url = new URL(module.postLoginRedirectUri);
    url.searchParams.set("auth_request_id", row.id);
    url.searchParams.set("status", row.status);
    if (row.status === "denied" || row.status === "expired")
      url.searchParams.set("error", row.context.error ?? row.status);
    if (row.clientState !== null) url.searchParams.set("state", row.clientState);
    return url.toString();
  }

  /**
   * The relying party's registered redirect URI (checked when the request was made) with the
   * code, or an OAuth error (RFC 6749 section 4.1.2.1), and `iss` (RFC 9207).
   */
  private oidcRedirect(row: LoginRequestRow, oidc: OidcRequest): string | null {
    const url = new URL(oidc.redirectUri);
    if (row.status === "authorized") url.searchParams.set("code", this.links.oidcCode(row.id));
    else if (row.status === "denied" || row.status === "expired") {
      const why = row.context.error ?? row.status;
      url.searchParams.set("error", why === "upstream_unavailable" ? "temporarily_unavailable" : "access_denied");
      url.searchParams.set("error_description", `The sign-in ended: ${why}`);
    } else return null;
    if (oidc.state !== undefined) url.searchParams.set("state", oidc.state);
    url.searchParams.set("iss", this.config.PUBLIC_URL);
    return url.toString();
  }
}
