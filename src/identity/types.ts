/**
 * The contract between the login flow and the identity chain. The chain client
 * (src/identity/chain.ts) and the development identity provider (src/identity/dev-provider.ts)
 * both follow it; the login service only uses what is here.
 */

import type { DenialCode } from "../../machines/denials";
import type { PlayerTextures } from "../../machines/login-request";

export { DENIAL_CODES, type DenialCode } from "../../machines/denials";

/** Every upstream address, all configurable. */
export interface IdentityEndpoints {
  /** Microsoft OAuth 2.0 authorize endpoint (browser redirect). */
  authorize: string;
  /** Microsoft OAuth 2.0 token endpoint (form POST: authorization_code + PKCE). */
  token: string;
  /** Xbox Live user authentication: POST JSON with RpsTicket "d=<ms access token>". */
  xblAuth: string;
  /** XSTS authorization: POST JSON, RelyingParty "rp://api.minecraftservices.com/". */
  xstsAuth: string;
  /** Minecraft services login: POST {identityToken: "XBL3.0 x=<uhs>;<xsts token>"}. */
  mcLogin: string;
  /** Minecraft profile: GET with the Minecraft bearer token; 404 when no Java profile. */
  mcProfile: string;
}

export interface IdentityConfig {
  clientId: string;
  /** Absent for public clients (the development provider does not need one). */
  clientSecret?: string;
  endpoints: IdentityEndpoints;
  /** Per upstream call. */
  timeoutMs: number;
  /** Extra attempts for timeouts, network errors, 429 and 5xx, with exponential backoff. */
  retries: number;
  /**
   * How a request reaches the endpoints: `fetch` when absent. Set only when the development
   * provider is served by this same process: its handler then takes the very requests the
   * chain builds (same URLs, headers, bodies, timeouts and retries) and answers the same
   * responses, without the loopback socket and the edge a network request passes.
   */
  transport?: (url: string, init: RequestInit) => Promise<Response>;
}

/**
 * Who authenticates players: the development provider (built in or at DEV_IDP_URL) or the
 * configured Microsoft app. Recorded on each login and session.
 */
export type IdentityProvider = "development" | "microsoft";

/** The player's active skin and cape, as the Minecraft profile shows them at sign-in. */
export type McTextures = PlayerTextures;

export interface McProfile {
  /** Lower-case UUID with dashes (Minecraft returns it without; the chain normalises). */
  id: string;
  name: string;
  textures: McTextures;
}

export type ChainResult = { ok: true; profile: McProfile } | { ok: false; error: DenialCode; detail?: string };
