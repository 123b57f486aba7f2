import { PageTemplate, pageHtml, pageResponse } from "../lib/page";

/**
 * The browser half of the login flows: the consent page (shared by every flow that asks a
 * player to let an app know who they are), the device flow's code page, and the message pages.
 */

const CSS = `:root{color-scheme:light dark;--bg:#f3f4f6;--card:#fff;--fg:#1b1d21;--muted:#4a4f57;--accent:#2f6b1a;--line:#6b7079;--warn-bg:#fff4d6;--warn-fg:#5c4300;--err:#a1201a;--btn2:#e4e6ea}
@media (prefers-color-scheme:dark){:root{--bg:#1d1f21;--card:#2a2d31;--fg:#eeeff1;--muted:#c6c9ce;--accent:#8fd16a;--line:#8c929b;--warn-bg:#3a3219;--warn-fg:#f3dc9a;--err:#ff9b94;--btn2:#44484e}}
body{font-family:system-ui,sans-serif;background:var(--bg);color:var(--fg);display:flex;justify-content:center;padding:40px 16px;margin:0}
main{max-width:440px;width:100%;background:var(--card);border-radius:12px;padding:28px;box-shadow:0 4px 24px #0003;box-sizing:border-box}
h1{font-size:1.3rem;margin:0 0 8px}h2{font-size:1rem;margin:20px 0 6px}p,li,dd{line-height:1.45;color:var(--muted)}
ul{margin:0;padding-left:20px}dl{margin:0;display:grid;grid-template-columns:auto 1fr;gap:4px 12px}dt{font-weight:600}dd{margin:0;overflow-wrap:anywhere}
.player{font-weight:600;color:var(--accent)}.host{font-family:ui-monospace,monospace;color:var(--fg)}
img.logo{max-width:72px;max-height:72px;border-radius:8px;display:block;margin-bottom:12px}
.warn{background:var(--warn-bg);color:var(--warn-fg);border-radius:8px;padding:10px 12px;font-size:.95rem}
.error{color:var(--err);font-weight:600}
form{margin-top:20px}.buttons{display:flex;gap:12px}button{flex:1;padding:12px;border-radius:8px;border:0;font-size:1rem;cursor:pointer}
button.primary{background:#2f6b1a;color:#fff}button.secondary{background:var(--btn2);color:var(--fg)}
label{display:block;font-weight:600;margin-bottom:6px}
input.code{width:100%;box-sizing:border-box;font:600 1.6rem ui-monospace,monospace;letter-spacing:.12em;text-align:center;text-transform:uppercase;padding:10px;border-radius:8px;border:2px solid var(--line);background:var(--bg);color:var(--fg);margin-bottom:12px}
input.code:focus{outline:3px solid var(--accent);outline-offset:1px}
a{color:var(--accent)}`;

/** The app asking, as the team that owns it registered it. */
export interface ConsentClient {
  title: string;
  description: string;
  /** An http(s) URL, or null. */
  logoUrl: string | null;
}

export interface ConsentView {
  client: ConsentClient;
  /**
   * Where the player is sent after deciding, as they should recognise it: a host
   * (`launcher.example.com`) or an app's scheme (`com.example.launcher`). Null when the player
   * is not sent anywhere (the device flow: they go back to their device).
   */
  redirectHost: string | null;
  playerName: string;
  /** The form's target (this service's own path) and its hidden fields, in order. */
  action: string;
  fields: Record<string, string>;
  /** Where the player can withdraw what they approve (a page of this service), if there is one. */
  revokeUrl?: string | null;
  /** Shown with the revocation text: how long the access lasts unless withdrawn. */
  sessionDays?: number;
}

/** Text values written into the template: escaped; everything else decides the page's structure. */
type ConsentHole = "title" | "description" | "logoUrl" | "playerName" | "redirectHost";
const CONSENT_HOLES: readonly ConsentHole[] = ["title", "description", "logoUrl", "playerName", "redirectHost"];

function consentBody(v: ConsentView) {
  const { title } = v.client;
  return (
    <>
      {v.client.logoUrl && <img className="logo" src={v.client.logoUrl} alt="" referrerPolicy="no-referrer" />}
      <h1>Sign in to {title}</h1>
      <p>{v.client.description}</p>
      <p>
        You are signed in with Microsoft as <span className="player">{v.playerName}</span>.
      </p>
      <h2>Who is asking</h2>
      <dl>
        <dt>App</dt>
        <dd>{title}</dd>
        <dt>Then</dt>
        <dd>
          {v.redirectHost !== null ? (
            <>
              you go back to <span className="host">{v.redirectHost}</span>
            </>
          ) : (
            "you go back to the device that showed you the code"
          )}
        </dd>
      </dl>
      <p className="warn">
        The app&apos;s name and logo are chosen by its developer. Approve only if you started this sign-in yourself, in{" "}
        {title}. Nobody should ever send you a link or a code to approve.
      </p>
      <h2>What {title} will get</h2>
      <ul>
        <li>your Minecraft name ({v.playerName})</li>
        <li>your Minecraft UUID</li>
      </ul>
      <p>
        Nothing else: not your Microsoft account, email address or password, and no way to play, chat or buy as you.
      </p>
      <h2>How to take it back</h2>
      <p>
        {v.revokeUrl ? (
          <>
            Withdraw it at any time on <a href={v.revokeUrl}>your apps page</a>, or sign out in {title}.
          </>
        ) : (
          <>Sign out in {title} to end it at any time.</>
        )}
        {v.sessionDays ? ` Unless you do, it ends by itself after ${v.sessionDays} days.` : ""}
      </p>
      <form method="post" action={v.action}>
        {Object.entries(v.fields).map(([name, value]) => (
          <input key={name} type="hidden" name={name} value={value} />
        ))}
        <div className="buttons">
          <button type="submit" name="decision" value="deny" className="secondary">
            Deny
          </button>
          <button type="submit" name="decision" value="approve" className="primary">
            Approve
          </button>
        </div>
      </form>
    </>
  );
}

/** The consent page's markup as React renders it (test/pages.test.ts compares the template with it). */
export function consentHtml(v: ConsentView): string {
  return pageHtml(consentBody(v), { title: `Sign in to ${v.client.title}`, css: CSS });
}

/** Templates by structure: logo or not, a redirect host or not, the form's target and field names, the revocation text. */
const consentTemplates = new Map<string, PageTemplate<string>>();

/**
 * The consent page. `redirectSource`: where approve and deny redirect to, as a CSP source;
 * browsers apply form-action to the redirect after the submit too, so it must be allowed
 * beside 'self'.
 */
export function consentPage(v: ConsentView, redirectSource: string | null, headers: Record<string, string> = {}) {
  // A logo is an http(s) URL (the API refuses anything else), which React writes escaped like
  // any attribute; anything else, from wherever it came, renders whole.
  const logoUrl = v.client.logoUrl;
  const logo = logoUrl ? /^https?:\/\//i.test(logoUrl) : false;
  const fieldNames = Object.keys(v.fields);
  let html: string;
  if (logoUrl && !logo) html = consentHtml(v);
  else {
    const variant = JSON.stringify([
      logo,
      v.redirectHost !== null,
      v.action,
      fieldNames,
      v.revokeUrl ?? null,
      v.sessionDays ?? null,
    ]);
    let t = consentTemplates.get(variant);
    if (!t) {
      const keys = [...CONSENT_HOLES, ...fieldNames.map((n) => `field:${n}`)];
      t = new PageTemplate(keys, (m) =>
        consentHtml({
          ...v,
          client: { title: m.title!, description: m.description!, logoUrl: logo ? m.logoUrl! : null },
          playerName: m.playerName!,
          redirectHost: v.redirectHost !== null ? m.redirectHost! : null,
          fields: Object.fromEntries(fieldNames.map((n) => [n, m[`field:${n}`]!])),
        }),
      );
      // Bounded: callers use a handful of shapes; an unbounded variety is rendered whole.
      if (consentTemplates.size < 64) consentTemplates.set(variant, t);
    }
    const values: Record<string, string> = {
      title: v.client.title,
      description: v.client.description,
      logoUrl: logoUrl ?? "",
      playerName: v.playerName,
      redirectHost: v.redirectHost ?? "",
    };
    for (const n of fieldNames) values[`field:${n}`] = v.fields[n]!;
    html = t.fill(values);
  }
  return pageResponse(html, {
    title: `Sign in to ${v.client.title}`,
    css: CSS,
    // Only a page that shows the client's logo allows images.
    ...(logoUrl && { imgSrc: ["https:", "data:"] }),
    formAction: ["'self'", ...(redirectSource ? [redirectSource] : [])],
    headers,
  });
}

export interface DeviceView {
  csrf: string;
  /** What the field holds: the code from verification_uri_complete, or what the player typed. */
  code: string;
  /** Why the last entry was refused; empty for none. */
  error: string;
}

type DeviceHole = keyof DeviceView;
const DEVICE_HOLES: readonly DeviceHole[] = ["csrf", "code", "error"];

function deviceBody(v: DeviceView, action: string) {
  return (
    <>
      <h1>Sign in on another device</h1>
      <p>Type the code your launcher or game shows, then sign in with Microsoft.</p>
      {v.error && (
        <p className="error" role="alert">
          {v.error}
        </p>
      )}
      <form method="post" action={action}>
        <input type="hidden" name="csrf_token" value={v.csrf} />
        <label htmlFor="user_code">Code</label>
        <input
          className="code"
          id="user_code"
          name="user_code"
          defaultValue={v.code}
          required
          maxLength={16}
          autoComplete="off"
          autoCapitalize="characters"
          spellCheck={false}
          placeholder="XXXX-XXXX"
          aria-describedby="code_hint"
        />
        <p id="code_hint">8 letters, like BCDF-GHJK. Dashes, spaces and case do not matter.</p>
        <div className="buttons">
          <button type="submit" className="primary">
            Continue
          </button>
        </div>
      </form>
      <p className="warn">
        Only enter a code shown on a device you are holding, for a sign-in you started. If someone sent you this code or
        this link, stop: entering it would let them sign in as you.
      </p>
    </>
  );
}

export function deviceHtml(v: DeviceView, action: string): string {
  return pageHtml(deviceBody(v, action), { title: "Sign in on another device", css: CSS });
}

const deviceTemplates = new Map<string, PageTemplate<DeviceHole>>();

/** The page at verification_uri: the code field (filled from the link, if any) and its CSRF token. */
export function devicePage(v: DeviceView, action: string, status = 200, headers: Record<string, string> = {}) {
  const variant = `${v.error ? "error" : "plain"} ${action}`;
  let t = deviceTemplates.get(variant);
  if (!t) {
    t = new PageTemplate(DEVICE_HOLES, (m) => deviceHtml({ ...m, error: v.error ? m.error : "" }, action));
    deviceTemplates.set(variant, t);
  }
  return pageResponse(t.fill(v), {
    title: "Sign in on another device",
    css: CSS,
    status,
    formAction: ["'self'"],
    headers,
  });
}

/** Message pages by title and text: a handful of constant ones, so each is rendered once. */
const messages = new Map<string, string>();

export function messagePage(title: string, message: string, status = 200, headers: Record<string, string> = {}) {
  const key = `${title}\u0000${message}`;
  let html = messages.get(key);
  if (html === undefined) {
    html = pageHtml(
      <>
        <h1>{title}</h1>
        <p>{message}</p>
      </>,
      { title, css: CSS },
    );
    if (messages.size < 256) messages.set(key, html);
  }
  return pageResponse(html, { title, css: CSS, status, headers });
}
