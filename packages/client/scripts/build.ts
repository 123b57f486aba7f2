/**
 * Builds what `npm pack` ships: dist/index.js (ESM for Node, dependencies left as imports) and
 * dist/index.d.ts, one declaration file with everything of ours inlined, so a consumer needs
 * neither the server's source nor Bun's types, whatever its moduleResolution. The service's
 * /downloads builds it into a directory of its own, given as the argument.
 */
import { rmSync } from "node:fs";
import { resolve } from "node:path";
import pkg from "../package.json";
import { loadDtsBundleGenerator } from "./typescript5";

const DIR = resolve(import.meta.dir, "..");
const DIST = resolve(DIR, "dist");
const external = Object.keys(pkg.dependencies);

/** Builds into `outDir` (the package's dist/ by default). */
export async function build(outDir = DIST): Promise<void> {
  rmSync(outDir, { recursive: true, force: true });
  const js = await Bun.build({
    entrypoints: [resolve(DIR, "src/index.ts")],
    outdir: outDir,
    target: "node",
    format: "esm",
    external,
    naming: "index.js",
  });
  if (!js.success) throw new AggregateError(js.logs, "bundling the SDK failed");

  const { generateDtsBundle } = await loadDtsBundleGenerator();
  const [dts] = generateDtsBundle(
    [{ filePath: resolve(DIR, "src/index.ts"), output: { noBanner: true, exportReferencedTypes: false } }],
    { preferredConfigPath: resolve(DIR, "tsconfig.json") },
  );
  const imported = [...dts!.matchAll(/(?:from |import\()["']([^"']+)["']/g)].map((m) => m[1]!);
  const strays = imported.filter((m) => !external.some((dep) => m === dep || m.startsWith(`${dep}/`)));
  if (strays.length > 0 || /reference types=|bun-types|"bun"/.test(dts!))
    throw new Error(`dist/index.d.ts refers to something a consumer does not have: ${strays.join(", ")}`);
  await Bun.write(resolve(outDir, "index.d.ts"), dts!);
}

if (import.meta.main) {
  const started = performance.now();
  const outDir = process.argv[2] ? resolve(process.argv[2]) : DIST;
  await build(outDir);
  console.log(`built ${outDir}/index.js and index.d.ts in ${Math.round(performance.now() - started)} ms`);
}
