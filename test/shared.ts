/**
 * Helpers shared by the tests and the benchmarks. Nothing here imports bun:test, so the
 * benchmarks (plain scripts) can use them too.
 */

/** A free loopback port, found by binding port 0 and letting it go. */
export function freePort(): number {
  const s = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
  const port = s.port!;
  s.stop(true);
  return port;
}

/** The hidden inputs of a form page, unescaped: what a browser would submit back. */
export function hiddenFields(html: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g))
    out[m[1]!] = m[2]!.replace(/&#(\d+);/g, (_, n) => String.fromCharCode(Number(n)));
  return out;
}
