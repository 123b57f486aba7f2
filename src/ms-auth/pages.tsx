import { pageHtml, pageResponse, renderPage, TemplateCache } from "../lib/page";

/** The browser half of the login flow: the consent page and the message pages. */

const CSS = `body{font-family:system-ui,sans-serif;background:#1d1f21;color:#eee;display:flex;justify-content:center;padding:48px 16px;margin:0}
main{max-width:420px;width:100%;background:#2a2d31;border-radius:12px;padding:28px;box-shadow:0 4px 24px #0006}
h1{font-size:1.3rem;margin:0 0 8px}p{line-height:1.45;color:#ccc}.player{font-weight:600;color:#8fd16a}
img.logo{max-width:72px;max-height:72px;border-radius:8px;display:block;margin-bottom:12px}
form{display:flex;gap:12px;margin-top:20px}button{flex:1;padding:12px;border-radius:8px;border:0;font-size:1rem;cursor:pointer}
button[value=approve]{background:#3d7a22;color:#fff}button[value=deny]{background:#444;color:#eee}`;

export interface ConsentView {
  authRequestId: string;
  csrf: string;
  title: string;
  description: string;
  logoUrl: string | null;
  playerName: string;
}

type ConsentKey = keyof ConsentView;
const CONSENT_KEYS = [
  "authRequestId",
  "csrf",
  "title",
  "description",
  "logoUrl",
  "playerName",
] as const satisfies readonly ConsentKey[];
const consentTemplates = new TemplateCache<ConsentKey>(CONSENT_KEYS);

function consentBody(v: ConsentView) {
  return (
    <>
      {v.logoUrl && <img className="logo" src={v.logoUrl} alt="" referrerPolicy="no-referrer" />}
      <h1>{v.title}</h1>
      <p>{v.description}</p>
      <p>
        Signed in as <span className="player">{v.playerName}</span>. {v.title} will learn your Minecraft name and UUID.
      </p>
      <form method="post" action="/client/ms-auth/authorize">
        <input type="hidden" name="auth_request_id" value={v.authRequestId} />
        <input type="hidden" name="csrf_token" value={v.csrf} />
        <button type="submit" name="decision" value="deny">
          Deny
        </button>
        <button type="submit" name="decision" value="approve">
          Approve
        </button>
      </form>
    </>
  );
}

/** The consent page's markup as React renders it (test/pages.test.ts compares the template with it). */
export function consentHtml(v: ConsentView): string {
  return pageHtml(consentBody(v), { title: `Sign in to ${v.title}`, css: CSS });
}

/**
 * `redirectOrigin`: where approve and deny redirect to. Browsers apply form-action to the
 * redirect after the submit too, so it must be allowed beside 'self'.
 */
export function consentPage(v: ConsentView, redirectOrigin: string | null, headers: Record<string, string> = {}) {
  // A logo is an http(s) URL (the API refuses anything else), which React writes escaped like
  // any attribute; anything else, from wherever it came, renders whole.
  const logo = v.logoUrl ? /^https?:\/\//i.test(v.logoUrl) : false;
  const html =
    v.logoUrl && !logo
      ? consentHtml(v)
      : consentTemplates
          .get(logo ? "logo" : "plain", (marks) => consentHtml({ ...marks, logoUrl: logo ? marks.logoUrl : null }))
          .fill({ ...v, logoUrl: v.logoUrl ?? "" });
  return pageResponse(html, {
    title: `Sign in to ${v.title}`,
    css: CSS,
    // Only a page that shows the client's logo allows images.
    ...(v.logoUrl && { imgSrc: ["https:", "data:"] }),
    formAction: ["'self'", ...(redirectOrigin ? [redirectOrigin] : [])],
    headers,
  });
}

export function messagePage(title: string, message: string, status = 200, headers: Record<string, string> = {}) {
  return renderPage(
    <>
      <h1>{title}</h1>
      <p>{message}</p>
    </>,
    { title, css: CSS, status, headers },
  );
}
