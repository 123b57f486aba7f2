import { createHash } from "node:crypto";
import { MOTD_CSS, motdHtml } from "./motd";
import type { DayBar, PublicIncident, PublicMaintenance, PublicServer, PublicView } from "./public";

const esc = (s: string) => Bun.escapeHTML(s);
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/** `27 Nov 2026` (UTC). */
export function dayLabel(ms: number): string {
  const d = new Date(ms);
  return `${d.getUTCDate()} ${MONTHS[d.getUTCMonth()]} ${d.getUTCFullYear()}`;
}

/** `27 Nov 2026, 14:05 UTC`. */
export function timeLabel(iso: string): string {
  const d = new Date(iso);
  const hh = String(d.getUTCHours()).padStart(2, "0");
  const mm = String(d.getUTCMinutes()).padStart(2, "0");
  return `${dayLabel(d.getTime())}, ${hh}:${mm} UTC`;
}

/** `3 h 12 min`, `45 s`. */
export function durationLabel(seconds: number): string {
  if (seconds < 60) return `${seconds} s`;
  const m = Math.floor(seconds / 60);
  if (m < 60) return `${m} min`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h} h ${m % 60} min`;
  return `${Math.floor(h / 24)} d ${h % 24} h`;
}

/** `99.95%`; two decimals, never 100% unless every ping was up. */
export function percent(share: number): string {
  const p = Math.floor(share * 10_000) / 100;
  return `${p.toFixed(2)}%`;
}

/** The bar's colour class: no pings, all up, a little down, much down. */
function barClass(b: DayBar): string {
  if (b.uptime === null) return "none";
  if (b.uptime >= 0.999 && b.incidents === 0) return "ok";
  if (b.uptime >= 0.95) return "warn";
  return "bad";
}

function barText(b: DayBar): string {
  const day = dayLabel(b.day);
  if (b.uptime === null) return `${day}: no data`;
  const checks = `${b.up} of ${b.up + b.down} checks up`;
  const inc = b.incidents === 0 ? "" : b.incidents === 1 ? ", 1 outage" : `, ${b.incidents} outages`;
  return `${day}: ${percent(b.uptime)} uptime (${checks}${inc})`;
}

export type ServerState = "up" | "down" | "unknown";
export const stateOf = (s: Pick<PublicServer, "online">): ServerState =>
  s.online === true ? "up" : s.online === false ? "down" : "unknown";
export const STATE_TEXT: Record<ServerState, string> = { up: "Operational", down: "Down", unknown: "Not checked yet" };

function serverHtml(s: PublicServer, show: PublicView["page"]["show"]): string {
  const state = stateOf(s);
  const facts: string[] = [];
  if (show.players)
    facts.push(
      `<div><dt>Players</dt><dd data-field="players">${s.playersOnline === null ? "–" : `${s.playersOnline}${s.playersMax === null ? "" : ` / ${s.playersMax}`}`}</dd></div>`,
    );
  if (show.latency)
    facts.push(
      `<div><dt>Latency</dt><dd data-field="latency">${s.latencyMs === null ? "–" : `${s.latencyMs} ms`}</dd></div>`,
    );
  if (show.version) facts.push(`<div><dt>Version</dt><dd data-field="version">${esc(s.version ?? "–")}</dd></div>`);
  const uptime30 = s.uptime["30d"];
  // Days of the last 30 with checks: a server added last week has no month to claim.
  const checkedDays = s.days.slice(-30).filter((b) => b.up + b.down > 0).length;
  const bars = s.days
    .map((b) => `<li tabindex="0" class="${barClass(b)}"><span class="tip">${esc(barText(b))}</span></li>`)
    .join("");
  const name = esc(s.name);
  return `<li class="server" id="server-${s.id}" data-server="${s.id}">
<div class="head"><h3>${name}</h3><span class="state ${state}" data-field="state">${STATE_TEXT[state]}</span></div>
${facts.length ? `<dl class="facts">${facts.join("")}</dl>` : ""}
${show.motd && s.motd ? `<p class="motd">${motdHtml(s.motd)}</p>` : ""}
<p class="incident" data-field="incident"${s.incident ? "" : " hidden"}>${s.incident ? `Down since ${esc(timeLabel(s.incident.startedAt))} (${durationLabel(s.incident.durationSeconds)} so far)` : ""}</p>
<ol class="bars" aria-label="${name}: uptime per day, last 90 days">${bars}</ol>
<p class="scale"><span>90 days ago</span><span>${uptimeLabel(uptime30, checkedDays)}</span><span>Today</span></p>
</li>`;
}

function incidentHtml(i: PublicIncident): string {
  const when = i.ongoing
    ? `Since ${esc(timeLabel(i.startedAt))}, ongoing (${durationLabel(i.durationSeconds)} so far)`
    : `${esc(timeLabel(i.startedAt))} to ${esc(timeLabel(i.endedAt!))} (${durationLabel(i.durationSeconds)})`;
  const updates = i.updates.length
    ? `<ol class="updates">${i.updates.map((u) => `<li><strong>${esc(u.status)}</strong> ${esc(timeLabel(u.at))}: ${esc(u.message)}</li>`).join("")}</ol>`
    : "";
  return `<li class="inc${i.ongoing ? " ongoing" : ""}"><h3>${esc(i.title)}</h3><p>${when}</p>${updates}</li>`;
}

/** The figure under the bars: over 30 days, or over the days checked when fewer. */
function uptimeLabel(uptime30: number | null, checkedDays: number): string {
  if (uptime30 === null) return "No checks in 30 days";
  if (checkedDays >= 30) return `${percent(uptime30)} uptime over 30 days`;
  return `${percent(uptime30)} uptime since checks began (${checkedDays} ${checkedDays === 1 ? "day" : "days"})`;
}

function maintenanceHtml(m: PublicMaintenance): string {
  const message = m.message ? `<p>${esc(m.message)}</p>` : "";
  return `<li class="inc"><h3>${esc(m.title)}${m.active ? " (in progress)" : ""}</h3><p>${esc(timeLabel(m.startsAt))} to ${esc(timeLabel(m.endsAt))}${m.serverNames.length ? `: ${esc(m.serverNames.join(", "))}` : ""}</p>${message}</li>`;
}

const BASE_CSS = `
:root{color-scheme:light;--bg:#f6f7f9;--card:#fff;--fg:#1b1f24;--muted:#57606a;--line:#d0d7de;--ok:#2da44e;--warn:#d4a72c;--bad:#cf222e;--none:#c4ccd4;--tipbg:#1b1f24;--tipfg:#fff;--upfg:#116329;--downfg:#a40e26}
[data-theme=dark]{color-scheme:dark;--bg:#0d1117;--card:#161b22;--fg:#e6edf3;--muted:#9da7b3;--line:#30363d;--ok:#3fb950;--warn:#d29922;--bad:#f85149;--none:#3b434c;--tipbg:#e6edf3;--tipfg:#0d1117;--upfg:#56d364;--downfg:#ff7b72}
@media (prefers-color-scheme:dark){[data-theme=auto]{color-scheme:dark;--bg:#0d1117;--card:#161b22;--fg:#e6edf3;--muted:#9da7b3;--line:#30363d;--ok:#3fb950;--warn:#d29922;--bad:#f85149;--none:#3b434c;--tipbg:#e6edf3;--tipfg:#0d1117;--upfg:#56d364;--downfg:#ff7b72}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
.wrap{max-width:860px;margin:0 auto;padding:0 16px}
header.top{border-top:6px solid var(--accent);background:var(--card);border-bottom:1px solid var(--line);padding:20px 0}
header.top .wrap{display:flex;gap:14px;align-items:center}
header.top img{width:48px;height:48px;object-fit:contain}
h1{font-size:1.6rem;margin:0}
header.top p{margin:2px 0 0;color:var(--muted)}
h2{font-size:1.15rem;margin:28px 0 10px}
.overall{margin:20px 0 0;padding:14px 16px;border-radius:8px;background:var(--card);border:1px solid var(--line);border-left:6px solid var(--ok);font-weight:600}
.overall.bad{border-left-color:var(--bad)}
.overall.unknown{border-left-color:var(--none)}
ul.servers,ol.incidents{list-style:none;margin:0;padding:0}
.server{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:14px 16px;margin:0 0 12px}
.head{display:flex;justify-content:space-between;gap:8px;align-items:baseline;flex-wrap:wrap}
h3{margin:0;font-size:1.05rem}
.state{font-weight:600}
.state.up{color:var(--upfg)}
.state.down{color:var(--downfg)}
.state.unknown{color:var(--muted)}
.facts{display:flex;flex-wrap:wrap;gap:4px 18px;margin:6px 0 0}
.facts div{display:flex;gap:6px}
.facts dt{color:var(--muted)}
.facts dd{margin:0}
.motd{margin:8px 0 0;padding:6px 10px;border-radius:6px;border:1px solid var(--line);background:#1b1b1b;color:#e0e0e0;font-family:ui-monospace,Menlo,Consolas,monospace;font-size:13px;overflow-wrap:anywhere}
.incident{margin:8px 0 0;color:var(--downfg);font-weight:600}
.bars{display:flex;gap:2px;list-style:none;margin:12px 0 0;padding:0;height:34px}
.bars li{flex:1;position:relative;border-radius:2px;background:var(--none);outline-offset:2px}
.bars li.ok{background:var(--ok)}
.bars li.warn{background:var(--warn)}
.bars li.bad{background:var(--bad)}
.bars li:focus-visible{outline:2px solid var(--accent)}
.tip{position:absolute;width:1px;height:1px;overflow:hidden;clip-path:inset(50%);white-space:nowrap}
.bars li:hover .tip,.bars li:focus .tip{width:auto;height:auto;overflow:visible;clip-path:none;bottom:42px;left:50%;transform:translateX(-50%);background:var(--tipbg);color:var(--tipfg);padding:4px 8px;border-radius:4px;font-size:13px;z-index:2}
.bars li:nth-child(-n+20) .tip{left:0;transform:none}
.bars li:nth-last-child(-n+20) .tip{left:auto;right:0;transform:none}
.scale{display:flex;justify-content:space-between;gap:8px;margin:4px 0 0;color:var(--muted);font-size:13px}
.inc{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:10px 16px;margin:0 0 8px}
.inc p{margin:2px 0 0;color:var(--muted)}
.inc.ongoing{border-left:6px solid var(--bad)}
.updates{margin:6px 0 0;padding-left:18px}
.empty{color:var(--muted)}
footer{margin:32px auto;color:var(--muted);font-size:13px}
a{color:inherit}
@media (max-width:520px){.bars{gap:1px}.scale span:first-child,.scale span:last-child{display:none}}
${MOTD_CSS}`;

/**
 * Live updates when scripts run: every 30 s the widget JSON (same origin, whatever host the page
 * was reached by) refreshes each server's state, players, latency and version in place. Without
 * scripts the page is complete as served.
 */
export const LIVE_SCRIPT = `(()=>{const b=document.body,u=b.dataset.live;if(!u||!window.fetch)return;const S={up:"Operational",down:"Down",unknown:"Not checked yet"};
const set=(el,f,v)=>{const n=el.querySelector('[data-field="'+f+'"]');if(n&&v!==undefined)n.textContent=v};
async function tick(){try{const r=await fetch(u,{headers:{accept:"application/json"}});if(!r.ok)return;const d=await r.json();let down=0;
for(const s of d.servers){const el=document.getElementById("server-"+s.server_id);if(s.status==="down")down++;if(!el)continue;
const st=el.querySelector('[data-field="state"]');if(st){st.textContent=S[s.status];st.className="state "+s.status}
if("players_online"in s)set(el,"players",s.players_online==null?"\\u2013":s.players_online+(s.players_max==null?"":" / "+s.players_max));
if("latency_ms"in s)set(el,"latency",s.latency_ms==null?"\\u2013":s.latency_ms+" ms");
if("version"in s)set(el,"version",s.version==null?"\\u2013":s.version);
const inc=el.querySelector('[data-field="incident"]');if(inc){if(s.incident){inc.hidden=false;inc.textContent="Down since "+new Date(s.incident.started_at).toUTCString().replace("GMT","UTC")}else inc.hidden=true}}
const o=document.getElementById("overall");if(o){o.textContent=down?down+" of "+d.servers.length+" servers down":"All servers operational";o.className="overall"+(down?" bad":"")}
const t=document.getElementById("updated");if(t){t.dateTime=d.generated_at;t.textContent=new Date(d.generated_at).toUTCString().replace("GMT","UTC")}}catch{}}
setInterval(tick,30000)})();`;

export const LIVE_SCRIPT_HASH = `'sha256-${createHash("sha256").update(LIVE_SCRIPT).digest("base64")}'`;

export interface RenderedPage {
  html: string;
  csp: string;
}

/** The page's style sheet: the base and its accent colour (validated `#rrggbb`). */
const styleFor = (accent: string) => `:root{--accent:${accent}}${BASE_CSS}`;

/**
 * The whole page. `base` is where its own links start (`/status/<slug>` or `` on its host
 * name); `live` the widget URL the script polls.
 */
export function renderPage(view: PublicView, opts: { base: string; live: string }): RenderedPage {
  const { page, servers, incidents, maintenance } = view;
  const css = styleFor(page.accentColor);
  const cssHash = `'sha256-${createHash("sha256").update(css).digest("base64")}'`;
  const down = servers.filter((s) => s.online === false).length;
  const known = servers.some((s) => s.online !== null);
  const overall =
    servers.length === 0
      ? { cls: "unknown", text: "No servers on this page yet" }
      : down
        ? { cls: "bad", text: `${down} of ${servers.length} servers down` }
        : known
          ? { cls: "", text: "All servers operational" }
          : { cls: "unknown", text: "Not checked yet" };
  const title = esc(page.title);
  const html = `<!doctype html>
<html lang="en" data-theme="${page.theme}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} status</title>
<meta name="description" content="${esc(page.description || `Live status of ${page.title}`)}">
<link rel="alternate" type="application/atom+xml" title="${title} incidents" href="${esc(opts.base)}/feed.atom">
<style>${css}</style></head>
<body data-live="${esc(opts.live)}">
<header class="top"><div class="wrap">${page.logoUrl ? `<img src="${esc(page.logoUrl)}" alt="">` : ""}<div><h1>${title}</h1>${page.description ? `<p>${esc(page.description)}</p>` : ""}</div></div></header>
<main class="wrap">
<p id="overall" class="overall ${overall.cls}" role="status">${overall.text}</p>
<section aria-labelledby="servers-h"><h2 id="servers-h">Servers</h2>
${servers.length ? `<ul class="servers">${servers.map((s) => serverHtml(s, page.show)).join("\n")}</ul>` : `<p class="empty">No servers on this page yet.</p>`}
</section>
${
  /* Upcoming and running maintenance: shown only when there is some. */
  maintenance.length
    ? `<section aria-labelledby="maintenance-h"><h2 id="maintenance-h">Scheduled maintenance</h2><ol class="incidents">${maintenance.map(maintenanceHtml).join("")}</ol></section>`
    : ""
}
<section aria-labelledby="incidents-h"><h2 id="incidents-h">Incident history</h2>
${incidents.length ? `<ol class="incidents">${incidents.map(incidentHtml).join("")}</ol>` : `<p class="empty">No incidents in the last 90 days.</p>`}
</section>
</main>
<footer class="wrap"><a href="${esc(opts.base)}/feed.atom">Incident feed (Atom)</a> · Updated <time id="updated" datetime="${view.generatedAt}">${esc(timeLabel(view.generatedAt))}</time></footer>
<script>${LIVE_SCRIPT}</script>
</body></html>`;
  const csp = [
    "default-src 'none'",
    `style-src ${cssHash}`,
    `script-src ${LIVE_SCRIPT_HASH}`,
    "img-src https: data:",
    "connect-src 'self'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
    "form-action 'none'",
  ].join("; ");
  return { html, csp };
}

/** The 404 page of a status address: the same for a page that never was, is unpublished or gone. */
export const NOT_FOUND_HTML = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Status page not found</title></head><body><main><h1>Status page not found</h1><p>There is no published status page at this address.</p></main></body></html>`;
