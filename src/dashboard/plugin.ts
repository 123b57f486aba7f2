import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Elysia } from "elysia";
import { AppError } from "../lib/errors";
import { pageHeaders } from "../lib/page";
import { serveStatic, type StaticFile, staticFile } from "../http/static";

/**
 * The web dashboard (web/), bundled by Bun from the repository: no CDN, nothing fetched at run
 * time. Assets get content-hashed names and a year of cache; the page itself is never cached,
 * so a deploy is picked up on the next load (an ETag makes that check a 304). Every body is sent
 * compressed as the browser accepts (src/http/static.ts). Routing in the browser is by hash
 * (`/#/servers/…`), so a reload never asks the server for a path the API owns (`/teams`, `/auth/…`).
 */

const BUILDER = join(import.meta.dir, "build.ts");

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

/** A grass block: one SVG for every size, in the tab and in bookmarks. */
const FAVICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16">
<rect width="16" height="16" rx="3" fill="#8a5a34"/>
<path d="M3 0h10a3 3 0 0 1 3 3v3h-2v2h-3V6H8v3H6V6H3v2H0V3a3 3 0 0 1 3-3z" fill="#3f9b3a"/>
<path d="M0 3a3 3 0 0 1 3-3h10a3 3 0 0 1 3 3H0z" fill="#5cc04f"/>
<path d="M3 11h2v2H3zm7 1h2v2h-2zm2-3h2v2h-2z" fill="#6b4427"/>
</svg>
`;
const favicon = staticFile(FAVICON, "image/svg+xml", "public, max-age=86400");

export interface DashboardBundle {
  page: StaticFile;
  assets: Map<string, StaticFile>;
}

let building: Promise<DashboardBundle> | undefined;

/** Bundles web/ once per process (every app in a test run shares it). */
export function buildDashboard(): Promise<DashboardBundle> {
  building ??= (async () => {
    // In a child process: the bundler's memory goes back to the system when it exits.
    const dir = mkdtempSync(join(tmpdir(), "mcp-dashboard-"));
    const assets = new Map<string, StaticFile>();
    const scripts: string[] = [];
    const styles: string[] = [];
    try {
      const child = Bun.spawn([process.execPath, BUILDER, dir], { stdout: "pipe", stderr: "pipe" });
      const [stdout, stderr, code] = await Promise.all([
        new Response(child.stdout).text(),
        new Response(child.stderr).text(),
        child.exited,
      ]);
      if (code !== 0) throw new Error(`dashboard build failed: ${stderr.trim()}`);
      const files = JSON.parse(stdout) as { name: string; kind: string; type: string }[];
      for (const file of files) {
        const body = await Bun.file(join(dir, file.name)).arrayBuffer();
        assets.set(file.name, staticFile(body, file.type, "public, max-age=31536000, immutable"));
        if (file.kind === "entry-point") scripts.push(file.name);
        else if (file.name.endsWith(".css")) styles.push(file.name);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>mc-platform dashboard</title>
<link rel="icon" href="/favicon.svg" type="image/svg+xml">
${styles.map((s) => `<link rel="stylesheet" href="/assets/${s}">`).join("\n")}
${scripts.map((s) => `<script type="module" src="/assets/${s}"></script>`).join("\n")}
</head><body><div id="root"></div></body></html>`;
    return { page: staticFile(html, "text/html; charset=utf-8", "no-cache"), assets };
  })();
  building.catch(() => {
    building = undefined;
  });
  return building;
}

/** Serves the dashboard at `/`, its assets at `/assets/*` and its icon; nothing else. */
export function dashboardPlugin(opts: { prebuild: boolean }) {
  if (opts.prebuild) buildDashboard().catch(() => {});
  return (
    new Elysia({ name: "dashboard" })
      .get("/", async ({ request }) => {
        const { page } = await buildDashboard();
        const { "content-type": _, ...headers } = pageHeaders(DASHBOARD_CSP);
        return serveStatic(request, page, headers);
      })
      .get("/assets/:file", async ({ params, request }) => {
        const asset = (await buildDashboard()).assets.get(params.file);
        if (!asset) throw new AppError("not_found", "No such asset.");
        return serveStatic(request, asset);
      })
      // Browsers ask for /favicon.ico on pages that name no icon (the API documents, a JSON answer).
      .get("/favicon.svg", ({ request }) => serveStatic(request, favicon))
      .get("/favicon.ico", ({ request }) => serveStatic(request, favicon))
  );
}
