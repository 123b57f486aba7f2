/**
 * Bundles the dashboard (web/) into the directory given as the first argument and prints the list
 * of files it wrote as JSON: `[{ "name", "kind", "type" }]`. The service runs it as a child
 * process, so the bundler's working memory is handed back when it exits instead of staying in
 * every idle instance's RSS (src/dashboard/plugin.ts).
 */
import { join } from "node:path";

const ENTRY = join(import.meta.dir, "../../web/main.tsx");
const outdir = process.argv[2];
if (!outdir) throw new Error("usage: bun src/dashboard/build.ts <outdir>");

const out = await Bun.build({
  entrypoints: [ENTRY],
  outdir,
  target: "browser",
  minify: true,
  // Code loaded on demand (the WebAuthn helper, only when a passkey is used) is its own chunk.
  splitting: true,
  naming: { entry: "[name]-[hash].[ext]", chunk: "[name]-[hash].[ext]", asset: "[name]-[hash].[ext]" },
  define: { "process.env.NODE_ENV": '"production"' },
});
if (!out.success) {
  console.error(out.logs.map(String).join("\n"));
  process.exit(1);
}
console.log(
  JSON.stringify(out.outputs.map((f) => ({ name: f.path.replace(/^.*[\\/]/, ""), kind: f.kind, type: f.type }))),
);
