import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { and, eq } from "drizzle-orm";
import type { RunningServer } from "../src/app";
import { announcements, apiKeys, idempotencyKeys, teams } from "../src/db/schema";
import { IDEMPOTENCY_STALE_MS, IDEMPOTENCY_TTL_MS } from "../src/idempotency/store";
import { sha256 } from "../src/lib/secrets";
import { sharedServer, startTestServer, stopTestServer, usingPostgres } from "./harness";
import { api, expectError, newTeam, newUser, type TestUser } from "./helpers";
import { newServer } from "./servers-fixture";

let server: RunningServer;
beforeAll(async () => {
  server = await sharedServer();
});

const db = () => server.services.database.db;
const newKey = () => `ik-${crypto.randomUUID()}`;

/** A person's API key creation (the secret is in the answer), with an Idempotency-Key. */
const createKey = (s: RunningServer, owner: TestUser, teamId: string, key: string | null, body: unknown) =>
  api(s, "POST", `/teams/${teamId}/api-keys`, {
    token: owner.token,
    body,
    headers: key === null ? {} : { "idempotency-key": key },
  });

async function keysNamed(teamId: string, name: string) {
  return db()
    .select()
    .from(apiKeys)
    .where(and(eq(apiKeys.teamId, teamId), eq(apiKeys.name, name)));
}

describe("Idempotency-Key", () => {
  test("a double submit with one key and body creates one API key and answers the first answer, secret included", async () => {
    const owner = await newUser(server);
    const teamId = await newTeam(server, owner);
    const key = newKey();
    const body = { name: "deploy", role: "admin" };
    const first = await createKey(server, owner, teamId, key, body);
    const second = await createKey(server, owner, teamId, key, { role: "admin", name: "deploy" });
    expect(`${first.status} ${first.text}`).toStartWith("201");
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    expect(second.status).toBe(201);
    expect(second.headers.get("idempotent-replayed")).toBe("true");
    expect(second.body).toEqual(first.body);
    expect(second.body.key).toStartWith("mcp_key_");
    expect(await keysNamed(teamId, "deploy")).toHaveLength(1);

    // The record holds the answer sealed: neither the secret nor the key is stored as sent.
    const [row] = await db()
      .select()
      .from(idempotencyKeys)
      .where(and(eq(idempotencyKeys.scope, `user:${owner.id}`), eq(idempotencyKeys.keyHash, sha256(key))));
    expect(row).toMatchObject({ operation: "teams.createApiKey", status: "completed" });
    expect(row!.response).toStartWith("v1.");
    expect(row!.response).not.toContain(first.body.key);
    expect(row!.response).not.toContain(first.body.api_key.key_id);
  });

  test("without the header a double submit still runs twice (the header is what makes it once)", async () => {
    const owner = await newUser(server);
    const teamId = await newTeam(server, owner);
    const body = { name: "twice", role: "viewer" };
    expect((await createKey(server, owner, teamId, null, body)).status).toBe(201);
    expect((await createKey(server, owner, teamId, null, body)).status).toBe(201);
    expect(await keysNamed(teamId, "twice")).toHaveLength(2);
  });

  test("the same key with another body is 422 idempotency_key_reused and creates nothing", async () => {
    const owner = await newUser(server);
    const teamId = await newTeam(server, owner);
    const key = newKey();
    expect((await createKey(server, owner, teamId, key, { name: "ci", role: "viewer" })).status).toBe(201);
    const other = await createKey(server, owner, teamId, key, { name: "ci", role: "admin" });
    expect(expectError(other, 422, "idempotency_key_reused").message).toContain("Idempotency-Key");
    const elsewhere = await createKey(server, owner, await newTeam(server, owner), key, { name: "ci", role: "viewer" });
    expectError(elsewhere, 422, "idempotency_key_reused");
    expect(await keysNamed(teamId, "ci")).toHaveLength(1);
  });

  test("selector headers are part of the request: the same body for another server is 422", async () => {
    const s = await newServer(server);
    const t = await newServer(server, {}, s.owner);
    const key = newKey();
    const body = { message: "Vote for us", interval_seconds: 900 };
    const post = (as: typeof s) =>
      api(server, "POST", "/server/announcements", {
        token: s.owner.token,
        headers: { ...as.as().headers, "idempotency-key": key },
        body,
      });
    expect((await post(s)).status).toBe(201);
    expect((await post(s)).headers.get("idempotent-replayed")).toBe("true");
    expectError(await post(t), 422, "idempotency_key_reused");
    const made = await db().select().from(announcements).where(eq(announcements.serverId, s.serverId));
    expect(made).toHaveLength(1);
    expect(await db().select().from(announcements).where(eq(announcements.serverId, t.serverId))).toHaveLength(0);
  });

  test("a failed request does not keep its key: the corrected retry runs", async () => {
    const owner = await newUser(server);
    const teamId = await newTeam(server, owner);
    const key = newKey();
    expectError(await createKey(server, owner, teamId, key, { name: "fixme", role: "emperor" }), 400);
    const fixed = await createKey(server, owner, teamId, key, { name: "fixme", role: "viewer" });
    expect(fixed.status).toBe(201);
    expect(fixed.headers.get("idempotent-replayed")).toBeNull();
    expect(await keysNamed(teamId, "fixme")).toHaveLength(1);
  });

  test("keys belong to the credential: two accounts, and a person and an API key, never share one", async () => {
    const a = await newUser(server);
    const b = await newUser(server);
    const key = newKey();
    const create = (token: string) =>
      api(server, "POST", "/teams", { token, body: { name: "Same key" }, headers: { "idempotency-key": key } });
    const ra = await create(a.token);
    const rb = await create(b.token);
    expect([ra.status, rb.status]).toEqual([201, 201]);
    expect(rb.body.team_id).not.toBe(ra.body.team_id);
    expect(rb.headers.get("idempotent-replayed")).toBeNull();

    const apiKey = (await createKey(server, a, ra.body.team_id, null, { name: "robot", role: "admin" })).body.key;
    const body = { name: "Robot app", title: "Robot", description: "Made twice", team_id: ra.body.team_id };
    const asPerson = await api(server, "POST", "/client/apps", {
      token: a.token,
      body,
      headers: { "idempotency-key": key },
    });
    const asKey = await api(server, "POST", "/client/apps", {
      token: apiKey,
      body,
      headers: { "idempotency-key": key },
    });
    expect([asPerson.status, asKey.status]).toEqual([201, 201]);
    expect(asKey.body.app.client_id).toBeString();
    expect(asKey.body.app.client_id).not.toBe(asPerson.body.app.client_id);
    expect(asKey.headers.get("idempotent-replayed")).toBeNull();
  });

  test("the typed door honours the header too, and replays what the REST door answered", async () => {
    const owner = await newUser(server);
    const key = newKey();
    const trpc = (input: unknown) =>
      fetch(`${server.url}/trpc/teams.create`, {
        method: "POST",
        headers: { authorization: `Bearer ${owner.token}`, "content-type": "application/json", "idempotency-key": key },
        body: JSON.stringify(input),
      });
    const first = await trpc({ name: "Typed" });
    const firstBody = (await first.json()) as any;
    expect(first.status).toBe(200);
    const again = await trpc({ name: "Typed" });
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(await again.json()).toEqual(firstBody);
    const rest = await api(server, "POST", "/teams", {
      token: owner.token,
      body: { name: "Typed" },
      headers: { "idempotency-key": key },
    });
    expect(rest.status).toBe(201);
    expect(rest.body).toEqual(firstBody.result.data);
    const other = await trpc({ name: "Other" });
    expect(other.status).toBe(422);
    expect(((await other.json()) as any).error.data.code).toBe("idempotency_key_reused");
    const mine = await db().select().from(teams).where(eq(teams.name, "Typed"));
    expect(mine.filter((t) => t.id === firstBody.result.data.team_id)).toHaveLength(1);
    expect((await api(server, "GET", "/teams", { token: owner.token })).body.teams).toHaveLength(1);
  });

  test("a malformed Idempotency-Key is 400 bad_request and nothing runs", async () => {
    const owner = await newUser(server);
    const teamId = await newTeam(server, owner);
    for (const bad of ["x".repeat(256), "café"]) {
      const res = await createKey(server, owner, teamId, bad, { name: "bad key", role: "viewer" });
      expect(expectError(res, 400, "bad_request").message).toContain("Idempotency-Key");
    }
    expect((await createKey(server, owner, teamId, "x".repeat(255), { name: "long", role: "viewer" })).status).toBe(
      201,
    );
    expect(await keysNamed(teamId, "bad key")).toHaveLength(0);
  });

  test("public calls (sign-up, sign-in) ignore the header: there is no credential to keep a key under", async () => {
    const owner = await newUser(server);
    const login = (key: string) =>
      api(server, "POST", "/auth/login", {
        body: { email: owner.email, password: owner.password },
        headers: { "idempotency-key": key },
      });
    const key = newKey();
    const [a, b] = [await login(key), await login(key)];
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(b.body.refresh_token).not.toBe(a.body.refresh_token);
    expect(b.headers.get("idempotent-replayed")).toBeNull();
  });
});

describe("Idempotency-Key under concurrency and over time", () => {
  let second: RunningServer | undefined;
  let timed: RunningServer | undefined;
  afterAll(async () => {
    if (second) await stopTestServer(second);
    if (timed) await stopTestServer(timed);
  });

  test("duplicates sent at once run once (on PostgreSQL across two instances): the rest replay or get 409", async () => {
    // On PostgreSQL a second instance on the same database takes half of the requests.
    if (usingPostgres()) {
      second = await startTestServer({ DATA_DIR: server.services.config.DATA_DIR });
    }
    const targets = [server, second ?? server];
    const owner = await newUser(server);
    const teamId = await newTeam(server, owner);
    const key = newKey();
    const body = { name: "racer", role: "viewer" };
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) => createKey(targets[i % 2]!, owner, teamId, key, body)),
    );
    for (const a of answers) expect([201, 409]).toContain(a.status);
    for (const a of answers.filter((x) => x.status === 409)) expectError(a, 409, "idempotency_key_in_progress");
    const created = answers.filter((a) => a.status === 201);
    expect(created.filter((a) => a.headers.get("idempotent-replayed") === null)).toHaveLength(1);
    expect(new Set(created.map((a) => a.body.api_key.key_id)).size).toBe(1);
    const rows = await keysNamed(teamId, "racer");
    expect(rows).toHaveLength(1);
    // Once the first has finished, every repeat is a replay of it.
    const later = await createKey(targets[1]!, owner, teamId, key, body);
    expect(later.headers.get("idempotent-replayed")).toBe("true");
    expect(later.body.api_key.key_id).toBe(rows[0]!.id);
  });

  test("a key is kept 24 hours, then runs again; the sweep deletes what has expired", async () => {
    timed = await startTestServer();
    const owner = await newUser(timed);
    const teamId = await newTeam(timed, owner);
    const key = newKey();
    const body = { name: "daily", role: "viewer" };
    const first = await createKey(timed, owner, teamId, key, body);
    timed.services.clock.advance(IDEMPOTENCY_TTL_MS - 60_000);
    const replay = await createKey(timed, owner, teamId, key, body);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.body.api_key.key_id).toBe(first.body.api_key.key_id);

    timed.services.clock.advance(120_000);
    const fresh = await createKey(timed, owner, teamId, key, body);
    expect(fresh.status).toBe(201);
    expect(fresh.headers.get("idempotent-replayed")).toBeNull();
    expect(fresh.body.api_key.key_id).not.toBe(first.body.api_key.key_id);

    const scope = `user:${owner.id}`;
    const mine = () =>
      timed!.services.database.db.select().from(idempotencyKeys).where(eq(idempotencyKeys.scope, scope));
    expect(await mine()).toHaveLength(1);
    timed.services.clock.advance(IDEMPOTENCY_TTL_MS);
    expect(await timed.services.idempotency.sweep()).toBeGreaterThanOrEqual(1);
    expect(await mine()).toHaveLength(0);
  });

  test("a key whose first request never finished is 409 until it counts as abandoned, then runs", async () => {
    timed ??= await startTestServer();
    const store = timed.services.idempotency;
    const scope = `user:${crypto.randomUUID()}`;
    const begun = await store.begin(scope, "teams.create", "k", { name: "x" });
    expect("claim" in begun).toBe(true);
    await expect(store.begin(scope, "teams.create", "k", { name: "x" })).rejects.toMatchObject({
      appCode: "idempotency_key_in_progress",
    });
    timed.services.clock.advance(IDEMPOTENCY_STALE_MS + 1000);
    const taken = await store.begin(scope, "teams.create", "k", { name: "x" });
    expect("claim" in taken).toBe(true);
    // The first holder's late answer no longer lands on the row the second now holds.
    if ("claim" in begun) await store.complete(begun.claim, { team_id: "late" });
    if ("claim" in taken) await store.complete(taken.claim, { team_id: "second" });
    expect(await store.begin(scope, "teams.create", "k", { name: "x" })).toEqual({ replay: { team_id: "second" } });
  });
});
