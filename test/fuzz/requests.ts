import fc from "fast-check";
import { deref, hinted, valueArb, type Doc, type Hints, type JsonSchema } from "./schema";

export interface Operation {
  /** `METHOD /path`, as in the security suite */
  key: string;
  method: string;
  path: string;
  spec: Record<string, any>;
  /** the status a successful call answers (200, or 201 for a create) */
  success: string;
  /** answers HTML to a browser rather than JSON */
  html: boolean;
  bearer: boolean;
}

export function operations(doc: Doc): Operation[] {
  const out: Operation[] = [];
  for (const [path, item] of Object.entries<Record<string, any>>(doc.paths)) {
    for (const [method, spec] of Object.entries(item)) {
      const success = Object.keys(spec.responses ?? {}).find((s) => s.startsWith("2")) ?? "200";
      const ok = spec.responses?.[success] ?? spec.responses?.["303"];
      const html = !spec.responses?.[success]?.content?.["application/json"];
      out.push({
        key: `${method.toUpperCase()} ${path}`,
        method: method.toUpperCase(),
        path,
        spec,
        success,
        html: html && Boolean(ok),
        // The service's own bearer (tokens, keys) or an OpenID Connect access token (userinfo).
        bearer: (spec.security ?? []).some((s: object) => "bearerAuth" in s || "oidcAccessToken" in s),
      });
    }
  }
  return out;
}

export type Body = { kind: "json"; value: unknown } | { kind: "raw"; text: string | Uint8Array; contentType?: string };

export interface FuzzRequest {
  /** what was done to the valid request, for the report and for counterexamples */
  label: string;
  pathParams: Record<string, string>;
  query: Record<string, string | string[]>;
  headers: Record<string, string>;
  body?: Body;
}

export interface Credentials {
  /** bearer tokens a valid request may carry for this operation */
  bearer: readonly string[];
  expired: string;
}

const params = (op: Operation, where: string) =>
  ((op.spec.parameters ?? []) as JsonSchema[]).filter((p) => p.in === where);

function bodySchema(doc: Doc, op: Operation): { schema: JsonSchema; form: boolean } | undefined {
  const content = op.spec.requestBody?.content;
  if (!content) return undefined;
  if (content["application/json"]) return { schema: deref(doc, content["application/json"].schema), form: false };
  if (content["application/x-www-form-urlencoded"])
    return { schema: deref(doc, content["application/x-www-form-urlencoded"].schema), form: true };
  return undefined;
}

function paramsArb(
  doc: Doc,
  list: JsonSchema[],
  hints: Hints,
  requiredOnly: boolean,
): fc.Arbitrary<Record<string, string>> {
  const model: Record<string, fc.Arbitrary<string>> = {};
  for (const p of list)
    model[p.name] = hinted(hints[p.name], valueArb(doc, p.schema, hints))
      .map(String)
      .filter((v) => p.in !== "path" || v !== "");
  const required = list.filter((p) => p.required || requiredOnly).map((p) => p.name as string);
  return fc.record(model, { requiredKeys: required });
}

/** A request built from the operation's declared parameters and body, with fixture values where they fit. */
export function validRequest(doc: Doc, op: Operation, hints: Hints, creds: Credentials): fc.Arbitrary<FuzzRequest> {
  const body = bodySchema(doc, op);
  return (
    fc
      .record({
        pathParams: paramsArb(doc, params(op, "path"), hints, true),
        query: paramsArb(doc, params(op, "query"), hints, false),
        headers: paramsArb(doc, params(op, "header"), hints, true),
        bearer: creds.bearer.length ? fc.constantFrom(...creds.bearer) : fc.constant(undefined),
        body: body ? valueArb(doc, body.schema, hints) : fc.constant(undefined),
      })
      // A path segment "." or ".." (or its %2E spelling) is resolved away by every URL parser
      // before the request is sent (`/server/networks/.` is `/server/networks/`): no client can
      // ask for it, so it names nothing (network names refuse these two).
      .filter(({ pathParams }) => Object.values(pathParams).every((v) => v !== "." && v !== ".."))
      .map(({ pathParams, query, headers, bearer, body: value }) => ({
        label: "valid",
        pathParams: Object.fromEntries(Object.entries(pathParams).map(([k, v]) => [k, pctEncode(v)])),
        query,
        headers: { ...headers, ...(bearer ? { authorization: `Bearer ${bearer}` } : {}) },
        body:
          value === undefined
            ? undefined
            : body!.form
              ? {
                  kind: "raw" as const,
                  text: new URLSearchParams(value as Record<string, string>).toString(),
                  contentType: "application/x-www-form-urlencoded",
                }
              : { kind: "json" as const, value },
      }))
  );
}

// --- hostile material ---

const NASTY_STRINGS = [
  "\u0000",
  "a\u0000b",
  "\u0000".repeat(64),
  "\ud800",
  "\udfff\ud800",
  "\u202e\u0007\u001b[31m",
  "\r\n\t\v\f",
  "Ω≈ç√∫˜µ≤≥÷",
  "🧱".repeat(50),
  "' OR 1=1 --",
  "'; drop table users; --",
  "%00%ff%",
  "../../../../etc/passwd",
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a template-injection probe, sent as-is
  "${7*7}{{7*7}}",
  "<script>alert(1)</script>",
  " ",
  "",
  "null",
  "-1",
  "1e309",
  "0x7fffffff",
];

const nastyString = fc.oneof(
  fc.constantFrom(...NASTY_STRINGS),
  fc.string({ unit: "binary", maxLength: 64 }),
  fc.string({
    unit: fc.constantFrom("\u0000", "\u0001", "\u001f", "\u007f", "\u0085", "\u2028", "\ufeff", "\ud800", "é", "a"),
    maxLength: 32,
  }),
);

const wrongValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.constant([]),
  fc.constant({}),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.integer(), { maxKeys: 3 }),
  nastyString,
  fc.constantFrom(Number.MAX_SAFE_INTEGER + 2, -0, 1e308, -1e308),
);

/** Printable Latin-1 only: fetch refuses anything else in a header value before it is sent. */
const headerNoise = fc.oneof(
  fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 80 }),
  fc.string({ unit: fc.integer({ min: 0xa0, max: 0xff }).map((c) => String.fromCharCode(c)), maxLength: 20 }),
  fc.uuid(),
  fc.uuid().map((u) => u.toUpperCase()),
  fc.uuid().map((u) => ` ${u} `),
  fc.uuid().map((u) => u.replace(/-/g, "")),
  // Request heads past Bun's parser limit (about 16 KB) get its bare 431 before the service sees them.
  fc.constantFrom(
    "00000000-0000-0000-0000-000000000000",
    "ffffffff-ffff-ffff-ffff-ffffffffffff",
    "'",
    "null",
    "x".repeat(3000),
  ),
);

/** encodeURIComponent, except that lone surrogates become U+FFFD rather than an exception. */
export const pctEncode = (s: string) =>
  Array.from(new TextEncoder().encode(s), (b) =>
    /[A-Za-z0-9\-_.~]/.test(String.fromCharCode(b))
      ? String.fromCharCode(b)
      : `%${b.toString(16).toUpperCase().padStart(2, "0")}`,
  ).join("");

const pathNoise = fc.oneof(
  nastyString.map(pctEncode),
  fc.constantFrom(
    "%00",
    "%",
    "%ZZ",
    "%E0%A4%A",
    "%C0%AF",
    "%2F",
    "a%2F..%2Fb",
    "a%20b",
    "x".repeat(5000),
    "00000000-0000-0000-0000-000000000000",
  ),
  fc.uuid(),
  fc.integer().map(String),
);

const bearerNoise = (expired: string) =>
  fc.oneof(
    fc.constantFrom(
      `Bearer ${expired}`,
      "Bearer",
      "Bearer ",
      "Basic dXNlcjpwYXNz",
      "bearer a.b.c",
      `Bearer ${"A".repeat(4000)}`,
      "Bearer mcp_key_",
      "Bearer mcp_agent_",
      "Bearer mcp_sess_x",
    ),
    headerNoise.map((t) => `Bearer ${t}`),
    fc.base64String({ minLength: 4, maxLength: 200 }).map((t) => `Bearer ${t}.${t}.${t}`),
    fc
      .tuple(fc.constantFrom("mcp_key_", "mcp_agent_", "mcp_sess_", ""), fc.stringMatching(/^[A-Za-z0-9_-]{43}$/))
      .map(([prefix, t]) => `Bearer ${prefix}${t}`),
    headerNoise,
  );

function deepJson(depth: number, open: string, close: string, leaf = "1") {
  return open.repeat(depth) + leaf + close.repeat(depth);
}

/** `{"key": value, ...rest}` as text: an object literal cannot carry `__proto__` as an own key. */
function withRawKey(value: unknown, key: string, raw: string): string {
  const rest = JSON.stringify(value ?? {});
  const inner = rest.slice(1, -1);
  return `{${JSON.stringify(key)}:${raw}${inner ? `,${inner}` : ""}}`;
}

function objectBody(req: FuzzRequest): Record<string, unknown> | undefined {
  return req.body?.kind === "json" &&
    req.body.value &&
    typeof req.body.value === "object" &&
    !Array.isArray(req.body.value)
    ? (req.body.value as Record<string, unknown>)
    : undefined;
}

/** Paths to every value inside a JSON value (objects and arrays), for field-level mutations. */
function leafPaths(v: unknown, prefix: (string | number)[] = [], out: (string | number)[][] = []) {
  if (v && typeof v === "object") {
    for (const [k, child] of Object.entries(v)) {
      const p = [...prefix, Array.isArray(v) ? Number(k) : k];
      out.push(p);
      leafPaths(child, p, out);
    }
  }
  return out;
}

function setAt(root: unknown, path: (string | number)[], fn: (parent: any, key: string | number) => void): unknown {
  const copy = structuredClone(root);
  let node: any = copy;
  for (const k of path.slice(0, -1)) node = node[k];
  fn(node, path[path.length - 1]!);
  return copy;
}

type Mutation = (req: FuzzRequest) => fc.Arbitrary<FuzzRequest> | null;

/** The fields of a form-encoded body (the OAuth endpoints' and the browser forms'), undefined for any other. */
function formBody(req: FuzzRequest): [string, string][] | undefined {
  return req.body?.kind === "raw" &&
    typeof req.body.text === "string" &&
    req.body.contentType === "application/x-www-form-urlencoded"
    ? [...new URLSearchParams(req.body.text)]
    : undefined;
}

const asForm = (req: FuzzRequest, label: string, text: string): FuzzRequest =>
  tag(req, label, { body: { kind: "raw", text, contentType: "application/x-www-form-urlencoded" } });

/** Percent-encoding a form decoder must survive: broken escapes, encoded NUL, overlong and lone surrogate UTF-8. */
const RAW_FORM_VALUES = [
  "%",
  "%ZZ",
  "%E0%A4%A",
  "%C0%AF",
  "%ED%A0%80",
  "%00",
  "%FF%FE",
  "a%2",
  "+%2B+",
  "=",
  "&&",
  ";",
];

const tag = (req: FuzzRequest, label: string, patch: Partial<FuzzRequest>): FuzzRequest => ({
  ...req,
  ...patch,
  label,
});

/** Every way the fuzzer spoils a valid request; null where it does not apply to this one. */
export function mutations(creds: Credentials): Record<string, Mutation> {
  return {
    "field wrong type": (req) => {
      const body = objectBody(req);
      const paths = body ? leafPaths(body) : [];
      if (!paths.length) return null;
      return fc.tuple(fc.constantFrom(...paths), wrongValue).map(([p, v]) =>
        tag(req, `field wrong type: ${p.join(".")}`, {
          body: { kind: "json", value: setAt(body, p, (o, k) => (o[k] = v)) },
        }),
      );
    },
    "field missing": (req) => {
      const body = objectBody(req);
      const paths = body ? leafPaths(body) : [];
      if (!paths.length) return null;
      return fc.constantFrom(...paths).map((p) =>
        tag(req, `field missing: ${p.join(".")}`, {
          body: {
            kind: "json",
            value: setAt(body, p, (o, k) => (Array.isArray(o) ? o.splice(Number(k), 1) : delete o[k])),
          },
        }),
      );
    },
    "string field hostile": (req) => {
      const body = objectBody(req);
      const paths = body ? leafPaths(body) : [];
      if (!paths.length) return null;
      return fc.tuple(fc.constantFrom(...paths), nastyString).map(([p, v]) =>
        tag(req, `hostile string: ${p.join(".")}`, {
          body: { kind: "json", value: setAt(body, p, (o, k) => (o[k] = v)) },
        }),
      );
    },
    "oversized field": (req) => {
      const body = objectBody(req) ?? {};
      const paths = leafPaths(body);
      const key: fc.Arbitrary<(string | number)[]> = paths.length ? fc.constantFrom(...paths) : fc.constant(["filler"]);
      const huge = fc.oneof(
        fc.integer({ min: 300, max: 70_000 }).map((n) => "x".repeat(n)),
        fc.integer({ min: 100, max: 20_000 }).map((n) => "é".repeat(n)),
        fc.integer({ min: 600, max: 12_000 }).map((n) => Array.from({ length: n }, (_, i) => i)),
        fc.integer({ min: 600, max: 3_000 }).map((n) => Array.from({ length: n }, () => ({ a: "b" }))),
      );
      return fc.tuple(key, huge).map(([p, v]) =>
        tag(req, `oversized: ${p.join(".")}`, {
          body: { kind: "json", value: setAt(body, p, (o, k) => (o[k] = v)) },
        }),
      );
    },
    "deep nesting": (req) =>
      fc
        .tuple(
          fc.integer({ min: 100, max: 30_000 }),
          fc.constantFrom(["[", "]"], ['{"a":', "}"]),
          fc.constantFrom("events", "name", "team_id", "x"),
        )
        .map(([depth, [o, c], key]) =>
          tag(req, `deep nesting ${depth}`, {
            body: {
              kind: "raw",
              text: withRawKey(objectBody(req), key, deepJson(depth, o!, c!)),
              contentType: "application/json",
            },
          }),
        ),
    "extra and prototype keys": (req) =>
      fc
        .tuple(
          fc.constantFrom(
            "__proto__",
            "constructor",
            "prototype",
            "toString",
            "hasOwnProperty",
            "extra_field",
            "is_admin",
            "role",
          ),
          fc.constantFrom('{"admin":true,"role":"owner"}', '{"prototype":{"polluted":1}}', "null", "1", '"x"', "[]"),
        )
        .map(([key, raw]) =>
          tag(req, `extra key ${key}`, {
            body: { kind: "raw", text: withRawKey(objectBody(req), key, raw), contentType: "application/json" },
          }),
        ),
    "wrong content type": (req) =>
      fc
        .constantFrom(
          "text/plain",
          "application/xml",
          "multipart/form-data; boundary=x",
          "application/x-www-form-urlencoded",
          "application/jsonx",
          "text/json",
          "",
          "application/json; charset=utf-16",
        )
        .map((ct) =>
          tag(req, `content-type ${ct || "(none)"}`, {
            body: { kind: "raw", text: JSON.stringify(objectBody(req) ?? { a: 1 }), contentType: ct || undefined },
          }),
        ),
    "not json": (req) =>
      fc
        .oneof(
          fc.constantFrom(
            "{",
            '{"a":',
            "[]",
            "[1,2]",
            "null",
            "true",
            "42",
            '"str"',
            "{'a':1}",
            "{a:1}",
            '{"a":1}{"b":2}',
            "\ufeff{}",
            "NaN",
            '{"a":01}',
          ),
          fc.string({ maxLength: 100 }),
          fc.uint8Array({ minLength: 1, maxLength: 64 }).map((b) => b as unknown as string),
        )
        .map((text) =>
          tag(req, "not json", {
            body: { kind: "raw", text: text as string | Uint8Array, contentType: "application/json" },
          }),
        ),
    "invalid utf-8": (req) =>
      fc
        .constantFrom(
          [0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0x22, 0x7d],
          [0xff, 0xfe, 0x7b, 0x7d],
          [0x7b, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x3a, 0x31, 0x7d],
        )
        .map((bytes) =>
          tag(req, "invalid utf-8", {
            body: { kind: "raw", text: new Uint8Array(bytes), contentType: "application/json" },
          }),
        ),
    "form field hostile": (req) => {
      const fields = formBody(req);
      if (!fields) return null;
      const names = [...fields.map(([k]) => k), "access_token", "client_secret", "__proto__"];
      return fc.tuple(fc.constantFrom(...names), nastyString).map(([name, v]) => {
        const form = new URLSearchParams(fields.filter(([k]) => k !== name));
        form.append(name, v);
        return asForm(req, `form hostile: ${name}`, form.toString());
      });
    },
    "form raw encoding": (req) => {
      const fields = formBody(req);
      if (!fields) return null;
      return fc
        .tuple(fc.constantFrom(...fields.map(([k]) => k), "x"), fc.constantFrom(...RAW_FORM_VALUES))
        .map(([name, raw]) => {
          const rest = new URLSearchParams(fields.filter(([k]) => k !== name)).toString();
          return asForm(req, `form raw ${name}=${raw}`, `${rest}${rest ? "&" : ""}${name}=${raw}`);
        });
    },
    "form field repeated, missing or oversized": (req) => {
      const fields = formBody(req);
      if (!fields?.length) return null;
      return fc
        .tuple(
          fc.constantFrom(...fields.map(([k]) => k)),
          fc.constantFrom("repeated", "missing", "empty", "oversized"),
          fc.integer({ min: 300, max: 40_000 }),
        )
        .map(([name, how, size]) => {
          const form = new URLSearchParams(fields.filter(([k]) => k !== name || how === "repeated"));
          if (how === "repeated") form.append(name, fields.find(([k]) => k === name)![1]);
          if (how === "empty") form.append(name, "");
          if (how === "oversized") form.append(name, "é".repeat(size));
          return asForm(req, `form ${name} ${how}`, form.toString());
        });
    },
    "form as another type": (req) => {
      const fields = formBody(req);
      if (!fields) return null;
      const text = new URLSearchParams(fields).toString();
      return fc
        .constantFrom(
          { kind: "json" as const, value: Object.fromEntries(fields) },
          { kind: "raw" as const, text, contentType: "text/plain" },
          { kind: "raw" as const, text, contentType: "multipart/form-data; boundary=x" },
          { kind: "raw" as const, text, contentType: undefined },
          {
            kind: "raw" as const,
            text: new Uint8Array([0xff, 0xfe, 0x00, 0x3d]),
            contentType: "application/x-www-form-urlencoded",
          },
        )
        .map((body) =>
          tag(req, `form sent as ${body.kind === "json" ? "json" : (body.contentType ?? "(none)")}`, { body }),
        );
    },
    // The browser routes read cookies (the apps page's sign-in, the device form's, the consent's): forged and broken ones.
    "cookie noise": (req) =>
      fc
        .tuple(
          fc.constantFrom("mcp_player", "mcp_apps_state", "mcp_device", "mcp_dashboard_refresh", "mcp_auth_x"),
          fc.oneof(
            headerNoise,
            fc.constantFrom(
              `${Buffer.from(JSON.stringify({ uuid: "069a79f4-44e9-4726-a5be-fca90e38aaf5", name: "Notch", exp: 9e15 })).toString("base64url")}.AAAA`,
              `${Buffer.from("{").toString("base64url")}.x`,
              "a.b.c",
              ".",
              "%ZZ",
              '"x',
              "x".repeat(2000),
            ),
          ),
        )
        .map(([name, v]) => tag(req, `cookie ${name}`, { headers: { ...req.headers, cookie: `${name}=${v}` } })),
    "bad bearer": (req) =>
      bearerNoise(creds.expired).map((auth) =>
        tag(req, `bad bearer`, { headers: { ...req.headers, authorization: auth } }),
      ),
    "no bearer": (req) =>
      req.headers.authorization
        ? fc.constant(
            tag(req, "no bearer", {
              headers: Object.fromEntries(Object.entries(req.headers).filter(([k]) => k !== "authorization")),
            }),
          )
        : null,
    "selector header noise": (req) =>
      fc
        .tuple(fc.constantFrom("x-server-id", "x-team-id"), fc.oneof(headerNoise, fc.constant(null)))
        .map(([name, v]) => {
          const headers = { ...req.headers };
          if (v === null) delete headers[name];
          else headers[name] = v;
          return tag(req, `selector ${name}`, { headers });
        }),
    "path param noise": (req) => {
      const names = Object.keys(req.pathParams);
      if (!names.length) return null;
      // An empty segment would name another route (`/teams/` is `GET /teams`), not spoil this one.
      return fc
        .tuple(
          fc.constantFrom(...names),
          pathNoise.filter((v) => v !== ""),
        )
        .map(([name, v]) => tag(req, `path ${name}`, { pathParams: { ...req.pathParams, [name]: v } }));
    },
    "query noise": (req) =>
      fc
        .tuple(
          fc.constantFrom(
            ...Object.keys(req.query),
            "team_id",
            "limit",
            "window",
            "input",
            "__proto__",
            "state",
            "code",
          ),
          fc.oneof(headerNoise, fc.array(headerNoise, { minLength: 2, maxLength: 3 })),
        )
        .map(([name, v]) => tag(req, `query ${name}`, { query: { ...req.query, [name]: v } })),
  };
}

const BODY_MUTATIONS = new Set([
  "form field hostile",
  "form raw encoding",
  "form field repeated, missing or oversized",
  "form as another type",
  "field wrong type",
  "field missing",
  "string field hostile",
  "oversized field",
  "deep nesting",
  "extra and prototype keys",
  "wrong content type",
  "not json",
  "invalid utf-8",
]);

export function hostileRequest(
  op: Operation,
  valid: fc.Arbitrary<FuzzRequest>,
  creds: Credentials,
): fc.Arbitrary<FuzzRequest> {
  // fetch cannot send a body with GET; DELETE may carry one, which the service must ignore.
  const all = Object.entries(mutations(creds))
    .filter(([name]) => op.method !== "GET" || !BODY_MUTATIONS.has(name))
    .map(([, m]) => m);
  return valid.chain((req) => {
    const applicable = all.map((m) => m(req)).filter((a): a is fc.Arbitrary<FuzzRequest> => a !== null);
    return fc.oneof(...applicable);
  });
}

/** The URL, headers and body to send; placeholders in any of them are filled from `fill`. */
export function materialize(
  baseUrl: string,
  op: Operation,
  req: FuzzRequest,
  fill: (s: string) => string,
): { url: string; init: RequestInit } {
  let path = op.path;
  // Path values are already encoded: valid ones by validRequest, hostile ones on purpose (or not).
  for (const [name, value] of Object.entries(req.pathParams)) path = path.replace(`{${name}}`, fill(value));
  const qs = new URLSearchParams();
  for (const [k, v] of Object.entries(req.query)) for (const one of Array.isArray(v) ? v : [v]) qs.append(k, fill(one));
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) headers[k] = fill(v);
  let body: BodyInit | undefined;
  if (req.body?.kind === "json") {
    body = fill(JSON.stringify(req.body.value));
    headers["content-type"] = "application/json";
  } else if (req.body?.kind === "raw") {
    body = typeof req.body.text === "string" ? fill(req.body.text) : (req.body.text as Uint8Array<ArrayBuffer>);
    if (req.body.contentType !== undefined) headers["content-type"] = req.body.contentType;
  }
  const query = qs.toString();
  return {
    url: `${baseUrl}${path}${query ? `?${query}` : ""}`,
    init: { method: op.method, headers, body, redirect: "manual" },
  };
}
