import { createHash, randomBytes, randomUUID } from "node:crypto";
import { readRequestBody } from "../../lib/body";
import { AppError } from "../../lib/errors";
import type { Keyring } from "../../lib/keyring";
import { pkceChallenge } from "../chain";
import { DEV_IDP_DEVICE_PATH, DEV_IDP_PATHS, MS_SCOPE, offlineUuid } from "../protocol";
import { GrantTokens, type GrantStore, newGrantId, userHash } from "./grants";
import {
  CODE_TTL_MS,
  isOutcome,
  MC_TOKEN_TTL_S,
  MS_TOKEN_TTL_S,
  outcomeXErr,
  USERNAME,
  XBOX_TOKEN_TTL_MS,
  XSTS_REDIRECT,
} from "./outcomes";
import { authorizeParams, errorPage, redirectTo, signInPage } from "./page";

/**
 * The development identity provider: Microsoft's authorize and token endpoints, Xbox Live
 * user.auth, XSTS and the Minecraft services, with the same paths and response shapes, as
 * one HTTP handler. The sign-in page lets a developer pick any player name and any outcome
 * the real chain can produce, so every branch of the login flow can be exercised for real.
 * It authenticates nobody: never expose it where real accounts matter.
 */

const MAX_BODY_BYTES = 16 * 1024;

function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json; charset=utf-8", "cache-control": "no-store", ...headers },
  });
}

const oauthError = (error: string, description: string) => json(400, { error, error_description: description });

/** Xbox Live answers an unusable token with an empty 401. */
const xboxUnauthorized = () => new Response(null, { status: 401 });

function mcError(status: number, path: string, error: string, errorMessage: string): Response {
  return json(status, { path, errorType: error, error, errorMessage });
}

/** Reads a bounded body of the expected media type; a Response means refuse with it. */
async function readBody(
  req: Request,
  type: "application/x-www-form-urlencoded" | "application/json",
): Promise<string | Response> {
  const refuse = (status: number, message: string) =>
    type === "application/json" ? json(status, { error: message }) : errorPage(status, message);
  if (Number(req.headers.get("content-length") ?? 0) > MAX_BODY_BYTES) return refuse(413, "The body is too large.");
  if (!(req.headers.get("content-type") ?? "").toLowerCase().startsWith(type))
    return refuse(415, `Send the body as ${type}.`);
  try {
    return new TextDecoder().decode(await readRequestBody(req, MAX_BODY_BYTES));
  } catch (err) {
    if (err instanceof AppError && err.appCode === "payload_too_large") return refuse(413, "The body is too large.");
    throw err;
  }
}

// biome-ignore lint/suspicious/noExplicitAny: request bodies of the emulated upstream APIs, read field by field
type UpstreamBody = Record<string, any>;

async function readJson(req: Request): Promise<UpstreamBody | Response> {
  const text = await readBody(req, "application/json");
  if (text instanceof Response) return text;
  try {
    const value: unknown = JSON.parse(text);
    if (value && typeof value === "object" && !Array.isArray(value)) return value as UpstreamBody;
  } catch {
    // falls through to the 400 below
  }
  return json(400, { error: "The body must be a JSON object." });
}

/**
 * An Xbox Live request body. Xbox reads the body as JSON whatever the Content-Type says, and
 * clients rely on it (prismarine-auth sends XSTS and device requests with none); what does not
 * parse gets Xbox's empty 400.
 */
async function readXboxJson(req: Request): Promise<UpstreamBody | Response> {
  if (Number(req.headers.get("content-length") ?? 0) > MAX_BODY_BYTES) return new Response(null, { status: 413 });
  let text: string;
  try {
    text = new TextDecoder().decode(await readRequestBody(req, MAX_BODY_BYTES));
  } catch (err) {
    if (err instanceof AppError && err.appCode === "payload_too_large") return new Response(null, { status: 413 });
    throw err;
  }
  try {
    const value: unknown = JSON.parse(text);
    if (value && typeof value === "object" && !Array.isArray(value)) return value as UpstreamBody;
  } catch {
    // falls through to the 400 below
  }
  return new Response(null, { status: 400 });
}

/** A ProofKey as Xbox requires one: the client's P-256 public key as a JWK. */
function isProofKey(k: unknown): boolean {
  const key = k as Record<string, unknown> | null;
  return Boolean(
    key &&
      typeof key === "object" &&
      key.kty === "EC" &&
      key.crv === "P-256" &&
      typeof key.x === "string" &&
      typeof key.y === "string",
  );
}

function xboxToken(token: string, uhs: string, ttlMs: number) {
  const now = Date.now();
  return {
    IssueInstant: new Date(now).toISOString(),
    NotAfter: new Date(now + ttlMs).toISOString(),
    Token: token,
    DisplayClaims: { xui: [{ uhs }] },
  };
}

export interface DevProvider {
  fetch(req: Request): Promise<Response>;
}

/** Microsoft's answer to a token request signed with an expired client secret. */
function secretExpired(clientId: string): Response {
  const description = `AADSTS7000222: The provided client secret keys for app '${clientId}' are expired. Visit the Azure portal to create new keys for your app: https://aka.ms/NewClientSecret, or consider using certificate credentials for added security: https://aka.ms/certCreds.`;
  return json(401, {
    error: "invalid_client",
    error_description: description,
    error_codes: [7000222],
    error_uri: "https://login.microsoftonline.com/error?code=7000222",
  });
}

/**
 * The active skin (and cape) a profile shows, as Minecraft services give them: every profile has
 * one ACTIVE skin; the texture hash is derived from the name, so it is stable per player.
 */
function devTextures(username: string, outcome: string) {
  const hash = (salt: string) => createHash("sha256").update(`${salt}:${username}`).digest("hex");
  const slim = outcome === "success_slim_cape";
  return {
    skins: [
      {
        id: uuidFromHex(hash("skin-id")),
        state: "ACTIVE",
        url: `http://textures.minecraft.net/texture/${hash("skin")}`,
        textureKey: hash("skin"),
        variant: slim ? "SLIM" : "CLASSIC",
      },
    ],
    capes: slim
      ? [
          {
            id: uuidFromHex(hash("cape-id")),
            state: "ACTIVE",
            url: `http://textures.minecraft.net/texture/${hash("cape")}`,
            alias: "Migrator",
          },
        ]
      : [],
  };
}

const uuidFromHex = (hex: string) =>
  `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20, 32)}`;

export interface DevProviderOptions {
  /**
   * Client secrets this provider treats as expired: a token request with one answers 401
   * `invalid_client` AADSTS7000222, whatever the code, as Microsoft does once a secret lapses.
   */
  expiredSecrets?: readonly string[];
  basePath?: string;
  /** Signs codes and tokens; instances that share it accept each other's. */
  keyring: Keyring;
  /** Single-use codes and the one `flaky` 429, shared by the instances. */
  store: GrantStore;
}

export function createDevProvider(opts: DevProviderOptions): DevProvider {
  const basePath = (opts.basePath ?? "").replace(/\/+$/, "");
  const tokens = new GrantTokens(opts.keyring);
  const { store } = opts;

  function authorizePage(url: URL): Response {
    const params = authorizeParams((n) => url.searchParams.get(n), true);
    if (typeof params === "string") return errorPage(400, params);
    return signInPage(params);
  }

  async function authorizeSubmit(req: Request): Promise<Response> {
    const text = await readBody(req, "application/x-www-form-urlencoded");
    if (text instanceof Response) return text;
    const form = new URLSearchParams(text);
    const params = authorizeParams((n) => form.get(n), false);
    if (typeof params === "string") return errorPage(400, params);
    const outcome = form.get("outcome") ?? "success";
    if (form.get("action") === "cancel" || outcome === "access_denied") {
      return redirectTo(params.redirect_uri, {
        error: "access_denied",
        error_description: "The user has denied access to the scope requested by the client application.",
        state: params.state,
      });
    }
    const username = (form.get("username") ?? "").trim();
    if (!USERNAME.test(username)) {
      return signInPage(params, {
        username,
        outcome,
        error: "A player name is 3 to 16 letters, digits or underscores.",
      });
    }
    if (!isOutcome(outcome)) return signInPage(params, { username, error: "Choose one of the listed outcomes." });
    const code = tokens.issueCode(
      {
        grant: newGrantId(),
        username,
        outcome,
        clientId: params.client_id,
        redirectUri: params.redirect_uri,
        codeChallenge: params.code_challenge,
      },
      CODE_TTL_MS,
    );
    return redirectTo(params.redirect_uri, { code, state: params.state });
  }

  async function token(req: Request): Promise<Response> {
    const text = await readBody(req, "application/x-www-form-urlencoded");
    if (text instanceof Response)
      return json(text.status, { error: "invalid_request", error_description: "Send a form body under 16 KiB." });
    const form = new URLSearchParams(text);
    if (form.get("grant_type") !== "authorization_code")
      return oauthError("unsupported_grant_type", "Only authorization_code is supported.");
    const secret = form.get("client_secret");
    if (secret !== null && opts.expiredSecrets?.includes(secret)) return secretExpired(form.get("client_id") ?? "");
    const pending = tokens.readCode(form.get("code") ?? "");
    // Microsoft judges the client's credentials before the code, so the code stays unredeemed.
    if (pending?.outcome === "client_secret_expired") return secretExpired(pending.clientId);
    // Claimed before the other checks, as Microsoft does: a failed redemption burns the code too.
    if (!pending || !(await store.claim(`code:${pending.grant}`, pending.expires)))
      return oauthError("invalid_grant", "The code is unknown, expired or already redeemed.");
    if (pending.clientId !== form.get("client_id"))
      return oauthError("invalid_grant", "The code was issued to another client.");
    if (pending.redirectUri !== form.get("redirect_uri"))
      return oauthError("invalid_grant", "redirect_uri does not match the authorize request.");
    const verifier = form.get("code_verifier") ?? "";
    if (!/^[A-Za-z0-9._~-]{43,128}$/.test(verifier) || pkceChallenge(verifier) !== pending.codeChallenge) {
      return oauthError("invalid_grant", "The code_verifier does not match the code_challenge.");
    }
    return json(200, {
      token_type: "Bearer",
      scope: MS_SCOPE,
      expires_in: MS_TOKEN_TTL_S,
      access_token: tokens.issue("ms", pending, MS_TOKEN_TTL_S * 1000),
      // Not redeemable here: the service keeps no upstream tokens, so it never refreshes.
      refresh_token: `dev_rt_${randomBytes(32).toString("base64url")}`,
    });
  }

  async function xblAuthenticate(req: Request): Promise<Response> {
    const body = await readXboxJson(req);
    if (body instanceof Response) return body;
    const props = body.Properties ?? {};
    if (
      body.RelyingParty !== "http://auth.xboxlive.com" ||
      body.TokenType !== "JWT" ||
      props.AuthMethod !== "RPS" ||
      props.SiteName !== "user.auth.xboxlive.com"
    ) {
      return new Response(null, { status: 400 });
    }
    const ticket =
      typeof props.RpsTicket === "string" && props.RpsTicket.startsWith("d=") ? props.RpsTicket.slice(2) : "";
    const player = tokens.read("ms", ticket);
    if (!player) return xboxUnauthorized();
    if (player.outcome === "upstream_unavailable") return new Response(null, { status: 503 });
    if (player.outcome === "flaky" && (await store.claim(`flaky:${player.grant}`, player.expires))) {
      return new Response(null, { status: 429, headers: { "retry-after": "0" } });
    }
    return json(
      200,
      xboxToken(tokens.issue("xbl", player, XBOX_TOKEN_TTL_MS), userHash(player.username), XBOX_TOKEN_TTL_MS),
    );
  }

  /** Device authentication: a token for the client's device, bound to nothing but its key. */
  async function deviceAuthenticate(req: Request): Promise<Response> {
    const body = await readXboxJson(req);
    if (body instanceof Response) return body;
    const props = body.Properties ?? {};
    if (
      body.RelyingParty !== "http://auth.xboxlive.com" ||
      body.TokenType !== "JWT" ||
      props.AuthMethod !== "ProofOfPossession" ||
      typeof props.Id !== "string" ||
      typeof props.DeviceType !== "string" ||
      !isProofKey(props.ProofKey)
    ) {
      return new Response(null, { status: 400 });
    }
    const did = createHash("sha256").update(`did:${props.Id}`).digest("hex").slice(0, 16).toUpperCase();
    const now = Date.now();
    return json(200, {
      IssueInstant: new Date(now).toISOString(),
      NotAfter: new Date(now + XBOX_TOKEN_TTL_MS).toISOString(),
      Token: tokens.issueDevice(did, XBOX_TOKEN_TTL_MS),
      DisplayClaims: { xdi: { did, dcs: "0" } },
    });
  }

  async function xstsAuthorize(req: Request): Promise<Response> {
    const body = await readXboxJson(req);
    if (body instanceof Response) return body;
    const props = body.Properties ?? {};
    if (
      body.RelyingParty !== "rp://api.minecraftservices.com/" ||
      body.TokenType !== "JWT" ||
      props.SandboxId !== "RETAIL" ||
      !Array.isArray(props.UserTokens)
    ) {
      return new Response(null, { status: 400 });
    }
    const player = typeof props.UserTokens[0] === "string" ? tokens.read("xbl", props.UserTokens[0]) : undefined;
    if (!player) return xboxUnauthorized();
    // Optional, but when a device token is sent it must be one Xbox issued.
    if (
      props.DeviceToken !== undefined &&
      !(typeof props.DeviceToken === "string" && tokens.readDevice(props.DeviceToken))
    )
      return xboxUnauthorized();
    const xerr = outcomeXErr(player.outcome);
    if (xerr) {
      return json(401, {
        Identity: "0",
        XErr: xerr,
        Message: "",
        Redirect: XSTS_REDIRECT[xerr] ?? "https://start.ui.xboxlive.com/Help",
      });
    }
    return json(
      200,
      xboxToken(tokens.issue("xsts", player, XBOX_TOKEN_TTL_MS), userHash(player.username), XBOX_TOKEN_TTL_MS),
    );
  }

  async function mcLogin(req: Request): Promise<Response> {
    const body = await readJson(req);
    if (body instanceof Response) return body;
    const match = typeof body.identityToken === "string" ? /^XBL3\.0 x=([^;]+);(.+)$/.exec(body.identityToken) : null;
    const player = match ? tokens.read("xsts", match[2]!) : undefined;
    if (!player || userHash(player.username) !== match![1]) {
      return mcError(401, DEV_IDP_PATHS.mcLogin, "UNAUTHORIZED", "Invalid identity token.");
    }
    // What Mojang answers an Azure app it has not approved for the Minecraft API.
    if (player.outcome === "minecraft_api_not_approved")
      return json(403, {
        path: DEV_IDP_PATHS.mcLogin,
        errorMessage: "Invalid app registration, see https://aka.ms/AppRegInfo for more information",
      });
    return json(200, {
      username: randomUUID(),
      roles: [],
      access_token: tokens.issue("mc", player, MC_TOKEN_TTL_S * 1000),
      token_type: "Bearer",
      expires_in: MC_TOKEN_TTL_S,
    });
  }

  function mcProfile(req: Request): Response {
    const auth = req.headers.get("authorization") ?? "";
    const player = auth.startsWith("Bearer ") ? tokens.read("mc", auth.slice(7)) : undefined;
    if (!player)
      return mcError(401, DEV_IDP_PATHS.mcProfile, "UNAUTHORIZED", "The access token is missing, invalid or expired.");
    if (player.outcome === "no_minecraft_profile") {
      return mcError(
        404,
        DEV_IDP_PATHS.mcProfile,
        "NOT_FOUND",
        "The server has not found anything matching the request URI",
      );
    }
    return json(200, {
      id: offlineUuid(player.username).replace(/-/g, ""),
      name: player.username,
      ...devTextures(player.username, player.outcome),
    });
  }

  const routes: Record<string, Partial<Record<string, (req: Request, url: URL) => Response | Promise<Response>>>> = {
    [DEV_IDP_PATHS.authorize]: { GET: (_req, url) => authorizePage(url), POST: authorizeSubmit },
    [DEV_IDP_PATHS.token]: { POST: token },
    [DEV_IDP_PATHS.xblAuth]: { POST: xblAuthenticate },
    [DEV_IDP_DEVICE_PATH]: { POST: deviceAuthenticate },
    [DEV_IDP_PATHS.xstsAuth]: { POST: xstsAuthorize },
    [DEV_IDP_PATHS.mcLogin]: { POST: mcLogin },
    [DEV_IDP_PATHS.mcProfile]: { GET: mcProfile },
  };

  return {
    async fetch(req) {
      const url = new URL(req.url);
      const path = url.pathname.startsWith(`${basePath}/`) ? url.pathname.slice(basePath.length) : undefined;
      const route = path === undefined ? undefined : routes[path];
      if (!route) return json(404, { error: "not_found" });
      const handler = route[req.method];
      if (!handler) return json(405, { error: "method_not_allowed" }, { allow: Object.keys(route).join(", ") });
      try {
        return await handler(req, url);
      } catch {
        // Never a stack trace, even in development: the page is shown to players.
        return json(500, { error: "internal" });
      }
    },
  };
}
