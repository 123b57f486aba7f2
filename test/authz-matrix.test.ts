import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { SCOPE_NAMES } from "../src/auth/scopes";
import { restRoutes } from "../src/trpc/rest";
import { appRouter } from "../src/trpc/router";
import { sharedServer } from "./harness";
import { api, newApiKey } from "./helpers";
import { builderFor, CALLERS, expected, present, scopeSets, type Caller, type CellReq } from "./authz/matrix";
import { makeWorld, type World } from "./fuzz/world";
import { SECURITY_CASES } from "./security/cases";
import { makeTeam, type TeamFixture } from "./security/fixture";

/**
 * Every procedure x every kind of caller, each cell sent over HTTP and checked against what
 * the procedure's declared access implies. A procedure without a declared access, with one
 * the matrix does not know, or without a request builder fails here.
 */
const server = await sharedServer();
const routes = restRoutes(appRouter);
let world: World;

beforeAll(async () => {
  world = await makeWorld(server);
});

/** Routes whose allowed call changes the team itself: each allowed cell gets a team of its own. */
const MUTATES_TEAM = new Set([
  "DELETE /teams/{team_id}",
  "POST /teams/{team_id}/transfer",
  "POST /teams/{team_id}/members",
  "DELETE /teams/{team_id}/members/{user_id}",
]);

/** Teams made for the route under test, removed after it: the fixture's owner may hold only so many. */
const made: TeamFixture[] = [];

/** A team of the fixture's shape with the two scoped keys for this route. */
async function teamFor(scope: string | undefined): Promise<TeamFixture> {
  const team = await makeTeam(server, world.people);
  made.push(team);
  const { own, others } = scopeSets(scope);
  const [mine, theirs] = await Promise.all([
    newApiKey(server, world.people.owner, team.teamId, { scopes: own }),
    newApiKey(server, world.people.owner, team.teamId, { scopes: others }),
  ]);
  team.keys.scope = mine.key;
  team.keys.otherScopes = theirs.key;
  return team;
}

const table: Record<string, Record<Caller, string>> = {};
let cells = 0;

describe("authorization matrix: every procedure x every caller", () => {
  test("every procedure declares a known access and has a request builder", () => {
    const problems: string[] = [];
    for (const r of routes) {
      const key = `${r.method} ${r.path}`;
      try {
        expected(r, "owner");
      } catch (e) {
        problems.push((e as Error).message);
      }
      if (!builderFor(key, SECURITY_CASES, {} as World)) problems.push(`${key} has no request builder`);
    }
    expect(problems).toEqual([]);
  });

  test("every team procedure but the owner's names an API key scope, and no other procedure does", () => {
    const wrong = routes
      .filter((r) => {
        const open = r.access === "member" || (r.access?.startsWith("team:") && r.access !== "team:owner");
        return open ? !r.scope : r.scope !== undefined;
      })
      .map((r) => `${r.method} ${r.path} (${r.access}, scope ${r.scope ?? "none"})`);
    expect(wrong).toEqual([]);
    // Every scope grants something.
    expect(SCOPE_NAMES.filter((s) => !routes.some((r) => r.scope === s))).toEqual([]);
  });

  for (const route of routes) {
    const key = `${route.method} ${route.path}`;
    test(key, async () => {
      const build = builderFor(key, SECURITY_CASES, world)!;
      const outsider = SECURITY_CASES[key]?.outsider ?? 403;
      const want = Object.fromEntries(CALLERS.map((c) => [c, expected(route, c, outsider)]));
      // Refusals first, on one team; then each allowed call on its own request (and team, where the call changes it).
      const order = [...CALLERS].sort((a, b) => Number(want[a]!.status < 300) - Number(want[b]!.status < 300));
      const shared = await teamFor(route.scope);
      const mismatches: string[] = [];
      table[key] = {} as Record<Caller, string>;
      for (const caller of order) {
        const team: TeamFixture =
          want[caller]!.status < 300 && MUTATES_TEAM.has(key) ? await teamFor(route.scope) : shared;
        const req: CellReq = present(caller, await build(world, team, caller), world, team);
        const res = await api(server, req.method, req.path, { body: req.body, headers: req.headers });
        cells++;
        const w = want[caller]!;
        const got = res.status >= 400 ? `${res.status} ${res.body?.error?.code}` : `${res.status}`;
        const wanted = w.code ? `${w.status} ${w.code}` : `${w.status}`;
        table[key][caller] = got === wanted ? String(res.status) : `${res.status}!`;
        if (got !== wanted) mismatches.push(`${caller}: got ${got}, expected ${wanted}`);
        else if (res.status >= 400 && res.body.error.request_id !== res.headers.get("x-request-id"))
          mismatches.push(`${caller}: error without its request id`);
        else if (w.body) {
          for (const [k, v] of Object.entries(w.body))
            if (res.body[k] !== v) mismatches.push(`${caller}: ${k} is ${res.body[k]}, expected ${v}`);
        }
        if (key === "POST /client/ms-auth/session/revoke" && res.status === 200) {
          // Revoking is only ever the owning client's act: anyone else's "ok" changed nothing.
          const after = await api(server, "POST", "/client/ms-auth/session/validate", {
            body: {
              client_id: world.client.clientId,
              client_secret: world.client.secret,
              svc_session_token: (req.body as { svc_session_token: string }).svc_session_token,
            },
          });
          if (after.body.valid !== (caller !== "client"))
            mismatches.push(`${caller}: after revoke the session is ${after.body.valid ? "valid" : "gone"}`);
        }
      }
      // A team the route deleted or handed to someone else answers 403 or 404 here; that is fine.
      for (const t of made.splice(0)) {
        await api(server, "DELETE", `/teams/${t.teamId}`, { token: world.people.owner.token });
        await api(server, "DELETE", `/teams/${t.otherTeamId}`, { token: world.people.outsider.token });
      }
      expect(mismatches).toEqual([]);
    }, 60_000);
  }
});

describe("authorization matrix: the device flow", () => {
  const start = routes.find((r) => r.method === "POST" && r.path === "/client/ms-auth/start")!;

  test("start with flow device answers every caller as start does, and only the client gets a code", async () => {
    const team = await teamFor(start.scope);
    const mismatches: string[] = [];
    for (const caller of CALLERS) {
      const w = expected(start, caller);
      const req = present(
        caller,
        {
          method: "POST",
          path: "/client/ms-auth/start",
          clientCreds: true,
          body: { client_id: world.client.clientId, client_secret: world.client.secret, flow: "device" },
        },
        world,
        team,
      );
      const res = await api(server, req.method, req.path, { body: req.body, headers: req.headers });
      cells++;
      const got = res.status >= 400 ? `${res.status} ${res.body?.error?.code}` : `${res.status}`;
      const wanted = w.code ? `${w.status} ${w.code}` : `${w.status}`;
      if (got !== wanted) mismatches.push(`${caller}: got ${got}, expected ${wanted}`);
      // Another client's good credentials start that client's own device login.
      if (res.status === 200 && !/^[A-Z]{4}-[A-Z]{4}$/.test(res.body.user_code))
        mismatches.push(`${caller}: 200 without a user_code`);
      if (res.status >= 400 && "user_code" in (res.body ?? {})) mismatches.push(`${caller}: a refusal with a code`);
    }
    for (const t of made.splice(0)) {
      await api(server, "DELETE", `/teams/${t.teamId}`, { token: world.people.owner.token });
      await api(server, "DELETE", `/teams/${t.otherTeamId}`, { token: world.people.outsider.token });
    }
    expect(mismatches).toEqual([]);
  }, 60_000);

  test("the code page is the same for every caller: no credential opens or changes it", async () => {
    const team = await teamFor(undefined);
    for (const caller of CALLERS) {
      const req = present(caller, { method: "GET", path: "/device" }, world, team);
      const res = await fetch(`${server.url}/device`, { headers: req.headers as Record<string, string> });
      cells++;
      expect(`${caller}: ${res.status}`).toBe(`${caller}: 200`);
      // A form post without the page's cookie is refused whoever sends it.
      const post = await fetch(`${server.url}/device`, {
        method: "POST",
        headers: { ...(req.headers as Record<string, string>), "content-type": "application/x-www-form-urlencoded" },
        body: "user_code=BCDF-GHJK&csrf_token=x",
        redirect: "manual",
      });
      expect(`${caller}: ${post.status}`).toBe(`${caller}: 403`);
    }
    for (const t of made.splice(0)) {
      await api(server, "DELETE", `/teams/${t.teamId}`, { token: world.people.owner.token });
      await api(server, "DELETE", `/teams/${t.otherTeamId}`, { token: world.people.outsider.token });
    }
  }, 60_000);
});

afterAll(() => {
  const short: Record<Caller, string> = {
    anonymous: "anon",
    outsider: "out",
    viewer: "view",
    moderator: "mod",
    admin: "adm",
    owner: "own",
    "key:viewer": "kview",
    "key:moderator": "kmod",
    "key:admin": "kadm",
    "key:scope": "kscope",
    "key:other-scopes": "kothers",
    agent: "agent",
    client: "cli",
    "client:other": "cliOth",
    "client:mismatched": "cliMis",
  };
  console.log(
    `authorization matrix: ${routes.length} procedures x ${CALLERS.length} callers = ${routes.length * CALLERS.length} cells (${cells} sent)`,
  );
  console.table(
    Object.fromEntries(
      Object.entries(table).map(([k, row]) => [k, Object.fromEntries(CALLERS.map((c) => [short[c], row[c] ?? "-"]))]),
    ),
  );
});
