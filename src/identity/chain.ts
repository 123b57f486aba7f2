import { createHash, randomBytes } from "node:crypto";
import pRetry from "p-retry";
import { z } from "zod";
import type { Config } from "../config";
import { DEV_CLIENT_ID, DEV_IDP_PATHS, MS_SCOPE, normaliseUuid, XSTS_ERRORS } from "./protocol";
import type { ChainResult, DenialCode, IdentityConfig, IdentityEndpoints, IdentityProvider, McTextures } from "./types";

/**
 * The production identity chain: Microsoft OAuth code -> Microsoft token -> Xbox Live user
 * token -> XSTS token -> Minecraft access token -> Minecraft profile. Every token lives only
 * inside one runChain call; the caller gets the profile and nothing else.
 */

/** The development provider's base URL when one is in use, else undefined (real Microsoft). */
function devIdpBase(config: Config): string | undefined {
  if (config.DEV_IDP_URL) return config.DEV_IDP_URL.replace(/\/+$/, "");
  if (config.DEV_IDP_ENABLED) return `${config.PUBLIC_URL}/dev-idp`;
  return undefined;
}

/** The provider that authenticates players under this configuration. */
export function identityProviderOf(config: Config): IdentityProvider {
  return devIdpBase(config) ? "development" : "microsoft";
}

export function identityEndpoints(config: Config): IdentityEndpoints {
  const base = devIdpBase(config);
  if (base) {
    return {
      authorize: base + DEV_IDP_PATHS.authorize,
      token: base + DEV_IDP_PATHS.token,
      xblAuth: base + DEV_IDP_PATHS.xblAuth,
      xstsAuth: base + DEV_IDP_PATHS.xstsAuth,
      mcLogin: base + DEV_IDP_PATHS.mcLogin,
      mcProfile: base + DEV_IDP_PATHS.mcProfile,
    };
  }
  return {
    authorize: config.MS_AUTHORIZE_URL,
    token: config.MS_TOKEN_URL,
    xblAuth: config.XBL_AUTH_URL,
    xstsAuth: config.XSTS_AUTH_URL,
    mcLogin: config.MC_LOGIN_URL,
    mcProfile: config.MC_PROFILE_URL,
  };
}

export function identityConfig(config: Config): IdentityConfig {
  const endpoints = identityEndpoints(config);
  const common = { endpoints, timeoutMs: config.IDENTITY_TIMEOUT_MS, retries: config.IDENTITY_RETRIES };
  if (devIdpBase(config)) return { clientId: DEV_CLIENT_ID, ...common };
  // parseConfig refuses this combination; the check keeps a hand-built Config honest.
  if (!config.MS_CLIENT_ID) throw new Error("MS_CLIENT_ID is required when the development identity provider is off");
  return {
    clientId: config.MS_CLIENT_ID,
    ...(config.MS_CLIENT_SECRET && { clientSecret: config.MS_CLIENT_SECRET }),
    ...common,
  };
}

/** The Microsoft consumer authorize URL the browser is sent to. */
export function authorizeUrl(
  cfg: IdentityConfig,
  p: { redirectUri: string; state: string; codeChallenge: string },
): string {
  const url = new URL(cfg.endpoints.authorize);
  const params = {
    client_id: cfg.clientId,
    response_type: "code",
    redirect_uri: p.redirectUri,
    scope: MS_SCOPE,
    state: p.state,
    code_challenge: p.codeChallenge,
    code_challenge_method: "S256",
    // Lets a player with several Microsoft accounts pick the one that owns Minecraft.
    prompt: "select_account",
  };
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  return url.toString();
}

/** RFC 7636 S256: a 43-character verifier from 32 random bytes and its SHA-256 challenge. */
export function pkcePair(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString("base64url");
  return { verifier, challenge: pkceChallenge(verifier) };
}

export function pkceChallenge(verifier: string): string {
  return createHash("sha256").update(verifier, "ascii").digest("base64url");
}

/** Ends the chain early with a denial; `detail` is short and never holds a token. */
class ChainFailure extends Error {
  constructor(
    readonly code: DenialCode,
    readonly detail: string,
  ) {
    super(detail);
  }
}

interface Answer {
  status: number;
  text: string;
}

/** First backoff 100-200 ms, doubling, at most 2 s: equal jitter, so callers retrying at once spread out. */
const BACKOFF = { minTimeout: 100, factor: 2, maxTimeout: 2000, randomize: true } as const;
/** A Retry-After longer than this is not worth holding a player's browser for. */
const RETRY_AFTER_MAX_MS = 5000;

function retryAfterMs(header: string | null): number | undefined {
  if (header === null) return undefined;
  const seconds = Number(header);
  if (header.trim() !== "" && Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/** An attempt worth repeating: a timeout, a network error, a 429 or a 5xx. */
class TransientFailure extends Error {
  constructor(
    readonly reason: string,
    readonly retryAfterMs?: number,
  ) {
    super(reason);
  }
}

/**
 * One upstream call with bounded retries. Timeouts, network errors, 429 and 5xx are retried;
 * any other answer is returned for the step to judge. The timeout covers reading the body.
 */
async function call(cfg: IdentityConfig, step: string, url: string, init: RequestInit): Promise<Answer> {
  let attempts = 0;
  try {
    return await pRetry(
      async () => {
        attempts++;
        let res: Response;
        let text: string;
        try {
          res = await (cfg.transport ?? fetch)(url, {
            ...init,
            redirect: "manual",
            signal: AbortSignal.timeout(cfg.timeoutMs),
          });
          text = await res.text();
        } catch (err) {
          const name = err instanceof Error ? err.name : "";
          throw new TransientFailure(
            name === "TimeoutError" || name === "AbortError" ? `timed out after ${cfg.timeoutMs} ms` : "network error",
          );
        }
        if (res.status !== 429 && res.status < 500) return { status: res.status, text };
        throw new TransientFailure(
          `HTTP ${res.status}`,
          res.status === 429 ? retryAfterMs(res.headers.get("retry-after")) : undefined,
        );
      },
      {
        retries: cfg.retries,
        ...BACKOFF,
        // Retry-After sets the least wait (capped): p-retry's own backoff counts toward it.
        onFailedAttempt: async ({ error, retriesLeft, retryDelay }) => {
          const asked = error instanceof TransientFailure ? error.retryAfterMs : undefined;
          if (asked === undefined || retriesLeft === 0) return;
          const extra = Math.min(asked, RETRY_AFTER_MAX_MS) - retryDelay;
          if (extra > 0) await Bun.sleep(extra);
        },
      },
    );
  } catch (err) {
    if (!(err instanceof TransientFailure)) throw err;
    throw new ChainFailure(
      "upstream_unavailable",
      `${step}: ${err.reason} (${attempts} attempt${attempts === 1 ? "" : "s"})`,
    );
  }
}

function parse<S extends z.ZodType>(step: string, answer: Answer, schema: S): z.infer<S> {
  let value: unknown;
  try {
    value = JSON.parse(answer.text);
  } catch {
    throw new ChainFailure("identity_error", `${step}: HTTP ${answer.status} with a body that is not JSON`);
  }
  const result = schema.safeParse(value);
  if (!result.success) throw new ChainFailure("identity_error", `${step}: unexpected response shape`);
  return result.data;
}

/** An upstream error code is echoed into `detail` only when it looks like one. */
function errorCode(text: string): string | undefined {
  try {
    const code = (JSON.parse(text) as { error?: unknown }).error;
    return typeof code === "string" && /^[A-Za-z0-9_.-]{1,64}$/.test(code) ? code : undefined;
  } catch {
    return undefined;
  }
}

/** Microsoft's "client secret keys are expired" (AADSTS7000222). */
export const AADSTS_SECRET_EXPIRED = 7000222;
/** Microsoft's "invalid client secret" (AADSTS7000215): not the secret's value, or not this app's. */
export const AADSTS_SECRET_INVALID = 7000215;

/** The AADSTS numbers of a Microsoft identity platform error body (`error_codes`, else from the description). */
export function aadErrorCodes(text: string): number[] {
  try {
    const body = JSON.parse(text) as { error_codes?: unknown; error_description?: unknown };
    if (Array.isArray(body.error_codes)) return body.error_codes.filter((c): c is number => Number.isInteger(c));
    const m = typeof body.error_description === "string" ? /^AADSTS(\d{1,9}):/.exec(body.error_description) : null;
    return m ? [Number(m[1])] : [];
  } catch {
    return [];
  }
}

function unexpected(step: string, answer: Answer): ChainFailure {
  const code = errorCode(answer.text);
  return new ChainFailure("identity_error", `${step}: HTTP ${answer.status}${code ? ` ${code}` : ""}`);
}

const JSON_HEADERS = { "content-type": "application/json", accept: "application/json" };

const ZMsToken = z.object({ access_token: z.string().min(1) });
const ZXboxToken = z.object({
  Token: z.string().min(1),
  DisplayClaims: z.object({ xui: z.array(z.object({ uhs: z.string().min(1) })).min(1) }),
});
const ZXstsError = z.object({ XErr: z.coerce.number() });
const ZMcLogin = z.object({ access_token: z.string().min(1) });
const ZMcProfile = z.object({
  id: z.string(),
  name: z.string().min(1).max(64),
  skins: z.unknown().optional(),
  capes: z.unknown().optional(),
});

/** Texture URLs are passed on to client apps: only Mojang's texture host, over http(s), no odd characters. */
const ZTextureUrl = z
  .string()
  .max(256)
  .regex(/^https?:\/\/textures\.minecraft\.net\/texture\/[0-9a-f]{1,128}$/);
const ZActive = z.object({ state: z.literal("ACTIVE"), url: ZTextureUrl });
const ZSkin = ZActive.extend({ variant: z.enum(["CLASSIC", "SLIM"]) });
const ZCape = ZActive.extend({ alias: z.string().max(64).nullish() });

/**
 * The ACTIVE skin and cape of a profile. Lenient: a list that is missing or malformed, or a texture
 * outside Mojang's host, reads as none; it never fails a sign-in.
 */
export function activeTextures(skins: unknown, capes: unknown): McTextures {
  const first = <S extends z.ZodType>(list: unknown, schema: S): z.infer<S> | undefined => {
    if (!Array.isArray(list)) return undefined;
    for (const item of list.slice(0, 64)) {
      const r = schema.safeParse(item);
      if (r.success) return r.data;
    }
    return undefined;
  };
  const skin = first(skins, ZSkin);
  const cape = first(capes, ZCape);
  return {
    skin: skin ? { url: skin.url, variant: skin.variant } : null,
    cape: cape ? { url: cape.url, alias: cape.alias ?? null } : null,
  };
}

async function exchangeCode(
  cfg: IdentityConfig,
  p: { code: string; redirectUri: string; codeVerifier: string },
): Promise<string> {
  const form = new URLSearchParams({
    grant_type: "authorization_code",
    code: p.code,
    redirect_uri: p.redirectUri,
    client_id: cfg.clientId,
    code_verifier: p.codeVerifier,
    scope: MS_SCOPE,
  });
  if (cfg.clientSecret) form.set("client_secret", cfg.clientSecret);
  const answer = await call(cfg, "microsoft token", cfg.endpoints.token, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
    body: form.toString(),
  });
  if (answer.status !== 200) {
    if (aadErrorCodes(answer.text).includes(AADSTS_SECRET_EXPIRED))
      throw new ChainFailure(
        "client_secret_expired",
        `microsoft token: HTTP ${answer.status} AADSTS${AADSTS_SECRET_EXPIRED}`,
      );
    throw unexpected("microsoft token", answer);
  }
  return parse("microsoft token", answer, ZMsToken).access_token;
}

async function xboxUserToken(cfg: IdentityConfig, msAccessToken: string) {
  const answer = await call(cfg, "xbox live", cfg.endpoints.xblAuth, {
    method: "POST",
    headers: { ...JSON_HEADERS, "x-xbl-contract-version": "1" },
    body: JSON.stringify({
      Properties: { AuthMethod: "RPS", SiteName: "user.auth.xboxlive.com", RpsTicket: `d=${msAccessToken}` },
      RelyingParty: "http://auth.xboxlive.com",
      TokenType: "JWT",
    }),
  });
  if (answer.status !== 200) throw unexpected("xbox live", answer);
  const body = parse("xbox live", answer, ZXboxToken);
  return { token: body.Token, uhs: body.DisplayClaims.xui[0]!.uhs };
}

async function xstsToken(cfg: IdentityConfig, xblToken: string) {
  const answer = await call(cfg, "xsts", cfg.endpoints.xstsAuth, {
    method: "POST",
    headers: { ...JSON_HEADERS, "x-xbl-contract-version": "1" },
    body: JSON.stringify({
      Properties: { SandboxId: "RETAIL", UserTokens: [xblToken] },
      RelyingParty: "rp://api.minecraftservices.com/",
      TokenType: "JWT",
    }),
  });
  if (answer.status === 401) {
    const xerr = parse("xsts", answer, ZXstsError).XErr;
    throw new ChainFailure(XSTS_ERRORS[xerr] ?? "identity_error", `xsts: XErr ${xerr}`);
  }
  if (answer.status !== 200) throw unexpected("xsts", answer);
  const body = parse("xsts", answer, ZXboxToken);
  return { token: body.Token, uhs: body.DisplayClaims.xui[0]!.uhs };
}

async function minecraftToken(cfg: IdentityConfig, xsts: { token: string; uhs: string }): Promise<string> {
  const answer = await call(cfg, "minecraft login", cfg.endpoints.mcLogin, {
    method: "POST",
    headers: JSON_HEADERS,
    body: JSON.stringify({ identityToken: `XBL3.0 x=${xsts.uhs};${xsts.token}` }),
  });
  // Mojang answers 403 until it has approved the Azure app for the Minecraft API
  // ("Invalid app registration, see https://aka.ms/AppRegInfo").
  if (answer.status === 403) throw new ChainFailure("minecraft_api_not_approved", "minecraft login: HTTP 403");
  if (answer.status !== 200) throw unexpected("minecraft login", answer);
  return parse("minecraft login", answer, ZMcLogin).access_token;
}

async function minecraftProfile(cfg: IdentityConfig, mcAccessToken: string) {
  const answer = await call(cfg, "minecraft profile", cfg.endpoints.mcProfile, {
    method: "GET",
    headers: { authorization: `Bearer ${mcAccessToken}`, accept: "application/json" },
  });
  if (answer.status === 404) throw new ChainFailure("no_minecraft_profile", "minecraft profile: HTTP 404");
  if (answer.status !== 200) throw unexpected("minecraft profile", answer);
  const body = parse("minecraft profile", answer, ZMcProfile);
  const id = normaliseUuid(body.id);
  if (!id) throw new ChainFailure("identity_error", "minecraft profile: id is not a UUID");
  return { id, name: body.name, textures: activeTextures(body.skins, body.capes) };
}

/**
 * Runs the whole chain for an authorization code. Never throws for an upstream problem: every
 * failure becomes a denial code the login flow records.
 */
export async function runChain(
  cfg: IdentityConfig,
  p: { code: string; redirectUri: string; codeVerifier: string },
): Promise<ChainResult> {
  try {
    const msAccessToken = await exchangeCode(cfg, p);
    const xbl = await xboxUserToken(cfg, msAccessToken);
    const xsts = await xstsToken(cfg, xbl.token);
    const mcAccessToken = await minecraftToken(cfg, xsts);
    return { ok: true, profile: await minecraftProfile(cfg, mcAccessToken) };
  } catch (err) {
    if (err instanceof ChainFailure) return { ok: false, error: err.code, detail: err.detail };
    throw err;
  }
}
