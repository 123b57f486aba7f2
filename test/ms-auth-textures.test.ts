import { beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { createLocalJWKSet, decodeJwt, jwtVerify } from "jose";
import type { RunningServer } from "../src/app";
import { sessions } from "../src/db/schema";
import { activeTextures } from "../src/identity/chain";
import { offlineUuid } from "../src/identity/protocol";
import { sha256 } from "../src/lib/secrets";
import { sharedServer } from "./harness";
import { api } from "./helpers";
import { decide, newClient, poll, signIn, start, type TestClient } from "./ms-auth-helpers";

let server: RunningServer;
let client: TestClient;
beforeAll(async () => {
  server = await sharedServer();
  client = await newClient(server);
});

async function login(c: TestClient, username: string, outcome = "success") {
  const started = await start(server, c);
  const s = await signIn(server, started.auth_url, { username, outcome });
  expect(s.callback.status).toBe(200);
  expect((await decide(server, s, "approve")).status).toBe(303);
  const polled = await poll(server, c, started.auth_request_id);
  expect(polled.body.status).toBe("authorized");
  return polled.body.svc_session_token as string;
}

const validate = (c: TestClient, token: string, extra: Record<string, unknown> = {}) =>
  api(server, "POST", "/client/ms-auth/session/validate", {
    body: { client_id: c.clientId, client_secret: c.secret, svc_session_token: token, ...extra },
  });

const TEXTURE = /^http:\/\/textures\.minecraft\.net\/texture\/[0-9a-f]{64}$/;

describe("skins and capes (opt-in)", () => {
  test("without the flag validate answers byte for byte what it always did", async () => {
    const token = await login(client, "Plain_1");
    for (const extra of [{}, { textures: false }, { assertion: false }]) {
      const res = await validate(client, token, extra);
      const { expires_at } = res.body;
      expect(res.text).toBe(
        `{"valid":true,"mc_uuid":"${offlineUuid("Plain_1")}","mc_username":"Plain_1","expires_at":"${expires_at}"}`,
      );
    }
    // And the assertion without the flag carries exactly the claims it always did.
    const withAssertion = await validate(client, token, { assertion: true });
    expect(Object.keys(withAssertion.body).sort()).toEqual([
      "assertion",
      "expires_at",
      "mc_username",
      "mc_uuid",
      "valid",
    ]);
    expect(Object.keys(decodeJwt(withAssertion.body.assertion)).sort()).toEqual([
      "aud",
      "exp",
      "iat",
      "iss",
      "jti",
      "name",
      "sub",
    ]);
    // An invalid token is still just {valid: false}, flag or not.
    expect((await validate(client, "mcp_sess_nope", { textures: true })).text).toBe('{"valid":false}');
  });

  test("with textures: true, the active skin (URL, variant) and no cape for a default profile", async () => {
    const token = await login(client, "Skinny_1");
    const res = await validate(client, token, { textures: true });
    expect(res.body).toEqual({
      valid: true,
      mc_uuid: offlineUuid("Skinny_1"),
      mc_username: "Skinny_1",
      expires_at: expect.any(String),
      skin: { url: expect.stringMatching(TEXTURE), variant: "CLASSIC" },
      cape: null,
    });
  });

  test("a slim skin and a cape are stored with the session and go into the assertion when asked", async () => {
    const token = await login(client, "Caped_1", "success_slim_cape");
    const res = await validate(client, token, { textures: true, assertion: true });
    expect(res.body.skin).toEqual({ url: expect.stringMatching(TEXTURE), variant: "SLIM" });
    expect(res.body.cape).toEqual({ url: expect.stringMatching(TEXTURE), alias: "Migrator" });
    const [row] = await server.services.database.db
      .select()
      .from(sessions)
      .where(eq(sessions.tokenHash, sha256(token)));
    expect(row!.textures).toEqual({ skin: res.body.skin, cape: res.body.cape });

    const jwks = createLocalJWKSet((await api(server, "GET", "/.well-known/jwks.json")).body);
    const { payload } = await jwtVerify(res.body.assertion, jwks, { audience: client.clientId });
    expect(payload).toMatchObject({ sub: offlineUuid("Caped_1"), skin: res.body.skin, cape: res.body.cape });
    // The plain assertion of the same session stays without them (cached apart).
    const plain = await validate(client, token, { assertion: true });
    expect(decodeJwt(plain.body.assertion).skin).toBeUndefined();
  });

  test("a session from before textures were kept answers null skin and cape", async () => {
    const token = await login(client, "Oldtimer");
    await server.services.database.db
      .update(sessions)
      .set({ textures: null })
      .where(eq(sessions.tokenHash, sha256(token)));
    // Not validated before, so no instance has the session cached: validate reads the row.
    const res = await validate(client, token, { textures: true });
    expect(res.body).toMatchObject({ valid: true, skin: null, cape: null });
  });

  test("the last_used_at of a session is written by validate", async () => {
    const token = await login(client, "Used_1");
    const [before] = await server.services.database.db
      .select()
      .from(sessions)
      .where(eq(sessions.tokenHash, sha256(token)));
    expect(before!.lastUsedAt).toBeNull();
    await validate(client, token);
    let row = before;
    for (let i = 0; i < 100 && !row!.lastUsedAt; i++) {
      await Bun.sleep(20);
      [row] = await server.services.database.db
        .select()
        .from(sessions)
        .where(eq(sessions.tokenHash, sha256(token)));
    }
    expect(row!.lastUsedAt).toBeInstanceOf(Date);
  });
});

describe("reading the profile's textures", () => {
  const url = (h: string) => `http://textures.minecraft.net/texture/${h}`;
  test("the ACTIVE skin and cape are taken; inactive ones, other hosts and junk are ignored", () => {
    expect(
      activeTextures(
        [
          { id: "a", state: "INACTIVE", url: url("aa"), variant: "SLIM" },
          { id: "b", state: "ACTIVE", url: url("bb"), variant: "CLASSIC", textureKey: "bb", alias: "STEVE" },
        ],
        [{ id: "c", state: "ACTIVE", url: url("cc"), alias: "Pan" }],
      ),
    ).toEqual({ skin: { url: url("bb"), variant: "CLASSIC" }, cape: { url: url("cc"), alias: "Pan" } });
    expect(activeTextures(undefined, null)).toEqual({ skin: null, cape: null });
    expect(activeTextures("skins", {})).toEqual({ skin: null, cape: null });
    expect(
      activeTextures(
        [{ state: "ACTIVE", url: "https://evil.example/texture/aa", variant: "CLASSIC" }],
        [{ state: "ACTIVE", url: `${url("dd")}"><script>`, alias: "x" }],
      ),
    ).toEqual({ skin: null, cape: null });
    expect(activeTextures([{ state: "ACTIVE", url: url("ee"), variant: "WIDE" }], [])).toEqual({
      skin: null,
      cape: null,
    });
  });
});
