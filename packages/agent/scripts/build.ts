/**
 * Builds what the package ships: one ES module, dist/mc-platform-agent.mjs, with croner bundled
 * in, for Node.js 18+ (and Bun). Installing the package needs no registry, and a host without npm
 * runs the file itself: `node mc-platform-agent.mjs`.
 */
import { chmodSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";

const DIR = resolve(import.meta.dir, "..");
export const BUNDLE = "mc-platform-agent.mjs";

/** Bundles the agent into `outDir` (the package's dist/ by default) and returns the file's path. */
export async function build(outDir = resolve(DIR, "dist")): Promise<string> {
  rmSync(join(outDir, BUNDLE), { force: true });
  const out = await Bun.build({
    entrypoints: [resolve(DIR, "src/cli.ts")],
    outdir: outDir,
    target: "node",
    format: "esm",
    naming: BUNDLE,
    // Readable names in the file a server owner runs beside their server; no whitespace lost either.
    minify: { syntax: true },
  });
  if (!out.success) throw new AggregateError(out.logs, "bundling the agent failed");
  const file = join(outDir, BUNDLE);
  const text = await Bun.file(file).text();
  // The bin runs as `#!/usr/bin/env node`; a Bun-only pragma would tie it to Bun.
  if (!text.startsWith("#!/usr/bin/env node\n") || text.includes("// @bun"))
    throw new Error(`${file} is not a plain Node.js script`);
  chmodSync(file, 0o755);
  return file;
}

if (import.meta.main) {
  const started = performance.now();
  const file = await build(process.argv[2] ? resolve(process.argv[2]) : undefined);
  console.log(`built ${file} in ${Math.round(performance.now() - started)} ms`);
}
