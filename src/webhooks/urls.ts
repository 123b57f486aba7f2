/**
 * Two spellings of one receiver compare equal here: scheme and host in lower case (the URL
 * parser does that, and IDNA, numeric IPv4 forms and default ports), no trailing dot on the
 * host, no fragment (never sent), unreserved characters percent-decoded and other escapes in
 * upper case (RFC 3986 6.2.2), no trailing slash on the path, and the query parameters sorted.
 */
export function urlKey(raw: string): string {
  const u = new URL(raw);
  const host = u.hostname.replace(/\.$/, "");
  const path = normalizeEscapes(u.pathname).replace(/\/+$/, "") || "/";
  const params = u.search
    .slice(1)
    .split("&")
    .filter((p) => p !== "")
    .map(normalizeEscapes)
    .sort();
  return `${u.protocol}//${host}${u.port ? `:${u.port}` : ""}${path}${params.length ? `?${params.join("&")}` : ""}`;
}

const UNRESERVED = /[A-Za-z0-9\-._~]/;

function normalizeEscapes(s: string): string {
  return s.replace(/%([0-9A-Fa-f]{2})/g, (_, hex: string) => {
    const c = String.fromCharCode(Number.parseInt(hex, 16));
    return UNRESERVED.test(c) ? c : `%${hex.toUpperCase()}`;
  });
}

/** Characters of the path and query kept at the end of a masked URL, to tell endpoints apart. */
const TAIL = 4;

/**
 * The URL as someone below admin sees it. Many receivers (Discord, Slack, Zapier and the like)
 * take the URL itself as the credential, so only the scheme, host and port are kept, and a
 * few characters of the end when the rest is long enough that they give nothing away.
 */
export function maskUrl(raw: string): string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return "…";
  }
  const rest = `${u.pathname}${u.search}`;
  return `${u.protocol}//${u.host}/…${rest.length > 4 * TAIL ? rest.slice(-TAIL) : ""}`;
}
