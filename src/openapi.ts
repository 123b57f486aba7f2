import type { AnyTRPCRouter } from "@trpc/server";
import { generateOpenApiDocument } from "trpc-to-openapi";
import { z } from "zod";
import { createDocument } from "zod-openapi";
import pkg from "../package.json";
import { OPERATION_DESCRIPTIONS, OPERATION_EXAMPLES, registerComponents } from "./http/openapi-reference";
import { ERROR_CODES, type ErrorCode } from "./lib/errors";
import type { Meta } from "./trpc/init";
import { restRoutes } from "./trpc/rest";
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
  .meta({
    id: "Error",
    description: "The envelope of every error response",
    example: {
      error: {
        code: "not_found",
        message: "No such server, or not in a team you belong to.",
        request_id: "01JPB6Y7W1S0D9F4C2X8N5M3QK",
      },
    },
  });

/** What each error status is sent with, for its example. */
const STATUS_EXAMPLE: Record<string, { code: ErrorCode; message: string; details?: unknown }> = {
  "400": {
    code: "validation_failed",
    message: "The request failed validation.",
    details: {
      issues: [{ path: "name", code: "too_small", message: "Too small: expected string to have >=1 characters" }],
    },
  },
  "401": { code: "unauthenticated", message: "Sign in first: send `authorization: Bearer <token>`." },
  "403": { code: "forbidden", message: "This needs the admin role in the team." },
  "404": { code: "not_found", message: "Not found, or not in a team you belong to." },
  "409": { code: "conflict", message: "That conflicts with the current state." },
  "413": { code: "payload_too_large", message: "The body is larger than 1048576 bytes." },
  "415": { code: "unsupported_media_type", message: "Send the body as JSON with `content-type: application/json`." },
  "422": {
    code: "idempotency_key_reused",
    message: "This Idempotency-Key was already used with a different request; send a new key for a new request.",
  },
  "429": { code: "rate_limited", message: "Too many requests; retry after 12 s." },
  "503": { code: "unavailable", message: "The database is unreachable." },
};
function errorExample(status: string, access: Meta["access"]) {
  const e =
    status === "401" && access === "client"
      ? { code: "invalid_client", message: "Unknown client_id or wrong client_secret." }
      : (STATUS_EXAMPLE[status] ?? { code: "internal", message: "Internal error." });
  return { error: { ...e, request_id: "01JPB6Y7W1S0D9F4C2X8N5M3QK" } };
}

/**
 * The statuses an operation answers whatever its own logic does: the general rate limit and the
 * declared body size on every request (the edge checks both before any route); bad input wherever
 * there is input; the body's type on writes; no credential where one is needed; the wrong kind of
 * caller or role where access says so.
 * Each procedure's `errorResponses` adds what its own logic answers (404, 409, 503, ...).
 */
function edgeStatuses(method: string, access: Meta["access"], hasInput: boolean): string[] {
  const out = ["413", "429"];
  const body = method === "post" || method === "patch" || method === "put";
  if (hasInput || body) out.push("400");
  if (body) out.push("415");
  if (access && access !== "public") out.push("401");
  if (access === "user" || access === "invitee" || access?.startsWith("team:") || access?.startsWith("person:"))
    out.push("403");
  return out;
}

/** The body's part of a procedure's input: what is not a path or query parameter. */
function bodyPart(input: Record<string, unknown>, params: Json[]): Record<string, unknown> {
  const inParams = new Set(params.filter((p) => p.in !== "header").map((p) => p.name));
  return Object.fromEntries(Object.entries(input).filter(([k]) => !inParams.has(k)));
}

const STATUS_TEXT: Record<string, string> = {
  "400": "The request is malformed or failed validation",
  "401": "No valid credential",
  "403": "The credential is valid but not allowed here",
  "404": "Not found",
  "409": "Conflicts with the current state",
  "413": "The body is too large",
  "415": "The body is not JSON",
  "422": "The Idempotency-Key was already used with a different request (`idempotency_key_reused`)",
  "429": "Too many requests",
  "503": "A dependency is unavailable",
};

// biome-ignore lint/suspicious/noExplicitAny: the generated document is walked and patched as plain JSON
type Json = Record<string, any>;

/**
 * Whether an operation takes `Idempotency-Key` (src/trpc/procedures.ts, `once`): every POST
 * that needs a credential.
 */
const takesIdempotencyKey = (method: string, meta: Meta) => method === "post" && meta.access !== "public";

const IN_PROGRESS_EXAMPLE = {
  code: "idempotency_key_in_progress",
  message: "A request with this Idempotency-Key is still being processed; retry once it has finished.",
};
const REQUEST_ID = "01JPB6Y7W1S0D9F4C2X8N5M3QK";

const IN_PROGRESS = "; or a request with the same Idempotency-Key is still running (`idempotency_key_in_progress`)";

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
  "/device": {
    get: {
      operationId: "msAuth-device-page",
      tags: ["ms-auth"],
      summary: "Device flow code page (browser): where the player types the user_code",
      description:
        "verification_uri from a device-flow start. With `code` (verification_uri_complete) the field is filled in, and the player still presses Continue. Sets an HttpOnly cookie that binds the form to this browser.",
      security: [],
      parameters: [{ name: "code", in: "query", required: false, schema: { type: "string", maxLength: 32 } }],
      responses: {
        "200": html("The code page"),
        "429": html("Too many requests"),
      },
    },
    post: {
      operationId: "msAuth-device-enter",
      tags: ["ms-auth"],
      summary: "Enter a device flow code (browser form): on to the identity provider's sign-in",
      description:
        "Claims the code (once: a claimed code no longer works) and redirects (303) to the identity provider's sign-in for its login request; from there the flow is the browser flow's (callback, consent), except that the end is a page telling the player to go back to their device. A wrong code answers 400 with the form again; wrong codes are limited per address and for everyone together (DEVICE_CODE_FAILURES_*), then 429 with Retry-After, right code or wrong.",
      security: [],
      requestBody: {
        required: true,
        content: {
          "application/x-www-form-urlencoded": {
            schema: {
              type: "object",
              required: ["user_code", "csrf_token"],
              properties: {
                user_code: { type: "string", maxLength: 64 },
                csrf_token: { type: "string", maxLength: 64 },
              },
            },
          },
        },
      },
      responses: {
        "303": {
          description: "On to the identity provider's sign-in",
          headers: { Location: { schema: { type: "string", maxLength: 4096 } } },
        },
        "400": html("Not a code, a wrong or used code, or an expired one; the form again"),
        "403": html("The form does not belong to this browser"),
        "415": html("Not a form submission"),
        "429": html("Too many wrong codes"),
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
  "/account/apps": {
    get: {
      operationId: "account-apps",
      tags: ["ms-auth"],
      summary: "The player's apps page (browser): the apps holding a session for them, each with Revoke",
      description:
        "Signed out: what the page is and a link to sign in with Microsoft. Signed in (the `mcp_player` cookie, 15 minutes): each client app holding a live session for the player's Minecraft UUID, with its title, where its sign-ins return to, since when and when it last used it. docs/identity.md#the-players-apps-page.",
      security: [],
      responses: { "200": html("The page"), "429": html("Too many requests") },
    },
  },
  "/account/apps/sign-in": {
    get: {
      operationId: "account-apps-signIn",
      tags: ["ms-auth"],
      summary: "Start the apps page's Microsoft sign-in (browser)",
      description:
        "Sets a state cookie for this browser and redirects (303) to the identity provider, which returns to /account/apps/callback.",
      security: [],
      responses: {
        "303": {
          description: "To the identity provider's sign-in page",
          headers: { Location: { schema: { type: "string", maxLength: 4096 } } },
        },
        "429": html("Too many requests"),
      },
    },
  },
  "/account/apps/callback": {
    get: {
      operationId: "account-apps-callback",
      tags: ["ms-auth"],
      summary: "The apps page's identity provider callback (browser)",
      description:
        "Accepted only with the state this browser's cookie names. Runs the sign-in chain for the Minecraft profile, sets the page's sign-in cookie and redirects (303) to /account/apps; a failed chain shows why.",
      security: [],
      parameters: [
        { name: "state", in: "query", required: true, schema: { type: "string", maxLength: 200 } },
        { name: "code", in: "query", required: false, schema: { type: "string", maxLength: 4096 } },
        { name: "error", in: "query", required: false, schema: { type: "string", maxLength: 200 } },
      ],
      responses: {
        "200": html("Why the sign-in failed"),
        "303": {
          description: "To /account/apps, signed in",
          headers: { Location: { schema: { type: "string", maxLength: 4096 } } },
        },
        "400": html("The link is not valid in this browser"),
        "429": html("Too many requests"),
      },
    },
  },
  "/account/apps/revoke": {
    post: {
      operationId: "account-apps-revoke",
      tags: ["ms-auth"],
      summary: "Revoke an app (browser form): every live session of the player at that client ends",
      description:
        "The apps page's form, with its CSRF token, from the signed-in browser. Ends the player's live sessions of the client (validate answers `{valid: false}` for them), sends `session.revoked` to the client's team and redirects (303) to /account/apps. Signed out: 303 to the signed-out page.",
      security: [{ playerSession: [] }],
      requestBody: {
        required: true,
        content: {
          "application/x-www-form-urlencoded": {
            schema: {
              type: "object",
              required: ["client_id", "csrf_token"],
              properties: {
                client_id: { type: "string", format: "uuid", maxLength: 36 },
                csrf_token: { type: "string", maxLength: 64 },
              },
            },
          },
        },
      },
      responses: {
        "303": {
          description: "Back to /account/apps",
          headers: { Location: { schema: { type: "string", maxLength: 4096 } } },
        },
        "400": html("The form names no app"),
        "403": html("The form does not belong to this browser's sign-in"),
        "413": html("The form is too large"),
        "415": html("Not a form submission"),
        "429": html("Too many requests"),
      },
    },
  },
  "/account/apps/sign-out": {
    post: {
      operationId: "account-apps-signOut",
      tags: ["ms-auth"],
      summary: "Sign out of the apps page (browser form)",
      description: "Clears the page's sign-in cookie and redirects (303) to the signed-out page.",
      security: [{ playerSession: [] }],
      requestBody: {
        required: true,
        content: {
          "application/x-www-form-urlencoded": {
            schema: {
              type: "object",
              required: ["csrf_token"],
              properties: { csrf_token: { type: "string", maxLength: 64 } },
            },
          },
        },
      },
      responses: {
        "303": {
          description: "To the signed-out page",
          headers: { Location: { schema: { type: "string", maxLength: 4096 } } },
        },
        "403": html("The form does not belong to this browser's sign-in"),
        "413": html("The form is too large"),
        "415": html("Not a form submission"),
        "429": html("Too many requests"),
      },
    },
  },
};

const dashboardToken = {
  description: "A new access token for the page; the rotated refresh token is only in the cookie",
  headers: {
    "Set-Cookie": {
      description:
        "`mcp_dashboard_refresh=<refresh token>; Path=/dashboard/session; Max-Age=<REFRESH_TOKEN_TTL_SECONDS>; HttpOnly; Secure; SameSite=Strict` (Secure over https and on loopback)",
      schema: { type: "string", maxLength: 512 },
    },
  },
  content: {
    "application/json": {
      schema: {
        type: "object",
        required: ["access_token", "token_type", "expires_in"],
        properties: {
          access_token: { type: "string", maxLength: 2048 },
          token_type: { type: "string", enum: ["Bearer"] },
          expires_in: { type: "integer", format: "int32", minimum: 0, maximum: 86400 },
        },
      },
    },
  },
};
const dashboardHeader = {
  name: "x-mcp-dashboard",
  in: "header",
  required: true,
  description: "Must be `1`. No other origin may send it (it is not allowed by CORS), which keeps other sites out.",
  schema: { type: "string", enum: ["1"] },
};
const clearsCookie = {
  "Set-Cookie": {
    description: "Clears the session cookie (`Max-Age=0`)",
    schema: { type: "string", maxLength: 512 },
  },
};

/**
 * The dashboard's session in the browser: the same logins as /auth/*, with the refresh token in an
 * HttpOnly cookie instead of the body (src/auth/browser.ts). Plain routes, described here by hand.
 */
const DASHBOARD_SESSION_PATHS = {
  "/dashboard/session": {
    post: {
      operationId: "dashboardSession-signIn",
      tags: ["auth"],
      summary: "Sign in to the dashboard (browser): access token in the body, refresh token in an HttpOnly cookie",
      description:
        "For the dashboard's own page. The same credentials, throttle and login as `POST /auth/login`, but the refresh token is set as the `mcp_dashboard_refresh` cookie (HttpOnly, SameSite=Strict, scoped to `/dashboard/session`) and never appears in the body. A login this browser already held is ended. Needs the `x-mcp-dashboard: 1` header; an `Origin` other than this service's is refused (403).",
      security: [],
      parameters: [dashboardHeader],
      requestBody: {
        required: true,
        content: {
          "application/json": {
            schema: {
              type: "object",
              required: ["email", "password"],
              properties: {
                email: { type: "string", format: "email", maxLength: 254 },
                password: { type: "string", minLength: 1, maxLength: 256 },
              },
            },
          },
        },
      },
      responses: {
        "200": {
          ...dashboardToken,
          description:
            "Signed in: a new access token for the page (the refresh token only in the cookie). For an account with a second factor instead: no cookie, and a challenge to complete at `POST /dashboard/session/second-factor`",
          content: {
            "application/json": {
              schema: {
                oneOf: [
                  dashboardToken.content["application/json"].schema,
                  { $ref: "#/components/schemas/SecondFactorChallenge" },
                ],
              },
              examples: {
                signed_in: {
                  value: { access_token: "eyJhbGciOiJFZERTQSJ9.e30.c2ln", token_type: "Bearer", expires_in: 900 },
                },
                second_factor: {
                  value: {
                    second_factor_required: true,
                    challenge_token: "mcp_2fa_Xv8bN2kQ7rT4wY1zC5mH9pL3sD6fG0jA2eK4uR8",
                    expires_in: 300,
                    methods: ["totp", "recovery_code"],
                    passkey_options: null,
                  },
                },
              },
            },
          },
        },
        "400": { description: STATUS_TEXT["400"] },
        "401": { description: "The email or password is wrong" },
        "403": { description: "Not the dashboard's own origin, or the header is missing" },
        "413": { description: STATUS_TEXT["413"] },
        "415": { description: STATUS_TEXT["415"] },
        "429": { description: STATUS_TEXT["429"] },
      },
    },
  },
  "/dashboard/session/second-factor": {
    post: {
      operationId: "dashboardSession-secondFactor",
      tags: ["auth"],
      summary: "Complete a dashboard sign-in with the second factor (browser)",
      description:
        "The second step when `POST /dashboard/session` answered a challenge: the same input, checks and limits as `POST /auth/login/second-factor` (a wrong factor counts as a failed sign-in), and on success the same answer as a signed-in `POST /dashboard/session`: the access token in the body, the refresh token in the cookie. Needs the `x-mcp-dashboard: 1` header.",
      security: [],
      parameters: [dashboardHeader],
      requestBody: {
        required: true,
        content: {
          "application/json": {
            schema: {
              type: "object",
              required: ["challenge_token"],
              properties: {
                challenge_token: { type: "string", minLength: 1, maxLength: 128 },
                code: {
                  type: "string",
                  pattern: "^\\d{6}$",
                  maxLength: 6,
                  description: "A code from the authenticator app",
                },
                recovery_code: {
                  type: "string",
                  minLength: 8,
                  maxLength: 32,
                  description: "One of the recovery codes",
                },
                passkey: {
                  type: "object",
                  description:
                    "The WebAuthn assertion (AuthenticationResponseJSON) for the challenge's passkey_options",
                  additionalProperties: true,
                },
              },
            },
            example: { challenge_token: "mcp_2fa_Xv8bN2kQ7rT4wY1zC5mH9pL3sD6fG0jA2eK4uR8", code: "492039" },
          },
        },
      },
      responses: {
        "200": dashboardToken,
        "400": { description: STATUS_TEXT["400"] },
        "401": { description: "The factor is wrong, or the challenge is unknown, expired or used" },
        "403": { description: "Not the dashboard's own origin, or the header is missing" },
        "413": { description: STATUS_TEXT["413"] },
        "415": { description: STATUS_TEXT["415"] },
        "429": { description: STATUS_TEXT["429"] },
      },
    },
  },
  "/dashboard/session/refresh": {
    post: {
      operationId: "dashboardSession-refresh",
      tags: ["auth"],
      summary: "Rotate the dashboard session (browser): a new access token, a new refresh cookie",
      description:
        "Exchanges the refresh token in the cookie for a new one (the old one stops working; one used twice ends the whole login, as on `POST /auth/refresh`). No cookie: 204, this browser is not signed in. A refused cookie: 401, and the cookie is cleared.",
      security: [{ dashboardSession: [] }],
      parameters: [dashboardHeader],
      responses: {
        "200": dashboardToken,
        "204": { description: "No session cookie: this browser is not signed in" },
        "401": { description: "The session has ended (expired, signed out or reused)", headers: clearsCookie },
        "403": { description: "Not the dashboard's own origin, or the header is missing" },
        "413": { description: STATUS_TEXT["413"] },
        "429": { description: STATUS_TEXT["429"] },
      },
    },
  },
  "/dashboard/session/logout": {
    post: {
      operationId: "dashboardSession-logout",
      tags: ["auth"],
      summary: "Sign out of the dashboard (browser): revoke the login and clear the cookie",
      description:
        "Ends the login the cookie belongs to on every instance (its refresh tokens and access tokens stop working, analytics sockets close with 4011) and clears the cookie. Without a cookie it only clears.",
      security: [{ dashboardSession: [] }],
      parameters: [dashboardHeader],
      responses: {
        "200": {
          description: "Signed out",
          headers: clearsCookie,
          content: {
            "application/json": {
              schema: { type: "object", required: ["ok"], properties: { ok: { type: "boolean", enum: [true] } } },
            },
          },
        },
        "403": { description: "Not the dashboard's own origin, or the header is missing" },
        "413": { description: STATUS_TEXT["413"] },
        "429": { description: STATUS_TEXT["429"] },
      },
    },
  },
};

/** Keys for verifying the signed session assertions poll and validate return on request. */
const WELL_KNOWN_PATHS = {
  "/.well-known/jwks.json": {
    get: {
      operationId: "msAuth-jwks",
      tags: ["ms-auth"],
      summary: "Public keys (JWKS) for verifying session assertions",
      description:
        "The Ed25519 keys (`kty` OKP, `alg` EdDSA) that sign the `assertion` poll and session/validate return when asked. Select by the assertion's `kid`. Holds the current key, the next one (published before it signs) and retired keys until the last assertion they signed has expired. Cacheable for 5 minutes; refetch when a `kid` is unknown.",
      security: [],
      responses: {
        "200": {
          description: "A JSON Web Key Set",
          headers: { "Cache-Control": { schema: { type: "string", maxLength: 100 } } },
          content: {
            "application/jwk-set+json": {
              schema: {
                type: "object",
                required: ["keys"],
                properties: {
                  keys: {
                    type: "array",
                    maxItems: 100,
                    items: {
                      type: "object",
                      required: ["kty", "crv", "x", "kid", "alg", "use"],
                      properties: {
                        kty: { type: "string", enum: ["OKP"] },
                        crv: { type: "string", enum: ["Ed25519"] },
                        x: { type: "string", maxLength: 64 },
                        kid: { type: "string", maxLength: 64 },
                        alg: { type: "string", enum: ["EdDSA"] },
                        use: { type: "string", enum: ["sig"] },
                      },
                    },
                  },
                },
              },
              // Two keys as published mid-rotation: the signing key and the next one. Each kid is
              // the RFC 7638 thumbprint of its key (src/ms-auth/assertions.ts makes them that way).
              example: {
                keys: [
                  {
                    kty: "OKP",
                    crv: "Ed25519",
                    x: "lOFRpNgJIDhaG5FhVFngp5mteYovrSNEgc2UZAX4J6s",
                    kid: "wFz7W121QiapQMPQyfTPi5DJaUxx9-K9KqfkIzD-Sls",
                    alg: "EdDSA",
                    use: "sig",
                  },
                  {
                    kty: "OKP",
                    crv: "Ed25519",
                    x: "8op0l4LgQPhyv8LMq0DbtohFM6Wc0Cf3bY9bGm-b4GI",
                    kid: "3266-lO89f2Hr4T9r6vKIf-mVf_ys6GdWGxsz9ch_kY",
                    alg: "EdDSA",
                    use: "sig",
                  },
                ],
              },
            },
          },
        },
        "429": { description: "Too many requests" },
      },
    },
  },
};

const oauthError = (description: string) => ({
  description,
  content: {
    "application/json": {
      schema: {
        type: "object",
        required: ["error"],
        properties: {
          error: { type: "string", maxLength: 64 },
          error_description: { type: "string", maxLength: 500 },
        },
      },
      example: { error: "invalid_grant", error_description: "The authorization code was already used." },
    },
  },
});

/**
 * "Sign in with Minecraft" for websites (src/oidc): the OpenID Provider. Its endpoints speak
 * OAuth (form bodies, RFC 6749 errors) rather than the service's envelope, as relying-party
 * libraries expect; docs/oidc.md is the guide.
 */
const OIDC_PATHS = {
  "/.well-known/openid-configuration": {
    get: {
      operationId: "oidc-discovery",
      tags: ["oidc"],
      summary: "OpenID Provider metadata (discovery)",
      description:
        "OpenID Connect Discovery 1.0: `issuer` is the service's PUBLIC_URL; the authorization, token and userinfo endpoints, `jwks_uri`, ID token algorithms (RS256, EdDSA), S256 PKCE and the token endpoint's client authentications (client_secret_basic, client_secret_post, none for public clients).",
      security: [],
      responses: {
        "200": {
          description: "The provider metadata",
          headers: { "Cache-Control": { schema: { type: "string", maxLength: 100 } } },
          content: {
            "application/json": {
              schema: {
                type: "object",
                required: ["issuer", "authorization_endpoint", "token_endpoint", "jwks_uri"],
                additionalProperties: true,
                properties: {
                  issuer: { type: "string", maxLength: 2048 },
                  authorization_endpoint: { type: "string", maxLength: 2048 },
                  token_endpoint: { type: "string", maxLength: 2048 },
                  userinfo_endpoint: { type: "string", maxLength: 2048 },
                  jwks_uri: { type: "string", maxLength: 2048 },
                },
              },
            },
          },
        },
        "429": { description: "Too many requests" },
      },
    },
  },
  "/oidc/jwks.json": {
    get: {
      operationId: "oidc-jwks",
      tags: ["oidc"],
      summary: "Public keys (JWKS) for verifying ID tokens",
      description:
        "The RSA (RS256) and Ed25519 (EdDSA) keys that sign ID tokens; select by the token's `kid`. Apart from /.well-known/jwks.json (the launcher assertions' keys). Cacheable for 5 minutes.",
      security: [],
      responses: {
        "200": {
          description: "A JSON Web Key Set",
          headers: { "Cache-Control": { schema: { type: "string", maxLength: 100 } } },
          content: {
            "application/jwk-set+json": {
              schema: {
                type: "object",
                required: ["keys"],
                properties: {
                  keys: {
                    type: "array",
                    maxItems: 100,
                    items: {
                      type: "object",
                      required: ["kty", "kid", "alg", "use"],
                      properties: {
                        kty: { type: "string", enum: ["RSA", "OKP"] },
                        kid: { type: "string", maxLength: 64 },
                        alg: { type: "string", enum: ["RS256", "EdDSA"] },
                        use: { type: "string", enum: ["sig"] },
                        n: { type: "string", maxLength: 1024 },
                        e: { type: "string", maxLength: 16 },
                        crv: { type: "string", enum: ["Ed25519"] },
                        x: { type: "string", maxLength: 64 },
                      },
                    },
                  },
                },
              },
            },
          },
        },
        "429": { description: "Too many requests" },
      },
    },
  },
  "/oidc/authorize": {
    get: {
      operationId: "oidc-authorize",
      tags: ["oidc"],
      summary: "Authorization endpoint (browser): starts a player sign-in for a website",
      description:
        "OpenID Connect authorization code flow. Unknown client or a redirect_uri not registered exactly: a 400 page, never a redirect. Other errors redirect to the redirect_uri with `error`, `state` and `iss`. Otherwise a login request starts (the same Microsoft sign-in and consent page as a launcher's) and the browser goes to the identity provider; after consent it comes back to the redirect_uri with `code`, `state` and `iss`. Public clients must send an S256 `code_challenge`.",
      security: [],
      parameters: [
        { name: "response_type", in: "query", required: true, schema: { type: "string", enum: ["code"] } },
        { name: "client_id", in: "query", required: true, schema: { type: "string", format: "uuid", maxLength: 36 } },
        { name: "redirect_uri", in: "query", required: true, schema: { type: "string", maxLength: 2048 } },
        { name: "scope", in: "query", required: true, schema: { type: "string", maxLength: 200 } },
        { name: "state", in: "query", required: false, schema: { type: "string", maxLength: 512 } },
        { name: "nonce", in: "query", required: false, schema: { type: "string", maxLength: 512 } },
        { name: "code_challenge", in: "query", required: false, schema: { type: "string", maxLength: 43 } },
        {
          name: "code_challenge_method",
          in: "query",
          required: false,
          schema: { type: "string", enum: ["S256"] },
        },
      ],
      responses: {
        "303": {
          description: "To the identity provider, or back to the redirect_uri with an error",
          headers: { Location: { schema: { type: "string", maxLength: 4096 } } },
        },
        "400": html("Unknown client or unregistered redirect_uri"),
        "429": html("Too many requests"),
      },
    },
  },
  "/oidc/token": {
    post: {
      operationId: "oidc-token",
      tags: ["oidc"],
      summary: "Token endpoint: exchange an authorization code for an ID token and an access token",
      description:
        "RFC 6749 section 4.1.3. Client authentication: HTTP Basic (client_secret_basic) or client_id and client_secret in the body (client_secret_post); a public client sends only client_id and its PKCE code_verifier. A code is valid for 60 seconds and once: a second redemption is refused and revokes the access token the first one issued. Errors are RFC 6749 JSON (`invalid_client` 401, `invalid_grant`, `invalid_request`, `unsupported_grant_type` 400).",
      security: [],
      requestBody: {
        required: true,
        content: {
          "application/x-www-form-urlencoded": {
            schema: {
              type: "object",
              required: ["grant_type", "code", "redirect_uri"],
              properties: {
                grant_type: { type: "string", enum: ["authorization_code"] },
                code: { type: "string", maxLength: 200 },
                redirect_uri: { type: "string", maxLength: 2048 },
                code_verifier: { type: "string", minLength: 43, maxLength: 128 },
                client_id: { type: "string", format: "uuid", maxLength: 36 },
                client_secret: { type: "string", maxLength: 256 },
              },
            },
          },
        },
      },
      responses: {
        "200": {
          description: "The tokens",
          headers: { "Cache-Control": { schema: { type: "string", maxLength: 100 } } },
          content: {
            "application/json": {
              schema: {
                type: "object",
                required: ["access_token", "token_type", "expires_in", "id_token", "scope"],
                properties: {
                  access_token: { type: "string", maxLength: 200 },
                  token_type: { type: "string", enum: ["Bearer"] },
                  expires_in: { type: "integer", format: "int32", minimum: 0, maximum: 86400 },
                  id_token: {
                    type: "string",
                    maxLength: 4096,
                    description:
                      "A JWS (RS256 or EdDSA, per the client's id_token_signed_response_alg): iss, sub (the Minecraft UUID), aud (client_id), exp, iat, auth_time, nonce (when sent), preferred_username (the Minecraft name)",
                  },
                  scope: { type: "string", maxLength: 200 },
                },
              },
            },
          },
        },
        "400": oauthError("invalid_grant, invalid_request or unsupported_grant_type"),
        "401": oauthError("invalid_client: the client authentication failed"),
        "413": { description: STATUS_TEXT["413"] },
        "429": { description: STATUS_TEXT["429"] },
      },
    },
  },
  "/oidc/userinfo": {
    get: {
      operationId: "oidc-userinfo",
      tags: ["oidc"],
      summary: "The signed-in player (bearer access token from the token endpoint)",
      description:
        "OpenID Connect Core 5.3: `sub` (the Minecraft UUID) and `preferred_username` (the Minecraft name). 401 with `WWW-Authenticate: Bearer error=invalid_token` for an unknown, expired or revoked token. POST works the same.",
      security: [{ oidcAccessToken: [] }],
      responses: {
        "200": {
          description: "The player's claims",
          content: {
            "application/json": {
              schema: {
                type: "object",
                required: ["sub", "preferred_username"],
                properties: {
                  sub: { type: "string", format: "uuid", maxLength: 36 },
                  preferred_username: { type: "string", maxLength: 16 },
                },
              },
              example: { sub: "069a79f4-44e9-4726-a5be-fca90e38aaf5", preferred_username: "Notch" },
            },
          },
        },
        "401": oauthError("invalid_token"),
        "429": { description: STATUS_TEXT["429"] },
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
  registerComponents();
  const doc = generateOpenApiDocument(router, {
    title: "Minecraft game server platform and launcher login",
    description:
      "Teams register Minecraft servers and get players, bans, uptime, ranks, announcements and live analytics; " +
      "client applications sign players in through Microsoft (`ms_auth`). Every operation here is also a tRPC procedure at `/trpc`. " +
      "The realtime analytics stream (WebSocket) is described at [/docs/asyncapi](/docs/asyncapi) (`/asyncapi.json`).",
    version: pkg.version,
    baseUrl,
    license: { name: "MIT", identifier: "MIT" },
    securitySchemes: {
      bearerAuth: {
        type: "http",
        scheme: "bearer",
        description:
          "A user access token (JWT from /auth/login) or a team API key (`mcp_key_...`). A key carries a role (owner > admin > moderator > viewer; keys get admin, moderator or viewer) or scopes, named on each operation as `x-api-key-scope`; it may be limited to some servers and may expire (401 `api_key_expired`).",
      },
    },
    paths: { ...BROWSER_PATHS, ...DASHBOARD_SESSION_PATHS, ...WELL_KNOWN_PATHS, ...OIDC_PATHS } as never,
  }) as Json;

  const errorDoc = createDocument({
    openapi: "3.1.0",
    info: { title: "", version: "" },
    components: { schemas: { Error: ZErrorEnvelope } },
  }) as Json;
  doc.components ??= {};
  doc.components.schemas = { ...(doc.components.schemas ?? {}), ...errorDoc.components.schemas };
  // Added after generation: the generator offers every scheme to every procedure, and only the
  // dashboard session routes take this one.
  doc.components.securitySchemes.dashboardSession = {
    type: "apiKey",
    in: "cookie",
    name: "mcp_dashboard_refresh",
    description: "The dashboard's refresh token, set by `POST /dashboard/session` (HttpOnly; the page never reads it).",
  };
  // The player's apps page: its sign-in cookie, set by its own Microsoft sign-in (docs/identity.md).
  doc.components.securitySchemes.playerSession = {
    type: "apiKey",
    in: "cookie",
    name: "mcp_player",
    description:
      "The player's apps page sign-in, set by `/account/apps/callback` after a Microsoft sign-in (HttpOnly, 15 minutes); its forms also carry a CSRF token.",
  };
  doc.components.securitySchemes.oidcAccessToken = {
    type: "http",
    scheme: "bearer",
    description: "An access token from the OpenID Connect token endpoint (`mcp_oat_...`), for userinfo only.",
  };
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
    "Idempotent-Replayed": {
      description:
        "`true` when this answer is the stored answer of an earlier request with the same Idempotency-Key; absent when the operation ran",
      schema: { type: "string", enum: ["true"] },
    },
  };
  doc.components.parameters = {
    "Idempotency-Key": {
      name: "Idempotency-Key",
      in: "header",
      required: false,
      description:
        "A key you choose per intent (a UUID), to retry safely: the same key with the same request within 24 hours " +
        "answers the first successful answer again (with `Idempotent-Replayed: true`) instead of running twice; " +
        "with a different request it is `422 idempotency_key_reused`; while the first is running, " +
        "`409 idempotency_key_in_progress`. Failed requests do not keep their key. 1 to 255 printable ASCII characters.",
      schema: { type: "string", minLength: 1, maxLength: 255, pattern: "^[\\x20-\\x7e]+$" },
      example: "5f0c3a0e-6c1e-4a8e-9d1b-2f6f1c6b9a41",
    },
  };
  doc.servers = (doc.servers ?? []).map((s: Json) => ({ ...s, "x-internal": false }));
  const errorContent = { "application/json": { schema: { $ref: "#/components/schemas/Error" } } };
  const procedures = router._def.procedures as Record<string, { _def: { meta?: Meta } }>;
  const routes = new Map(restRoutes(router).map((r) => [`${r.method.toLowerCase()} ${r.path}`, r]));

  const ref = (name: string) => ({ $ref: `#/components/headers/${name}` });
  for (const [path, item] of Object.entries<Json>(doc.paths ?? {})) {
    for (const [method, op] of Object.entries<Json>(item)) {
      op.security ??= [];
      const route = routes.get(`${method} ${path}`);
      const meta = route && procedures[route.procedurePath]?._def.meta;
      const idempotent = Boolean(meta && takesIdempotencyKey(method, meta));
      if (route && meta) describeOperation(op, method, route.procedurePath, route.status, meta);
      for (const [status, shared] of Object.entries<Json>(op.responses ?? {})) {
        // The generator hands every operation the same error response object: each gets its own.
        const res: Json = { ...shared };
        op.responses[status] = res;
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
        if (status.startsWith("2") && idempotent) res.headers["Idempotent-Replayed"] = ref("Idempotent-Replayed");
        if (status.startsWith("2") || status.startsWith("3")) continue;
        const own = meta?.openapi?.errorResponses;
        res.description =
          (own && !Array.isArray(own) && (own as Record<string, string>)[status]) ||
          STATUS_TEXT[status] ||
          res.description;
        // A route outside the procedures keeps the error body it declares (an HTML page, an OAuth
        // error of RFC 6749): only those that declare none answer the envelope.
        res.content = route
          ? { "application/json": { ...errorContent["application/json"], example: errorExample(status, route.access) } }
          : (res.content ?? errorContent);
        if (status === "409" && idempotent) {
          res.description += IN_PROGRESS;
          // Where the operation itself never conflicts, the key in use is the only 409 it answers.
          const ownStatuses = Array.isArray(own) ? own.map(String) : Object.keys(own ?? {});
          if (!ownStatuses.includes("409"))
            res.content["application/json"].example = { error: { ...IN_PROGRESS_EXAMPLE, request_id: REQUEST_ID } };
        }
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
  for (const schema of Object.values<Json>(doc.components.schemas ?? {})) {
    boundSchema(schema, true);
    // OpenAPI discriminators name string properties only; a union on a boolean (`valid`) stays a
    // oneOf whose variants' `const` already tell them apart.
    const mapping = Object.keys(schema.discriminator?.mapping ?? {});
    if (mapping.length && mapping.every((k) => k === "true" || k === "false")) delete schema.discriminator;
  }
  // The generator's own error schemas are unused now.
  for (const key of Object.keys(doc.components.schemas))
    if (key.startsWith("error.")) delete doc.components.schemas[key];
  return doc;
}

/**
 * Puts in place what the generator cannot know: the success status the REST door answers, the
 * statuses the edge adds to the procedure's own, and the operation's examples.
 */
function describeOperation(op: Json, method: string, procedurePath: string, status: 200 | 201, meta: Meta): void {
  const success = op.responses["200"];
  if (status !== 200) {
    delete op.responses["200"];
    op.responses[String(status)] = { ...success, description: meta.openapi?.successDescription ?? "Created" };
  }
  const hasInput = (op.parameters ?? []).some((p: Json) => p.in !== "header") || Boolean(op.requestBody);
  for (const s of edgeStatuses(method, meta.access, hasInput)) op.responses[s] ??= { description: "" };
  if (takesIdempotencyKey(method, meta)) {
    for (const s of ["409", "422"]) op.responses[s] ??= { description: "" };
    op.parameters = [...(op.parameters ?? []), { $ref: "#/components/parameters/Idempotency-Key" }];
  }
  // Statuses in order, so each operation reads the same way.
  op.responses = Object.fromEntries(Object.entries<Json>(op.responses).sort(([a], [b]) => a.localeCompare(b)));

  op.description ??= OPERATION_DESCRIPTIONS[procedurePath];
  // Which scope opens it to a scoped API key (src/auth/scopes.ts), in prose and as an extension.
  if (meta.scope) {
    op["x-api-key-scope"] = meta.scope;
    op.description = `${op.description ?? ""} A scoped API key needs \`${meta.scope}\`.`.trim();
  }
  const ex = OPERATION_EXAMPLES[procedurePath];
  if (!ex) return;
  const input = ex.request ?? {};
  for (const param of op.parameters ?? []) {
    const value = param.in === "header" ? ex.headers?.[param.name] : input[param.name];
    if (value !== undefined) param.example = value;
  }
  const body = op.requestBody?.content?.["application/json"];
  if (body) body.example = bodyPart(input, op.parameters ?? []);
  const answer = op.responses[String(status)]?.content?.["application/json"];
  if (answer) {
    if (ex.more)
      answer.examples = {
        [procedurePath.split(".").pop() ?? "ok"]: { summary: "A successful answer", value: ex.response },
        ...ex.more,
      };
    else answer.example = ex.response;
  }
}
