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

/** The invariants every response must keep, whatever was sent. Returns what is wrong, or null. */
export function violation(op: Operation, res: Sent, validate: ValidateFunction | undefined): string | null {
  const requestId = res.headers.get("x-request-id");
  if (res.status >= 500) return `${res.status}: ${res.text.slice(0, 300)}`;
  if (STACK_TRACE.test(res.text)) return `a stack trace in the body: ${res.text.slice(0, 300)}`;
  if (!requestId) return `no x-request-id header on ${res.status}: ${res.text.slice(0, 200)}`;
  if (op.html) return null;
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
