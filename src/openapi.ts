import type { AnyTRPCRouter } from "@trpc/server";
import { generateOpenApiDocument } from "trpc-to-openapi";
import { z } from "zod";
import { createDocument } from "zod-openapi";
import pkg from "../package.json";
import { ERROR_CODES } from "./lib/errors";
import { WEBHOOK_EVENT_DATA } from "./webhooks/schemas";

const ZErrorEnvelope = z
  .object({
    error: z.object({
      code: z
        .enum(Object.keys(ERROR_CODES) as [string, ...string[]])
        .meta({ description: "Stable machine-readable code" }),
      message: z.string().max(1000).meta({ description: "Human-readable explanation" }),
      details: z.unknown().optional().meta({ description: "Structured detail, such as validation issues" }),
      request_id: z
        .string()
        .max(64)
        .meta({ description: "Also sent as the x-request-id header; quote it in support requests" }),
    }),
  })
  .meta({ id: "Error", description: "The envelope of every error response" });

const STATUS_TEXT: Record<string, string> = {
  "400": "The request is malformed or failed validation",
  "401": "No valid credential",
  "403": "The credential is valid but not allowed here",
  "404": "Not found",
  "409": "Conflicts with the current state",
  "413": "The body is too large",
  "415": "The body is not JSON",
  "429": "Too many requests",
  "503": "A dependency is unavailable",
};

// biome-ignore lint/suspicious/noExplicitAny: the generated document is walked and patched as plain JSON
type Json = Record<string, any>;

const html = (description: string) => ({
  description,
  content: { "text/html": { schema: { type: "string", maxLength: 65536 } } },
});

const signatureHeaders = [
  ["webhook-id", "The event id (`msg_...`): the same on every retry; deduplicate on it", 40],
  ["webhook-timestamp", "Unix seconds when this attempt was signed", 20],
  [
    "webhook-signature",
    "`v1,` + base64 HMAC-SHA256 of `id.timestamp.body` keyed with the base64-decoded secret after `whsec_`; two, space-separated, during a rotation's overlap",
    200,
  ],
] as const;

/** What a team's `standard` endpoint receives, one entry per event type (OpenAPI 3.1 `webhooks`). */
function webhookEvents(): Json {
  const out: Json = {};
  for (const [type, { summary, data }] of Object.entries(WEBHOOK_EVENT_DATA)) {
    const body = z.object({
      type: z.literal(type),
      timestamp: z.iso.datetime({ offset: true }).max(40),
      data,
    });
    const one = createDocument({
      openapi: "3.1.0",
      info: { title: "", version: "" },
      webhooks: {
        [type]: {
          post: {
            operationId: `webhook-${type.replace(".", "-")}`,
            tags: ["webhooks"],
            summary,
            description: "Sent to the team's endpoints that take this type; see docs/webhooks.md.",
            parameters: signatureHeaders.map(([name, description, max]) => ({
              name,
              in: "header" as const,
              required: true,
              description,
              schema: { type: "string" as const, maxLength: max },
            })),
            requestBody: { required: true, content: { "application/json": { schema: body } } },
            responses: { "200": { description: "Any 2xx acknowledges the event; anything else is retried or failed" } },
            security: [],
          },
        },
      },
    }) as Json;
    Object.assign(out, one.webhooks);
  }
  return out;
}

/**
 * The browser half of the ms_auth flow: HTML, cookies and redirects rather than JSON, so
 * these are plain routes, described here by hand.
 */
const BROWSER_PATHS = {
  "/client/ms-auth/callback": {
    get: {
      operationId: "msAuth-callback",
      tags: ["ms-auth"],
      summary: "Identity provider callback (browser): runs the sign-in chain and shows the consent page",
      description:
        "Reached by the player's browser from the identity provider with `code` and `state` (or `error`). Checks `state`, exchanges the code (PKCE), reads the Minecraft profile, sets an HttpOnly cookie binding this browser to the request, and shows the consent page. Identity failures end the request as `denied` and redirect (303) to the client's post_login_redirect_uri with `auth_request_id`, `status`, `error` and `state`.",
      security: [],
      parameters: [
        { name: "state", in: "query", required: true, schema: { type: "string", maxLength: 200 } },
        { name: "code", in: "query", required: false, schema: { type: "string", maxLength: 4096 } },
        { name: "error", in: "query", required: false, schema: { type: "string", maxLength: 200 } },
      ],
      responses: {
        "200": html("The consent page"),
        "303": {
          description: "Back to the launcher's post_login_redirect_uri",
          headers: { Location: { schema: { type: "string", maxLength: 4096 } } },
        },
        "400": html("The link is not valid or already used"),
        "429": html("Too many requests"),
      },
    },
  },
  "/client/ms-auth/authorize": {
    post: {
      operationId: "msAuth-authorize",
      tags: ["ms-auth"],
      summary: "Finalize consent (browser form): approve or deny",
      description:
        "The consent page's form target. Accepted only from the browser holding the sign-in cookie, with the page's CSRF token. Approve -> `authorized` with a fresh svc_session_token; deny -> `denied` (`consent_denied`). Redirects (303) to the post_login_redirect_uri with `auth_request_id`, `status` and `state` (the client_state given at start).",
      security: [],
      requestBody: {
        required: true,
        content: {
          "application/x-www-form-urlencoded": {
            schema: {
              type: "object",
              required: ["auth_request_id", "csrf_token", "decision"],
              properties: {
                auth_request_id: { type: "string", format: "uuid", maxLength: 36 },
                csrf_token: { type: "string", maxLength: 64 },
                decision: { type: "string", enum: ["approve", "deny"] },
              },
            },
          },
        },
      },
      responses: {
        "303": {
          description: "Back to the launcher's post_login_redirect_uri",
          headers: { Location: { schema: { type: "string", maxLength: 4096 } } },
        },
        "400": html("The form is incomplete"),
        "403": html("The form does not belong to this browser"),
        "415": html("Not a form submission"),
        "429": html("Too many requests"),
      },
    },
  },
};

/** Strings in responses: the longest text the service stores or makes (inputs are bounded lower). */
const RESPONSE_STRING_MAX = 4096;

/**
 * States bounds that hold by construction and the generator leaves out: a uuid is 36
 * characters, an ISO timestamp the service writes is under 32, integers are JSON-safe, and
 * response strings are at most RESPONSE_STRING_MAX. Request strings get no invented bound:
 * every input limit is enforced by its zod schema, and the lint fails where one is missing.
 */
function boundSchema(schema: Json, response: boolean): void {
  if (!schema || typeof schema !== "object") return;
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  if (
    types.includes("string") &&
    schema.maxLength === undefined &&
    schema.enum === undefined &&
    schema.const === undefined
  ) {
    if (schema.format === "uuid") schema.maxLength = 36;
    else if (response) schema.maxLength = schema.format === "date-time" ? 32 : RESPONSE_STRING_MAX;
  }
  if (types.includes("integer") && schema.format === undefined) {
    const fits32 =
      schema.minimum !== undefined &&
      schema.maximum !== undefined &&
      schema.minimum >= -(2 ** 31) &&
      schema.maximum <= 2 ** 31 - 1;
    schema.format = fits32 ? "int32" : "int64";
  }
  for (const key of ["properties", "patternProperties", "$defs"])
    for (const sub of Object.values<Json>(schema[key] ?? {})) boundSchema(sub, response);
  for (const key of ["items", "additionalProperties", "not", "contains"])
    if (schema[key] && typeof schema[key] === "object") boundSchema(schema[key], response);
  for (const key of ["anyOf", "oneOf", "allOf", "prefixItems"])
    for (const sub of schema[key] ?? []) boundSchema(sub, response);
}

/**
 * The document comes from trpc-to-openapi's generator; we then put our real error envelope,
 * rate limit and request id headers in place of its generic error shape.
 */
export function buildOpenApiDocument(router: AnyTRPCRouter, baseUrl: string): Json {
  const doc = generateOpenApiDocument(router, {
    title: "Minecraft game server platform and launcher login",
    description:
      "Teams register Minecraft servers and get players, bans, uptime, ranks, announcements and live analytics; " +
      "client applications sign players in through Microsoft (`ms_auth`). Every operation here is also a tRPC procedure at `/trpc`.",
    version: pkg.version,
    baseUrl,
    license: { name: "Proprietary", url: `${baseUrl}/docs` },
    securitySchemes: {
      bearerAuth: {
        type: "http",
        scheme: "bearer",
        description: "A user access token (JWT from /auth/login) or a team API key (`mcp_key_...`).",
      },
    },
    paths: BROWSER_PATHS as never,
  }) as Json;

  const errorDoc = createDocument({
    openapi: "3.1.0",
    info: { title: "", version: "" },
    components: { schemas: { Error: ZErrorEnvelope } },
  }) as Json;
  doc.components ??= {};
  doc.components.schemas = { ...(doc.components.schemas ?? {}), ...errorDoc.components.schemas };
  doc.webhooks = webhookEvents();
  // What the service sends: bounded as its responses are.
  for (const item of Object.values<Json>(doc.webhooks))
    for (const content of Object.values<Json>(item.post.requestBody.content)) boundSchema(content.schema, true);
  doc.components.headers = {
    "X-Request-Id": {
      description: "The request's id, also in every error body",
      schema: { type: "string", maxLength: 64 },
    },
    "Retry-After": {
      description: "Seconds until a request may succeed",
      schema: { type: "integer", format: "int32", minimum: 0, maximum: 86400 },
    },
    RateLimit: {
      description:
        'Remaining quota per policy (IETF httpapi-ratelimit-headers): `"general";r=2999;t=42` (r remaining, t seconds until more quota is available) for every request, followed by the route\'s own policy where it has one.',
      schema: { type: "string", maxLength: 200 },
    },
    "RateLimit-Policy": {
      description: 'The policies that apply, e.g. `"general";q=3000;w=60, "start";q=120;w=60`.',
      schema: { type: "string", maxLength: 200 },
    },
    "Access-Control-Allow-Origin": {
      description: "Present when the request's Origin is one of CORS_ORIGINS",
      schema: { type: "string", maxLength: 2048 },
    },
  };
  doc.servers = (doc.servers ?? []).map((s: Json) => ({ ...s, "x-internal": false }));
  const errorContent = { "application/json": { schema: { $ref: "#/components/schemas/Error" } } };

  const ref = (name: string) => ({ $ref: `#/components/headers/${name}` });
  for (const item of Object.values<Json>(doc.paths ?? {})) {
    for (const op of Object.values<Json>(item)) {
      op.security ??= [];
      for (const [status, res] of Object.entries<Json>(op.responses ?? {})) {
        // Every answer carries the request id, CORS (for allowed origins) and the rate limit state.
        res.headers = {
          ...(res.headers ?? {}),
          "X-Request-Id": ref("X-Request-Id"),
          "Access-Control-Allow-Origin": ref("Access-Control-Allow-Origin"),
          RateLimit: ref("RateLimit"),
          "RateLimit-Policy": ref("RateLimit-Policy"),
        };
        for (const content of Object.values<Json>(res.content ?? {}))
          if (content.schema) boundSchema(content.schema, true);
        if (status.startsWith("2") || status.startsWith("3")) continue;
        res.description = STATUS_TEXT[status] ?? res.description;
        res.content = errorContent;
        if (status === "429" || status === "503")
          res.headers["Retry-After"] = { $ref: "#/components/headers/Retry-After" };
        if (status === "429") {
          res.headers.RateLimit = { $ref: "#/components/headers/RateLimit" };
          res.headers["RateLimit-Policy"] = { $ref: "#/components/headers/RateLimit-Policy" };
        }
      }
      op.responses.default = {
        description: "Unexpected error",
        content: errorContent,
        headers: {
          "X-Request-Id": ref("X-Request-Id"),
          "Access-Control-Allow-Origin": ref("Access-Control-Allow-Origin"),
        },
      };
      for (const param of op.parameters ?? []) if (param.schema) boundSchema(param.schema, false);
      for (const content of Object.values<Json>(op.requestBody?.content ?? {}))
        if (content.schema) boundSchema(content.schema, false);
    }
  }
  for (const schema of Object.values<Json>(doc.components.schemas ?? {})) boundSchema(schema, true);
  // The generator's own error schemas are unused now.
  for (const key of Object.keys(doc.components.schemas))
    if (key.startsWith("error.")) delete doc.components.schemas[key];
  return doc;
}
