/** Why a sign-in ended in `denied`. Stable: launchers show their own text for each. */
export const DENIAL_CODES = [
  "access_denied", // the player cancelled or refused at the identity provider
  "no_xbox_profile", // XSTS 2148916233: Microsoft account without an Xbox profile
  "region_not_allowed", // XSTS 2148916235: Xbox Live is not available in the player's country
  "age_verification_required", // XSTS 2148916236 / 2148916237: adult verification (South Korea)
  "child_account", // XSTS 2148916238: a child account not in a Microsoft family
  "guardian_restricted", // XSTS 2148916229: a child account whose guardian has not allowed online play
  "xbox_terms_not_accepted", // XSTS 2148916234: the account has not accepted the Xbox terms of use
  "account_banned", // XSTS 2148916227: the Xbox account is banned
  "no_minecraft_profile", // GET /minecraft/profile 404: the account owns no Minecraft: Java Edition profile
  "upstream_unavailable", // an identity service kept failing (timeouts, 5xx, 429) after bounded retries
  "minecraft_api_not_approved", // login_with_xbox 403: the service's Azure app is not yet allowed to use the Minecraft API
  "client_secret_expired", // Microsoft token AADSTS7000222: the service's Azure client secret has expired
  "identity_error", // an identity service answered something unexpected (bad code, malformed response)
  "consent_denied", // the player pressed Deny on our consent page
] as const;
export type DenialCode = (typeof DENIAL_CODES)[number];
