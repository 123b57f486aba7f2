/**
 * Which post-login redirect URIs a launcher may register (RFC 8252, OAuth for native apps):
 * - https URLs;
 * - http only on loopback (127.0.0.1, [::1], localhost), for launchers listening locally;
 * - private-use schemes in reverse-domain form (`com.example.launcher:/callback`).
 * Never a fragment, embedded credentials, or schemes such as javascript:, data:, file:.
 */
const LOOPBACK = new Set(["127.0.0.1", "[::1]", "localhost"]);
const BLOCKED_SCHEMES = new Set([
  "javascript",
  "data",
  "vbscript",
  "file",
  "blob",
  "about",
  "filesystem",
  "view-source",
  "ws",
  "wss",
  "ftp",
  "mailto",
  "tel",
  "chrome",
  "intent",
]);

export type RedirectCheck = { ok: true } | { ok: false; reason: string };

export function checkRedirectUri(raw: string): RedirectCheck {
  if (raw.length > 2048) return { ok: false, reason: "longer than 2048 characters" };
  if (/[\s\u0000-\u001f\u007f]/.test(raw)) return { ok: false, reason: "contains whitespace or control characters" };
  if (raw.includes("#")) return { ok: false, reason: "must not contain a fragment (#)" };
  const m = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(raw);
  if (!m) return { ok: false, reason: "must be an absolute URI with a scheme" };
  const scheme = m[1]!.toLowerCase();
  if (BLOCKED_SCHEMES.has(scheme)) return { ok: false, reason: `the ${scheme}: scheme is not allowed` };
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: "is not a valid URI" };
  }
  if (url.username || url.password) return { ok: false, reason: "must not contain credentials" };
  if (scheme === "https") return url.hostname ? { ok: true } : { ok: false, reason: "https URI needs a host" };
  if (scheme === "http") {
    return LOOPBACK.has(url.hostname)
      ? { ok: true }
      : { ok: false, reason: "http is allowed only on loopback hosts (127.0.0.1, [::1], localhost); use https" };
  }
  // RFC 8252 section 7.1: private-use schemes are reverse domain names, so they contain a dot.
  if (!scheme.includes("."))
    return {
      ok: false,
      reason: "a private-use scheme must be in reverse-domain form, like com.example.launcher:/callback",
    };
  return { ok: true };
}
