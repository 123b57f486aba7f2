import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import type { RunningServer } from "../src/app";
import { sessions } from "../src/db/schema";
import { offlineUuid } from "../src/identity/protocol";
import { sha256 } from "../src/lib/secrets";
import { devIdp, startTestServer, stopTestServer } from "./harness";
import { api } from "./helpers";
import { fullLogin, newClient, type TestClient } from "./ms-auth-helpers";
import { playerSignIn } from "./player-apps-helpers";
import { hiddenFields } from "./shared";
import { FAST_WEBHOOKS, receiversForFile } from "./webhook-receiver";

let server: RunningServer;
const receiver = receiversForFile();
beforeAll(async () => {
  server = await startTestServer({ ...FAST_WEBHOOKS, DEV_IDP_URL: (await devIdp()).url });
});
afterAll(async () => {
  await stopTestServer(server);
});

const validate = (c: TestClient, token: string) =>
  api(server, "POST", "/client/ms-auth/session/validate", {
    body: { client_id: c.clientId, client_secret: c.secret, svc_session_token: token },
  });
const page = (cookie?: string, query = "") =>
  fetch(`${server.url}/account/apps${query}`, { headers: cookie ? { cookie } : {} });
const post = (path: string, cookie: string | undefined, fields: Record<string, string>) =>
  fetch(`${server.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...(cookie && { cookie }) },
    body: new URLSearchParams(fields),
    redirect: "manual",
  });

describe("the player's apps page", () => {
  test("signed out, it explains itself and offers Microsoft sign-in, with the page headers", async () => {
    const res = await page();
    expect(res.status).toBe(200);
    const html = await res.text();
    expect(html).toContain('href="/account/apps/sign-in"');
    expect(html).toContain("Sign in with Microsoft");
    expect(res.headers.get("content-security-policy")).toContain("default-src 'none'");
    expect(res.headers.get("x-frame-options")).toBe("DENY");
  });

  test("lists each app holding a session (title, redirect host, since, last used); revoking ends them and tells the client", async () => {
    const launcher = await newClient(server, { redirectUri: "https://launcher.example.com/done" });
    const other = await newClient(server);
    const r = receiver();
    const hook = await api(server, "POST", `/teams/${launcher.teamId}/webhooks`, {
      token: launcher.owner.token,
      body: { url: r.url, event_types: ["session.revoked"] },
    });
    expect(hook.status).toBe(201);
    const a = await fullLogin(server, launcher, "Lister_1");
    const b = await fullLogin(server, other, "Lister_1");
    const bystander = await fullLogin(server, launcher, "Someone_2");
    expect((await validate(launcher, a.token)).body.valid).toBe(true);

    const { back, player } = await playerSignIn(server, "Lister_1");
    expect(back.status).toBe(303);
    expect(back.headers.get("location")).toBe("/account/apps");
    expect(player).toBeDefined();
    const listed = await (await page(player)).text();
    expect(listed).toContain("Lister_1");
    expect(listed.match(/<li>/g)?.length).toBe(2);
    expect(listed).toContain("launcher.example.com");
    // A launcher's own scheme is named as the consent page names it, without the colon.
    expect(listed).toContain("<dd>com.example.launcher</dd>");
    expect(listed).toMatch(/<dt>Last used<\/dt><dd>\d{4}-\d\d-\d\d \d\d:\d\d UTC<\/dd>/);
    expect(listed).not.toContain("Someone_2");

    const fields = hiddenFields(listed);
    const revoked = await post("/account/apps/revoke", player, {
      csrf_token: fields.csrf_token!,
      client_id: launcher.clientId,
    });
    expect(revoked.status).toBe(303);
    expect(revoked.headers.get("location")).toBe("/account/apps?revoked=1");
    expect((await validate(launcher, a.token)).body).toEqual({ valid: false });
    // Only this player's sessions at this app: the other app and the other player are untouched.
    expect((await validate(other, b.token)).body.valid).toBe(true);
    expect((await validate(launcher, bystander.token)).body.valid).toBe(true);
    const [row] = await server.services.database.db
      .select()
      .from(sessions)
      .where(eq(sessions.tokenHash, sha256(a.token)));
    expect(row!.revokedAt).toBeInstanceOf(Date);

    await r.until(1);
    const event = JSON.parse(r.got[0]!.body);
    expect(event).toMatchObject({
      type: "session.revoked",
      data: {
        client_id: launcher.clientId,
        mc_uuid: offlineUuid("Lister_1"),
        mc_username: "Lister_1",
        sessions: 1,
        by: "player",
      },
    });
    const after = await (await page(player, "?revoked=1")).text();
    expect(after.match(/<li>/g)?.length).toBe(1);
    expect(after).toContain("Access revoked");
    // Revoking again finds nothing and says so.
    const again = await post("/account/apps/revoke", player, {
      csrf_token: fields.csrf_token!,
      client_id: launcher.clientId,
    });
    expect(again.headers.get("location")).toBe("/account/apps?revoked=0");
  });

  test("sign-out ends the page's sign-in", async () => {
    const { player } = await playerSignIn(server, "Leaver_1");
    const html = await (await page(player)).text();
    const out = await post("/account/apps/sign-out", player, { csrf_token: hiddenFields(html).csrf_token! });
    expect(out.status).toBe(303);
    expect(out.headers.getSetCookie().some((c) => c.startsWith("mcp_player=;"))).toBe(true);
  });
});

describe("the player's apps page refuses", () => {
  test("a callback without this browser's state cookie, or with a forged state", async () => {
    const { callbackUrl } = await (async () => {
      const start = await fetch(`${server.url}/account/apps/sign-in`, { redirect: "manual" });
      const authUrl = start.headers.get("location")!;
      const form = new URLSearchParams({
        ...hiddenFields(await (await fetch(authUrl)).text()),
        username: "Victim_1",
        outcome: "success",
        action: "signin",
      });
      const submitted = await fetch(authUrl.split("?")[0]!, { method: "POST", body: form, redirect: "manual" });
      return { callbackUrl: submitted.headers.get("location")! };
    })();
    const noCookie = await fetch(callbackUrl, { redirect: "manual" });
    expect(noCookie.status).toBe(400);
    expect(noCookie.headers.getSetCookie().some((c) => c.startsWith("mcp_player="))).toBe(false);
    expect(await noCookie.text()).toContain("not valid in this browser");
    const forged = await fetch(`${server.url}/account/apps/callback?code=x&state=abc.def`, {
      headers: { cookie: "mcp_apps_state=abc" },
      redirect: "manual",
    });
    expect(forged.status).toBe(400);
  });

  test("a tampered or expired page cookie reads as signed out", async () => {
    const { player } = await playerSignIn(server, "Tamper_1");
    const [body, mac] = player!.slice("mcp_player=".length).split(".");
    const claims = JSON.parse(Buffer.from(body!, "base64url").toString());
    const evil = Buffer.from(JSON.stringify({ ...claims, uuid: offlineUuid("Notch") })).toString("base64url");
    expect(await (await page(`mcp_player=${evil}.${mac}`)).text()).toContain("Sign in with Microsoft");
    const old = Buffer.from(JSON.stringify({ ...claims, exp: 1 })).toString("base64url");
    expect(await (await page(`mcp_player=${old}.${mac}`)).text()).toContain("Sign in with Microsoft");
    expect(await (await page("mcp_player=junk")).text()).toContain("Sign in with Microsoft");
  });

  test("a revoke without the page's CSRF token, without sign-in, or of the wrong shape", async () => {
    const c = await newClient(server);
    const s = await fullLogin(server, c, "Csrf_1");
    const { player } = await playerSignIn(server, "Csrf_1");
    const noToken = await post("/account/apps/revoke", player, { client_id: c.clientId });
    expect(noToken.status).toBe(403);
    const otherToken = await post("/account/apps/revoke", player, {
      client_id: c.clientId,
      csrf_token: "A".repeat(43),
    });
    expect(otherToken.status).toBe(403);
    const signedOut = await post("/account/apps/revoke", undefined, { client_id: c.clientId, csrf_token: "x" });
    expect(signedOut.status).toBe(303);
    expect(signedOut.headers.get("location")).toBe("/account/apps?signed_out=1");
    const html = await (await page(player)).text();
    const csrf = hiddenFields(html).csrf_token!;
    expect((await post("/account/apps/revoke", player, { client_id: "nope", csrf_token: csrf })).status).toBe(400);
    const json = await fetch(`${server.url}/account/apps/revoke`, {
      method: "POST",
      headers: { "content-type": "application/json", cookie: player! },
      body: JSON.stringify({ client_id: c.clientId, csrf_token: csrf }),
    });
    expect(json.status).toBe(415);
    // None of these revoked anything.
    expect((await validate(c, s.token)).body.valid).toBe(true);
    // Another player's page cannot revoke this player's session: it revokes only its own (none here).
    const { player: intruder } = await playerSignIn(server, "Intruder_1");
    const intruderCsrf = hiddenFields(await (await page(intruder)).text()).csrf_token!;
    const tried = await post("/account/apps/revoke", intruder, { client_id: c.clientId, csrf_token: intruderCsrf });
    expect(tried.headers.get("location")).toBe("/account/apps?revoked=0");
    expect((await validate(c, s.token)).body.valid).toBe(true);
  });

  test("a failed Microsoft sign-in shows why and signs nobody in", async () => {
    const { back, player } = await playerSignIn(server, "Nope_1", "no_minecraft_profile");
    expect(back.status).toBe(200);
    expect(await back.text()).toContain("Sign-in failed (no_minecraft_profile)");
    expect(player).toBeUndefined();
  });
});
