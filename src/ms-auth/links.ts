import type { Config } from "../config";
import { authorizeUrl, identityConfig, pkceChallenge } from "../identity/chain";
import type { IdentityConfig } from "../identity/types";
import type { Keyring } from "../lib/keyring";

export const SESSION_PREFIX = "mcp_sess_";
export const OIDC_CODE_PREFIX = "mcp_code_";
export const OIDC_ACCESS_PREFIX = "mcp_oat_";
/** How long an authorization code may wait for its exchange (RFC 6749 recommends at most 10 minutes). */
export const OIDC_CODE_TTL_SECONDS = 60;

/**
 * Values the flow must be able to recompute but never stores: keyed MACs of a request or
 * session id (src/lib/keyring.ts). Shared by the launcher API and the browser's pages.
 */
export class LoginLinks {
  readonly identity: IdentityConfig;
  readonly callbackUrl: string;

  constructor(
    private readonly keyring: Keyring,
    config: Config,
    transport?: IdentityConfig["transport"],
  ) {
    this.identity = { ...identityConfig(config), ...(transport && { transport }) };
    this.callbackUrl = `${config.PUBLIC_URL}/client/ms-auth/callback`;
  }

  /** The identity provider's sign-in URL for a request; the same request always gets the same one. */
  authUrl(requestId: string) {
    return authorizeUrl(this.identity, {
      redirectUri: this.callbackUrl,
      state: this.oauthState(requestId),
      codeChallenge: pkceChallenge(this.pkceVerifier(requestId)),
    });
  }

  /** The request a callback's `state` names, or null when the state is not one we issued. */
  requestIdFromState(state: string | null): string | null {
    if (!state) return null;
    const dot = state.indexOf(".");
    if (dot < 0) return null;
    const id = state.slice(0, dot);
    if (!/^[0-9a-f-]{36}$/.test(id)) return null;
    return this.keyring.verify(state.slice(dot + 1), "oauth-state", id) ? id : null;
  }

  /** Derived, never stored: 43 base64url characters, as RFC 7636 requires. */
  pkceVerifier(requestId: string) {
    return this.keyring.mac("pkce", requestId);
  }

  /**
   * Session tokens are a keyed MAC of the session id: 256 bits, stored only as SHA-256, and
   * re-derivable so a poll whose answer was lost can be repeated and get the same token.
   */
  sessionToken(sessionId: string) {
    return SESSION_PREFIX + this.keyring.mac("session", sessionId);
  }

  /** An OpenID Connect authorization code: like a session token, a keyed MAC of its grant's id. */
  oidcCode(grantId: string) {
    return OIDC_CODE_PREFIX + this.keyring.mac("oidc-code", grantId);
  }

  /** The access token the code is exchanged for (userinfo's bearer token). */
  oidcAccessToken(grantId: string) {
    return OIDC_ACCESS_PREFIX + this.keyring.mac("oidc-access", grantId);
  }

  csrfToken(requestId: string, browserSecret: string) {
    return this.keyring.mac("csrf", requestId, browserSecret);
  }

  csrfValid(requestId: string, browserSecret: string, token: string) {
    return this.keyring.verify(token, "csrf", requestId, browserSecret);
  }

  /** The device page's form token, bound to the browser's cookie. */
  deviceFormToken(browserSecret: string) {
    return this.keyring.mac("device-form", browserSecret);
  }

  deviceFormValid(browserSecret: string, token: string) {
    return this.keyring.verify(token, "device-form", browserSecret);
  }

  /** `<id>.<mac>`: names the request and proves we issued it; nothing to store. */
  private oauthState(requestId: string) {
    return `${requestId}.${this.keyring.mac("oauth-state", requestId)}`;
  }
}
