import { afterAll, expect, test } from "bun:test";
import type { RunningServer } from "../src/app";
import { devIdpGrants } from "../src/db/schema";
import { startTestServer, stopTestServer, usingPostgres } from "./harness";
import { codeGrant, expectCodeRedeemed, hiddenFields, newClient, start } from "./ms-auth-helpers";

/**
 * The service serving the development provider itself (no DEV_IDP_URL), as the quickstart runs
 * it. A redeemed code's mark is a row on PostgreSQL, which instances share; on the embedded
 * database, which one process owns, it stays in that process's memory. Either way the code is
 * redeemed once.
 */
let server: RunningServer | undefined;
afterAll(async () => {
  if (server) await stopTestServer(server);
});

test("a code the built-in provider issued is redeemed once; its mark is kept where the instances can share it", async () => {
  server = await startTestServer({ DEV_IDP_URL: undefined });
  const client = await newClient(server);
  const started = await start(server, client);
  expect(started.auth_url.startsWith(`${server.url}/dev-idp/`)).toBe(true);
  const page = await fetch(started.auth_url);
  const form = new URLSearchParams({
    ...hiddenFields(await page.text()),
    username: "Embedded",
    outcome: "success",
    action: "signin",
  });
  const submitted = await fetch(started.auth_url.split("?")[0]!, { method: "POST", body: form, redirect: "manual" });
  expect(submitted.status).toBe(302);
  const callbackUrl = submitted.headers.get("location")!;
  const callback = await fetch(callbackUrl, { redirect: "manual" });
  expect(callback.status).toBe(200);
  expect(await callback.text()).toContain("Embedded");

  const code = new URL(callbackUrl).searchParams.get("code")!;
  await expectCodeRedeemed(`${server.url}/dev-idp/consumers/oauth2/v2.0/token`, code);

  // The code carries its sign-in's grant id, which its mark is keyed by.
  const marks = await server.services.database.db.select().from(devIdpGrants);
  expect(marks.filter((m) => m.key === `code:${codeGrant(code)}`)).toHaveLength(usingPostgres() ? 1 : 0);
});
