import { createHash, randomBytes, randomUUID } from "node:crypto";
import { escapeHtml } from "../lib/html";
import { createLogger } from "../lib/log";
import { AppError } from "../lib/errors";
import { readLimited } from "../lib/body";
import { pkceChallenge } from "./chain";
import { DEV_IDP_PATHS, MS_SCOPE, offlineUuid } from "./protocol";

/**
 * The development identity provider: Microsoft's authorize and token endpoints, Xbox Live
 * user.auth, XSTS and the Minecraft services, with the same paths and response shapes, as
 * one HTTP handler. The sign-in page lets a developer pick any player name and any outcome
 * the real chain can produce, so every branch of the login flow can be exercised for real.
 * It authenticates nobody: never expose it where real accounts matter.
 */

/** What the sign-in page offers; `value` is what the form's `outcome` field carries. */
export const DEV_IDP_OUTCOMES = [
  { value: "success", label: "Success: signed in, owns Minecraft" },
  { value: "no_xbox_profile", label: "No Xbox profile (XSTS 2148916233)", xerr: 2148916233 },
  { value: "region_not_allowed", label: "Xbox Live not available in the country (XSTS 2148916235)", xerr: 2148916235 },
  { value: "age_verification_required", label: "Adult verification required (XSTS 2148916236)", xerr: 2148916236 },
  {
    value: "age_verification_required_2148916237",
    label: "Age verification / playtime limit (XSTS 2148916237)",
    xerr: 2148916237,
  },
  { value: "child_account", label: "Child account not in a family (XSTS 2148916238)", xerr: 2148916238 },
  { value: "account_banned", label: "Xbox account banned (XSTS 2148916227)", xerr: 2148916227 },
  { value: "no_minecraft_profile", label: "No Minecraft: Java Edition profile (404)" },
  { value: "upstream_unavailable", label: "Xbox Live unavailable (503 on every call)" },
  { value: "flaky", label: "Flaky: one 429 from Xbox Live, then success" },
  { value: "access_denied", label: "Cancel at the provider (error=access_denied)" },
] as const;
export type DevOutcome = (typeof DEV_IDP_OUTCOMES)[number]["value"];
const OUTCOME_BY_VALUE = new Map<string, (typeof DEV_IDP_OUTCOMES)[number]>(DEV_IDP_OUTCOMES.map((o) => [o.value, o]));

const XSTS_REDIRECT: Record<number, string> = {
  2148916233: "https://start.ui.xboxlive.com/CreateAccount",
  2148916238: "https://start.ui.xboxlive.com/AddChildToFamily",
};

const MAX_BODY_BYTES = 16 * 1024;
const CODE_TTL_MS = 5 * 60_000;
const MS_TOKEN_TTL_S = 3600;
const XBOX_TOKEN_TTL_MS = 16 * 3600_000;
const MC_TOKEN_TTL_S = 86_400;
/** Per store; a developer's machine never needs more, and a flood cannot grow memory past it. */
const MAX_ENTRIES = 10_000;
const USERNAME = /^[A-Za-z0-9_]{3,16}$/;

/** One signed-in player, shared by every token issued for that sign-in. */
interface Player {
  username: string;
  outcome: DevOutcome;
  uhs: string;
  /** For `flaky`: the one 429 has been served. */
  throttled: boolean;
}

interface PendingCode {
  clientId: string;
  redirectUri: string;
  codeChallenge: string;
  player: Player;
}

/** Opaque tokens mapped to values, with expiry and a size cap (oldest dropped first). */
class TokenStore<V> {
  private readonly items = new Map<string, { value: V; expires: number }>();

  constructor(
    private readonly prefix: string,
    private readonly ttlMs: number,
  ) {}

  issue(value: V): string {
    if (this.items.size >= MAX_ENTRIES) this.evict();
    const token = this.prefix + randomBytes(32).toString("base64url");
    this.items.set(token, { value, expires: Date.now() + this.ttlMs });
    return token;
  }

  get(token: string): V | undefined {
    const item = this.items.get(token);
    if (!item) return undefined;
    if (item.expires > Date.now()) return item.value;
    this.items.delete(token);
    return undefined;
  }

  /** Single use: whatever happens next, the token is gone. */
  take(token: string): V | undefined {
    const value = this.get(token);
    this.items.delete(token);
    return value;
  }

  private evict() {
    const now = Date.now();
    for (const [k, v] of this.items) if (v.expires <= now) this.items.delete(k);
    // Map iteration follows insertion order, so the first keys are the oldest.
    for (const k of this.items.keys()) {
      if (this.items.size < MAX_ENTRIES) break;
      this.items.delete(k);
    }
  }
}

// --- HTML -------------------------------------------------------------------------------

const CSS = `body{font:16px/1.5 system-ui,sans-serif;background:#f3f4f6;color:#111;margin:0}
main{max-width:28rem;margin:3rem auto;background:#fff;padding:2rem;border-radius:8px;box-shadow:0 1px 4px #0002}
h1{font-size:1.4rem;margin:0 0 .5rem}.note{color:#555;font-size:.9rem}.error{color:#b00020;font-weight:600}
label{display:block;margin-top:1rem;font-weight:600}input,select{width:100%;box-sizing:border-box;padding:.5rem;font:inherit}
.actions{display:flex;gap:.5rem;margin-top:1.5rem}button{flex:1;padding:.6rem;font:inherit;cursor:pointer}
code{word-break:break-all}`;
const CSS_HASH = `'sha256-${createHash("sha256").update(CSS).digest("base64")}'`;

/** `formTarget` is the validated redirect URI's origin, which the form submit redirects to. */
function htmlResponse(status: number, body: string, formTarget?: string): Response {
  const csp = [
    "default-src 'none'",
    `style-src ${CSS_HASH}`,
    // Browsers apply form-action to the redirect after the submit too, so the client's origin must be allowed.
    formTarget ? `form-action 'self' ${formTarget}` : "form-action 'none'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
  ].join("; ");
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sign in · development identity provider</title><style>${CSS}</style></head>
<body><main>${body}</main></body></html>`;
  return new Response(html, {
    status,
    headers: {
      "content-type": "text/html; charset=utf-8",
      "content-security-policy": csp,
      "x-frame-options": "DENY",
      "x-content-type-options": "nosniff",
      "referrer-policy": "no-referrer",
      "cache-control": "no-store",
    },
  });
}

function errorPage(status: number, message: string): Response {
  return htmlResponse(
    status,
    `<h1>Sign-in request refused</h1><p class="error">${escapeHtml(message)}</p>
<p class="note">The application that sent you here built an invalid sign-in request. You were not redirected back to it.</p>`,
  );
}

interface AuthorizeParams {
  client_id: string;
  redirect_uri: string;
  state: string;
  code_challenge: string;
  code_challenge_method: "S256";
}

function signInPage(p: AuthorizeParams, opts: { username?: string; outcome?: string; error?: string } = {}): Response {
  const hidden = (Object.keys(p) as (keyof AuthorizeParams)[])
    .map((k) => `<input type="hidden" name="${k}" value="${escapeHtml(p[k])}">`)
    .join("\n");
  const options = DEV_IDP_OUTCOMES.map(
    (o) =>
      `<option value="${o.value}"${o.value === (opts.outcome ?? "success") ? " selected" : ""}>${escapeHtml(o.label)}</option>`,
  ).join("");
  const origin = new URL(p.redirect_uri).origin;
  return htmlResponse(
    opts.error ? 400 : 200,
    `<h1>Sign in</h1>
<p class="note">Development identity provider: it stands in for Microsoft, Xbox Live and Minecraft services. No real account is used; pick any player name.</p>
<p>Application <code>${escapeHtml(p.client_id)}</code>, returning to <code>${escapeHtml(origin)}</code></p>
${opts.error ? `<p class="error" role="alert">${escapeHtml(opts.error)}</p>` : ""}
<form method="post" action="authorize" enctype="application/x-www-form-urlencoded">
${hidden}
<label for="username">Player name</label>
<input name="username" id="username" required minlength="3" maxlength="16" pattern="[A-Za-z0-9_]{3,16}" autocomplete="username" autofocus value="${escapeHtml(opts.username ?? "")}">
<label for="outcome">Outcome</label>
<select name="outcome" id="outcome">${options}</select>
<div class="actions"><button type="submit" name="action" value="signin">Sign in</button><button type="submit" name="action" value="cancel" formnovalidate>Cancel</button></div>
</form>`,
    origin,
  );
}

/**
 * Checks the authorize request; an error string means a 400 page and no redirect. The form
 * submit carries only the fields the page holds, so response_type is checked on the GET alone.
 */
function authorizeParams(get: (name: string) => string | null, isPage: boolean): AuthorizeParams | string {
  const clientId = get("client_id") ?? "";
  if (!clientId || clientId.length > 200) return "client_id is missing or too long.";
  if (isPage && get("response_type") !== "code") return "response_type must be code.";
  const redirectUri = get("redirect_uri") ?? "";
  let url: URL;
  try {
    url = new URL(redirectUri);
  } catch {
    return "redirect_uri must be an absolute URL.";
  }
  if (
    (url.protocol !== "http:" && url.protocol !== "https:") ||
    url.hash ||
    redirectUri.includes("#") ||
    redirectUri.length > 2048
  ) {
    return "redirect_uri must be an absolute http(s) URL without a fragment.";
  }
  if (get("code_challenge_method") !== "S256") return "code_challenge_method must be S256.";
  const codeChallenge = get("code_challenge") ?? "";
  if (!/^[A-Za-z0-9_-]{43}$/.test(codeChallenge)) return "code_challenge must be a base64url SHA-256 (43 characters).";
  const state = get("state") ?? "";
  if (state.length > 2048) return "state is too long.";
  return {
    client_id: clientId,
    redirect_uri: redirectUri,
    state,
    code_challenge: codeChallenge,
    code_challenge_method: "S256",
  };
}

function redirectTo(redirectUri: string, params: Record<string, string>): Response {
  const url = new URL(redirectUri);
  for (const [k, v] of Object.entries(params)) if (v) url.searchParams.set(k, v);
  return new Response(null, {
    status: 302,
    headers: { location: url.toString(), "cache-control": "no-store", "referrer-policy": "no-referrer" },
  });
}

// --- JSON -------------------------------------------------------------------------------

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
  if (!req.body) return "";
  try {
    return new TextDecoder().decode(await readLimited(req.body, MAX_BODY_BYTES));
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

function xboxToken(token: string, uhs: string, ttlMs: number) {
  const now = Date.now();
  return {
    IssueInstant: new Date(now).toISOString(),
    NotAfter: new Date(now + ttlMs).toISOString(),
    Token: token,
    DisplayClaims: { xui: [{ uhs }] },
  };
}

// --- The provider -----------------------------------------------------------------------

export interface DevProvider {
  fetch(req: Request): Promise<Response>;
}

export function createDevProvider(opts: { basePath?: string } = {}): DevProvider {
  const basePath = (opts.basePath ?? "").replace(/\/+$/, "");
  const codes = new TokenStore<PendingCode>("dev_code_", CODE_TTL_MS);
  const msTokens = new TokenStore<Player>("dev_ms_", MS_TOKEN_TTL_S * 1000);
  const xblTokens = new TokenStore<Player>("dev_xbl_", XBOX_TOKEN_TTL_MS);
  const xstsTokens = new TokenStore<Player>("dev_xsts_", XBOX_TOKEN_TTL_MS);
  const mcTokens = new TokenStore<Player>("dev_mc_", MC_TOKEN_TTL_S * 1000);

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
    const known = OUTCOME_BY_VALUE.get(outcome);
    if (!USERNAME.test(username)) {
      return signInPage(params, {
        username,
        outcome,
        error: "A player name is 3 to 16 letters, digits or underscores.",
      });
    }
    if (!known) return signInPage(params, { username, error: "Choose one of the listed outcomes." });
    const player: Player = {
      username,
      outcome: known.value,
      uhs: createHash("sha256").update(`uhs:${username}`).digest("hex").slice(0, 19),
      throttled: false,
    };
    const code = codes.issue({
      clientId: params.client_id,
      redirectUri: params.redirect_uri,
      codeChallenge: params.code_challenge,
      player,
    });
    return redirectTo(params.redirect_uri, { code, state: params.state });
  }

  async function token(req: Request): Promise<Response> {
    const text = await readBody(req, "application/x-www-form-urlencoded");
    if (text instanceof Response)
      return json(text.status, { error: "invalid_request", error_description: "Send a form body under 16 KiB." });
    const form = new URLSearchParams(text);
    if (form.get("grant_type") !== "authorization_code")
      return oauthError("unsupported_grant_type", "Only authorization_code is supported.");
    const pending = codes.take(form.get("code") ?? "");
    if (!pending) return oauthError("invalid_grant", "The code is unknown, expired or already redeemed.");
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
      access_token: msTokens.issue(pending.player),
      // Not redeemable here: the service keeps no upstream tokens, so it never refreshes.
      refresh_token: `dev_rt_${randomBytes(32).toString("base64url")}`,
    });
  }

  async function xblAuthenticate(req: Request): Promise<Response> {
    const body = await readJson(req);
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
    const player = msTokens.get(ticket);
    if (!player) return xboxUnauthorized();
    if (player.outcome === "upstream_unavailable") return new Response(null, { status: 503 });
    if (player.outcome === "flaky" && !player.throttled) {
      player.throttled = true;
      return new Response(null, { status: 429, headers: { "retry-after": "0" } });
    }
    return json(200, xboxToken(xblTokens.issue(player), player.uhs, XBOX_TOKEN_TTL_MS));
  }

  async function xstsAuthorize(req: Request): Promise<Response> {
    const body = await readJson(req);
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
    const player = typeof props.UserTokens[0] === "string" ? xblTokens.get(props.UserTokens[0]) : undefined;
    if (!player) return xboxUnauthorized();
    const xerr = (OUTCOME_BY_VALUE.get(player.outcome) as { xerr?: number }).xerr;
    if (xerr) {
      return json(401, {
        Identity: "0",
        XErr: xerr,
        Message: "",
        Redirect: XSTS_REDIRECT[xerr] ?? "https://start.ui.xboxlive.com/Help",
      });
    }
    return json(200, xboxToken(xstsTokens.issue(player), player.uhs, XBOX_TOKEN_TTL_MS));
  }

  async function mcLogin(req: Request): Promise<Response> {
    const body = await readJson(req);
    if (body instanceof Response) return body;
    const match = typeof body.identityToken === "string" ? /^XBL3\.0 x=([^;]+);(.+)$/.exec(body.identityToken) : null;
    const player = match ? xstsTokens.get(match[2]!) : undefined;
    if (!player || player.uhs !== match![1]) {
      return mcError(401, DEV_IDP_PATHS.mcLogin, "UNAUTHORIZED", "Invalid identity token.");
    }
    return json(200, {
      username: randomUUID(),
      roles: [],
      access_token: mcTokens.issue(player),
      token_type: "Bearer",
      expires_in: MC_TOKEN_TTL_S,
    });
  }

  function mcProfile(req: Request): Response {
    const auth = req.headers.get("authorization") ?? "";
    const player = auth.startsWith("Bearer ") ? mcTokens.get(auth.slice(7)) : undefined;
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
      skins: [],
      capes: [],
    });
  }

  const routes: Record<string, Partial<Record<string, (req: Request, url: URL) => Response | Promise<Response>>>> = {
    [DEV_IDP_PATHS.authorize]: { GET: (_req, url) => authorizePage(url), POST: authorizeSubmit },
    [DEV_IDP_PATHS.token]: { POST: token },
    [DEV_IDP_PATHS.xblAuth]: { POST: xblAuthenticate },
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

/** Runs the provider as its own HTTP server (port 0 picks a free port). */
export async function startDevProvider(
  opts: { port?: number; hostname?: string } = {},
): Promise<{ url: string; stop(): Promise<void> }> {
  const hostname = opts.hostname ?? "127.0.0.1";
  const provider = createDevProvider();
  const server = Bun.serve({ port: opts.port ?? 0, hostname, fetch: (req) => provider.fetch(req) });
  const host =
    hostname === "0.0.0.0" || hostname === "::" ? "localhost" : hostname.includes(":") ? `[${hostname}]` : hostname;
  return {
    url: `http://${host}:${server.port}`,
    async stop() {
      await server.stop(true);
    },
  };
}

if (import.meta.main) {
  // Standalone on purpose: it runs without the service's configuration, so only PORT and HOST apply.
  const port = Number(process.env.PORT || 4000);
  const running = await startDevProvider({ port, hostname: process.env.HOST || "127.0.0.1" });
  createLogger("info").info("development identity provider listening", {
    url: running.url,
    set_env: `DEV_IDP_URL=${running.url}`,
  });
}
