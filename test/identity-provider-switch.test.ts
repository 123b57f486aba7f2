import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { eq, inArray, sql } from "drizzle-orm";
import type { RunningServer } from "../src/app";
import { loginRequests, sessions } from "../src/db/schema";
import { DEV_IDP_PATHS } from "../src/identity/protocol";
import { devIdp, freePort, startTestServer, tempDir } from "./harness";
import { api } from "./helpers";
import { decide, fullLogin, newClient, signIn, start, type TestClient } from "./ms-auth-helpers";

const validate = (srv: RunningServer, c: TestClient, token: string) =>
  api(srv, "POST", "/client/ms-auth/session/validate", {
    body: { client_id: c.clientId, client_secret: c.secret, svc_session_token: token, assertion: true },
  });

const poll = (srv: RunningServer, c: TestClient, id: string) =>
  api(srv, "POST", "/client/ms-auth/poll", {
    body: { client_id: c.clientId, client_secret: c.secret, auth_request_id: id, assertion: true },
  });

/**
 * An operator moves from the development provider to a Microsoft app: the service restarts on
 * the same database with DEV_IDP_ENABLED=false and MS_* set. "Microsoft" here is the development
 * provider run as its own HTTP server and reached only through the MS_*, XBL, XSTS and MC URLs,
 * exactly as the real endpoints would be: the service itself has no development provider then.
 */
test("sessions signed in through the development provider end when it is switched off; Microsoft ones do not", async () => {
  const idp = (await devIdp()).url;
  const dir = tempDir();
  const port = String(freePort());
  const first = await startTestServer({ DEV_IDP_URL: idp, DATA_DIR: dir, PORT: port });
  const client = await newClient(first);
  const dev = await fullLogin(first, client, "DevPlayer");
  expect((await validate(first, client, dev.token)).body).toMatchObject({ valid: true, mc_username: "DevPlayer" });
  // Signed in through the development provider, consent still to give when the switch happens.
  const startedBefore = await start(first, client);
  const pendingConsent = await signIn(first, startedBefore.auth_url, { username: "Halfway" });
  expect(pendingConsent.callback.status).toBe(200);
  await first.stop();

  const second = await startTestServer({
    DATA_DIR: dir,
    PORT: port,
    DEV_IDP_URL: undefined,
    DEV_IDP_ENABLED: "false",
    MS_CLIENT_ID: "00000000-0000-0000-0000-00000000c0de",
    MS_CLIENT_SECRET: "a-microsoft-app-secret",
    MS_AUTHORIZE_URL: idp + DEV_IDP_PATHS.authorize,
    MS_TOKEN_URL: idp + DEV_IDP_PATHS.token,
    XBL_AUTH_URL: idp + DEV_IDP_PATHS.xblAuth,
    XSTS_AUTH_URL: idp + DEV_IDP_PATHS.xstsAuth,
    MC_LOGIN_URL: idp + DEV_IDP_PATHS.mcLogin,
    MC_PROFILE_URL: idp + DEV_IDP_PATHS.mcProfile,
  });
  // The service no longer serves a development provider of its own.
  expect((await fetch(`${second.url}/dev-idp${DEV_IDP_PATHS.authorize}`)).status).toBe(404);

  const stale = await validate(second, client, dev.token);
  expect(stale.status).toBe(200);
  expect(stale.body).toEqual({ valid: false });
  const stalePoll = await poll(second, client, dev.id);
  expect(stalePoll.body.status).toBe("authorized");
  expect("assertion" in stalePoll.body).toBe(false);

  // Approved after the switch, but authenticated by the development provider before it.
  const approved = await decide(second, pendingConsent, "approve");
  expect(approved.status).toBe(303);
  const halfway = await poll(second, client, startedBefore.auth_request_id);
  expect(halfway.body.status).toBe("authorized");
  expect("assertion" in halfway.body).toBe(false);
  expect((await validate(second, client, halfway.body.svc_session_token)).body).toEqual({ valid: false });

  const real = await fullLogin(second, client, "RealPlayer");
  const ok = await validate(second, client, real.token);
  expect(ok.body).toMatchObject({ valid: true, mc_username: "RealPlayer" });
  expect(typeof ok.body.assertion).toBe("string");
  // Asked twice: the answer comes from the live-session cache the second time, and still holds.
  expect((await validate(second, client, real.token)).body.valid).toBe(true);
  expect((await validate(second, client, dev.token)).body).toEqual({ valid: false });

  const db = second.services.database.db;
  const providerOf = async (requestId: string) => {
    const [s] = await db.select().from(sessions).where(eq(sessions.loginRequestId, requestId));
    const [r] = await db.select().from(loginRequests).where(eq(loginRequests.id, requestId));
    return [r!.identityProvider, s!.identityProvider];
  };
  expect(await providerOf(dev.id)).toEqual(["development", "development"]);
  expect(await providerOf(startedBefore.auth_request_id)).toEqual(["development", "development"]);
  expect(await providerOf(real.id)).toEqual(["microsoft", "microsoft"]);
});

test("migration 0011 classifies sessions from before the provider was recorded by their UUID version", async () => {
  const server = await startTestServer({ DEV_IDP_URL: (await devIdp()).url });
  const client = await newClient(server);
  const dev = await fullLogin(server, client, "OldDev");
  const ms = await fullLogin(server, client, "OldMs");
  const db = server.services.database.db;
  const v4 = "7d2c1a4e-9b3f-4c8a-8e21-5f6a7b8c9d0e";
  // As the rows stood before the migration: the column's default, the request's column empty.
  await db.update(sessions).set({ identityProvider: "microsoft" }).where(eq(sessions.loginRequestId, dev.id));
  await db
    .update(sessions)
    .set({ identityProvider: "microsoft", mcUuid: v4 })
    .where(eq(sessions.loginRequestId, ms.id));
  const [msRequest] = await db.select().from(loginRequests).where(eq(loginRequests.id, ms.id));
  await db
    .update(loginRequests)
    .set({ context: { ...msRequest!.context, mcUuid: v4 } })
    .where(eq(loginRequests.id, ms.id));
  await db
    .update(loginRequests)
    .set({ identityProvider: null })
    .where(inArray(loginRequests.id, [dev.id, ms.id]));

  const migration = readFileSync(join(import.meta.dir, "../drizzle/0012_identity_provider.sql"), "utf8");
  const updates = migration
    .split("--> statement-breakpoint")
    .map((s) => s.trim())
    .filter((s) => /^(--[^\n]*\n)*UPDATE/.test(s));
  expect(updates).toHaveLength(2);
  for (const statement of updates) await db.execute(sql.raw(statement));

  const providers = async (id: string) => {
    const [s] = await db.select().from(sessions).where(eq(sessions.loginRequestId, id));
    const [r] = await db.select().from(loginRequests).where(eq(loginRequests.id, id));
    return [r!.identityProvider, s!.identityProvider];
  };
  expect(await providers(dev.id)).toEqual(["development", "development"]);
  expect(await providers(ms.id)).toEqual(["microsoft", "microsoft"]);
});
