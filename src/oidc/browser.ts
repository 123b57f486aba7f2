import { Elysia } from "elysia";
import { requestInfo } from "../http/request";
import { readRequestBody } from "../lib/body";
import { AppError } from "../lib/errors";
import { messagePage } from "../ms-auth/pages";
import type { Services } from "../trpc/context";
import { OAuthError } from "./service";

const MAX_FORM_BYTES = 8 * 1024;
const JSON_HEADERS = { "content-type": "application/json", "cache-control": "no-store", pragma: "no-cache" };

/** RFC 6749 section 5.2: `{error, error_description}`; 401 with a challenge for client authentication. */
function oauthError(err: OAuthError) {
  return new Response(JSON.stringify({ error: err.error, error_description: err.description }), {
    status: err.status,
    headers: {
      ...JSON_HEADERS,
      ...(err.status === 401 && { "www-authenticate": 'Basic realm="token"' }),
    },
  });
}

async function readForm(request: Request): Promise<URLSearchParams> {
  const type = request.headers.get("content-type") ?? "";
  if (!type.toLowerCase().startsWith("application/x-www-form-urlencoded"))
    throw new OAuthError("invalid_request", "Send the parameters as application/x-www-form-urlencoded.");
  const body = await readRequestBody(request, MAX_FORM_BYTES);
  return new URLSearchParams(new TextDecoder().decode(body));
}

function bearer(request: Request, form?: URLSearchParams): string | null {
  const h = request.headers.get("authorization");
  const m = h ? /^Bearer ([\x21-\x7e]+)$/i.exec(h.trim()) : null;
  return m?.[1] ?? form?.get("access_token") ?? null;
}

/**
 * "Sign in with Minecraft" for websites: the OpenID Provider's HTTP surface. Plain routes, not
 * procedures: they speak OAuth's form bodies, errors and redirects (RFC 6749, OpenID Connect
 * Core), which relying-party libraries expect exactly. Described in /openapi.json.
 */
export function oidcRoutes(services: Services) {
  const { oidc, limiter, limits } = services;
  const page = (title: string, message: string, status: number) => messagePage(title, message, status);

  const authorize = async (q: URLSearchParams) => {
    const out = await oidc.authorize(q);
    if (out.kind === "page") return page(out.title, out.message, out.status);
    return new Response(null, {
      status: 303,
      headers: { location: out.location, "referrer-policy": "no-referrer", "cache-control": "no-store" },
    });
  };

  const userinfo = async (request: Request, form?: URLSearchParams) => {
    const claims = await oidc.userinfo(bearer(request, form));
    if (!claims)
      return new Response(
        JSON.stringify({ error: "invalid_token", error_description: "The access token is not valid." }),
        {
          status: 401,
          headers: { ...JSON_HEADERS, "www-authenticate": 'Bearer error="invalid_token"' },
        },
      );
    return new Response(JSON.stringify(claims), { headers: JSON_HEADERS });
  };

  return new Elysia({ name: "oidc-routes" })
    .get("/.well-known/openid-configuration", () => {
      return new Response(JSON.stringify(oidc.discovery()), {
        headers: {
          "content-type": "application/json",
          "cache-control": "public, max-age=300",
          "access-control-allow-origin": "*",
        },
      });
    })
    .get("/oidc/jwks.json", async () => {
      return new Response(JSON.stringify(await oidc.jwks()), {
        headers: {
          "content-type": "application/jwk-set+json",
          "cache-control": "public, max-age=300",
          "access-control-allow-origin": "*",
        },
      });
    })
    .get("/oidc/authorize", ({ request }) => {
      requestInfo(request).renderError = (err) =>
        err instanceof AppError && err.status < 500 ? page("Sign-in failed", err.message, err.status) : undefined;
      return authorize(new URL(request.url).searchParams);
    })
    .post(
      "/oidc/authorize",
      async ({ request }) => {
        requestInfo(request).renderError = (err) =>
          err instanceof OAuthError || (err instanceof AppError && err.status < 500)
            ? page("Sign-in failed", err.message, 400)
            : undefined;
        return authorize(await readForm(request));
      },
      { parse: "none" },
    )
    .post(
      "/oidc/token",
      async ({ request }) => {
        try {
          const form = await readForm(request);
          const ip = requestInfo(request).ip;
          const tokens = await oidc.token({ form, authorization: request.headers.get("authorization") }, (clientId) =>
            limiter.enforce(limits.clientAuthFailure, `${clientId}|${ip}`, requestInfo(request).headers),
          );
          return new Response(JSON.stringify(tokens), { headers: JSON_HEADERS });
        } catch (err) {
          if (err instanceof OAuthError) return oauthError(err);
          throw err;
        }
      },
      { parse: "none" },
    )
    .get("/oidc/userinfo", ({ request }) => userinfo(request))
    .post(
      "/oidc/userinfo",
      async ({ request }) => {
        const type = request.headers.get("content-type") ?? "";
        const form = type.startsWith("application/x-www-form-urlencoded") ? await readForm(request) : undefined;
        return userinfo(request, form);
      },
      { parse: "none" },
    );
}
