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

const ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };

/** Decodes the character references an HTML serializer writes into attribute values. */
function decodeEntities(value: string): string {
  return value.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (all, ref: string) => {
    if (ref[0] === "#")
      return String.fromCodePoint(
        ref[1] === "x" || ref[1] === "X" ? Number.parseInt(ref.slice(2), 16) : Number(ref.slice(1)),
      );
    return ENTITIES[ref] ?? all;
  });
}

/** The hidden inputs of a form page, unescaped: what a browser would submit back. */
export function hiddenFields(html: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"\s*\/?>/g))
    out[m[1]!] = decodeEntities(m[2]!);
  return out;
}
