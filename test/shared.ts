import postgres from "postgres";

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

/** A command run to its end: exit code and output, whatever the code (the caller judges it). */
export async function runCommand(cmd: string[], opts: { cwd: string; env?: Record<string, string | undefined> }) {
  const proc = Bun.spawn(cmd, { cwd: opts.cwd, env: opts.env ?? process.env, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  return { code, out, err };
}

/** A database of its own on the PostgreSQL server at `adminUrl`; `drop` removes it. */
export async function freshDatabase(adminUrl: string, prefix: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `${prefix}_${Date.now()}_${Math.random().toString(36).slice(2, 8)}`;
  const sql = postgres(adminUrl, { max: 1, onnotice: () => {} });
  await sql.unsafe(`create database "${name}"`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      await sql.unsafe(`drop database if exists "${name}" with (force)`);
      await sql.end();
    },
  };
}
