import { Elysia } from "elysia";
import { authorizeUrl, pkceChallenge, runChain } from "../identity/chain";
import { requestInfo } from "../http/request";
import { readRequestBody } from "../lib/body";
import { AppError } from "../lib/errors";
import type { Services } from "../trpc/context";
import { appsPage, signedOutPage } from "./pages";

const STATE_COOKIE = "mcp_apps_state";
const PLAYER_COOKIE = "mcp_player";
const STATE_TTL_S = 600;
/** How long the page stays signed in: long enough to review and revoke, short on a shared computer. */
export const PLAYER_TTL_S = 900;
const MAX_FORM_BYTES = 4 * 1024;

interface Player {
  uuid: string;
  name: string;
  exp: number;
}

function readCookie(request: Request, name: string): string | undefined {
  return new Bun.CookieMap(request.headers.get("cookie") ?? "").get(name) ?? undefined;
}

function redirect(location: string, cookies: string[] = []) {
  const headers = new Headers({ location, "referrer-policy": "no-referrer", "cache-control": "no-store" });
  for (const c of cookies) headers.append("set-cookie", c);
  return new Response(null, { status: 303, headers });
}

/**
 * The player's apps page (`/account/apps`): the player signs in with Microsoft through the same
 * identity chain as a launcher sign-in (its own callback, `/account/apps/callback`), sees every
 * app that holds a session for their Minecraft UUID and revokes any. The page is signed in by a
 * short-lived cookie holding the UUID and name under the service's MAC; nothing is stored.
 */
export function playerAppsRoutes(services: Services) {
  const { keyring, config, clock } = services;
  const identity = services.loginLinks.identity;
  const callbackUrl = `${config.PUBLIC_URL}/account/apps/callback`;
  const secure = config.PUBLIC_URL.startsWith("https://");
  // Lax, not Strict: the callback is a navigation back from Microsoft, which Strict cookies miss.
  const cookie = (name: string, value: string, maxAge: number) =>
    new Bun.Cookie(name, value, { path: "/account", maxAge, httpOnly: true, sameSite: "lax", secure }).serialize();

  const encodePlayer = (p: Player) => {
    const body = Buffer.from(JSON.stringify(p)).toString("base64url");
    return `${body}.${keyring.mac("player-apps session", body)}`;
  };
  const playerOf = (request: Request): Player | null => {
    const raw = readCookie(request, PLAYER_COOKIE);
    if (!raw || raw.length > 1024) return null;
    const [body, mac, extra] = raw.split(".");
    if (!body || !mac || extra !== undefined || !keyring.verify(mac, "player-apps session", body)) return null;
    try {
      const p = JSON.parse(Buffer.from(body, "base64url").toString("utf8")) as Player;
      return typeof p.uuid === "string" && typeof p.name === "string" && p.exp * 1000 > clock.now() ? p : null;
    } catch {
      return null;
    }
  };
  const csrfOf = (request: Request) => keyring.mac("player-apps csrf", readCookie(request, PLAYER_COOKIE) ?? "");

  /** A POST from the page: form-encoded, small, with the CSRF token of this browser's sign-in. */
  const readForm = async (request: Request): Promise<{ player: Player; form: URLSearchParams } | Response> => {
    const player = playerOf(request);
    if (!player) return redirect("/account/apps?signed_out=1", [cookie(PLAYER_COOKIE, "", 0)]);
    if (!(request.headers.get("content-type") ?? "").startsWith("application/x-www-form-urlencoded"))
      throw new AppError("unsupported_media_type", "Submit the page's form.");
    const form = new URLSearchParams(new TextDecoder().decode(await readRequestBody(request, MAX_FORM_BYTES)));
    if (!keyring.verify(form.get("csrf_token") ?? "", "player-apps csrf", readCookie(request, PLAYER_COOKIE) ?? ""))
      throw new AppError("forbidden", "This form does not belong to this browser's sign-in. Reload the page.");
    return { player, form };
  };

  return new Elysia({ name: "player-apps-routes" })
    .onBeforeHandle(({ request }) => {
      requestInfo(request).renderError = (err) =>
        err instanceof AppError && err.status < 500
          ? signedOutPage({ text: err.message, error: true }, err.status)
          : undefined;
    })
    .get("/account/apps", async ({ request }) => {
      const player = playerOf(request);
      const q = new URL(request.url).searchParams;
      if (!player) return signedOutPage(q.has("signed_out") ? { text: "You are signed out of this page." } : undefined);
      const apps = await services.playerApps.list(player.uuid);
      const revoked = q.get("revoked");
      return appsPage({
        playerName: player.name,
        csrf: csrfOf(request),
        apps,
        ...(revoked !== null && {
          notice:
            revoked === "0"
              ? "That app no longer held a session."
              : "Access revoked: the app can no longer confirm who you are. Its launcher will ask you to sign in again.",
        }),
      });
    })
    .get("/account/apps/sign-in", () => {
      const nonce = crypto.randomUUID();
      const state = `${nonce}.${keyring.mac("player-apps state", nonce)}`;
      const url = authorizeUrl(identity, {
        redirectUri: callbackUrl,
        state,
        codeChallenge: pkceChallenge(keyring.mac("player-apps pkce", nonce)),
      });
      return redirect(url, [cookie(STATE_COOKIE, nonce, STATE_TTL_S)]);
    })
    .get("/account/apps/callback", async ({ request }) => {
      const q = new URL(request.url).searchParams;
      const [nonce, mac, extra] = (q.get("state") ?? "").split(".");
      // The state names the sign-in this browser started (its cookie), so a link from elsewhere signs nobody in.
      if (
        !nonce ||
        !mac ||
        extra !== undefined ||
        !keyring.verify(mac, "player-apps state", nonce) ||
        readCookie(request, STATE_COOKIE) !== nonce
      )
        throw new AppError("bad_request", "This sign-in link is not valid in this browser. Sign in again.");
      const clearState = cookie(STATE_COOKIE, "", 0);
      if (q.get("error")) return signedOutPage({ text: "Sign-in was cancelled.", error: true }, 200);
      const code = q.get("code");
      if (!code || code.length > 4096)
        throw new AppError("bad_request", "The identity provider sent no authorization code.");
      const result = await runChain(identity, {
        code,
        redirectUri: callbackUrl,
        codeVerifier: keyring.mac("player-apps pkce", nonce),
      });
      if (!result.ok) {
        services.log.info("player apps sign-in failed", { error: result.error, detail: result.detail });
        return signedOutPage({ text: `Sign-in failed (${result.error}). Please try again.`, error: true }, 200);
      }
      const player = encodePlayer({
        uuid: result.profile.id,
        name: result.profile.name,
        exp: Math.floor(clock.now() / 1000) + PLAYER_TTL_S,
      });
      return redirect("/account/apps", [clearState, cookie(PLAYER_COOKIE, player, PLAYER_TTL_S)]);
    })
    .post(
      "/account/apps/revoke",
      async ({ request }) => {
        const read = await readForm(request);
        if (read instanceof Response) return read;
        const clientId = read.form.get("client_id") ?? "";
        if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(clientId))
          throw new AppError("bad_request", "The form names no app.");
        const n = await services.playerApps.revoke(read.player.uuid, clientId);
        return redirect(`/account/apps?revoked=${n > 0 ? "1" : "0"}`);
      },
      { parse: "none" },
    )
    .post(
      "/account/apps/sign-out",
      async ({ request }) => {
        const read = await readForm(request);
        if (read instanceof Response) return read;
        return redirect("/account/apps?signed_out=1", [cookie(PLAYER_COOKIE, "", 0)]);
      },
      { parse: "none" },
    );
}
