import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { SCOPE_NAMES } from "../src/auth/scopes";
import { restRoutes } from "../src/trpc/rest";
import { appRouter } from "../src/trpc/router";
import { sharedServer } from "./harness";
import { api, newApiKey } from "./helpers";
import { builderFor, CALLERS, expected, present, scopeSets, type Caller, type CellReq } from "./authz/matrix";
import { makeWorld, type World } from "./fuzz/world";
import { SECURITY_CASES } from "./security/cases";
import { eq } from "drizzle-orm";
import { oidcGrants } from "../src/db/schema";
import { sha256 } from "../src/lib/secrets";
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

describe("authorization matrix: what is not a procedure (OpenID Connect, the player's apps page, status pages)", () => {
  /** Each caller's own credential as a bearer header (the client kinds hold their client secret). */
  const bearerOf = async (caller: Caller, team: TeamFixture) =>
    (present(caller, { method: "GET", path: "/" }, world, team).headers ?? {}) as Record<string, string>;
  const basicOf = (id: string, secret: string) =>
    `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString("base64")}`;
  const dropTeams = async () => {
    for (const t of made.splice(0)) {
      await api(server, "DELETE", `/teams/${t.teamId}`, { token: world.people.owner.token });
      await api(server, "DELETE", `/teams/${t.otherTeamId}`, { token: world.people.outsider.token });
    }
  };

  test("discovery and the JWKS answer every caller the same", async () => {
    const team = await teamFor(undefined);
    const seen = new Set<string>();
    for (const caller of CALLERS)
      for (const path of ["/.well-known/openid-configuration", "/oidc/jwks.json"]) {
        const res = await fetch(`${server.url}${path}`, { headers: await bearerOf(caller, team) });
        cells++;
        expect(`${caller} ${path}: ${res.status}`).toBe(`${caller} ${path}: 200`);
        seen.add(`${path} ${await res.text()}`);
      }
    expect(seen.size).toBe(2);
    await dropTeams();
  }, 60_000);

  test("the authorization endpoint ignores every credential: a good request goes to sign-in, an unknown client is a page", async () => {
    const team = await teamFor(undefined);
    const c = world.oidc.client;
    for (const caller of CALLERS) {
      const headers = await bearerOf(caller, team);
      const good = new URLSearchParams({
        response_type: "code",
        client_id: c.clientId,
        redirect_uri: c.redirectUri,
        scope: "openid",
        state: caller,
      });
      const res = await fetch(`${server.url}/oidc/authorize?${good}`, { headers, redirect: "manual" });
      cells++;
      expect(`${caller}: ${res.status}`).toBe(`${caller}: 303`);
      expect(res.headers.get("location")).not.toStartWith(c.redirectUri);
      good.set("client_id", world.client.clientId); // a client app without OpenID Connect
      const unknown = await fetch(`${server.url}/oidc/authorize?${good}`, { headers, redirect: "manual" });
      cells++;
      expect(`${caller}: ${unknown.status} ${unknown.headers.get("content-type")}`).toBe(
        `${caller}: 400 text/html; charset=utf-8`,
      );
    }
    await dropTeams();
  }, 60_000);

  test("the token endpoint redeems a code for its own client only; every other caller gets RFC 6749 JSON and changes nothing", async () => {
    const team = await teamFor(undefined);
    const c = world.oidc.client;
    const other = world.oidc.otherClient;
    const db = server.services.database.db;
    const { code, verifier } = await world.oidc.code();
    const grantOf = async () =>
      (
        await db
          .select()
          .from(oidcGrants)
          .where(eq(oidcGrants.codeHash, sha256(code)))
      )[0]!;
    const before = await grantOf();
    const form = (extra: Record<string, string> = {}) =>
      new URLSearchParams({
        grant_type: "authorization_code",
        code,
        redirect_uri: c.redirectUri,
        code_verifier: verifier,
        ...extra,
      });
    /** What each caller sends: its credential where a client puts one, and the answer it must get. */
    const attempts = (caller: Caller, bearer: Record<string, string>) => {
      switch (caller) {
        case "anonymous":
          return [{ headers: {}, body: form({ client_id: c.clientId }), want: "401 invalid_client" }];
        case "client":
          return [{ headers: { authorization: basicOf(c.clientId, c.secret) }, body: form(), want: "200" }];
        case "client:other":
          // Good credentials of another client: the code is not theirs.
          return [
            {
              headers: { authorization: basicOf(other.clientId, other.secret) },
              body: form(),
              want: "400 invalid_grant",
            },
            {
              headers: {},
              body: form({ client_id: other.clientId, client_secret: other.secret }),
              want: "400 invalid_grant",
            },
          ];
        case "client:mismatched":
          return [
            { headers: { authorization: basicOf(c.clientId, other.secret) }, body: form(), want: "401 invalid_client" },
            // The launcher client of the same team: a client app without OpenID Connect.
            {
              headers: { authorization: basicOf(world.client.clientId, world.client.secret) },
              body: form(),
              want: "401 invalid_client",
            },
          ];
        default:
          return [
            { headers: bearer, body: form(), want: "401 invalid_client" },
            {
              headers: {},
              body: form({ client_id: c.clientId, client_secret: bearer.authorization!.slice(7) }),
              want: "401 invalid_client",
            },
          ];
      }
    };
    const mismatches: string[] = [];
    // Refusals first, then the client's own redemption.
    const order = [...CALLERS].sort((a, b) => Number(a === "client") - Number(b === "client"));
    for (const caller of order) {
      if (caller === "client") expect(await grantOf()).toEqual(before);
      for (const a of attempts(caller, await bearerOf(caller, team))) {
        const res = await fetch(`${server.url}/oidc/token`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded", ...a.headers },
          body: a.body,
        });
        cells++;
        const body = await res.json();
        const got = res.status >= 400 ? `${res.status} ${body.error}` : `${res.status}`;
        if (got !== a.want) mismatches.push(`${caller}: got ${got}, expected ${a.want}`);
        if (res.status === 401 && !/^Basic /.test(res.headers.get("www-authenticate") ?? ""))
          mismatches.push(`${caller}: 401 without a Basic challenge`);
        if (res.status >= 400 && Object.keys(body).some((k) => k !== "error" && k !== "error_description"))
          mismatches.push(`${caller}: not RFC 6749 JSON: ${JSON.stringify(body)}`);
        if (res.status === 200 && !body.id_token) mismatches.push(`${caller}: 200 without an ID token`);
      }
    }
    await dropTeams();
    expect(mismatches).toEqual([]);
  }, 90_000);

  for (const method of ["GET", "POST"] as const)
    test(`userinfo by ${method} answers an OpenID Connect access token only, for its own player; anything else is 401 with a Bearer challenge`, async () => {
      const team = await teamFor(undefined);
      const mismatches: string[] = [];
      for (const caller of CALLERS) {
        const token =
          caller === "client"
            ? world.oidc.accessToken
            : caller === "client:other"
              ? world.oidc.otherAccessToken
              : caller === "client:mismatched"
                ? world.sessionToken // a launcher's session token is not an access token
                : (await bearerOf(caller, team)).authorization?.slice(7);
        const sends = method === "GET" || !token ? ["header"] : ["header", "form"];
        for (const where of sends) {
          const res = await fetch(`${server.url}/oidc/userinfo`, {
            method,
            headers: {
              ...(token && where === "header" && { authorization: `Bearer ${token}` }),
              ...(method === "POST" && { "content-type": "application/x-www-form-urlencoded" }),
            },
            ...(method === "POST" && {
              body: where === "form" && token ? new URLSearchParams({ access_token: token }) : "",
            }),
          });
          cells++;
          const body = await res.json();
          const want = caller === "client" ? "200 Steve" : caller === "client:other" ? "200 Alex" : "401 invalid_token";
          const got = res.status === 200 ? `200 ${body.preferred_username}` : `${res.status} ${body.error}`;
          if (got !== want) mismatches.push(`${caller} (${where}): got ${got}, expected ${want}`);
          if (res.status === 401 && !/^Bearer error="invalid_token"/.test(res.headers.get("www-authenticate") ?? ""))
            mismatches.push(`${caller} (${where}): 401 without its Bearer challenge`);
        }
      }
      await dropTeams();
      expect(mismatches).toEqual([]);
    }, 60_000);

  test("the player's apps page: no API credential signs anyone in, and a revoke without the page's sign-in revokes nothing", async () => {
    const team = await teamFor(undefined);
    for (const caller of CALLERS) {
      const headers = await bearerOf(caller, team);
      const page = await fetch(`${server.url}/account/apps`, { headers });
      cells++;
      const html = await page.text();
      expect(`${caller}: ${page.status}`).toBe(`${caller}: 200`);
      expect(html).toContain("/account/apps/sign-in");
      expect(html).not.toContain("Blocky Website");
      const revoke = await fetch(`${server.url}/account/apps/revoke`, {
        method: "POST",
        headers: { ...headers, "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ client_id: world.oidc.client.clientId, csrf_token: "x" }),
        redirect: "manual",
      });
      cells++;
      expect(`${caller}: ${revoke.status} ${revoke.headers.get("location")}`).toBe(
        `${caller}: 303 /account/apps?signed_out=1`,
      );
    }
    // The player's grant is as it was: its access token still answers.
    const info = await fetch(`${server.url}/oidc/userinfo`, {
      headers: { authorization: `Bearer ${world.oidc.accessToken}` },
    });
    expect(info.status).toBe(200);
    await dropTeams();
  }, 60_000);

  test("a status page is public to everyone when published and a 404 to everyone, its own team included, when not", async () => {
    const team = await teamFor(undefined);
    const slug = `matrix-${crypto.randomUUID().slice(0, 8)}`;
    for (const [s, published] of [
      [slug, true],
      [`${slug}-draft`, false],
    ] as const) {
      const res = await api(server, "POST", `/teams/${world.team.teamId}/status-pages`, {
        token: world.people.owner.token,
        body: { slug: s, title: published ? "Matrix page" : "Matrix draft", published },
      });
      expect(res.status).toBe(201);
    }
    for (const caller of CALLERS) {
      const headers = await bearerOf(caller, team);
      for (const [path, want] of [
        [`/status/${slug}`, 200],
        [`/status/${slug}/feed.atom`, 200],
        [`/status/${slug}-draft`, 404],
        [`/status/${slug}-draft/feed.atom`, 404],
      ] as const) {
        const res = await fetch(`${server.url}${path}`, { headers });
        cells++;
        const text = await res.text();
        expect(`${caller} ${path}: ${res.status}`).toBe(`${caller} ${path}: ${want}`);
        expect(text).not.toContain("Matrix draft");
      }
    }
    await dropTeams();
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
