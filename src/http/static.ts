import { createHash } from "node:crypto";
import { promisify } from "node:util";
import { brotliCompress, constants, gzip } from "node:zlib";
import { notModified } from "./responses";

/**
 * Bodies built once per process (the dashboard bundle, its page, its icon), answered with an
 * ETag per representation and compressed to what the client accepts. Each compressed form is
 * made on first request, off the event loop, and kept: brotli at its highest quality costs about
 * half a second for the dashboard's script once, and saves every later load 15% over gzip.
 */

export type Encoding = "br" | "gzip";

export interface StaticFile {
  body: Uint8Array<ArrayBuffer>;
  type: string;
  /** Strong ETag of the identity body; a compressed form gets its own by suffix. */
  etag: string;
  cacheControl: string;
  encoded: Partial<Record<Encoding, Promise<Uint8Array<ArrayBuffer>>>>;
}

/** Smaller bodies gain less from compression than the header costs. */
const MIN_COMPRESS_BYTES = 1024;
const COMPRESSIBLE = /^(text\/|application\/(javascript|json|manifest\+json)|image\/svg\+xml)/;

const brotli = promisify(brotliCompress);
const gz = promisify(gzip);

export function staticFile(body: Uint8Array | ArrayBuffer | string, type: string, cacheControl: string): StaticFile {
  const bytes = typeof body === "string" ? new TextEncoder().encode(body) : new Uint8Array(body);
  const hash = createHash("sha256").update(bytes).digest("base64url").slice(0, 22);
  return { body: bytes, type, etag: `"${hash}"`, cacheControl, encoded: {} };
}

/**
 * The best encoding `Accept-Encoding` allows, brotli first; null for the identity body. Tokens
 * with `q=0` are refused, `*` stands for any encoding not named.
 */
export function pickEncoding(header: string | null): Encoding | null {
  if (!header) return null;
  const q = new Map<string, number>();
  for (const part of header.toLowerCase().split(",")) {
    const [token, ...params] = part.trim().split(";");
    if (!token) continue;
    const weight = params.map((p) => /^\s*q\s*=\s*([0-9.]+)\s*$/.exec(p)?.[1]).find((v) => v !== undefined);
    q.set(token.trim(), weight === undefined ? 1 : Number(weight));
  }
  const accepts = (e: string) => (q.get(e) ?? q.get("*") ?? 0) > 0;
  if (accepts("br")) return "br";
  if (accepts("gzip") || (q.get("x-gzip") ?? 0) > 0) return "gzip";
  return null;
}

function encode(file: StaticFile, encoding: Encoding): Promise<Uint8Array<ArrayBuffer>> {
  let p = file.encoded[encoding];
  if (!p) {
    p = (
      encoding === "br"
        ? brotli(file.body, {
            params: {
              [constants.BROTLI_PARAM_QUALITY]: constants.BROTLI_MAX_QUALITY,
              [constants.BROTLI_PARAM_SIZE_HINT]: file.body.byteLength,
            },
          })
        : gz(file.body, { level: 9 })
    ).then((b) => new Uint8Array(b));
    p.catch(() => {
      delete file.encoded[encoding];
    });
    file.encoded[encoding] = p;
  }
  return p;
}

/** Whether `If-None-Match` names this tag (weak comparison, as RFC 9110 asks for this header). */
/**
 * The answer for `file`: 304 when the client already holds this representation, else the body
 * in the best encoding it accepts. `headers` go on both (a page's security headers).
 */
export async function serveStatic(
  request: Request,
  file: StaticFile,
  headers: Record<string, string> = {},
): Promise<Response> {
  const compressible = file.body.byteLength >= MIN_COMPRESS_BYTES && COMPRESSIBLE.test(file.type);
  const encoding = compressible ? pickEncoding(request.headers.get("accept-encoding")) : null;
  const etag = encoding ? `${file.etag.slice(0, -1)}-${encoding === "br" ? "br" : "gz"}"` : file.etag;
  const common: Record<string, string> = {
    ...headers,
    etag,
    "cache-control": file.cacheControl,
    "x-content-type-options": "nosniff",
    ...(compressible && { vary: "Accept-Encoding" }),
  };
  if (notModified(request, etag)) return new Response(null, { status: 304, headers: common });
  const body = encoding ? await encode(file, encoding) : file.body;
  return new Response(body, {
    headers: { ...common, "content-type": file.type, ...(encoding && { "content-encoding": encoding }) },
  });
}
