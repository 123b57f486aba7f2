import { join } from "node:path";
import { Elysia } from "elysia";
import { AppError } from "../lib/errors";
import { pageHeaders } from "../lib/page";
import { staticResponse } from "../http/responses";

/**
 * The web dashboard (web/), bundled by Bun from the repository: no CDN, nothing fetched at run
 * time. Assets get content-hashed names and a year of cache; the page itself is never cached,
 * so a deploy is picked up on the next load. Routing in the browser is by hash (`/#/servers/…`),
 * so a reload never asks the server for a path the API owns (`/teams`, `/auth/…`).
 */

const ENTRY = join(import.meta.dir, "../../web/main.tsx");

/** Only our own scripts and styles; the socket and the API on this origin; client logos over https. */
export const DASHBOARD_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: https:",
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'none'",
].join("; ");

export interface DashboardBundle {
  html: string;
  assets: Map<string, { body: ArrayBuffer; type: string }>;
}

let building: Promise<DashboardBundle> | undefined;

/** Bundles web/ once per process (every app in a test run shares it). */
export function buildDashboard(): Promise<DashboardBundle> {
  building ??= (async () => {
    const out = await Bun.build({
      entrypoints: [ENTRY],
      target: "browser",
      minify: true,
      naming: { entry: "[name]-[hash].[ext]", chunk: "[name]-[hash].[ext]", asset: "[name]-[hash].[ext]" },
      define: { "process.env.NODE_ENV": '"production"' },
    });
    if (!out.success) throw new Error(`dashboard build failed: ${out.logs.map(String).join("\n")}`);
    const assets = new Map<string, { body: ArrayBuffer; type: string }>();
    const scripts: string[] = [];
    const styles: string[] = [];
    for (const file of out.outputs) {
      const name = file.path.replace(/^.*[\\/]/, "");
      assets.set(name, { body: await file.arrayBuffer(), type: file.type });
      if (file.kind === "entry-point") scripts.push(name);
      else if (name.endsWith(".css")) styles.push(name);
    }
    const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>mc-platform dashboard</title>
${styles.map((s) => `<link rel="stylesheet" href="/assets/${s}">`).join("\n")}
${scripts.map((s) => `<script type="module" src="/assets/${s}"></script>`).join("\n")}
</head><body><div id="root"></div></body></html>`;
    return { html, assets };
  })();
  building.catch(() => {
    building = undefined;
  });
  return building;
}

/** Serves the dashboard at `/` and its assets at `/assets/*`; nothing else. */
export function dashboardPlugin(opts: { prebuild: boolean }) {
  if (opts.prebuild) buildDashboard().catch(() => {});
  return new Elysia({ name: "dashboard" })
    .get("/", async () => {
      const { html } = await buildDashboard();
      return new Response(html, { headers: pageHeaders(DASHBOARD_CSP, { "cache-control": "no-cache" }) });
    })
    .get("/assets/:file", async ({ params }) => {
      const asset = (await buildDashboard()).assets.get(params.file);
      if (!asset) throw new AppError("not_found", "No such asset.");
      return staticResponse(asset.body, asset.type, { "cache-control": "public, max-age=31536000, immutable" });
    });
}
