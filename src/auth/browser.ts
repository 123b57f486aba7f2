import { Elysia } from "elysia";
import type { z } from "zod";
import { requestInfo } from "../http/request";
import { json } from "../http/responses";
import { readJsonBody } from "../lib/body";
import { AppError } from "../lib/errors";
import type { Services } from "../trpc/context";
import { ZLoginInput, ZSecondFactorInput } from "./schemas";

/**
 * The dashboard's own session: the same logins, rotation and reuse detection as `/auth/login`,
 * `/auth/refresh` and `/auth/logout`, but the refresh token travels in an HttpOnly cookie that
 * script on the page can never read, so a sign-in survives reloads and new tabs without the token
 * sitting in storage. The JSON procedures stay as they are for API users.
 *
 * Cross-site requests cannot use the cookie: it is SameSite=Strict, every route wants the
 * `x-mcp-dashboard` header (which no cross-origin page may send: it is not in the CORS allow
 * list, so the preflight fails) and refuses an Origin other than this service's.
 */

export const DASHBOARD_SESSION_PATH = "/dashboard/session";
export const DASHBOARD_SESSION_COOKIE = "mcp_dashboard_refresh";
export const DASHBOARD_HEADER = "x-mcp-dashboard";
const MAX_LOGIN_BYTES = 4 * 1024;
/** A passkey assertion is a few KB of base64url at most. */
const MAX_SECOND_FACTOR_BYTES = 16 * 1024;
const ENDED = "Your session has ended. Please sign in again.";

const isLoopback = (host: string) =>
  host === "localhost" || host.endsWith(".localhost") || /^127\.\d+\.\d+\.\d+$/.test(host) || host === "[::1]";

function readCookie(request: Request): string | undefined {
  return new Bun.CookieMap(request.headers.get("cookie") ?? "").get(DASHBOARD_SESSION_COOKIE) ?? undefined;
}

function parse<T>(schema: z.ZodType<T>, body: unknown): T {
  const parsed = schema.safeParse(body);
  if (!parsed.success)
    throw new AppError("validation_failed", "The request did not match the expected shape.", {
      details: {
        issues: parsed.error.issues.map((i) => ({
          path: i.path.map(String).join("."),
          message: i.message,
          code: i.code,
        })),
      },
    });
  return parsed.data;
}

export function dashboardSessionRoutes(services: Services) {
  const { auth, config } = services;
  const publicOrigin = new URL(config.PUBLIC_URL).origin;
  const ttl = config.REFRESH_TOKEN_TTL_SECONDS;

  /**
   * Secure whenever the browser will keep it: over https, and on loopback (browsers treat
   * http://localhost as a secure context). Plain http to any other address carries the whole
   * page in clear text, and a Secure cookie would be dropped there, ending every sign-in on reload.
   */
  const secureFor = (request: Request) =>
    config.PUBLIC_URL.startsWith("https://") || isLoopback(new URL(request.url).hostname);

  const cookie = (request: Request, value: string, maxAge: number) =>
    new Bun.Cookie(DASHBOARD_SESSION_COOKIE, value, {
      path: DASHBOARD_SESSION_PATH,
      maxAge,
      httpOnly: true,
      sameSite: "strict",
      secure: secureFor(request),
    }).serialize();
  const clear = (request: Request) => cookie(request, "", 0);

  /** Only the dashboard's own script, from this origin, may use the session routes. */
  const checkCaller = (request: Request) => {
    if (request.headers.get(DASHBOARD_HEADER) !== "1")
      throw new AppError("forbidden", `The dashboard session routes need the \`${DASHBOARD_HEADER}: 1\` header.`);
    const origin = request.headers.get("origin");
    if (origin === null) return;
    let sameOrigin = origin === publicOrigin;
    if (!sameOrigin && URL.canParse(origin)) sameOrigin = new URL(origin).host === new URL(request.url).host;
    if (!sameOrigin)
      throw new AppError("forbidden", "The dashboard session routes only answer the dashboard's own origin.");
  };

  /** The access token for the page; the refresh token only ever goes into the cookie. */
  const signedIn = (request: Request, pair: { access_token: string; expires_in: number; refresh_token: string }) =>
    json({ access_token: pair.access_token, token_type: "Bearer", expires_in: pair.expires_in }, 200, {
      "set-cookie": cookie(request, pair.refresh_token, ttl),
      "cache-control": "no-store",
    });

  /** The signed-in answer, after ending the login this browser held before (a sign-in replaces it). */
  const replacing = async (
    request: Request,
    pair: { access_token: string; expires_in: number; refresh_token: string },
  ) => {
    const previous = readCookie(request);
    if (previous) await auth.logout(previous);
    return signedIn(request, pair);
  };

  return new Elysia({ name: "dashboard-session-routes" })
    .post(DASHBOARD_SESSION_PATH, async ({ request }) => {
      checkCaller(request);
      const input = parse(ZLoginInput, await readJsonBody(request, MAX_LOGIN_BYTES));
      const answer = await auth.login(input.email, input.password, requestInfo(request).ip);
      // A second factor is due: no cookie yet, the page asks for it and completes below.
      if (!("access_token" in answer)) return json(answer, 200, { "cache-control": "no-store" });
      return replacing(request, answer);
    })
    .post(`${DASHBOARD_SESSION_PATH}/second-factor`, async ({ request }) => {
      checkCaller(request);
      const input = parse(ZSecondFactorInput, await readJsonBody(request, MAX_SECOND_FACTOR_BYTES));
      return replacing(request, await auth.completeSignIn(input, requestInfo(request).ip));
    })
    .post(`${DASHBOARD_SESSION_PATH}/refresh`, async ({ request }) => {
      checkCaller(request);
      const token = readCookie(request);
      // No cookie is the ordinary state of a browser that is not signed in, not an error.
      if (!token) return new Response(null, { status: 204, headers: { "cache-control": "no-store" } });
      try {
        return signedIn(request, await auth.refresh(token));
      } catch (err) {
        if (err instanceof AppError && err.appCode === "unauthenticated")
          throw new AppError("unauthenticated", ENDED, { headers: { "set-cookie": clear(request) } });
        throw err;
      }
    })
    .post(`${DASHBOARD_SESSION_PATH}/logout`, async ({ request }) => {
      checkCaller(request);
      const token = readCookie(request);
      if (token) await auth.logout(token);
      return json({ ok: true }, 200, { "set-cookie": clear(request), "cache-control": "no-store" });
    });
}
