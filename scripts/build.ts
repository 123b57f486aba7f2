/**
 * The build step of a production install (docs/production-install.md), run with the full
 * install before it is pruned to production dependencies:
 *   - dist/downloads/: the agent (npm tarball and single .mjs) and the SDK (npm tarball) that
 *     GET /downloads serves, built from packages/ (the SDK's declarations need build-time tools);
 *   - dist/docs/scalar.js: the API reference viewer's bundle, so its package can stay a
 *     development dependency.
 *   bun scripts/build.ts          (npm run build)
 */
import { copyFileSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { buildAll, DOWNLOADS_DIR } from "../src/downloads/catalog";
import { SCALAR_BUILT, scalarBundle } from "../src/http/docs";

const started = performance.now();
rmSync(DOWNLOADS_DIR, { recursive: true, force: true });
mkdirSync(DOWNLOADS_DIR, { recursive: true });
for (const [name, body] of await buildAll()) {
  writeFileSync(join(DOWNLOADS_DIR, name), body);
  console.log(`${relative(process.cwd(), join(DOWNLOADS_DIR, name))}  ${(body.length / 1024).toFixed(0)} KiB`);
}

const scalar = scalarBundle();
if (!scalar || scalar === SCALAR_BUILT)
  throw new Error("@scalar/api-reference is not installed: run the full install first");
mkdirSync(dirname(SCALAR_BUILT), { recursive: true });
copyFileSync(scalar, SCALAR_BUILT);
console.log(`${relative(process.cwd(), SCALAR_BUILT)}  from ${relative(process.cwd(), scalar)}`);
console.log(`built in ${Math.round(performance.now() - started)} ms`);
