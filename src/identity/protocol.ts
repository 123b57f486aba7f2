import { createHash } from "node:crypto";
import type { DenialCode, IdentityEndpoints } from "./types";

/**
 * What the chain client and the development identity provider must agree on: the paths the
 * provider serves (the same as Microsoft's, Xbox Live's and Minecraft's), the XSTS error
 * numbers, and the offline-mode UUID the provider gives each player name.
 */

/** Paths below a development provider's base URL, one per upstream endpoint. */
export const DEV_IDP_PATHS = {
  authorize: "/consumers/oauth2/v2.0/authorize",
  token: "/consumers/oauth2/v2.0/token",
  xblAuth: "/user/authenticate",
  xstsAuth: "/xsts/authorize",
  mcLogin: "/authentication/login_with_xbox",
  mcProfile: "/minecraft/profile",
} as const satisfies IdentityEndpoints;

/**
 * Xbox Live device authentication, which clients of the full Xbox sign-in (the official
 * launcher, prismarine-auth) call before XSTS. The service's chain does not need it.
 */
export const DEV_IDP_DEVICE_PATH = "/device/authenticate";

/** The development provider accepts any client id; the service uses this one. */
export const DEV_CLIENT_ID = "dev-client";

/**
 * Only what the chain needs: Xbox Live sign-in. No `offline_access`: the service keeps no token
 * after the profile is read, so it asks for no refresh token ("maintain access" on the consent
 * screen Microsoft shows the player).
 */
export const MS_SCOPE = "XboxLive.signin";

/** XSTS answers 401 with one of these `XErr` numbers when the account cannot play. */
export const XSTS_ERRORS: Readonly<Record<number, DenialCode>> = {
  2148916233: "no_xbox_profile",
  2148916235: "region_not_allowed",
  2148916236: "age_verification_required",
  2148916237: "age_verification_required",
  2148916238: "child_account",
  2148916229: "guardian_restricted",
  2148916234: "xbox_terms_not_accepted",
  2148916227: "account_banned",
};

/** Lower-case dashed form of a UUID given with or without dashes; undefined when it is not one. */
export function normaliseUuid(value: string): string | undefined {
  const hex = value.replace(/-/g, "").toLowerCase();
  if (!/^[0-9a-f]{32}$/.test(hex)) return undefined;
  if (value.includes("-") && !/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value))
    return undefined;
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * The UUID an offline-mode Minecraft server gives a name (Java's UUID.nameUUIDFromBytes of
 * "OfflinePlayer:<name>", a version 3 UUID), so development players keep the same id
 * across sign-ins and match what an offline test server would show.
 */
export function offlineUuid(name: string): string {
  const b = createHash("md5").update(`OfflinePlayer:${name}`, "utf8").digest();
  b[6] = (b[6]! & 0x0f) | 0x30;
  b[8] = (b[8]! & 0x3f) | 0x80;
  return normaliseUuid(b.toString("hex"))!;
}
