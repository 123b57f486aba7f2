import { beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { desc, eq, sql } from "drizzle-orm";
import type { AnyTRPCProcedure } from "@trpc/server";
import { AUDIT_ACTIONS, type AuditMeta } from "../src/audit/actions";
import { auditLog } from "../src/db/schema";
import type { Meta } from "../src/trpc/init";
import { restRoutes } from "../src/trpc/rest";
import { appRouter } from "../src/trpc/router";
import { sharedServer } from "./harness";
import { addMember, api, newApiKey, newTeam, newUser, trpcClient } from "./helpers";
import { builderFor, type Caller, type CellReq, present } from "./authz/matrix";
import { makeWorld, type World } from "./fuzz/world";
import { SECURITY_CASES } from "./security/cases";
import { makeTeam } from "./security/fixture";
import { newServer } from "./servers-fixture";

/**
 * The audit log. The first tests walk the router: every mutation declares what it writes
 * (`meta.audit`), and each, called for real, writes exactly that (one entry with its action, the
 * caller as actor, no secret), so a new mutation that forgets fails here.
 */
const server = await sharedServer();
const db = server.services.database.db;
const DOC = readFileSync(resolve(import.meta.dir, "../docs/audit.md"), "utf8");
const UA = "audit-test/1.0 (+https://example.test)";

const procedures = appRouter._def.procedures as unknown as Record<string, AnyTRPCProcedure>;
const mutations = Object.entries(procedures)
  .filter(([, p]) => p._def.type === "mutation")
  .map(([path, p]) => ({ path, meta: p._def.meta as Meta | undefined }));
const routeOf = new Map(restRoutes(appRouter).map((r) => [r.procedurePath, r]));

const entriesOf = (requestId: string) =>
  db.select().from(auditLog).where(eq(auditLog.requestId, requestId)).orderBy(auditLog.id);

/** Every string in `v` stored under a name that says it is a secret (not a display prefix or a time). */
function secretsIn(v: unknown, out: string[] = [], key = ""): string[] {
  if (typeof v === "string") {
    if (
      /secret|token|password|^key$|^url$/i.test(key) &&
      !/_prefix$|_at$|_type$|^token_type$/.test(key) &&
      v.length >= 8
    )
      out.push(v);
  } else if (Array.isArray(v)) for (const x of v) secretsIn(x, out, key);
  else if (v && typeof v === "object") for (const [k, x] of Object.entries(v)) secretsIn(x, out, k);
  return out;
}

/** Who calls each kind of route in the walk: the team's owner where a person may. */
const callerFor = (access: string | undefined): Caller =>
  access === "public" ? "anonymous" : access === "agent" ? "agent" : access === "client" ? "client" : "owner";

let world: World;
beforeAll(async () => {
  world = await makeWorld(server);
});

describe("every mutation declares its audit entry", () => {
  test("each mutation of the router has meta.audit naming a listed action or a documented exemption", () => {
    const problems: string[] = [];
    for (const { path, meta } of mutations) {
      const a = meta?.audit as AuditMeta | undefined;
      if (a === undefined) problems.push(`${path}: no meta.audit`);
      else if (typeof a === "string") {
        if (!(a in AUDIT_ACTIONS)) problems.push(`${path}: unknown action ${a}`);
      } else if ("none" in a) {
        if (!new RegExp(`\\| \`${path.replace(".", "\\.")}\`\\s+\\|`).test(DOC))
          problems.push(`${path}: exempt but not listed in docs/audit.md`);
      } else if (!a.perEvent.every((x) => x in AUDIT_ACTIONS)) problems.push(`${path}: unknown action in perEvent`);
    }
    expect(problems).toEqual([]);
    expect(mutations.length).toBeGreaterThan(40);
  });

  test("docs/audit.md lists exactly the actions of src/audit/actions.ts", () => {
    const section = DOC.slice(DOC.indexOf("## Actions"), DOC.indexOf("### Agent and system"));
    const listed = [...section.matchAll(/^\| `([a-z_]+\.[a-z_]+)`/gm)].map((m) => m[1]);
    expect(listed).toEqual(Object.keys(AUDIT_ACTIONS));
  });

  test("the log has no write path: every audit route is a read", () => {
    const audit = restRoutes(appRouter).filter((r) => r.path.includes("/audit"));
    expect(audit.map((r) => `${r.method} ${r.path}`)).toEqual(["GET /teams/{team_id}/audit"]);
    expect(Object.keys(procedures).filter((p) => p.startsWith("audit."))).toEqual(["audit.list"]);
  });
});

describe("each mutation, called for real, writes what it declares", () => {
  for (const { path, meta } of mutations) {
    const route = routeOf.get(path);
    const a = meta?.audit as AuditMeta | undefined;
    const want = typeof a === "string" ? 1 : 0;
    test(`${path}: ${typeof a === "string" ? a : a && "none" in a ? "no entry" : "no entry for a join"}`, async () => {
      expect(route, `${path} has no REST route to call`).toBeDefined();
      const key = `${route!.method} ${route!.path}`;
      const build = builderFor(key, SECURITY_CASES, world);
      expect(build, `${key} has no request builder`).toBeDefined();
      const team = await makeTeam(server, world.people);
      const caller = callerFor(route!.access);
      const req: CellReq = present(caller, await build!(world, team), world, team);
      const requestId = `audit-${crypto.randomUUID()}`;
      const res = await api(server, req.method, req.path, {
        body: req.body,
        headers: { ...req.headers, "x-request-id": requestId, "user-agent": UA },
      });
      expect(`${res.status} ${res.text}`).toMatch(/^20[01] /);
      const entries = await entriesOf(requestId);
      expect(entries).toHaveLength(want);
      if (want === 0) return;
      const [e] = entries;
      expect(e!.action).toBe(a as string);
      expect(e!.actorKind).toBe("user");
      expect(e!.actorId).toBe(world.people.owner.id);
      expect(e!.actorName).toBe(world.people.owner.email);
      expect(e!.ip).toBe("127.0.0.1");
      expect(e!.userAgent).toBe(UA);
      const text = JSON.stringify(e);
      for (const s of [...secretsIn(res.body), ...secretsIn(req.body)]) expect(text).not.toContain(s);
      // A display prefix or a time may be named after a secret; nothing else may.
      for (const k of Object.keys(e!.changes as object))
        if (!/(_prefix|_at)$/.test(k)) expect(k).not.toMatch(/secret|hash|password|sealed|^key$|token/);
    }, 60_000);
  }
});

describe("the audit log", () => {
  test("a mutation on the tRPC door is recorded like one on REST, with its request id", async () => {
    const owner = await newUser(server, "audit-trpc");
    const teamId = await newTeam(server, owner, "Before");
    const requestId = `trpc-${crypto.randomUUID()}`;
    await trpcClient(server, owner.token, { "x-request-id": requestId }).teams.update.mutate({
      team_id: teamId,
      name: "After",
    });
    const [e] = await entriesOf(requestId);
    expect(e).toMatchObject({
      teamId,
      action: "team.update",
      actorKind: "user",
      actorId: owner.id,
      targetType: "team",
      targetId: teamId,
      changes: { name: { before: "Before", after: "After" } },
    });
  });

  test("an API key is the actor by id and by its name at the time", async () => {
    const owner = await newUser(server, "audit-key");
    const teamId = await newTeam(server, owner);
    const key = await newApiKey(server, owner, teamId, "admin");
    const requestId = `key-${crypto.randomUUID()}`;
    const res = await api(server, "PATCH", `/teams/${teamId}`, {
      token: key.key,
      body: { name: "By key" },
      headers: { "x-request-id": requestId },
    });
    expect(res.status).toBe(200);
    const [e] = await entriesOf(requestId);
    expect(e).toMatchObject({ actorKind: "api_key", actorId: key.id, actorName: "admin key" });
    expect(JSON.stringify(e)).not.toContain(key.key);
  });

  test("a failed mutation writes nothing (the entry is in the change's transaction)", async () => {
    const f = await newServer(server);
    const requestId = `fail-${crypto.randomUUID()}`;
    const res = await api(server, "DELETE", `/server/bans/${crypto.randomUUID()}`, {
      ...f.as(),
      headers: { ...f.as().headers, "x-request-id": requestId },
    });
    expect(res.status).toBe(404);
    expect(await entriesOf(requestId)).toHaveLength(0);
  });

  test("a name with lone UTF-16 surrogates is recorded as the text column stores it, not a 500", async () => {
    const owner = await newUser(server, "audit-surrogate");
    const teamId = await newTeam(server, owner);
    const requestId = `surrogate-${crypto.randomUUID()}`;
    // JSON.stringify escapes a lone surrogate ("\udfff"), which PostgreSQL's jsonb refuses.
    const res = await api(server, "PATCH", `/teams/${teamId}`, {
      token: owner.token,
      body: { name: "\udfff\ud800" },
      headers: { "x-request-id": requestId },
    });
    expect(res.status).toBe(200);
    const [e] = await entriesOf(requestId);
    expect(e!.action).toBe("team.update");
    expect((e!.changes as any).name.after).toBe("\ufffd\ufffd");
  });

  test("concurrent mutations each record their own actor and request", async () => {
    const people = await Promise.all([1, 2, 3, 4, 5, 6].map(() => newUser(server, "audit-par")));
    const teams = await Promise.all(people.map((p) => newTeam(server, p)));
    const ids = people.map(() => `par-${crypto.randomUUID()}`);
    await Promise.all(
      people.map((p, i) =>
        api(server, "PATCH", `/teams/${teams[i]}`, {
          token: p.token,
          body: { name: `Parallel ${i}` },
          headers: { "x-request-id": ids[i]! },
        }),
      ),
    );
    for (const [i, p] of people.entries()) {
      const entries = await entriesOf(ids[i]!);
      expect(entries).toHaveLength(1);
      expect(entries[0]).toMatchObject({
        actorId: p.id,
        teamId: teams[i],
        changes: { name: { after: `Parallel ${i}` } },
      });
    }
  });

  test("bans made in game are recorded with the agent as actor; a pardon of no ban records nothing", async () => {
    const f = await newServer(server);
    const uuid = crypto.randomUUID();
    const send = async (events: unknown[]) => {
      const requestId = `agent-${crypto.randomUUID()}`;
      const res = await api(server, "POST", "/agent/events", {
        headers: { authorization: `Bearer ${f.agentToken}`, "x-request-id": requestId, "user-agent": UA },
        body: { events },
      });
      expect(res.status).toBe(200);
      return entriesOf(requestId);
    };
    const banned = await send([
      { event_id: `a-${uuid}-1`, type: "join", uuid, name: "Griefer" },
      { event_id: `a-${uuid}-2`, type: "ban", uuid, name: "Griefer", reason: "x-ray" },
    ]);
    expect(banned).toHaveLength(1);
    expect(banned[0]).toMatchObject({
      teamId: f.teamId,
      action: "player.ban",
      actorKind: "agent",
      actorId: f.serverId,
      actorName: "agent of Survival",
      targetType: "player",
      targetId: uuid,
      targetName: "Griefer",
      serverId: f.serverId,
      userAgent: UA,
    });
    expect((banned[0]!.changes as any).reason).toEqual({ before: null, after: "x-ray" });
    expect(JSON.stringify(banned[0])).not.toContain(f.agentToken);
    const lifted = await send([
      { event_id: `a-${uuid}-3`, type: "unban", uuid },
      { event_id: `a-${uuid}-4`, type: "unban", uuid: crypto.randomUUID() },
    ]);
    expect(lifted.map((e) => e.action)).toEqual(["player.unban"]);
  });

  test("the pinger records a server going down and coming back as the system, once each", async () => {
    const { startStatusResponder } = await import("../scripts/demo-mc-server");
    const mc = await startStatusResponder();
    const f = await newServer(server, { host: "127.0.0.1", port: mc.port });
    const check = () => server.services.monitoring.checkNow(f.serverId);
    const mine = () =>
      db
        .select()
        .from(auditLog)
        .where(sql`${auditLog.serverId} = ${f.serverId} and ${auditLog.actorKind} = 'system'`)
        .orderBy(auditLog.id);
    expect((await check())!.online).toBe(true);
    await mc.close();
    await check();
    expect(await mine()).toHaveLength(0);
    await check();
    await check();
    await check();
    const down = await mine();
    expect(down).toHaveLength(1);
    expect(down[0]).toMatchObject({
      teamId: f.teamId,
      action: "server.down",
      actorKind: "system",
      actorId: null,
      actorName: "pinger",
      targetType: "server",
      targetId: f.serverId,
      targetName: "Survival",
      ip: null,
      changes: { down: { before: false, after: true }, down_reason: { before: null, after: "connection_refused" } },
    });
    const back = await startStatusResponder({ port: mc.port });
    await check();
    await check();
    expect((await mine()).map((e) => e.action)).toEqual(["server.down", "server.up"]);
    await back.close();
  });

  test("GET /teams/{team_id}/audit filters by actor, action, target and time, and pages with a cursor", async () => {
    const owner = await newUser(server, "audit-read");
    const admin = await newUser(server, "audit-read-admin");
    const viewer = await newUser(server, "audit-read-viewer");
    const teamId = await newTeam(server, owner);
    for (const [u, role] of [
      [admin, "admin"],
      [viewer, "viewer"],
    ] as const)
      await addMember(server, owner, teamId, u, role);
    const f = await newServer(server, {}, owner);
    const other = await newServer(server, { team_id: teamId, name: "Creative" }, owner);
    for (let i = 0; i < 5; i++)
      await api(server, "POST", "/server/bans", {
        token: i % 2 ? admin.token : owner.token,
        headers: { "x-server-id": other.serverId },
        body: { uuid: crypto.randomUUID(), name: `P${i}` },
      });
    const read = async (query: string, token = owner.token) =>
      api(server, "GET", `/teams/${teamId}/audit${query}`, { token });

    const all = (await read("")).body;
    // team.create, 2 x (member.invite, member.add by the invitee), server.create (Creative),
    // 5 x player.ban; f is another team.
    expect(all.entries.map((e: any) => e.action)).toEqual([
      ...Array(5).fill("player.ban"),
      "server.create",
      "member.add",
      "member.invite",
      "member.add",
      "member.invite",
      "team.create",
    ]);
    expect(f.teamId).not.toBe(teamId);
    const ids = all.entries.map((e: any) => Number(e.entry_id));
    expect(ids).toEqual([...ids].sort((x, y) => y - x));

    // The admin's own acceptance is theirs: the invitee is the actor of member.add.
    expect((await read(`?actor_id=${admin.id}`)).body.entries.map((e: any) => e.action)).toEqual([
      "player.ban",
      "player.ban",
      "member.add",
    ]);
    expect((await read("?action=member.add")).body.entries).toHaveLength(2);
    expect((await read("?actor_kind=api_key")).body.entries).toHaveLength(0);
    const bans = (await read(`?target_type=player&limit=200`)).body.entries;
    expect(bans).toHaveLength(5);
    expect((await read(`?target_id=${bans[2].target.id}`)).body.entries).toEqual([bans[2]]);
    expect((await read(`?target_id=${other.serverId}`)).body.entries.map((e: any) => e.action)).toEqual([
      "server.create",
    ]);

    const cut = all.entries[4].at;
    const since = (await read(`?since=${encodeURIComponent(cut)}`)).body.entries;
    expect(since.every((e: any) => e.at >= cut)).toBe(true);
    expect(since.length).toBeGreaterThanOrEqual(5);
    const until = (await read(`?until=${encodeURIComponent(cut)}`)).body.entries;
    expect(until.every((e: any) => e.at < cut)).toBe(true);
    expect(since.length + until.length).toBe(11);

    const pages: string[][] = [];
    let cursor: string | null = null;
    do {
      const page: any = (await read(`?limit=4${cursor ? `&cursor=${cursor}` : ""}`)).body;
      pages.push(page.entries.map((e: any) => e.entry_id));
      cursor = page.next_cursor;
    } while (cursor);
    expect(pages.map((p) => p.length)).toEqual([4, 4, 3]);
    expect(pages.flat()).toEqual(all.entries.map((e: any) => e.entry_id));

    expect((await read("", admin.token)).status).toBe(200);
    expect((await read("", viewer.token)).status).toBe(403);
    expect((await read("?cursor=abc")).status).toBe(400);
    expect((await read("?action=server.explode")).status).toBe(400);
  });

  test("each entry is an audit.entry webhook event, only for endpoints that name it", async () => {
    const owner = await newUser(server, "audit-hook");
    const teamId = await newTeam(server, owner);
    const named = await api(server, "POST", `/teams/${teamId}/webhooks`, {
      token: owner.token,
      body: { url: "https://hooks.example.com/audit", event_types: ["audit.entry"] },
    });
    const every = await api(server, "POST", `/teams/${teamId}/webhooks`, {
      token: owner.token,
      body: { url: "https://hooks.example.com/all" },
    });
    expect([named.status, every.status]).toEqual([201, 201]);
    const requestId = `hook-${crypto.randomUUID()}`;
    await api(server, "PATCH", `/teams/${teamId}`, {
      token: owner.token,
      body: { name: "Hooked" },
      headers: { "x-request-id": requestId },
    });
    await server.services.webhooks.flush();
    const rows = (await db.execute(sql`
      select m.payload, d.endpoint_id from webhook_messages m join webhook_deliveries d on d.message_id = m.id
       where m.team_id = ${teamId} and m.type = 'audit.entry'`)) as any;
    const got = (Array.isArray(rows) ? rows : rows.rows).map((r: any) => ({
      endpoint: r.endpoint_id,
      data: (typeof r.payload === "string" ? JSON.parse(r.payload) : r.payload).data,
    }));
    const mine = got.filter((g: any) => g.data.request_id === requestId);
    expect(mine).toHaveLength(1);
    expect(mine[0].endpoint).toBe(named.body.endpoint.endpoint_id);
    expect(mine[0].data).toMatchObject({ action: "team.update", changes: { name: { after: "Hooked" } } });
    expect(got.some((g: any) => g.endpoint === every.body.endpoint.endpoint_id)).toBe(false);
    // The second endpoint's creation was itself recorded, with its URL masked.
    const created = got.find(
      (g: any) => g.data.action === "webhook.create" && g.data.target.id === every.body.endpoint.endpoint_id,
    );
    expect(created.data.changes.url.after).not.toContain("/all");
  });

  test("retention removes entries older than AUDIT_RETENTION_DAYS, and nothing newer", async () => {
    const owner = await newUser(server, "audit-retention");
    const teamId = await newTeam(server, owner);
    const days = server.services.config.AUDIT_RETENTION_DAYS;
    await db.insert(auditLog).values({
      teamId,
      at: new Date(Date.now() - (days + 1) * 86_400_000),
      actorKind: "system",
      actorName: "test",
      action: "team.update",
      targetType: "team",
      targetId: teamId,
    });
    const before = await db.select().from(auditLog).where(eq(auditLog.teamId, teamId)).orderBy(desc(auditLog.id));
    expect(before).toHaveLength(2);
    const result = await server.services.monitoring.retention();
    expect(result.pruned_audit).toBeGreaterThanOrEqual(1);
    const after = await db.select().from(auditLog).where(eq(auditLog.teamId, teamId));
    expect(after.map((e) => e.action)).toEqual(["team.create"]);
  });
});
