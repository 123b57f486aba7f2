import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { Elysia } from "elysia";
import { pageHeaders } from "../lib/page";
import { staticResponse } from "./responses";

const require = createRequire(import.meta.url);
// The package exports no path to its browser bundle; it sits beside the main entry.
// Streamed from disk on each request: 4 MiB that an idle instance need not hold.
const SCALAR_JS = join(dirname(require.resolve("@scalar/api-reference")), "browser/standalone.js");

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
<body><div id="app"></div><script src="/docs/scalar.js"></script><script src="/docs/init.js"></script></body></html>`;
const DOCS_INIT = `Scalar.createApiReference('#app', { url: '/openapi.json', withDefaultFonts: false, hideClientButton: true });`;

/**
 * The published documents (OpenAPI, AsyncAPI) and the interactive reference at /docs. Each
 * document is built on its first request and then served from memory: building the OpenAPI
 * document costs ~8 MiB of heap that an instance nobody reads the documents from need not pay.
 */
export function docsRoutes(documents: { openapi: () => unknown; asyncapi: () => unknown }) {
  let openapiJson: string | undefined;
  let asyncapiJson: string | undefined;
  return new Elysia({ name: "docs" })
    .get("/openapi.json", () => {
      openapiJson ??= JSON.stringify(documents.openapi());
      return staticResponse(openapiJson, "application/json");
    })
    .get("/asyncapi.json", () => {
      asyncapiJson ??= JSON.stringify(documents.asyncapi());
      return staticResponse(asyncapiJson, "application/json");
    })
    .get("/docs", () => new Response(DOCS_HTML, { headers: pageHeaders(DOCS_CSP, { "cache-control": "no-cache" }) }))
    .get("/docs/scalar.js", () =>
      staticResponse(Bun.file(SCALAR_JS), "text/javascript; charset=utf-8", {
        "cache-control": "public, max-age=86400",
      }),
    )
    .get("/docs/init.js", () => staticResponse(DOCS_INIT, "text/javascript; charset=utf-8"));
}
