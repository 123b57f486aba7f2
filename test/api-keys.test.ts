import { beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import type { RunningServer } from "../src/app";
import { apiKeys } from "../src/db/schema";
import { CLOSE } from "../src/realtime/socket";
import { sharedServer } from "./harness";
import { api, expectError, newApiKey, newTeam, trpcClient } from "./helpers";
import { newServer, type ServerFixture } from "./servers-fixture";
import { closeCode, WsClient } from "./ws-helpers";

let server: RunningServer;
let fx: ServerFixture;
/** A second server of the same team. */
let otherServerId: string;

beforeAll(async () => {
  server = await sharedServer();
  fx = await newServer(server);
  const res = await api(server, "POST", "/server/servers", {
    token: fx.owner.token,
    body: { team_id: fx.teamId, name: "Creative", host: "127.0.0.1", port: 9, kind: "single" },
  });
  otherServerId = res.body.server_id;
});

const keys = (body: Record<string, unknown>) =>
  api(server, "POST", `/teams/${fx.teamId}/api-keys`, { token: fx.owner.token, body: { name: "k", ...body } });
const keyRow = async (id: string) =>
  (await server.services.database.db.select().from(apiKeys).where(eq(apiKeys.id, id)))[0]!;

describe("scoped, expiring API keys limited to servers", () => {
  test("a key has a role or scopes, never both nor neither; limited keys hold only server scopes", async () => {
    for (const body of [
      { role: "viewer", scopes: ["servers:read"] },
      {},
      { scopes: [] },
      { scopes: ["servers:read", "servers:read"] },
      { scopes: ["login:validate"] },
      { scopes: ["clients:read"], server_ids: [fx.serverId] },
    ])
      expectError(await keys(body), 400, "validation_failed");
    // Servers of another team, or none at all, are refused by name.
    const other = await newServer(server);
    const res = await keys({ scopes: ["servers:read"], server_ids: [other.serverId] });
    expectError(res, 400, "bad_request");
    expect(res.body.error.details.unknown).toEqual([other.serverId]);
    expectError(await keys({ role: "viewer", expires_at: new Date(Date.now() - 1000).toISOString() }), 400);
    // Nothing was created by any of them.
    const list = await api(server, "GET", `/teams/${fx.teamId}/api-keys`, { token: fx.owner.token });
    expect(list.body.api_keys).toEqual([]);
  });

  test("the created key shows its scopes, servers and expiry, and the list shows them too", async () => {
    const expires = new Date(Date.now() + 86_400_000).toISOString();
    const res = await keys({
      scopes: ["servers:read", "moderation:write"],
      server_ids: [fx.serverId],
      expires_at: expires,
    });
    expect(res.status).toBe(201);
    expect(res.body.api_key).toMatchObject({
      role: null,
      scopes: ["servers:read", "moderation:write"],
      server_ids: [fx.serverId],
      expires_at: expires,
      last_used_at: null,
    });
    const list = await api(server, "GET", `/teams/${fx.teamId}/api-keys`, { token: fx.owner.token });
    expect(list.body.api_keys.find((k: { key_id: string }) => k.key_id === res.body.api_key.key_id)).toEqual(
      res.body.api_key,
    );
  });

  test("a key limited to one server lists and reaches that server only, and calls no team routes", async () => {
    const { key } = await newApiKey(server, fx.owner, fx.teamId, {
      scopes: ["servers:read", "servers:write", "moderation:write"],
      server_ids: [fx.serverId],
    });
    const list = await api(server, "GET", "/server/servers", { token: key, headers: { "x-team-id": fx.teamId } });
    expect(list.status).toBe(200);
    expect(list.body.servers.map((s: { server_id: string }) => s.server_id)).toEqual([fx.serverId]);
    expect((await api(server, "GET", `/server/servers/${fx.serverId}`, { token: key })).status).toBe(200);
    // The other server of its own team answers as if it did not exist.
    expectError(await api(server, "GET", `/server/servers/${otherServerId}`, { token: key }), 404, "not_found");
    expectError(
      await api(server, "POST", "/server/bans", {
        token: key,
        headers: { "x-server-id": otherServerId },
        body: { uuid: crypto.randomUUID(), name: "Griefer" },
      }),
      404,
      "not_found",
    );
    const ban = await api(server, "POST", "/server/bans", {
      token: key,
      headers: { "x-server-id": fx.serverId },
      body: { uuid: crypto.randomUUID(), name: "Griefer" },
    });
    expect(ban.status).toBe(201);
    // It cannot register a server (which would be outside its list) nor reach team routes.
    expectError(
      await api(server, "POST", "/server/servers", {
        token: key,
        body: { team_id: fx.teamId, name: "New", host: "127.0.0.1", port: 9, kind: "single" },
      }),
      403,
      "forbidden",
    );
    expectError(await api(server, "GET", `/teams/${fx.teamId}`, { token: key }), 403, "forbidden");
    // A role key limited to servers is held to the same rule.
    const { key: roleKey } = await newApiKey(server, fx.owner, fx.teamId, "admin");
    const limited = await keys({ role: "admin", server_ids: [otherServerId] });
    expect(limited.status).toBe(201);
    expectError(await api(server, "GET", `/client/apps?team_id=${fx.teamId}`, { token: limited.body.key }), 403);
    expectError(await api(server, "GET", `/server/servers/${fx.serverId}`, { token: limited.body.key }), 404);
    expect((await api(server, "GET", `/client/apps?team_id=${fx.teamId}`, { token: roleKey })).status).toBe(200);
  });

  test("an expired key answers 401 api_key_expired on both doors and closes the analytics socket", async () => {
    const { key, id } = await newApiKey(server, fx.owner, fx.teamId, {
      scopes: ["servers:read"],
      expires_at: new Date(Date.now() + 3_600_000).toISOString(),
    });
    expect((await api(server, "GET", `/server/servers/${fx.serverId}`, { token: key })).status).toBe(200);
    await server.services.database.db
      .update(apiKeys)
      .set({ expiresAt: new Date(Date.now() - 1000) })
      .where(eq(apiKeys.id, id));
    const rest = await api(server, "GET", `/server/servers/${fx.serverId}`, { token: key });
    expectError(rest, 401, "api_key_expired");
    expect(rest.body.error.details.expires_at).toEqual(expect.any(String));
    const typed = await trpcClient(server, key)
      .servers.get.query({ server_id: fx.serverId })
      .catch((e) => e);
    expect(typed.data).toMatchObject({ code: "api_key_expired", httpStatus: 401 });
    const ws = await WsClient.connect(server, fx.serverId, { authorization: `Bearer ${key}` });
    expect(await closeCode(ws)).toBe(CLOSE.unauthenticated);
  });

  test("the analytics socket takes a scoped key with servers:read, within its servers only", async () => {
    const { key: reader } = await newApiKey(server, fx.owner, fx.teamId, {
      scopes: ["servers:read"],
      server_ids: [fx.serverId],
    });
    const ok = await WsClient.connect(server, fx.serverId, { authorization: `Bearer ${reader}` });
    expect((await ok.until("snapshot")).map((m) => m.type)).toEqual(["auth_ok", "snapshot"]);
    ok.close();
    const elsewhere = await WsClient.connect(server, otherServerId, { authorization: `Bearer ${reader}` });
    expect(await closeCode(elsewhere)).toBe(CLOSE.unknownServer);
    const { key: writerOnly } = await newApiKey(server, fx.owner, fx.teamId, { scopes: ["moderation:write"] });
    const refused = await WsClient.connect(server, fx.serverId, { authorization: `Bearer ${writerOnly}` });
    expect(await closeCode(refused)).toBe(CLOSE.forbidden);
  });

  test("last use is recorded at most once a minute: the lookup writes only when the mark is a minute old", async () => {
    const { key, id } = await newApiKey(server, fx.owner, fx.teamId, "viewer");
    expect((await keyRow(id)).lastUsedAt).toBeNull();
    await api(server, "GET", `/teams/${fx.teamId}`, { token: key });
    const first = (await keyRow(id)).lastUsedAt;
    expect(first).toBeInstanceOf(Date);
    await api(server, "GET", `/teams/${fx.teamId}`, { token: key });
    expect((await keyRow(id)).lastUsedAt).toEqual(first);
    // Once the mark is older than a minute, the next use moves it.
    const old = new Date(Date.now() - 120_000);
    await server.services.database.db.update(apiKeys).set({ lastUsedAt: old }).where(eq(apiKeys.id, id));
    await api(server, "GET", `/teams/${fx.teamId}`, { token: key });
    expect((await keyRow(id)).lastUsedAt!.getTime()).toBeGreaterThan(old.getTime());
    const list = await api(server, "GET", `/teams/${fx.teamId}/api-keys`, { token: fx.owner.token });
    expect(list.body.api_keys.find((k: { key_id: string }) => k.key_id === id).last_used_at).toEqual(
      expect.any(String),
    );
  });

  test("a moderator key bans and lifts bans but cannot touch ranks or servers", async () => {
    const { key } = await newApiKey(server, fx.owner, fx.teamId, "moderator");
    const as = { token: key, headers: { "x-server-id": fx.serverId } };
    const uuid = crypto.randomUUID();
    expect((await api(server, "POST", "/server/bans", { ...as, body: { uuid, name: "Griefer" } })).status).toBe(201);
    expect((await api(server, "DELETE", `/server/bans/${uuid}`, as)).status).toBe(200);
    expectError(await api(server, "POST", "/server/ranks", { ...as, body: { name: "vip" } }), 403, "forbidden");
    expectError(await api(server, "DELETE", `/server/servers/${fx.serverId}`, { token: key }), 403, "forbidden");
  });

  test("a key of another team reaches none of this team's servers: 404, as if they did not exist", async () => {
    const otherTeam = await newTeam(server, fx.owner);
    const { key } = await newApiKey(server, fx.owner, otherTeam, { scopes: ["servers:read", "moderation:write"] });
    expectError(await api(server, "GET", `/server/servers/${fx.serverId}`, { token: key }), 404, "not_found");
    expectError(
      await api(server, "POST", "/server/bans", {
        token: key,
        headers: { "x-server-id": fx.serverId },
        body: { uuid: crypto.randomUUID(), name: "Griefer" },
      }),
      404,
      "not_found",
    );
  });
});
