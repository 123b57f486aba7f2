/**
 * The contract between the login flow and the identity chain. The chain client
 * (src/identity/chain.ts) and the development identity provider (src/identity/dev-provider.ts)
 * both follow it; the login service only uses what is here.
 */

/** Why a sign-in ended in `denied`. Stable: launchers show their own text for each. */
export const DENIAL_CODES = [
  "access_denied", // the player cancelled or refused at the identity provider
  "no_xbox_profile", // XSTS 2148916233: Microsoft account without an Xbox profile
  "region_not_allowed", // XSTS 2148916235: Xbox Live is not available in the player's country
  "age_verification_required", // XSTS 2148916236 / 2148916237: adult verification (South Korea)
  "child_account", // XSTS 2148916238: a child account not in a Microsoft family
  "account_banned", // XSTS 2148916227: the Xbox account is banned
  "no_minecraft_profile", // GET /minecraft/profile 404: the account owns no Minecraft: Java Edition profile
  "upstream_unavailable", // an identity service kept failing (timeouts, 5xx, 429) after bounded retries
  "identity_error", // an identity service answered something unexpected (bad code, malformed response)
  "consent_denied", // the player pressed Deny on our consent page
] as const;
export type DenialCode = (typeof DENIAL_CODES)[number];

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
}

export interface McProfile {
  /** Lower-case UUID with dashes (Minecraft returns it without; the chain normalises). */
  id: string;
  name: string;
}

export type ChainResult = { ok: true; profile: McProfile } | { ok: false; error: DenialCode; detail?: string };
