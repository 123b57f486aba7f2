import { beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import type { RunningServer } from "../src/app";
import { checkRedirectUri } from "../src/clients/redirect-uri";
import { clientApps } from "../src/db/schema";
import { sha256 } from "../src/lib/secrets";
import { devIdp, sharedServer, startTestServer } from "./harness";
import { addMember, api, expectError, newTeam, newUser, trpcClient } from "./helpers";
import { newClient } from "./ms-auth-helpers";

let server: RunningServer;
beforeAll(async () => {
  server = await sharedServer();
});

const appBody = (teamId: string) => ({
  team_id: teamId,
  name: "launcher",
  title: "Blocky",
  description: "Blocky launcher",
});

describe("client applications", () => {
  test("create returns app.client_id and a client_secret once, stored only as SHA-256", async () => {
    const owner = await newUser(server);
    const teamId = await newTeam(server, owner);
    const res = await api(server, "POST", "/client/apps", {
      token: owner.token,
      body: { ...appBody(teamId), logo_url: "https://cdn.example.com/l.png" },
    });
    expect(res.status).toBe(201);
    expect(res.body.app).toMatchObject({
      team_id: teamId,
      name: "launcher",
      title: "Blocky",
      description: "Blocky launcher",
      logo_url: "https://cdn.example.com/l.png",
      modules: [],
    });
    expect(res.body.app.client_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(res.body.client_secret).toMatch(/^mcp_cs_[A-Za-z0-9_-]{43}$/);
    const [row] = await server.services.database.db
      .select()
      .from(clientApps)
      .where(eq(clientApps.id, res.body.app.client_id));
    expect(row!.secretHash).toBe(sha256(res.body.client_secret));
    expect(JSON.stringify(row)).not.toContain(res.body.client_secret);
    const read = await api(server, "GET", `/client/apps/${res.body.app.client_id}`, { token: owner.token });
    const list = await api(server, "GET", `/client/apps?team_id=${teamId}`, { token: owner.token });
    for (const r of [read, list]) {
      expect(r.status).toBe(200);
      expect(r.text).not.toContain(res.body.client_secret);
      expect(r.text).not.toContain("secret_hash");
    }
    expect(list.body.apps.map((a: any) => a.client_id)).toEqual([res.body.app.client_id]);
  });

  test("create needs owner or admin: viewer and non-member get 403", async () => {
    const owner = await newUser(server);
    const viewer = await newUser(server);
    const stranger = await newUser(server);
    const teamId = await newTeam(server, owner);
    await addMember(server, owner, teamId, viewer, "viewer");
    expectError(
      await api(server, "POST", "/client/apps", { token: viewer.token, body: appBody(teamId) }),
      403,
      "forbidden",
    );
    expectError(
      await api(server, "POST", "/client/apps", { token: stranger.token, body: appBody(teamId) }),
      403,
      "forbidden",
    );
  });

  test("missing or invalid fields are a 400 naming them", async () => {
    const owner = await newUser(server);
    const teamId = await newTeam(server, owner);
    const e = expectError(
      await api(server, "POST", "/client/apps", { token: owner.token, body: { team_id: teamId, name: "x" } }),
      400,
      "validation_failed",
    );
    expect(e.details.issues.map((i: any) => i.path).sort()).toEqual(["description", "title"]);
    const logo = expectError(
      await api(server, "POST", "/client/apps", {
        token: owner.token,
        body: { ...appBody(teamId), logo_url: "javascript:alert(1)" },
      }),
      400,
    );
    expect(logo.details.issues[0].path).toBe("logo_url");
  });

  test("update, rotate secret (old one stops working), delete", async () => {
    const c = await newClient(server);
    const patched = await api(server, "PATCH", `/client/apps/${c.clientId}`, {
      token: c.owner.token,
      body: { title: "New title", logo_url: null },
    });
    expect(patched.body).toMatchObject({ title: "New title", logo_url: null, modules: ["ms_auth"] });
    const rotated = await api(server, "POST", `/client/apps/${c.clientId}/secret`, { token: c.owner.token });
    expect(rotated.body.client_secret).not.toBe(c.secret);
    expectError(
      await api(server, "POST", "/client/ms-auth/start", { body: { client_id: c.clientId, client_secret: c.secret } }),
      401,
      "invalid_client",
    );
    expect(
      (
        await api(server, "POST", "/client/ms-auth/start", {
          body: { client_id: c.clientId, client_secret: rotated.body.client_secret },
        })
      ).status,
    ).toBe(200);
    expect((await api(server, "DELETE", `/client/apps/${c.clientId}`, { token: c.owner.token })).body).toEqual({
      ok: true,
    });
    expectError(await api(server, "GET", `/client/apps/${c.clientId}`, { token: c.owner.token }), 404, "not_found");
  });

  test("a client outside your teams answers exactly like one that does not exist", async () => {
    const c = await newClient(server);
    const stranger = await newUser(server);
    const foreign = expectError(
      await api(server, "GET", `/client/apps/${c.clientId}`, { token: stranger.token }),
      404,
      "not_found",
    );
    const missing = expectError(
      await api(server, "GET", `/client/apps/${crypto.randomUUID()}`, { token: stranger.token }),
      404,
      "not_found",
    );
    expect(foreign.message).toBe(missing.message);
  });

  test("ms_auth module: enable returns module_key, read it back, disable", async () => {
    const c = await newClient(server, { redirectUri: "https://launcher.example.com/done" });
    const got = await api(server, "GET", `/client/apps/${c.clientId}/modules/ms-auth`, { token: c.owner.token });
    expect(got.body).toMatchObject({
      module_key: "ms_auth",
      post_login_redirect_uri: "https://launcher.example.com/done",
    });
    const changed = await api(server, "POST", `/client/apps/${c.clientId}/modules/ms-auth`, {
      token: c.owner.token,
      body: { post_login_redirect_uri: "http://127.0.0.1:8765/cb" },
    });
    expect(changed.body).toMatchObject({ module_key: "ms_auth", post_login_redirect_uri: "http://127.0.0.1:8765/cb" });
    expect(
      (await api(server, "DELETE", `/client/apps/${c.clientId}/modules/ms-auth`, { token: c.owner.token })).status,
    ).toBe(200);
    expectError(await api(server, "GET", `/client/apps/${c.clientId}/modules/ms-auth`, { token: c.owner.token }), 404);
    expectError(
      await api(server, "POST", "/client/ms-auth/start", { body: { client_id: c.clientId, client_secret: c.secret } }),
      400,
      "bad_request",
    );
  });

  const valid = [
    "https://launcher.example.com/cb",
    "https://x.io/cb?a=1",
    "http://127.0.0.1:9000/cb",
    "http://[::1]:9000/cb",
    "http://localhost/cb",
    "com.example.launcher:/callback",
    "net.blocky.app://auth",
  ];
  const invalid = [
    "",
    "not a uri",
    "/relative/path",
    "https://launcher.example.com/cb#frag",
    "http://launcher.example.com/cb",
    "http://192.168.1.5/cb",
    "javascript:alert(1)",
    "data:text/html,hi",
    "file:///etc/passwd",
    "myapp:/cb",
    "https://user:pw@example.com/cb",
    "https://exa mple.com/cb",
    `https://${"a".repeat(2100)}.com`,
  ];

  test("post_login_redirect_uri: https, loopback http and reverse-domain schemes only", async () => {
    for (const v of valid) expect(`${v}: ${checkRedirectUri(v).ok}`).toBe(`${v}: true`);
    for (const v of invalid) expect(`${v}: ${checkRedirectUri(v).ok}`).toBe(`${v}: false`);
  });

  test("the module endpoint answers 400 for a missing or invalid post_login_redirect_uri", async () => {
    const c = await newClient(server);
    expectError(
      await api(server, "POST", `/client/apps/${c.clientId}/modules/ms-auth`, { token: c.owner.token, body: {} }),
      400,
      "validation_failed",
    );
    for (const v of invalid.slice(0, 6)) {
      const e = expectError(
        await api(server, "POST", `/client/apps/${c.clientId}/modules/ms-auth`, {
          token: c.owner.token,
          body: { post_login_redirect_uri: v },
        }),
        400,
        "validation_failed",
      );
      expect(e.details.issues[0].path).toBe("post_login_redirect_uri");
    }
    // Nothing was written by the refused calls.
    expect(
      (await api(server, "GET", `/client/apps/${c.clientId}/modules/ms-auth`, { token: c.owner.token })).body
        .post_login_redirect_uri,
    ).toBe(c.redirectUri);
  });

  test("client procedures work through the typed tRPC client", async () => {
    const owner = await newUser(server);
    const teamId = await newTeam(server, owner);
    const trpc = trpcClient(server, owner.token);
    const created = await trpc.clients.create.mutate(appBody(teamId));
    const mod = await trpc.clients.enableMsAuth.mutate({
      client_id: created.app.client_id,
      post_login_redirect_uri: "https://l.example.com/cb",
    });
    expect(mod.module_key).toBe("ms_auth");
    const err = await trpc.clients.enableMsAuth
      .mutate({ client_id: created.app.client_id, post_login_redirect_uri: "javascript:x" })
      .catch((e) => e);
    expect(err.data).toMatchObject({ code: "validation_failed", httpStatus: 400 });
  });
});

describe("client write limits (spec section 8)", () => {
  test("POST /client/apps and the module endpoint each allow 20 per minute per token: the 21st of each is 429", async () => {
    const srv = await startTestServer({ DEV_IDP_URL: (await devIdp()).url, RATE_LIMIT_CLIENT_WRITE_PER_MIN: "20" });
    const owner = await newUser(srv);
    const teamId = await newTeam(srv, owner);
    // One fresh minute for every count below.
    srv.services.clock.advance(60_000 - (srv.services.clock.now() % 60_000) + 50);
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      const res = await api(srv, "POST", "/client/apps", { token: owner.token, body: appBody(teamId) });
      expect(res.status).toBe(201);
      ids.push(res.body.app.client_id);
      const mod = await api(srv, "POST", `/client/apps/${res.body.app.client_id}/modules/ms-auth`, {
        token: owner.token,
        body: { post_login_redirect_uri: "https://l.example.com/cb" },
      });
      expect(mod.status).toBe(200);
    }
    const create = await api(srv, "POST", "/client/apps", { token: owner.token, body: appBody(teamId) });
    expectError(create, 429, "rate_limited");
    expect(create.headers.get("retry-after")).not.toBeNull();
    const module = await api(srv, "POST", `/client/apps/${ids[0]}/modules/ms-auth`, {
      token: owner.token,
      body: { post_login_redirect_uri: "https://other.example.com/cb" },
    });
    expectError(module, 429, "rate_limited");
    // Refused means not written.
    const apps = await srv.services.database.db.select().from(clientApps).where(eq(clientApps.teamId, teamId));
    expect(apps.length).toBe(20);
    expect(
      (await api(srv, "GET", `/client/apps/${ids[0]}/modules/ms-auth`, { token: owner.token })).body
        .post_login_redirect_uri,
    ).toBe("https://l.example.com/cb");
  });
});
