import type { Elysia } from "elysia";
import type { DenialCode } from "../identity/types";
import { errorResponse, logAccess, responseHeaders } from "../http";
import { AppError } from "../lib/errors";
import type { Services } from "../services";
import { readLimited } from "../lib/body";
import { clientAddress } from "../trpc/rest";
import { consentPage, messagePage } from "./pages";

const COOKIE_PREFIX = "mcp_login_";
const MAX_FORM_BYTES = 8 * 1024;

/** CSP for our pages; form-action must also allow where approve/deny redirects (Chrome checks redirects). */
function csp(redirectTarget?: string) {
  let formTarget = "";
  if (redirectTarget) {
    const u = new URL(redirectTarget);
    formTarget = u.protocol === "http:" || u.protocol === "https:" ? ` ${u.origin}` : ` ${u.protocol}`;
  }
  return [
    "default-src 'none'",
    "img-src https: data:",
    "style-src 'unsafe-inline'",
    `form-action 'self'${formTarget}`,
    "frame-ancestors 'none'",
    "base-uri 'none'",
  ].join("; ");
}

function html(request: Request, body: string, status: number, extra: Record<string, string> = {}) {
  return new Response(body, {
    status,
    headers: {
      "content-type": "text/html; charset=utf-8",
      "content-security-policy": csp(),
      "x-frame-options": "DENY",
      "referrer-policy": "no-referrer",
      "cache-control": "no-store",
      "x-content-type-options": "nosniff",
      ...responseHeaders(request),
      ...extra,
    },
  });
}

function redirect(request: Request, location: string, extra: Record<string, string> = {}) {
  return new Response(null, {
    status: 303,
    headers: {
      ...responseHeaders(request),
      location,
      "referrer-policy": "no-referrer",
      "cache-control": "no-store",
      ...extra,
    },
  });
}

function readCookie(request: Request, name: string): string | undefined {
  for (const part of (request.headers.get("cookie") ?? "").split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return decodeURIComponent(part.slice(eq + 1).trim());
  }
  return undefined;
}

/**
 * The browser's half of the flow: the identity provider's callback (runs the chain, binds the
 * browser with a cookie, shows consent) and the consent form's target. Plain routes, not
 * procedures: they speak HTML, cookies and redirects. Both are described in /openapi.json.
 */
export function mountLoginBrowserRoutes(app: Elysia, services: Services) {
  const { signIn: login, log, config } = services;
  const secure = config.PUBLIC_URL.startsWith("https://");

  const cookieFor = (id: string, value: string, maxAge: number) =>
    `${COOKIE_PREFIX}${id}=${value}; Path=/client/ms-auth; Max-Age=${maxAge}; HttpOnly; SameSite=Strict${secure ? "; Secure" : ""}`;

  const finish = async (
    request: Request,
    row: Parameters<typeof login.redirectTarget>[0],
    extra: Record<string, string> = {},
  ) => {
    const target = await login.redirectTarget(row);
    if (target) return redirect(request, target, extra);
    return html(
      request,
      messagePage("Sign-in finished", `The sign-in ended with status "${row.status}". You can close this window.`),
      200,
      extra,
    );
  };

  const consent = async (
    request: Request,
    row: NonNullable<Awaited<ReturnType<typeof login.loadCurrent>>>,
    browser: string,
    extra: Record<string, string> = {},
  ) => {
    const app = await login.consentView(row);
    const target = await login.redirectTarget(row);
    const body = consentPage({
      authRequestId: row.id,
      csrf: login.csrfToken(row.id, browser),
      title: app?.title ?? "Minecraft launcher",
      description: app?.description ?? "",
      logoUrl: app?.logoUrl ?? null,
      playerName: row.context.mcUsername ?? "",
    });
    return html(request, body, 200, { ...extra, "content-security-policy": csp(target ?? undefined) });
  };

  const guard =
    (handler: (request: Request) => Promise<Response>) =>
    async ({ request, server }: { request: Request; server: Parameters<typeof clientAddress>[0] }) => {
      let res: Response;
      try {
        await services.edge.admit(request, clientAddress(server, request));
        res = await handler(request);
      } catch (err) {
        res =
          err instanceof AppError && err.status < 500
            ? html(request, messagePage("Sign-in failed", err.message), err.status)
            : errorResponse(err, request, log);
      }
      logAccess(log, request, res.status);
      return res;
    };

  app.get(
    "/client/ms-auth/callback",
    guard(async (request) => {
      const q = new URL(request.url).searchParams;
      const id = login.requestIdFromState(q.get("state"));
      if (!id)
        throw new AppError(
          "bad_request",
          "This sign-in link is not valid. Start the sign-in again from your launcher.",
        );
      const row = await login.loadCurrent(id);
      if (!row)
        throw new AppError(
          "bad_request",
          "This sign-in link is not valid. Start the sign-in again from your launcher.",
        );
      const cookieName = COOKIE_PREFIX + id;
      const existing = readCookie(request, cookieName);

      if (row.status !== "pending") {
        // A reload of the consent page in the same browser shows it again; anything else ends.
        if (row.status === "authenticated" && existing && login.browserMatches(row, existing))
          return consent(request, row, existing);
        if (row.status === "authenticated")
          throw new AppError("bad_request", "This sign-in was already used in another browser.");
        return finish(request, row);
      }

      const upstreamError = q.get("error");
      if (upstreamError) {
        const code: DenialCode = upstreamError === "access_denied" ? "access_denied" : "identity_error";
        const r = await login.deny(row, code);
        return finish(request, r!.row);
      }
      const code = q.get("code");
      if (!code || code.length > 4096)
        throw new AppError("bad_request", "The identity provider sent no authorization code.");

      const browser = crypto.randomUUID() + crypto.randomUUID();
      const result = await login.completeSignIn(row, code, browser);
      if (!result) throw new AppError("bad_request", "This sign-in link is not valid.");
      if (result.applied && result.row.status === "authenticated") {
        const ttl = Math.max(1, Math.ceil((result.row.expiresAt.getTime() - services.clock.now()) / 1000));
        return consent(request, result.row, browser, { "set-cookie": cookieFor(id, browser, ttl) });
      }
      return finish(request, result.row);
    }),
  );

  app.post(
    "/client/ms-auth/authorize",
    guard(async (request) => {
      const type = request.headers.get("content-type") ?? "";
      if (!type.startsWith("application/x-www-form-urlencoded"))
        throw new AppError("unsupported_media_type", "Submit the consent form.");
      const body = request.body ? await readLimited(request.body, MAX_FORM_BYTES) : new Uint8Array();
      const form = new URLSearchParams(new TextDecoder().decode(body));
      const id = form.get("auth_request_id") ?? "";
      const decision = form.get("decision");
      if (!/^[0-9a-f-]{36}$/.test(id) || (decision !== "approve" && decision !== "deny"))
        throw new AppError("bad_request", "The consent form is incomplete.");
      const row = await login.loadCurrent(id);
      const browser = readCookie(request, COOKIE_PREFIX + id);
      // Only the browser that signed in, with the form we gave it, can decide.
      if (
        !row ||
        !browser ||
        !login.browserMatches(row, browser) ||
        !login.csrfValid(id, browser, form.get("csrf_token") ?? "")
      ) {
        throw new AppError(
          "forbidden",
          "This consent form does not belong to this browser. Start the sign-in again from your launcher.",
        );
      }
      const clear = { "set-cookie": cookieFor(id, "", 0) };
      if (row.status !== "authenticated") return finish(request, row, clear);
      const result = decision === "approve" ? await login.approve(row) : await login.deny(row, "consent_denied");
      return finish(request, result!.row, clear);
    }),
  );
}
