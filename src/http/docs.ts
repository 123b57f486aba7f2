import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { Elysia } from "elysia";
import { AppError } from "../lib/errors";
import { pageHeaders } from "../lib/page";
import { renderAsyncApiPage } from "./asyncapi-page";
import { staticResponse } from "./responses";

const require = createRequire(import.meta.url);

/**
 * The reference viewer's browser bundle, from the package (which exports no path to it: it sits
 * beside the main entry). A production install has it from its build step instead (dist/docs):
 * the package is a development dependency that brings ~200 MB of its own for this one file.
 * Streamed from disk on each request: 4 MiB that an idle instance need not hold.
 */
export const SCALAR_BUILT = join(import.meta.dir, "../../dist/docs/scalar.js");

export function scalarBundle(): string | null {
  try {
    return join(dirname(require.resolve("@scalar/api-reference")), "browser/standalone.js");
  } catch {
    return existsSync(SCALAR_BUILT) ? SCALAR_BUILT : null;
  }
}

const DOCS_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'none'",
].join("; ");

const DOCS_HTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>API reference</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body><nav style="font:14px system-ui,sans-serif;padding:.5rem 1rem;border-bottom:1px solid #d8dce1">
<a href="/docs/asyncapi">Realtime analytics stream (AsyncAPI)</a> &middot; <a href="/openapi.json">openapi.json</a> &middot; <a href="/asyncapi.json">asyncapi.json</a></nav>
<div id="app"></div><script src="/docs/scalar.js"></script><script src="/docs/init.js"></script></body></html>`;
const DOCS_INIT = `Scalar.createApiReference('#app', { url: '/openapi.json', withDefaultFonts: false, hideClientButton: true });`;

/**
 * The published documents (OpenAPI, AsyncAPI), the interactive reference at /docs and the
 * realtime reference at /docs/asyncapi. Each document is built on its first request and then
 * served from memory: building the OpenAPI document costs ~8 MiB of heap that an instance nobody
 * reads the documents from need not pay.
 */
export function docsRoutes(documents: { openapi: () => unknown; asyncapi: () => unknown }) {
  let openapiJson: string | undefined;
  let asyncapiDoc: Record<string, unknown> | undefined;
  let asyncapiJson: string | undefined;
  let asyncapiPage: string | undefined;
  let scalarJs: string | undefined;
  const asyncapi = () => (asyncapiDoc ??= documents.asyncapi() as Record<string, unknown>);
  return new Elysia({ name: "docs" })
    .get("/openapi.json", () => {
      openapiJson ??= JSON.stringify(documents.openapi());
      return staticResponse(openapiJson, "application/json");
    })
    .get("/asyncapi.json", () => {
      asyncapiJson ??= JSON.stringify(asyncapi());
      return staticResponse(asyncapiJson, "application/json");
    })
    .get("/docs", () => new Response(DOCS_HTML, { headers: pageHeaders(DOCS_CSP, { "cache-control": "no-cache" }) }))
    .get("/docs/asyncapi", () => {
      asyncapiPage ??= renderAsyncApiPage(asyncapi());
      return new Response(asyncapiPage, { headers: pageHeaders(DOCS_CSP, { "cache-control": "no-cache" }) });
    })
    .get("/docs/scalar.js", () => {
      scalarJs ??= scalarBundle() ?? undefined;
      if (!scalarJs) throw new AppError("unavailable", "The reference viewer is not built: run `npm run build`.");
      return staticResponse(Bun.file(scalarJs), "text/javascript; charset=utf-8", {
        "cache-control": "public, max-age=86400",
      });
    })
    .get("/docs/init.js", () => staticResponse(DOCS_INIT, "text/javascript; charset=utf-8"));
}
