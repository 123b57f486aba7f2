import { createHash } from "node:crypto";
import type { ReactNode } from "react";
import { renderToStaticMarkup } from "react-dom/server";

/**
 * Server-rendered HTML pages (the consent and message pages, the development provider's
 * sign-in page): JSX rendered by React, which escapes every interpolated value, and one set of
 * security headers for all of them.
 */

export interface PageOptions {
  title: string;
  /** The page's only style sheet, inlined and allowed by its hash (no 'unsafe-inline'). */
  css: string;
  status?: number;
  /** Where the page's forms may submit, and where their submit may redirect to (browsers check both). */
  formAction?: string[];
  /** Image sources, e.g. `https:` for a client's logo. */
  imgSrc?: string[];
  headers?: Record<string, string>;
}

const hashes = new Map<string, string>();

function styleHash(css: string): string {
  let h = hashes.get(css);
  if (!h) {
    h = `'sha256-${createHash("sha256").update(css).digest("base64")}'`;
    hashes.set(css, h);
  }
  return h;
}

/** Headers for every HTML page we serve: no framing, no referrer, no sniffing, not cached. */
export function pageHeaders(csp: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    "content-type": "text/html; charset=utf-8",
    "content-security-policy": csp,
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
    "x-content-type-options": "nosniff",
    ...extra,
  };
}

/** The content security policy of a rendered page: nothing but its own style, images and forms as given. */
export function pageCsp(opts: Pick<PageOptions, "css" | "formAction" | "imgSrc">): string {
  return [
    "default-src 'none'",
    `style-src ${styleHash(opts.css)}`,
    ...(opts.imgSrc?.length ? [`img-src ${opts.imgSrc.join(" ")}`] : []),
    opts.formAction?.length ? `form-action ${opts.formAction.join(" ")}` : "form-action 'none'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
  ].join("; ");
}

/** Renders `body` inside the page frame and answers it with the page's headers. */
export function renderPage(body: ReactNode, opts: PageOptions): Response {
  const html = renderToStaticMarkup(
    <html lang="en">
      <head>
        <meta charSet="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>{opts.title}</title>
        {/* A constant of ours, not user input; React would escape CSS selectors such as `>`. */}
        {/* biome-ignore lint/security/noDangerouslySetInnerHtml: the page's own constant style sheet */}
        <style dangerouslySetInnerHTML={{ __html: opts.css }} />
      </head>
      <body>
        <main>{body}</main>
      </body>
    </html>,
  );
  return new Response(`<!doctype html>${html}`, {
    status: opts.status ?? 200,
    headers: pageHeaders(pageCsp(opts), opts.headers),
  });
}
