import { expect } from "bun:test";
import type { RunningServer } from "../src/app";
import { hiddenFields } from "./shared";

/**
 * What a player's browser does on /account/apps/sign-in: follow the redirect to the identity
 * provider, sign in there, come back to the callback with the state cookie. Real HTTP all the
 * way; the cookie of the signed-in page is returned.
 */
export async function playerSignIn(server: RunningServer, username: string, outcome = "success") {
  const start = await fetch(`${server.url}/account/apps/sign-in`, { redirect: "manual" });
  expect(start.status).toBe(303);
  const stateCookie = start.headers.get("set-cookie")!.split(";")[0]!;
  const authUrl = start.headers.get("location")!;
  const page = await fetch(authUrl);
  const form = new URLSearchParams({ ...hiddenFields(await page.text()), username, outcome, action: "signin" });
  const submitted = await fetch(authUrl.split("?")[0]!, { method: "POST", body: form, redirect: "manual" });
  expect(submitted.status).toBe(302);
  const callbackUrl = submitted.headers.get("location")!;
  expect(callbackUrl).toStartWith(`${server.url}/account/apps/callback?`);
  const back = await fetch(callbackUrl, { headers: { cookie: stateCookie }, redirect: "manual" });
  const player = back.headers
    .getSetCookie()
    .map((c) => c.split(";")[0]!)
    .find((c) => c.startsWith("mcp_player=") && c !== "mcp_player=");
  return { back, player, callbackUrl, stateCookie };
}
