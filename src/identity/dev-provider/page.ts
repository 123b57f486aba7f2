import { createHash } from "node:crypto";
import { escapeHtml } from "../../lib/html";
import { DEV_IDP_OUTCOMES } from "./outcomes";

/** The sign-in page and the checks on the authorize request it is built from. */

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

export function errorPage(status: number, message: string): Response {
  return htmlResponse(
    status,
    `<h1>Sign-in request refused</h1><p class="error">${escapeHtml(message)}</p>
<p class="note">The application that sent you here built an invalid sign-in request. You were not redirected back to it.</p>`,
  );
}

export interface AuthorizeParams {
  client_id: string;
  redirect_uri: string;
  state: string;
  code_challenge: string;
  code_challenge_method: "S256";
}

export function signInPage(
  p: AuthorizeParams,
  opts: { username?: string; outcome?: string; error?: string } = {},
): Response {
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
export function authorizeParams(get: (name: string) => string | null, isPage: boolean): AuthorizeParams | string {
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

export function redirectTo(redirectUri: string, params: Record<string, string>): Response {
  const url = new URL(redirectUri);
  for (const [k, v] of Object.entries(params)) if (v) url.searchParams.set(k, v);
  return new Response(null, {
    status: 302,
    headers: { location: url.toString(), "cache-control": "no-store", "referrer-policy": "no-referrer" },
  });
}
