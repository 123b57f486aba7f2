// biome-ignore lint/suspicious/noExplicitAny: the AsyncAPI document is read as plain JSON
type Json = Record<string, any>;

const esc = (s: unknown) =>
  String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
/** Escaped text with `code` spans, the only markup the document's prose uses. */
const prose = (s: unknown) => esc(s ?? "").replace(/`([^`]+)`/g, "<code>$1</code>");

function typeOf(s: Json | undefined): string {
  if (!s) return "any";
  if (s.const !== undefined) return JSON.stringify(s.const);
  if (s.enum) return s.enum.map((v: unknown) => JSON.stringify(v)).join(" | ");
  const types: string[] = Array.isArray(s.type) ? s.type : [s.type ?? "object"];
  return types
    .map((t) =>
      t === "array" ? `array of ${typeOf(s.items)}` : s.format && t === "string" ? `string (${s.format})` : t,
    )
    .join(" | ");
}

function fields(schema: Json | undefined): string {
  const props = Object.entries<Json>(schema?.properties ?? {});
  if (props.length === 0) return "<p><em>No fields.</em></p>";
  const required = new Set<string>(schema?.required ?? []);
  const rows = props
    .map(
      ([name, s]) =>
        `<tr><td><code>${esc(name)}</code></td><td>${esc(typeOf(s))}</td><td>${required.has(name) ? "yes" : "no"}</td><td>${prose(s.description ?? "")}</td></tr>`,
    )
    .join("");
  return `<table><thead><tr><th>Field</th><th>Type</th><th>Always</th><th>Meaning</th></tr></thead><tbody>${rows}</tbody></table>`;
}

function message(name: string, m: Json, envelope: boolean): string {
  const examples = (m.examples ?? [])
    .map((e: Json) => `<pre><code>${esc(JSON.stringify(e.payload, null, 2))}</code></pre>`)
    .join("");
  const schema = envelope ? m.payload?.properties?.data : m.payload;
  return `<section id="msg-${esc(name)}"><h3><code>${esc(name)}</code></h3><p>${prose(m.summary)}</p>
${envelope ? "<p><code>data</code>:</p>" : ""}${fields(schema)}<h4>Example</h4>${examples}</section>`;
}

/** The snippet the page and the docs show: a browser cannot set headers on a WebSocket, so it authenticates by first message. */
export function browserSnippet(wsBase: string): string {
  return `// In the browser: the first message authenticates (within 5 s of opening).
const ws = new WebSocket(\`${wsBase}/ws/server/\${serverId}/analytics\`);
ws.onopen = () => ws.send(JSON.stringify({ type: "auth", token: accessToken }));
ws.onmessage = async (event) => {
  const msg = JSON.parse(event.data); // {type, server_id, ts, data}
  switch (msg.type) {
    case "snapshot": // once, after auth_ok
      return render(msg.data);
    case "token_expiring": // renew before the end, or the socket closes with 4011 at expiry
      return ws.send(JSON.stringify({ type: "auth", token: await refreshAccessToken() }));
    default: // events, in order
      return apply(msg);
  }
};
ws.onclose = (event) => console.log("closed", event.code, event.reason); // 4001, 4004, 4011, ...`;
}

/**
 * The AsyncAPI document as a page: rendered here from the document itself (no viewer bundle,
 * nothing from a CDN), so it cannot drift from /asyncapi.json.
 */
export function renderAsyncApiPage(doc: Json): string {
  const server = Object.values<Json>(doc.servers ?? {})[0] ?? {};
  const wsBase = `${server.protocol ?? "wss"}://${server.host ?? "localhost"}`;
  const channel = Object.values<Json>(doc.channels ?? {})[0] ?? {};
  const messages = doc.components?.messages ?? {};
  const receive: string[] = [];
  const send: string[] = [];
  for (const op of Object.values<Json>(doc.operations ?? {}))
    for (const ref of op.messages ?? [])
      (op.action === "send" ? send : receive).push(String(ref.$ref).split("/").pop()!);
  const toc = (names: string[]) => names.map((n) => `<a href="#msg-${esc(n)}"><code>${esc(n)}</code></a>`).join(" ");
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${esc(doc.info?.title)}: realtime reference</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:0 auto;padding:1rem 1.5rem;color:#1b1f24}
code,pre{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:13px}
pre{background:#f4f5f7;padding:.75rem;overflow:auto;border-radius:4px}
table{border-collapse:collapse;width:100%;margin:.5rem 0}th,td{border:1px solid #d8dce1;padding:.25rem .5rem;text-align:left;vertical-align:top}
section{border-top:1px solid #d8dce1;margin-top:1.5rem}nav a{margin-right:1rem}
</style></head>
<body>
<nav><a href="/docs">HTTP API reference</a><a href="/asyncapi.json">asyncapi.json</a><a href="/openapi.json">openapi.json</a></nav>
<h1>${esc(doc.info?.title)} <small>${esc(doc.info?.version)}</small></h1>
<p>${prose(doc.info?.description)}</p>
<h2>Connect</h2>
<p><code>${esc(wsBase)}${esc(channel.address)}</code> (AsyncAPI ${esc(doc.asyncapi)})</p>
<pre><code>${esc(browserSnippet(wsBase))}</code></pre>
<p>Elsewhere (a backend, a tool) send <code>authorization: Bearer &lt;token&gt;</code> on the upgrade request instead.</p>
<h2>Received</h2><p>${toc(receive)}</p>
${receive.map((n) => message(n, messages[n] ?? {}, true)).join("\n")}
<h2>Sent</h2><p>${toc(send)}</p>
${send.map((n) => message(n, messages[n] ?? {}, false)).join("\n")}
</body></html>`;
}
