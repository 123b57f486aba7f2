/**
 * The repository's `typescript` is 7.x (native), which has no compiler API, while
 * openapi-typescript and dts-bundle-generator import `typescript` for theirs. Each tool is
 * bundled once with `typescript` resolved to the typescript@5 this package installs under the
 * alias `typescript5` (runtime resolver hooks do not reach imports made inside node_modules),
 * then loaded from that bundle.
 */
import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";

const ts5 = require.resolve("typescript5");
const CACHE = resolve(import.meta.dir, "../node_modules/.cache/typescript5-tools");

async function withTypescript5<T>(name: string, reexport: string): Promise<T> {
  const outdir = join(CACHE, name);
  mkdirSync(outdir, { recursive: true });
  const entry = join(outdir, "entry.ts");
  await Bun.write(entry, reexport);
  const built = await Bun.build({
    entrypoints: [entry],
    outdir,
    target: "bun",
    format: "esm",
    naming: "index.js",
    plugins: [
      {
        name: "typescript5",
        setup(build) {
          build.onResolve({ filter: /^typescript$/ }, () => ({ path: ts5 }));
        },
      },
    ],
  });
  if (!built.success) throw new AggregateError(built.logs, `bundling ${entry} failed`);
  return import(join(outdir, "index.js"));
}

export const loadOpenApiTypescript = () =>
  withTypescript5<Pick<typeof import("openapi-typescript"), "default" | "astToString">>(
    "openapi-typescript",
    'export { default, astToString } from "openapi-typescript";\n',
  );

export const loadDtsBundleGenerator = () =>
  withTypescript5<Pick<typeof import("dts-bundle-generator"), "generateDtsBundle">>(
    "dts-bundle-generator",
    'export { generateDtsBundle } from "dts-bundle-generator";\n',
  );
