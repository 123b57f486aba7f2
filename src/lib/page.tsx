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

/** The document around a page's body, per style sheet: rendered by React once, then reused. */
const frames = new Map<string, [string, string, string]>();
const TITLE_MARK = "\u{E000}title\u{E000}";
const BODY_MARK = "\u{E000}body\u{E000}";

function document(css: string, title: string, body: ReactNode) {
  return (
    <html lang="en">
      <head>
        <meta charSet="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>{title}</title>
        {/* A constant of ours, not user input; React would escape CSS selectors such as `>`. */}
        {/* biome-ignore lint/security/noDangerouslySetInnerHtml: the page's own constant style sheet */}
        <style dangerouslySetInnerHTML={{ __html: css }} />
      </head>
      <body>
        <main>{body}</main>
      </body>
    </html>
  );
}

function frame(css: string): [string, string, string] {
  let f = frames.get(css);
  if (!f) {
    const html = `<!doctype html>${renderToStaticMarkup(document(css, TITLE_MARK, BODY_MARK))}`;
    const [beforeTitle, rest] = html.split(TITLE_MARK) as [string, string];
    const [between, after] = rest.split(BODY_MARK) as [string, string];
    f = [beforeTitle, between, after];
    // The pages' style sheets are a handful of constants; the bound only guards a misuse.
    if (frames.size < 64) frames.set(css, f);
  }
  return f;
}

/**
 * Renders `body` inside the page frame and answers it with the page's headers. Only the body
 * goes through React per request; the frame around it is the same markup every time, and the
 * title is escaped as React escapes text.
 */
export function renderPage(body: ReactNode, opts: PageOptions): Response {
  let html: string;
  if (opts.imgSrc?.length) {
    // React hoists a preload of each image into the head: a page that may show one renders whole.
    html = `<!doctype html>${renderToStaticMarkup(document(opts.css, opts.title, body))}`;
  } else {
    const [beforeTitle, between, after] = frame(opts.css);
    html = beforeTitle + Bun.escapeHTML(opts.title) + between + renderToStaticMarkup(body) + after;
  }
  return new Response(html, {
    status: opts.status ?? 200,
    headers: pageHeaders(pageCsp(opts), opts.headers),
  });
}
