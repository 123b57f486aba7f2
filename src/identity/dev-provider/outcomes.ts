/** What the sign-in page offers; `value` is what the form's `outcome` field carries. */
export const DEV_IDP_OUTCOMES = [
  { value: "success", label: "Success: signed in, owns Minecraft" },
  { value: "success_slim_cape", label: "Success, with a slim skin and a cape" },
  { value: "no_xbox_profile", label: "No Xbox profile (XSTS 2148916233)", xerr: 2148916233 },
  { value: "region_not_allowed", label: "Xbox Live not available in the country (XSTS 2148916235)", xerr: 2148916235 },
  { value: "age_verification_required", label: "Adult verification required (XSTS 2148916236)", xerr: 2148916236 },
  {
    value: "age_verification_required_2148916237",
    label: "Age verification / playtime limit (XSTS 2148916237)",
    xerr: 2148916237,
  },
  { value: "child_account", label: "Child account not in a family (XSTS 2148916238)", xerr: 2148916238 },
  {
    value: "guardian_restricted",
    label: "Child account, guardian has not allowed online play (XSTS 2148916229)",
    xerr: 2148916229,
  },
  { value: "xbox_terms_not_accepted", label: "Xbox terms of use not accepted (XSTS 2148916234)", xerr: 2148916234 },
  { value: "account_banned", label: "Xbox account banned (XSTS 2148916227)", xerr: 2148916227 },
  { value: "no_minecraft_profile", label: "No Minecraft: Java Edition profile (404)" },
  {
    value: "minecraft_api_not_approved",
    label: "App not yet approved for the Minecraft API (403 from login_with_xbox)",
  },
  { value: "client_secret_expired", label: "The app's client secret has expired (AADSTS7000222 at the token step)" },
  { value: "upstream_unavailable", label: "Xbox Live unavailable (503 on every call)" },
  { value: "flaky", label: "Flaky: one 429 from Xbox Live, then success" },
  { value: "access_denied", label: "Cancel at the provider (error=access_denied)" },
] as const;
export type DevOutcome = (typeof DEV_IDP_OUTCOMES)[number]["value"];

const OUTCOME_BY_VALUE = new Map<string, (typeof DEV_IDP_OUTCOMES)[number]>(DEV_IDP_OUTCOMES.map((o) => [o.value, o]));

export function isOutcome(value: string): value is DevOutcome {
  return OUTCOME_BY_VALUE.has(value);
}

/** The XSTS error number an outcome stands for, if it is an XSTS refusal. */
export function outcomeXErr(outcome: DevOutcome): number | undefined {
  return (OUTCOME_BY_VALUE.get(outcome) as { xerr?: number }).xerr;
}

export const XSTS_REDIRECT: Record<number, string> = {
  2148916233: "https://start.ui.xboxlive.com/CreateAccount",
  2148916238: "https://start.ui.xboxlive.com/AddChildToFamily",
  2148916229: "https://account.microsoft.com/family/",
  2148916234: "https://start.ui.xboxlive.com/AcceptTermsOfUse",
};

export const CODE_TTL_MS = 5 * 60_000;
export const MS_TOKEN_TTL_S = 3600;
export const XBOX_TOKEN_TTL_MS = 16 * 3600_000;
export const MC_TOKEN_TTL_S = 86_400;
export const USERNAME = /^[A-Za-z0-9_]{3,16}$/;
