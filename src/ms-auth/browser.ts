import { Elysia } from "elysia";
import type { DenialCode } from "../identity/types";
import { requestInfo } from "../http/request";
import { AppError } from "../lib/errors";
import type { Services } from "../trpc/context";
import { readRequestBody } from "../lib/body";
import { DEVICE_PATH, normalizeUserCode } from "./device";
import { redirectHostOf } from "../lib/redirect-host";
import { consentPage, devicePage, messagePage } from "./pages";

const COOKIE_PREFIX = "mcp_login_";
/** Binds the device page's form to the browser that loaded it (login CSRF). */
const DEVICE_COOKIE = "mcp_device";
const MAX_FORM_BYTES = 8 * 1024;

/** Where approve and deny redirect to, as a CSP source (an origin, or a custom scheme). */
function redirectSource(target: string | null): string | null {
  if (!target) return null;
  const u = new URL(target);
  return u.protocol === "http:" || u.protocol === "https:" ? u.origin : u.protocol;
}

function redirect(location: string, extra: Record<string, string> = {}) {
  return new Response(null, {
    status: 303,
    headers: { location, "referrer-policy": "no-referrer", "cache-control": "no-store", ...extra },
  });
}

function readCookie(request: Request, name: string): string | undefined {
  return new Bun.CookieMap(request.headers.get("cookie") ?? "").get(name) ?? undefined;
}

/** What the device flow's browser is told once the sign-in has ended, by status. */
const DEVICE_OUTCOME: Record<string, [string, string]> = {
  authorized: ["You are signed in", "Go back to your device: it continues on its own. You can close this page."],
  denied: ["Sign-in cancelled", "Nothing was shared. Go back to your device to try again. You can close this page."],
  expired: ["Sign-in expired", "The code expired before you finished. Start again on your device."],
  other: ["Sign-in finished", "Go back to your device. You can close this page."],
};

function tooManyCodes(err: AppError) {
  const s = Number(err.headers?.["Retry-After"]) || 60;
  return `Too many wrong codes. Wait ${s >= 120 ? `${Math.ceil(s / 60)} minutes` : `${s} seconds`} and try again.`;
}

/** A person's mistake (a stale link, a form from another browser) is a page, not JSON; anything else is the envelope. */
function pageError(err: unknown): Response | undefined {
  if (err instanceof AppError && err.status < 500) return messagePage("Sign-in failed", err.message, err.status);
  return undefined;
}

/**
 * The browser's half of the flow: the identity provider's callback (runs the chain, binds the
 * browser with a cookie, shows consent) and the consent form's target. Plain routes, not
 * procedures: they speak HTML, cookies and redirects. Both are described in /openapi.json.
 */
export function loginBrowserRoutes(services: Services) {
  const { signIn: login, config } = services;
  const secure = config.PUBLIC_URL.startsWith("https://");

  const cookieFor = (id: string, value: string, maxAge: number) =>
    new Bun.Cookie(COOKIE_PREFIX + id, value, {
      path: "/client/ms-auth",
      maxAge,
      httpOnly: true,
      sameSite: "strict",
      secure,
    }).serialize();

  const finish = async (row: Parameters<typeof login.redirectTarget>[0], extra: Record<string, string> = {}) => {
    // The device flow's browser is not on the launcher's machine: the launcher learns the
    // outcome by polling, and the player is told to go back to it.
    if (row.flow === "device") {
      const [title, text] = DEVICE_OUTCOME[row.status] ?? DEVICE_OUTCOME.other!;
      return messagePage(title, text, 200, extra);
    }
    const target = await login.redirectTarget(row);
    if (target) return redirect(target, extra);
    return messagePage(
      "Sign-in finished",
      `The sign-in ended with status "${row.status}". You can close this window.`,
      200,
      extra,
    );
  };

  const consent = async (
    row: NonNullable<Awaited<ReturnType<typeof login.loadCurrent>>>,
    browser: string,
    extra: Record<string, string> = {},
  ) => {
    const app = await login.consentView(row);
    const target = row.flow === "device" ? null : await login.redirectTarget(row);
    return consentPage(
      {
        client: {
          title: app?.title ?? "Minecraft launcher",
          description: app?.description ?? "",
          logoUrl: app?.logoUrl ?? null,
        },
        redirectHost: redirectHostOf(target),
        playerName: row.context.mcUsername ?? "",
        action: "/client/ms-auth/authorize",
        fields: { auth_request_id: row.id, csrf_token: login.csrfToken(row.id, browser) },
        revokeUrl: `${config.PUBLIC_URL}/account/apps`,
        sessionDays: Math.round(config.SESSION_TTL_SECONDS / 86_400),
      },
      redirectSource(target),
      extra,
    );
  };

  const devices = services.deviceCodes;
  // The code page's submit redirects to the identity provider: form-action must allow it.
  const providerOrigin = new URL(login.providerAuthorizeUrl).origin;
  const deviceCookie = (value: string) =>
    new Bun.Cookie(DEVICE_COOKIE, value, {
      path: DEVICE_PATH,
      maxAge: 3600,
      httpOnly: true,
      sameSite: "strict",
      secure,
    }).serialize();
  const showDevice = (
    browser: string,
    code: string,
    error: string,
    status: number,
    extra: Record<string, string> = {},
  ) => {
    const res = devicePage({ csrf: login.deviceFormToken(browser), code, error }, DEVICE_PATH, status, extra);
    res.headers.set(
      "content-security-policy",
      (res.headers.get("content-security-policy") ?? "").replace(
        "form-action 'self'",
        `form-action 'self' ${providerOrigin}`,
      ),
    );
    return res;
  };

  return new Elysia({ name: "login-browser-routes" })
    .onBeforeHandle(({ request }) => {
      requestInfo(request).renderError = pageError;
    })
    .get("/client/ms-auth/callback", async ({ request }) => {
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
          return consent(row, existing);
        if (row.status === "authenticated")
          throw new AppError("bad_request", "This sign-in was already used in another browser.");
        return finish(row);
      }

      const upstreamError = q.get("error");
      if (upstreamError) {
        const code: DenialCode = upstreamError === "access_denied" ? "access_denied" : "identity_error";
        const r = await login.deny(row, code);
        return finish(r!.row);
      }
      const code = q.get("code");
      if (!code || code.length > 4096)
        throw new AppError("bad_request", "The identity provider sent no authorization code.");

      const browser = crypto.randomUUID() + crypto.randomUUID();
      const result = await login.completeSignIn(row, code, browser);
      if (!result) throw new AppError("bad_request", "This sign-in link is not valid.");
      if (result.applied && result.row.status === "authenticated") {
        const ttl = Math.max(1, Math.ceil((result.row.expiresAt.getTime() - services.clock.now()) / 1000));
        return consent(result.row, browser, { "set-cookie": cookieFor(id, browser, ttl) });
      }
      return finish(result.row);
    })
    .get(DEVICE_PATH, ({ request }) => {
      const given = new URL(request.url).searchParams.get("code") ?? "";
      // Only a well-formed code is put back in the field; it is never submitted for the player.
      const code = normalizeUserCode(given);
      let browser = readCookie(request, DEVICE_COOKIE);
      const extra: Record<string, string> = {};
      if (!browser || !/^[0-9a-f-]{72}$/.test(browser)) {
        browser = crypto.randomUUID() + crypto.randomUUID();
        extra["set-cookie"] = deviceCookie(browser);
      }
      return showDevice(browser, code ? `${code.slice(0, 4)}-${code.slice(4)}` : "", "", 200, extra);
    })
    .post(
      DEVICE_PATH,
      async ({ request }) => {
        const type = request.headers.get("content-type") ?? "";
        if (!type.startsWith("application/x-www-form-urlencoded"))
          throw new AppError("unsupported_media_type", "Submit the code form.");
        const body = await readRequestBody(request, MAX_FORM_BYTES);
        const form = new URLSearchParams(new TextDecoder().decode(body));
        const browser = readCookie(request, DEVICE_COOKIE);
        if (!browser || !login.deviceFormValid(browser, form.get("csrf_token") ?? ""))
          throw new AppError(
            "forbidden",
            "This form has expired or belongs to another browser. Reload the page and enter the code again.",
          );
        const typed = (form.get("user_code") ?? "").slice(0, 64);
        const address = requestInfo(request).ip;
        try {
          devices.checkAllowed(address);
        } catch (err) {
          if (err instanceof AppError && err.appCode === "rate_limited")
            return showDevice(browser, typed, tooManyCodes(err), 429, {
              "retry-after": err.headers?.["Retry-After"] ?? "60",
            });
          throw err;
        }
        const code = normalizeUserCode(typed);
        if (!code) return showDevice(browser, typed, "That is not a code: a code is 8 letters, like BCDF-GHJK.", 400);
        let claimed: Awaited<ReturnType<typeof devices.claim>>;
        try {
          claimed = await devices.claim(code, address);
        } catch (err) {
          if (err instanceof AppError && err.appCode === "rate_limited")
            return showDevice(browser, typed, tooManyCodes(err), 429, {
              "retry-after": err.headers?.["Retry-After"] ?? "60",
            });
          throw err;
        }
        if (claimed.kind === "expired")
          return showDevice(
            browser,
            "",
            "That code has expired. Start the sign-in again on your device for a new one.",
            400,
          );
        if (claimed.kind === "unknown")
          return showDevice(
            browser,
            typed,
            "That code is not valid. Check it against your device: a code works once, until it expires.",
            400,
          );
        // The code expires with its request, so a live code's request is within its deadline.
        if (claimed.status !== "pending")
          return messagePage(
            "This sign-in has ended",
            "The sign-in this code was for has already finished or expired. Start again on your device.",
            400,
          );
        return redirect(login.authUrl(claimed.requestId));
      },
      { parse: "none" },
    )
    .post(
      "/client/ms-auth/authorize",
      async ({ request }) => {
        const type = request.headers.get("content-type") ?? "";
        if (!type.startsWith("application/x-www-form-urlencoded"))
          throw new AppError("unsupported_media_type", "Submit the consent form.");
        const body = await readRequestBody(request, MAX_FORM_BYTES);
        const form = new URLSearchParams(new TextDecoder().decode(body));
        const id = form.get("auth_request_id") ?? "";
        const decision = form.get("decision");
        if (!/^[0-9a-f-]{36}$/.test(id) || (decision !== "approve" && decision !== "deny"))
          throw new AppError("bad_request", "The consent form is incomplete.");
        const row = await login.loadForDecision(id);
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
        if (row.status !== "authenticated") return finish(row, clear);
        const result = decision === "approve" ? await login.approve(row) : await login.deny(row, "consent_denied");
        // Null: the request was deleted meanwhile (its client was).
        if (!result)
          throw new AppError(
            "bad_request",
            "This sign-in is no longer valid. Start the sign-in again from your launcher.",
          );
        return finish(result.row, clear);
      },
      { parse: "none" },
    );
}
