/** HTML for the browser half of the login flow. Everything interpolated is escaped. */

import { escapeHtml } from "../lib/html";

const STYLE = `body{font-family:system-ui,sans-serif;background:#1d1f21;color:#eee;display:flex;justify-content:center;padding:48px 16px;margin:0}
main{max-width:420px;width:100%;background:#2a2d31;border-radius:12px;padding:28px;box-shadow:0 4px 24px #0006}
h1{font-size:1.3rem;margin:0 0 8px}p{line-height:1.45;color:#ccc}.player{font-weight:600;color:#8fd16a}
img.logo{max-width:72px;max-height:72px;border-radius:8px;display:block;margin-bottom:12px}
form{display:flex;gap:12px;margin-top:20px}button{flex:1;padding:12px;border-radius:8px;border:0;font-size:1rem;cursor:pointer}
button[value=approve]{background:#5b9e3a;color:#fff}button[value=deny]{background:#444;color:#eee}`;

function page(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${escapeHtml(title)}</title><style>${STYLE}</style></head><body><main>${body}</main></body></html>`;
}

export interface ConsentView {
  authRequestId: string;
  csrf: string;
  title: string;
  description: string;
  logoUrl: string | null;
  playerName: string;
}

export function consentPage(v: ConsentView): string {
  const logo = v.logoUrl ? `<img class="logo" src="${escapeHtml(v.logoUrl)}" alt="" referrerpolicy="no-referrer">` : "";
  return page(
    `Sign in to ${v.title}`,
    `${logo}<h1>${escapeHtml(v.title)}</h1>
<p>${escapeHtml(v.description)}</p>
<p>Signed in as <span class="player">${escapeHtml(v.playerName)}</span>. ${escapeHtml(v.title)} will learn your Minecraft name and UUID.</p>
<form method="post" action="/client/ms-auth/authorize">
<input type="hidden" name="auth_request_id" value="${escapeHtml(v.authRequestId)}">
<input type="hidden" name="csrf_token" value="${escapeHtml(v.csrf)}">
<button type="submit" name="decision" value="deny">Deny</button>
<button type="submit" name="decision" value="approve">Approve</button>
</form>`,
  );
}

export function messagePage(title: string, message: string): string {
  return page(title, `<h1>${escapeHtml(title)}</h1><p>${escapeHtml(message)}</p>`);
}
