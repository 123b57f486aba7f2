import { expect } from "bun:test";
import type { RunningServer } from "../src/app";
import { api, newTeam, newUser, type TestUser } from "./helpers";
import { hiddenFields } from "./shared";

export interface TestClient {
  owner: TestUser;
  teamId: string;
  clientId: string;
  secret: string;
  redirectUri: string;
}

/** A team with a client application and the ms_auth module enabled. */
export async function newClient(
  server: RunningServer,
  opts: { redirectUri?: string; owner?: TestUser } = {},
): Promise<TestClient> {
  const owner = opts.owner ?? (await newUser(server, "clientowner"));
  const teamId = await newTeam(server, owner);
  const created = await api(server, "POST", "/client/apps", {
    token: owner.token,
    body: {
      team_id: teamId,
      name: "launcher",
      title: "Blocky Launcher",
      description: "Play on Blocky servers.",
      logo_url: "https://cdn.example.com/logo.png",
    },
  });
  expect(created.status).toBe(201);
  const redirectUri = opts.redirectUri ?? "com.example.launcher:/callback";
  const mod = await api(server, "POST", `/client/apps/${created.body.app.client_id}/modules/ms-auth`, {
    token: owner.token,
    body: { post_login_redirect_uri: redirectUri },
  });
  expect(mod.status).toBe(200);
  return { owner, teamId, clientId: created.body.app.client_id, secret: created.body.client_secret, redirectUri };
}

export async function start(server: RunningServer, c: TestClient, clientState?: string) {
  const res = await api(server, "POST", "/client/ms-auth/start", {
    body: {
      client_id: c.clientId,
      client_secret: c.secret,
      ...(clientState !== undefined && { client_state: clientState }),
    },
  });
  expect(res.status).toBe(200);
  return res.body as { auth_request_id: string; auth_url: string; expires_in: number; interval: number };
}

export async function poll(server: RunningServer, c: TestClient, id: string) {
  return api(server, "POST", "/client/ms-auth/poll", {
    body: { client_id: c.clientId, client_secret: c.secret, auth_request_id: id },
  });
}

export { hiddenFields } from "./shared";

export interface SignInResult {
  /** The callback's answer: 200 consent page, or 303 back to the launcher. */
  callback: Response;
  html: string;
  /** `name=value` of the cookie the callback set, if any. */
  cookie?: string;
}

/**
 * What a browser does with auth_url: load the provider's sign-in page, submit the form, follow
 * the redirect to our callback. Real HTTP at every step; redirects followed by hand to see them.
 */
export async function signIn(
  server: RunningServer,
  authUrl: string,
  opts: { username?: string; outcome?: string; action?: "signin" | "cancel" } = {},
): Promise<SignInResult> {
  const page = await fetch(authUrl);
  const pageHtml = await page.text();
  expect(page.status).toBe(200);
  expect(pageHtml).toContain('name="username"');
  const form = new URLSearchParams({
    ...hiddenFields(pageHtml),
    username: opts.username ?? "Steve",
    outcome: opts.outcome ?? "success",
    action: opts.action ?? "signin",
  });
  const submitted = await fetch(authUrl.split("?")[0]!, { method: "POST", body: form, redirect: "manual" });
  expect(submitted.status).toBe(302);
  const callbackUrl = submitted.headers.get("location")!;
  expect(callbackUrl.startsWith(`${server.url.replace("127.0.0.1", "127.0.0.1")}/client/ms-auth/callback`)).toBe(true);
  const callback = await fetch(callbackUrl, { redirect: "manual" });
  const html = await callback.text();
  const setCookie = callback.headers.get("set-cookie");
  return { callback, html, cookie: setCookie ? setCookie.split(";")[0] : undefined };
}

/** Presses Approve or Deny on the consent page, as the browser holding the cookie. */
export async function decide(server: RunningServer, s: SignInResult, decision: "approve" | "deny", cookie = s.cookie) {
  const fields = hiddenFields(s.html);
  return fetch(`${server.url}/client/ms-auth/authorize`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...(cookie ? { cookie } : {}) },
    body: new URLSearchParams({ ...fields, decision }),
    redirect: "manual",
  });
}

/** The whole happy path: start, sign in, approve, poll. */
export async function fullLogin(server: RunningServer, c: TestClient, username = "Steve") {
  const started = await start(server, c);
  const s = await signIn(server, started.auth_url, { username });
  expect(s.callback.status).toBe(200);
  const approved = await decide(server, s, "approve");
  expect(approved.status).toBe(303);
  const polled = await poll(server, c, started.auth_request_id);
  expect(polled.body.status).toBe("authorized");
  return { id: started.auth_request_id, token: polled.body.svc_session_token as string };
}

/** Redeems a development provider's code at `tokenUrl` again: refused, as already redeemed. */
export async function expectCodeRedeemed(tokenUrl: string, code: string) {
  const again = await fetch(tokenUrl, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ grant_type: "authorization_code", code, client_id: "dev-client" }),
  });
  expect(again.status).toBe(400);
  expect(await again.json()).toMatchObject({
    error: "invalid_grant",
    error_description: expect.stringContaining("redeemed"),
  });
}

/** The grant id (`g`) a development provider's code carries; its single-use mark is `code:<g>`. */
export const codeGrant = (code: string): string =>
  JSON.parse(Buffer.from(code.slice("dev_code_".length).split(".")[0]!, "base64url").toString()).g;
