import { pageHtml, pageResponse, renderPage, TemplateCache } from "../../lib/page";
import { DEV_IDP_OUTCOMES, isOutcome } from "./outcomes";

/** The sign-in page and the checks on the authorize request it is built from. */

const CSS = `body{font:16px/1.5 system-ui,sans-serif;background:#f3f4f6;color:#111;margin:0}
main{max-width:28rem;margin:3rem auto;background:#fff;padding:2rem;border-radius:8px;box-shadow:0 1px 4px #0002}
h1{font-size:1.4rem;margin:0 0 .5rem}.note{color:#555;font-size:.9rem}.error{color:#b00020;font-weight:600}
label{display:block;margin-top:1rem;font-weight:600}input,select{width:100%;box-sizing:border-box;padding:.5rem;font:inherit}
.actions{display:flex;gap:.5rem;margin-top:1.5rem}button{flex:1;padding:.6rem;font:inherit;cursor:pointer}
code{word-break:break-all}`;
const TITLE = "Sign in · development identity provider";

export function errorPage(status: number, message: string): Response {
  return renderPage(
    <>
      <h1>Sign-in request refused</h1>
      <p className="error">{message}</p>
      <p className="note">
        The application that sent you here built an invalid sign-in request. You were not redirected back to it.
      </p>
    </>,
    { title: TITLE, css: CSS, status },
  );
}

export interface AuthorizeParams {
  client_id: string;
  redirect_uri: string;
  state: string;
  code_challenge: string;
  code_challenge_method: "S256";
}

/** The form's hidden fields, in the order `authorizeParams` builds them. */
const AUTHORIZE_KEYS = [
  "client_id",
  "redirect_uri",
  "state",
  "code_challenge",
  "code_challenge_method",
] as const satisfies readonly (keyof AuthorizeParams)[];

export interface SignInView extends Record<(typeof AUTHORIZE_KEYS)[number], string> {
  /** The client's origin, where the page says the player returns to. */
  origin: string;
  username: string;
  outcome: string;
  error: string;
}

/** The sign-in page's markup as React renders it (test/pages.test.ts compares the template with it). */
export function signInHtml(v: SignInView): string {
  return pageHtml(
    <>
      <h1>Sign in</h1>
      <p className="note">
        Development identity provider: it stands in for Microsoft, Xbox Live and Minecraft services. No real account is
        used; pick any player name.
      </p>
      <p>
        Application <code>{v.client_id}</code>, returning to <code>{v.origin}</code>
      </p>
      {v.error && (
        <p className="error" role="alert">
          {v.error}
        </p>
      )}
      <form method="post" action="authorize" encType="application/x-www-form-urlencoded">
        {AUTHORIZE_KEYS.map((k) => (
          <input key={k} type="hidden" name={k} value={v[k]} />
        ))}
        <label htmlFor="username">Player name</label>
        <input
          name="username"
          id="username"
          required
          minLength={3}
          maxLength={16}
          pattern="[A-Za-z0-9_]{3,16}"
          autoComplete="username"
          defaultValue={v.username}
        />
        <label htmlFor="outcome">Outcome</label>
        <select name="outcome" id="outcome" defaultValue={v.outcome}>
          {DEV_IDP_OUTCOMES.map((o) => (
            <option key={o.value} value={o.value}>
              {o.label}
            </option>
          ))}
        </select>
        <div className="actions">
          <button type="submit" name="action" value="signin">
            Sign in
          </button>
          <button type="submit" name="action" value="cancel" formNoValidate>
            Cancel
          </button>
        </div>
      </form>
    </>,
    { title: TITLE, css: CSS },
  );
}

const signInTemplates = new TemplateCache<Exclude<keyof SignInView, "outcome">>([
  ...AUTHORIZE_KEYS,
  "origin",
  "username",
  "error",
]);

export function signInPage(
  p: AuthorizeParams,
  opts: { username?: string; outcome?: string; error?: string } = {},
): Response {
  const origin = new URL(p.redirect_uri).origin;
  const view: SignInView = {
    ...p,
    origin,
    username: opts.username ?? "",
    outcome: opts.outcome ?? "success",
    error: opts.error ?? "",
  };
  // Which outcome is selected, and whether an error shows, shape the page: a template for each
  // (the listed outcomes; any other value is a mistake's page, rendered whole).
  const html = isOutcome(view.outcome)
    ? signInTemplates
        .get(`${view.outcome}${view.error ? " error" : ""}`, (marks) =>
          signInHtml({ ...marks, outcome: view.outcome, error: view.error ? marks.error : "" }),
        )
        .fill(view)
    : signInHtml(view);
  return pageResponse(html, {
    title: TITLE,
    css: CSS,
    status: opts.error ? 400 : 200,
    // Browsers apply form-action to the redirect after the submit too, so the client's origin must be allowed.
    formAction: ["'self'", origin],
  });
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
