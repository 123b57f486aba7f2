import { Elysia } from "elysia";
import { notModified } from "../http/responses";
import { AppError } from "../lib/errors";
import type { Services } from "../trpc/context";
import { BADGE_KINDS, type BadgeKind } from "./badge";
import { NOT_FOUND_HTML } from "./render";
import type { Artefact, PageVersion, PublishedPages } from "./published";
import { PAGE_TTL_MS } from "./published";

const MAX_AGE = `public, max-age=${PAGE_TTL_MS / 1000}`;
const KINDS = new Set<string>(BADGE_KINDS);

/** Answers an artefact: 304 when the client holds this version, gzip when it takes it. */
function send(request: Request, a: Artefact, type: string, extra: Record<string, string>, id?: string): Response {
  const headers: Record<string, string> = {
    "content-type": type,
    etag: a.etag,
    "cache-control": MAX_AGE,
    vary: "accept-encoding",
    "x-content-type-options": "nosniff",
    ...extra,
  };
  // Set with the rest (the fast routes' request id), not on the finished response: changing a
  // response's headers after the fact costs Bun a copy of them.
  if (id) headers["x-request-id"] = id;
  if (notModified(request, a.etag)) return new Response(null, { status: 304, headers });
  if (a.gzip && /\bgzip\b/.test(request.headers.get("accept-encoding") ?? "")) {
    headers["content-encoding"] = "gzip";
    return new Response(a.gzip as Uint8Array<ArrayBuffer>, { headers });
  }
  return new Response(a.body, { headers });
}

const notFoundPage = () =>
  new Response(NOT_FOUND_HTML, {
    status: 404,
    headers: {
      "content-type": "text/html; charset=utf-8",
      "cache-control": "no-store",
      "content-security-policy": "default-src 'none'; frame-ancestors 'none'; base-uri 'none'",
      "x-content-type-options": "nosniff",
    },
  });

const notFound = () => new AppError("not_found", "There is no published status page here.");

function page(request: Request, v: PageVersion | null, base: string, id?: string): Response {
  if (!v) return notFoundPage();
  const a = v.html(base);
  return send(
    request,
    a,
    "text/html; charset=utf-8",
    { "content-security-policy": a.csp!, "x-frame-options": "DENY", "referrer-policy": "no-referrer" },
    id,
  );
}

const FEED_HEADERS = { "access-control-allow-origin": "*" };

function feed(request: Request, v: PageVersion | null, id?: string): Response {
  if (!v) throw notFound();
  return send(request, v.atom(), "application/atom+xml; charset=utf-8", FEED_HEADERS, id);
}

const BADGE_HEADERS = {
  "access-control-allow-origin": "*",
  "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'",
};

/** A badge's artefact by its server and file name (`uptime-30d.svg`); null when there is none. */
function badgeOf(v: PageVersion, serverId: string, file: string): Artefact | null {
  const kind = file.endsWith(".svg") ? file.slice(0, -4) : "";
  return KINDS.has(kind) ? v.badge(serverId.toLowerCase(), kind as BadgeKind) : null;
}

function sendBadge(request: Request, a: Artefact, id?: string): Response {
  return send(request, a, "image/svg+xml; charset=utf-8", BADGE_HEADERS, id);
}

function badge(request: Request, v: PageVersion | null, serverId: string, file: string): Response {
  const a = v && badgeOf(v, serverId, file);
  if (!a) throw notFound();
  return sendBadge(request, a);
}

type BunRoute = (request: Request & { params: Record<string, string> }) => Response | Promise<Response>;

/**
 * The public pages' answers from memory, as Bun routes ahead of the app's router: a page, feed or
 * badge whose current version is in hand is answered here (with its request id, access log line
 * and metrics, as the edge would), costing a map lookup instead of the whole pipeline. The general
 * rate limit is not counted for these: the answer costs less than counting it. Anything else (a
 * slug never read or unpublished, a version too old, an unknown badge) goes to the app as usual.
 */
export function statusFastRoutes(
  services: Pick<Services, "publishedPages" | "log" | "metrics">,
  app: () => { fetch(request: Request): Response | Promise<Response> },
): Record<string, { GET: BunRoute }> {
  const { publishedPages: pages, log, metrics } = services;
  const answered = (request: Request, route: string, res: Response, start: number, id: string) => {
    if (metrics) metrics.request("status", route, request.method, res.status, (performance.now() - start) / 1000);
    if (log.enabled("info"))
      log.info("request", {
        request_id: id,
        method: request.method,
        path: new URL(request.url).pathname,
        status: res.status,
        duration_ms: Math.round((performance.now() - start) * 100) / 100,
      });
    return res;
  };
  const route =
    (
      pattern: string,
      answer: (request: Request, v: PageVersion, params: Record<string, string>, id: string) => Response | null,
    ): BunRoute =>
    (request) => {
      const start = performance.now();
      const v = request.method === "GET" ? pages.peek(request.params.slug!) : undefined;
      if (!v) return app().fetch(request);
      const id = crypto.randomUUID();
      const res = answer(request, v, request.params, id);
      return res ? answered(request, pattern, res, start, id) : app().fetch(request);
    };
  return {
    // Per method, so they take the place of the router's own GET for these paths.
    "/status/:slug": {
      GET: route("/status/:slug", (request, v, p, id) => page(request, v, `/status/${p.slug}`, id)),
    },
    "/status/:slug/feed.atom": { GET: route("/status/:slug/feed.atom", (request, v, _p, id) => feed(request, v, id)) },
    "/status/:slug/badges/:server/:file": {
      GET: route("/status/:slug/badges/:server/:file", (request, v, p, id) => {
        const a = badgeOf(v, p.server!, p.file!);
        return a ? sendBadge(request, a, id) : null;
      }),
    },
  };
}

/** `Host` without its port, lower case; null when absent. */
function hostOf(request: Request): string | null {
  const h = request.headers.get("host");
  if (!h) return null;
  const at = h.startsWith("[") ? h.indexOf("]") + 1 : h.indexOf(":");
  return (at > 0 ? h.slice(0, at) : h).toLowerCase();
}

const SLUG = /^[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?$/;
const BADGE_PATH = /^\/badges\/([0-9a-fA-F-]{36})\/([a-z0-9-]+\.svg)$/;

/**
 * The public status pages (docs/status-pages.md): `/status/<slug>`, its feed and badges, and the
 * same at `/`, `/feed.atom` and `/badges/…` of a page's own host name. Everything else on such a
 * host is the service as usual. Registered after the edge, so every answer passes its pipeline.
 */
export function statusPagesPlugin(services: Pick<Services, "publishedPages">) {
  const pages: PublishedPages = services.publishedPages;
  // Elysia hands a path parameter it cannot percent-decode (`/status/%`) as null, not a string.
  const bySlug = (slug: string | null) =>
    typeof slug === "string" && SLUG.test(slug) ? pages.get(slug.toLowerCase()) : Promise.resolve(null);
  const str = (v: string | null | undefined) => (typeof v === "string" ? v : "");
  // Before routing, so a page's own host name answers at `/` before the dashboard would.
  const hosts = new Elysia({ name: "status-page-hosts" })
    .onRequest(async ({ request }) => {
      if (request.method !== "GET" && request.method !== "HEAD") return;
      const host = hostOf(request);
      if (!host) return;
      const slug = await pages.slugForHost(host);
      if (!slug) return;
      const url = new URL(request.url);
      const path = url.pathname;
      if (path === "/") return page(request, await pages.get(slug), "");
      if (path === "/feed.atom") return feed(request, await pages.get(slug));
      const m = BADGE_PATH.exec(path);
      if (m) return badge(request, await pages.get(slug), m[1]!, m[2]!);
    })
    .as("global");
  return new Elysia({ name: "status-pages" })
    .use(hosts)
    .get("/status/:slug", async ({ request, params }) =>
      page(request, await bySlug(params.slug), `/status/${str(params.slug).toLowerCase()}`),
    )
    .get("/status/:slug/feed.atom", async ({ request, params }) => feed(request, await bySlug(params.slug)))
    .get("/status/:slug/badges/:server/:file", async ({ request, params }) =>
      badge(request, await bySlug(params.slug), str(params.server), str(params.file)),
    );
}
