import { renderPage } from "../lib/page";
import type { PlayerApp } from "./service";

/**
 * The player's apps page: server-rendered, no script, light and dark from the system setting.
 * Colours meet WCAG AA contrast in both schemes.
 */
const CSS = `:root{color-scheme:light dark;--bg:#f4f5f7;--card:#fff;--fg:#17191c;--muted:#4b5058;--line:#d5d8dd;--accent:#2f6b16;--danger:#a11a1a;--btn:#fff}
@media (prefers-color-scheme:dark){:root{--bg:#16181b;--card:#22252a;--fg:#eef0f2;--muted:#b4bac2;--line:#3a3f46;--accent:#8fd16a;--danger:#ff8f8f;--btn:#22252a}}
*{box-sizing:border-box}body{font:16px/1.5 system-ui,sans-serif;background:var(--bg);color:var(--fg);margin:0;padding:32px 16px}
main{max-width:720px;margin:0 auto;background:var(--card);border-radius:12px;padding:24px;border:1px solid var(--line)}
h1{font-size:1.4rem;margin:0 0 8px}h2{font-size:1.1rem;margin:0}p{margin:8px 0;color:var(--muted)}.player{font-weight:700;color:var(--accent)}
ul{list-style:none;padding:0;margin:16px 0 0}li{border-top:1px solid var(--line);padding:16px 0;display:flex;gap:16px;align-items:flex-start;justify-content:space-between;flex-wrap:wrap}
dl{margin:4px 0 0;display:grid;grid-template-columns:auto 1fr;gap:2px 12px;color:var(--muted);font-size:.95rem}dt{font-weight:600}dd{margin:0;overflow-wrap:anywhere}
.app{flex:1 1 320px;min-width:0}form{margin:0}
button,a.button{display:inline-block;font:inherit;padding:10px 16px;border-radius:8px;cursor:pointer;text-decoration:none;border:2px solid currentColor;background:var(--btn)}
button.revoke{color:var(--danger)}a.button{color:var(--accent);font-weight:600}button.plain{color:var(--fg)}
.notice{border-left:4px solid var(--accent);padding:8px 12px;color:var(--fg)}.error{border-left-color:var(--danger)}
.bar{display:flex;justify-content:space-between;gap:12px;align-items:center;flex-wrap:wrap}`;

const TITLE = "Apps using your Minecraft account";

const when = (d: Date | null) => (d ? `${d.toISOString().slice(0, 16).replace("T", " ")} UTC` : "not yet");

/** Signed out: what the page is, and the way in. */
export function signedOutPage(message?: { text: string; error?: boolean }, status = 200) {
  return renderPage(
    <>
      <h1>{TITLE}</h1>
      {message && (
        <p className={message.error ? "notice error" : "notice"} role={message.error ? "alert" : "status"}>
          {message.text}
        </p>
      )}
      <p>
        Launchers and websites you approved can confirm who you are until you revoke them. Sign in with the Microsoft
        account that owns Minecraft to see them and revoke any. Nothing but your Minecraft name and UUID is read.
      </p>
      <p>
        <a className="button" href="/account/apps/sign-in">
          Sign in with Microsoft
        </a>
      </p>
    </>,
    { title: TITLE, css: CSS, status },
  );
}

export interface AppsView {
  playerName: string;
  csrf: string;
  apps: PlayerApp[];
  notice?: string;
}

/** Signed in: each app holding a session or grant, with a revoke button. */
export function appsPage(v: AppsView) {
  return renderPage(
    <>
      <div className="bar">
        <h1>{TITLE}</h1>
        <form method="post" action="/account/apps/sign-out">
          <input type="hidden" name="csrf_token" value={v.csrf} />
          <button type="submit" className="plain">
            Sign out
          </button>
        </form>
      </div>
      <p>
        Signed in as <span className="player">{v.playerName}</span>.
      </p>
      {v.notice && (
        <p className="notice" role="status">
          {v.notice}
        </p>
      )}
      {v.apps.length === 0 ? (
        <p>No app holds a session for your account.</p>
      ) : (
        <ul aria-label="Apps with access">
          {v.apps.map((a) => (
            <li key={a.clientId}>
              <div className="app">
                <h2>{a.title}</h2>
                <dl>
                  <dt>Returns to</dt>
                  <dd>{a.redirectHost ?? "no address"}</dd>
                  <dt>Since</dt>
                  <dd>{when(a.since)}</dd>
                  <dt>Last used</dt>
                  <dd>{when(a.lastUsedAt)}</dd>
                </dl>
              </div>
              <form method="post" action="/account/apps/revoke">
                <input type="hidden" name="csrf_token" value={v.csrf} />
                <input type="hidden" name="client_id" value={a.clientId} />
                <button type="submit" className="revoke" aria-label={`Revoke ${a.title}`}>
                  Revoke
                </button>
              </form>
            </li>
          ))}
        </ul>
      )}
    </>,
    { title: TITLE, css: CSS, formAction: ["'self'"] },
  );
}
