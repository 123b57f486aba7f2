import { createHash, randomBytes } from "node:crypto";
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

/** `body` inside the page frame, as the HTML document React renders. */
export function pageHtml(body: ReactNode, opts: Pick<PageOptions, "title" | "css">): string {
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
  return `<!doctype html>${html}`;
}

/** An HTML document answered with the page's headers. */
export function pageResponse(html: string, opts: PageOptions): Response {
  return new Response(html, {
    status: opts.status ?? 200,
    headers: pageHeaders(pageCsp(opts), opts.headers),
  });
}

/** Renders `body` inside the page frame and answers it with the page's headers. */
export function renderPage(body: ReactNode, opts: PageOptions): Response {
  return pageResponse(pageHtml(body, opts), opts);
}

/**
 * A page React renders once, with a marker where each value goes; each request then writes its
 * values into the gaps, escaped as React escapes text and attribute values (`&`, `<`, `>`, `"`
 * and `'`, as Bun.escapeHTML does). So a page on the login flow costs a few string joins instead
 * of a render (React's development build validates every element it renders).
 *
 * Only for values React writes that way: text, and attributes other than a URL that could
 * hold a `javascript:` one (React rewrites those), and never a value that decides the page's
 * structure (what is shown or selected): that makes another template (see `TemplateCache`).
 * test/pages.test.ts renders pages both ways, with hostile values, and compares the markup.
 */
export class PageTemplate<K extends string> {
  /** Static markup around the holes: parts[i], value of holes[i], parts[i + 1], ... */
  private readonly parts: string[] = [];
  private readonly holes: K[] = [];

  constructor(keys: readonly K[], render: (marks: Record<K, string>) => string) {
    // Letters and digits only, so React writes the markers unchanged, and random, so no page's
    // own markup can contain one.
    const tag = `mcphole${randomBytes(8).toString("hex")}x`;
    const marks = Object.fromEntries(keys.map((k, i) => [k, `${tag}${i}x`])) as Record<K, string>;
    const split = render(marks).split(new RegExp(`${tag}(\\d+)x`));
    for (let i = 0; i < split.length; i++) {
      if (i % 2 === 0) this.parts.push(split[i]!);
      else this.holes.push(keys[Number(split[i])]!);
    }
  }

  fill(values: Record<K, string>): string {
    let out = this.parts[0]!;
    for (let i = 0; i < this.holes.length; i++) out += Bun.escapeHTML(values[this.holes[i]!]) + this.parts[i + 1]!;
    return out;
  }
}

/** A page's templates, one per variant of its structure (a handful each), made on first use. */
export class TemplateCache<K extends string> {
  private readonly templates = new Map<string, PageTemplate<K>>();

  constructor(private readonly keys: readonly K[]) {}

  get(variant: string, render: (marks: Record<K, string>) => string): PageTemplate<K> {
    let t = this.templates.get(variant);
    if (!t) {
      t = new PageTemplate(this.keys, render);
      this.templates.set(variant, t);
    }
    return t;
  }
}
