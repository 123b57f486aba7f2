import Ajv2020 from "ajv/dist/2020";
import addFormats from "ajv-formats";
import type { ValidateFunction } from "ajv";
import type { Doc } from "./schema";
import type { Operation } from "./requests";

export const STACK_TRACE = /\bat .+:\d+:\d+/;

export interface Sent {
  status: number;
  headers: Headers;
  text: string;
}

/**
 * Validators for each operation's declared success body. The document's components travel with
 * each schema so its `#/components/...` references resolve.
 */
export function responseValidators(doc: Doc): (op: Operation) => ValidateFunction | undefined {
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
  addFormats(ajv);
  const cache = new Map<string, ValidateFunction | undefined>();
  return (op) => {
    if (!cache.has(op.key)) {
      const schema = op.spec.responses?.[op.success]?.content?.["application/json"]?.schema;
      cache.set(op.key, schema ? ajv.compile({ ...schema, components: doc.components }) : undefined);
    }
    return cache.get(op.key);
  };
}

/** RFC 6749 section 5.2 and RFC 6750 section 3.1: the only error codes an OAuth endpoint answers. */
const OAUTH_ERRORS = new Set([
  "invalid_request",
  "invalid_client",
  "invalid_grant",
  "unauthorized_client",
  "unsupported_grant_type",
  "invalid_scope",
  "invalid_token",
  "insufficient_scope",
]);

/** Whether the operation declares this status as an OAuth error (`{error, error_description}`), not the envelope. */
export function oauthStatus(op: Operation, status: number): boolean {
  const schema = op.spec.responses?.[String(status)]?.content?.["application/json"]?.schema;
  return schema?.properties?.error?.type === "string";
}

/**
 * An OAuth endpoint's refusal, as relying-party libraries read it: JSON of `error` (a registered
 * code) and `error_description` only, never cached; a 401 says how to authenticate (Basic at the
 * token endpoint, Bearer with `error="invalid_token"` at userinfo).
 */
function oauthViolation(op: Operation, res: Sent): string | null {
  if (!(res.headers.get("content-type") ?? "").includes("application/json"))
    return `OAuth error ${res.status} is not JSON: ${res.text.slice(0, 200)}`;
  let body: any;
  try {
    body = JSON.parse(res.text);
  } catch {
    return `OAuth error ${res.status} does not parse: ${res.text.slice(0, 200)}`;
  }
  if (typeof body?.error !== "string" || !OAUTH_ERRORS.has(body.error))
    return `OAuth error ${res.status} without a registered code: ${res.text.slice(0, 200)}`;
  const extra = Object.keys(body).filter((k) => k !== "error" && k !== "error_description");
  if (extra.length) return `OAuth error with other keys (${extra}): ${res.text.slice(0, 200)}`;
  if (typeof body.error_description !== "string" || !/^[\x20-\x21\x23-\x5b\x5d-\x7e]*$/.test(body.error_description))
    return `error_description is not RFC 6749's printable ASCII: ${res.text.slice(0, 200)}`;
  if (!/no-store/.test(res.headers.get("cache-control") ?? "")) return `OAuth error ${res.status} may be cached`;
  if (res.status === 401) {
    const challenge = res.headers.get("www-authenticate") ?? "";
    const bearer = (op.spec.security ?? []).some((s: object) => "oidcAccessToken" in s);
    if (bearer ? !/^Bearer error="invalid_token"/.test(challenge) : !/^Basic /.test(challenge))
      return `401 with WWW-Authenticate "${challenge}"`;
  }
  return null;
}

/** The invariants every response must keep, whatever was sent. Returns what is wrong, or null. */
export function violation(op: Operation, res: Sent, validate: ValidateFunction | undefined): string | null {
  const requestId = res.headers.get("x-request-id");
  if (res.status >= 500) return `${res.status}: ${res.text.slice(0, 300)}`;
  if (STACK_TRACE.test(res.text)) return `a stack trace in the body: ${res.text.slice(0, 300)}`;
  if (!requestId) return `no x-request-id header on ${res.status}: ${res.text.slice(0, 200)}`;
  if (op.html) return null;
  if (res.status >= 400 && oauthStatus(op, res.status)) return oauthViolation(op, res);
  const isJson = (res.headers.get("content-type") ?? "").includes("application/json");
  if (res.status >= 400) {
    if (!isJson) return `error ${res.status} is not JSON: ${res.text.slice(0, 200)}`;
    let body: any;
    try {
      body = JSON.parse(res.text);
    } catch {
      return `error ${res.status} body does not parse: ${res.text.slice(0, 200)}`;
    }
    const e = body?.error;
    if (!e || typeof e.code !== "string" || typeof e.message !== "string")
      return `error ${res.status} outside the envelope: ${res.text.slice(0, 200)}`;
    if (e.request_id !== requestId) return `error request_id ${e.request_id} differs from x-request-id ${requestId}`;
    const keys =
      Object.keys(body).join(",") +
      "|" +
      Object.keys(e)
        .filter((k) => !["code", "message", "details", "request_id"].includes(k))
        .join(",");
    if (keys !== "error|") return `unexpected keys in the envelope: ${keys}`;
    // The document lists each operation's error statuses: one it does not list is a wrong reference.
    if (!op.spec.responses?.[String(res.status)])
      return `error ${res.status} (${e.code}) is not among the statuses the document lists for this operation`;
    return null;
  }
  if (res.status >= 200 && res.status < 300) {
    // A documented 204 (the dashboard's refresh without a cookie) has no body by definition.
    if (res.status === 204 && op.spec.responses?.["204"])
      return res.text === "" ? null : `204 with a body: ${res.text.slice(0, 200)}`;
    if (!isJson) return `2xx is not JSON: ${res.text.slice(0, 200)}`;
    if (String(res.status) !== op.success) return `success ${res.status}, but the document declares ${op.success}`;
    if (validate && !validate(JSON.parse(res.text)))
      return `2xx body does not match the declared schema: ${JSON.stringify(validate.errors?.slice(0, 3))} in ${res.text.slice(0, 300)}`;
    return null;
  }
  return `unexpected status ${res.status}`;
}
