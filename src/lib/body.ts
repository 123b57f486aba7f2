import { AppError } from "./errors";

/** Strict: invalid UTF-8 is the caller's error, not something to patch over. */
const UTF8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Reads a JSON object body within the size limit. Missing body means `{}`; anything
 * else that is not a JSON object is the caller's error, answered before any work.
 */
export async function readJsonBody(request: Request, maxBytes: number): Promise<Record<string, unknown>> {
  const buf = await readRequestBody(request, maxBytes);
  if (buf.byteLength === 0) return {};
  const type = request.headers.get("content-type");
  if (!type || !/^application\/([\w.+-]+\+)?json\b/i.test(type)) {
    throw new AppError("unsupported_media_type", "Send the body as JSON with `content-type: application/json`.");
  }
  let value: unknown;
  try {
    value = JSON.parse(UTF8.decode(buf));
  } catch {
    throw new AppError("invalid_json", "The body is not valid JSON.");
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new AppError("validation_failed", "The body must be a JSON object.");
  }
  return value as Record<string, unknown>;
}

/**
 * A request's body within `maxBytes`, whichever way it is framed: a declared length (checked
 * first) frames it exactly, so it is read whole; a chunked body is counted as it arrives.
 */
export async function readRequestBody(request: Request, maxBytes: number): Promise<Uint8Array> {
  const declared = request.headers.get("content-length");
  if (declared !== null && !(Number(declared) <= maxBytes))
    throw new AppError("payload_too_large", `The body is larger than ${maxBytes} bytes.`);
  if (!request.body) return new Uint8Array();
  return declared !== null ? new Uint8Array(await request.arrayBuffer()) : readLimited(request.body, maxBytes);
}

/** Reads a body stream, giving up as soon as it passes the limit (chunked bodies declare no length). */
export async function readLimited(
  body: ReadableStream<Uint8Array>,
  maxBytes: number,
): Promise<Uint8Array<ArrayBuffer>> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.byteLength;
    if (size > maxBytes) throw new AppError("payload_too_large", `The body is larger than ${maxBytes} bytes.`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}
