import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import fc from "fast-check";
import { sharedServer } from "./harness";
import { api, newTeam, addMember, invite, newUser, type TestUser, uniqueEmail } from "./helpers";
import { responseValidators, violation } from "./fuzz/check";
import {
  hostileRequest,
  materialize,
  operations,
  validRequest,
  type Credentials,
  type FuzzRequest,
  type Operation,
} from "./fuzz/requests";
import type { Hints } from "./fuzz/schema";
import { clientIn, gameServerIn, makeWorld, type World } from "./fuzz/world";
import {
  clientAuthNoise,
  OUTSIDE_ROUTES,
  type StatusFixture,
  statusRequest,
  undocumentedOperations,
} from "./fuzz/outside";
import { STACK_TRACE } from "./fuzz/check";
import { and, eq } from "drizzle-orm";
import { oidcGrants, loginRequests, statusPages } from "../src/db/schema";
import { sha256 } from "../src/lib/secrets";

/**
 * Walks every operation of the live /openapi.json with generated requests, valid ones built
 * from the declared schemas (with real ids, so they reach the code behind the lookups) and
 * spoiled ones. No 5xx, errors in the envelope with the request id and no stack trace, each
 * status one the document lists for that operation, 2xx bodies as declared. FUZZ_RUNS sets the requests per operation (FUZZ_SEED replays a run).
 */
const RUNS = Number(process.env.FUZZ_RUNS ?? 36);
const VALID_RUNS = Math.max(4, Math.round(RUNS / 3));
const HOSTILE_RUNS = Math.max(4, RUNS - VALID_RUNS);
const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : undefined;

const server = await sharedServer();
const doc = (await (await fetch(`${server.url}/openapi.json`)).json()) as Record<string, any>;
const validatorFor = responseValidators(doc);
let world: World;
/** The account the sign-in routes are fuzzed with, so ending sign-ins or changing a password disturbs no one else. */
let account: TestUser;

beforeAll(async () => {
  world = await makeWorld(server);
  account = await newUser(server, "fuzz-account");
});

/** `FRESH.<name>` in a request is replaced by a value its operation's `prepare` made for that run. */
const fresh = (name: string) => [`FRESH.${name}`];

interface Special {
  hints?: (w: World) => Hints;
  /** Makes a throwaway resource per request, so destructive operations leave the fixture alone. */
  prepare?: (w: World) => Promise<Record<string, string>>;
  /** Removes what prepare made, so the fixture stays under the service's limits (apps, teams per account). */
  cleanup?: (w: World, made: Record<string, string>, res: { status: number; text: string }) => Promise<void>;
  /** Changes fixture state the others read: walked after everything else. */
  last?: boolean;
}

const owner = (w: World) => w.people.owner;
const freshTeam = async (w: World, member?: "admin" | "viewer") => {
  const teamId = await newTeam(server, owner(w));
  if (member) await addMember(server, owner(w), teamId, w.people[member], member);
  return teamId;
};
/** Whoever owns it now (a transfer may have moved it to the admin) deletes it. */
const dropTeam = async (w: World, made: Record<string, string>) => {
  for (const who of [owner(w), w.people.admin])
    if ((await api(server, "DELETE", `/teams/${made.team_id}`, { token: who.token })).status === 200) return;
};
const teamOps = (member?: "admin" | "viewer"): Special => ({
  hints: () => ({ team_id: fresh("team_id") }),
  prepare: async (w) => ({ team_id: await freshTeam(w, member) }),
  cleanup: dropTeam,
});
const clientOps: Special = {
  hints: () => ({ client_id: fresh("client_id") }),
  prepare: async (w) => ({ client_id: (await clientIn(server, owner(w), w.team.teamId)).clientId }),
  cleanup: async (w, made) =>
    void (await api(server, "DELETE", `/client/apps/${made.client_id}`, { token: owner(w).token })),
};
const serverOps: Special = {
  hints: () => ({ server_id: fresh("server_id") }),
  prepare: async (w) => ({ server_id: (await gameServerIn(server, owner(w), w.team.teamId)).serverId }),
  cleanup: async (w, made) =>
    void (await api(server, "DELETE", `/server/servers/${made.server_id}`, { token: owner(w).token })),
};
/** An invitation to the owner (the fuzzer's bearer) from a throwaway team of the outsider's, deleted after. */
const invitationOps: Special = {
  hints: () => ({ invitation_id: fresh("invitation_id") }),
  prepare: async (w) => {
    const teamId = await newTeam(server, w.people.outsider);
    return {
      team_id: teamId,
      invitation_id: await invite(server, w.people.outsider, teamId, owner(w).email, "viewer"),
    };
  },
  cleanup: async (w, made) =>
    void (await api(server, "DELETE", `/teams/${made.team_id}`, { token: w.people.outsider.token })),
};
const refreshOps: Special = {
  hints: () => ({ refresh_token: fresh("refresh_token") }),
  prepare: async (w) => ({ refresh_token: await refreshToken(w) }),
};

const SPECIAL: Record<string, Special> = {
  "POST /auth/signup": { hints: () => ({ email: [], password: [] }) },
  "POST /auth/refresh": refreshOps,
  "POST /auth/logout": refreshOps,
  "DELETE /teams/{team_id}": teamOps(),
  "POST /teams/{team_id}/transfer": {
    ...teamOps("admin"),
    hints: (w) => ({ team_id: fresh("team_id"), user_id: [w.people.admin.id] }),
  },
  "POST /teams/{team_id}/members": {
    ...teamOps(),
    hints: (w) => ({ team_id: fresh("team_id"), email: [w.people.viewer.email] }),
  },
  "DELETE /teams/{team_id}/invitations/{invitation_id}": {
    hints: () => ({ invitation_id: fresh("invitation_id") }),
    prepare: async (w) => ({
      invitation_id: await invite(server, owner(w), w.team.teamId, uniqueEmail("fuzz"), "viewer"),
    }),
    cleanup: async (w, made) =>
      void (await api(server, "DELETE", `/teams/${w.team.teamId}/invitations/${made.invitation_id}`, {
        token: owner(w).token,
      })),
  },
  "POST /invitations/{invitation_id}/accept": invitationOps,
  "POST /invitations/{invitation_id}/decline": invitationOps,
  "PATCH /teams/{team_id}/members/{user_id}": teamOps("viewer"),
  "DELETE /teams/{team_id}/members/{user_id}": teamOps("viewer"),
  "DELETE /teams/{team_id}/api-keys/{key_id}": {
    hints: () => ({ key_id: fresh("key_id") }),
    prepare: async (w) => {
      const res = await api(server, "POST", `/teams/${w.team.teamId}/api-keys`, {
        token: owner(w).token,
        body: { name: "throwaway", role: "viewer" },
      });
      return { key_id: res.body.api_key.key_id };
    },
    cleanup: async (w, made) =>
      void (await api(server, "DELETE", `/teams/${w.team.teamId}/api-keys/${made.key_id}`, { token: owner(w).token })),
  },
  "POST /teams": {
    cleanup: async (w, _made, res) => {
      if (res.status === 201)
        await api(server, "DELETE", `/teams/${JSON.parse(res.text).team_id}`, { token: owner(w).token });
    },
  },
  "POST /teams/{team_id}/api-keys": { cleanup: async (w) => void (await revokeThrowawayKeys(w)) },
  "POST /client/apps": { cleanup: async (w) => void (await dropThrowawayApps(w)) },
  "PATCH /client/apps/{client_id}": clientOps,
  "DELETE /client/apps/{client_id}": clientOps,
  "POST /client/apps/{client_id}/secret": clientOps,
  "POST /client/apps/{client_id}/modules/ms-auth": clientOps,
  "DELETE /client/apps/{client_id}/modules/ms-auth": clientOps,
  "POST /client/apps/{client_id}/modules/oidc": clientOps,
  "DELETE /client/apps/{client_id}/modules/oidc": clientOps,
  "PATCH /server/servers/{server_id}": serverOps,
  "DELETE /server/servers/{server_id}": serverOps,
  "POST /server/servers/{server_id}/agent-token": serverOps,
  "PATCH /server/ranks/{name}": { hints: (w) => ({ name: [w.rankName] }) },
  "DELETE /server/ranks/{name}": { hints: (w) => ({ name: [w.rankName] }), last: true },
  "DELETE /server/bans/{uuid}": { last: true },
  "DELETE /server/announcements/{announcement_id}": { last: true },
  "POST /client/ms-auth/session/revoke": { last: true },
  // A cursor of the shape the directory issues (before every row, newest first), with its sort and order.
  "GET /players": {
    hints: () => ({
      sort: ["last_seen"],
      order: ["desc"],
      cursor: [
        Buffer.from(
          JSON.stringify([
            "d1",
            "last_seen",
            "desc",
            "2100-01-01T00:00:00.000000Z",
            "ffffffff-ffff-4fff-bfff-ffffffffffff",
          ]),
        ).toString("base64url"),
      ],
    }),
  },
  "GET /players/resolve": { hints: () => ({ name: ["Steve", "STEVE"] }) },
  // A note of its own per request, on the directory's player.
  "DELETE /players/{uuid}/notes/{note_id}": {
    hints: (w) => ({ uuid: [w.playerUuid], note_id: fresh("note_id") }),
    prepare: async (w) => {
      const res = await api(server, "POST", `/players/${w.playerUuid}/notes`, {
        token: owner(w).token,
        headers: { "x-team-id": w.team.teamId },
        body: { text: "to delete" },
      });
      return { note_id: res.body.note_id };
    },
  },
  // A sign-in of the fuzzed account's own per request, for the one that ends it.
  "DELETE /auth/sessions/{session_id}": {
    hints: () => ({ session_id: fresh("session_id") }),
    prepare: async () => {
      const res = await api(server, "POST", "/auth/login", {
        body: { email: account.email, password: account.password },
      });
      return { session_id: (await server.services.tokens.verify(res.body.access_token))!.sid };
    },
  },
  // A fresh authorization code (a whole sign-in with consent) per request, with its PKCE verifier,
  // so the valid requests redeem one; the client's own id, secret and redirect URI.
  "POST /oidc/token": {
    hints: (w) => ({
      grant_type: ["authorization_code"],
      code: fresh("code"),
      code_verifier: fresh("code_verifier"),
      redirect_uri: [w.oidc.client.redirectUri],
      client_id: [w.oidc.client.clientId],
      client_secret: [w.oidc.client.secret],
    }),
    prepare: async (w) => {
      const { code, verifier } = await w.oidc.code();
      return { code, code_verifier: verifier };
    },
  },
  "GET /oidc/authorize": { hints: oidcAuthorizeHints },
  "POST /oidc/authorize": { hints: oidcAuthorizeHints },
  // The right password, changed to itself: the valid requests reach the change; it goes last.
  "POST /auth/password": {
    hints: () => ({ current_password: [account.password], new_password: [account.password] }),
    last: true,
  },
};

/** A request of the fixture's OpenID Connect client, with an S256 challenge. */
function oidcAuthorizeHints(w: World): Hints {
  return {
    response_type: ["code"],
    client_id: [w.oidc.client.clientId],
    redirect_uri: [w.oidc.client.redirectUri],
    scope: ["openid profile", "openid"],
    code_challenge: [new Bun.CryptoHasher("sha256").update("v".repeat(43)).digest("base64url")],
    code_challenge_method: ["S256"],
  };
}

/** Routes about the caller's own sign-ins and password: fuzzed as their own account. */
const ACCOUNT_OPS = new Set([
  "GET /auth/sessions",
  "DELETE /auth/sessions/{session_id}",
  "POST /auth/sessions/revoke-others",
  "POST /auth/password",
]);

/** Keys and apps the fuzzer itself created in the fixture team, beyond the fixture's own. */
async function revokeThrowawayKeys(w: World) {
  const res = await api(server, "GET", `/teams/${w.team.teamId}/api-keys`, { token: owner(w).token });
  const keep = new Set(w.keyIds);
  for (const k of res.body.api_keys ?? [])
    if (!k.revoked_at && !keep.has(k.key_id))
      await api(server, "DELETE", `/teams/${w.team.teamId}/api-keys/${k.key_id}`, { token: owner(w).token });
}
async function dropThrowawayApps(w: World) {
  const res = await api(server, "GET", `/client/apps?team_id=${w.team.teamId}`, { token: owner(w).token });
  for (const a of res.body.apps ?? [])
    if (a.client_id !== w.client.clientId && a.client_id !== w.oidc.client.clientId)
      await api(server, "DELETE", `/client/apps/${a.client_id}`, { token: owner(w).token });
}

async function refreshToken(w: World): Promise<string> {
  const res = await api(server, "POST", "/auth/login", {
    body: { email: w.sessionUser.email, password: w.sessionUser.password },
  });
  return res.body.refresh_token;
}

function baseHints(w: World): Hints {
  return {
    team_id: [w.team.teamId],
    "x-team-id": [w.team.teamId],
    server_id: [w.gameServer.serverId],
    "x-server-id": [w.gameServer.serverId],
    client_id: [w.client.clientId],
    client_secret: [w.client.secret],
    auth_request_id: [w.pendingRequestId, w.authorizedRequestId],
    svc_session_token: [w.sessionToken],
    user_id: [w.people.viewer.id],
    announcement_id: [w.announcementId],
    uuid: [w.bannedUuid, w.playerUuid],
    note_id: [w.noteId],
    email: [w.people.owner.email],
    password: [w.people.owner.password],
    state: [w.callbackState],
  };
}

function credentials(op: Operation, w: World): Credentials {
  const bearer = !op.bearer
    ? []
    : ACCOUNT_OPS.has(op.key)
      ? [account.token]
      : op.path.startsWith("/agent/")
        ? [w.gameServer.agentToken]
        : op.path === "/oidc/userinfo"
          ? [w.oidc.accessToken]
          : [owner(w).token, owner(w).token, w.team.keys.admin];
  return { bearer, expired: w.expiredToken };
}

const all = operations(doc);
// Destructive ones work on throwaway resources; the few that cannot go last.
const walk = [...all.filter((o) => !SPECIAL[o.key]?.last), ...all.filter((o) => SPECIAL[o.key]?.last)];

interface Tally {
  sent: number;
  ok: number;
  redirect: number;
  clientError: number;
}
const undocumented = undocumentedOperations(doc);
const tally = new Map<string, Tally>(
  [...walk, ...undocumented].map((o) => [o.key, { sent: 0, ok: 0, redirect: 0, clientError: 0 }]),
);
const count = (key: string, status: number) => {
  if (!tally.has(key)) tally.set(key, { sent: 0, ok: 0, redirect: 0, clientError: 0 });
  const t = tally.get(key)!;
  t.sent++;
  if (status < 300) t.ok++;
  else if (status < 400) t.redirect++;
  else t.clientError++;
};

async function send(op: Operation, req: FuzzRequest, filled: Record<string, string>) {
  const fill = (s: string) => s.replace(/FRESH\.(\w+)/g, (m, name) => filled[name] ?? m);
  const { url, init } = materialize(server.url, op, req, fill);
  const res = await fetch(url, init);
  const text = await res.text();
  count(op.key, res.status);
  return { status: res.status, headers: res.headers, text, url, init };
}

async function property(op: Operation, arb: fc.Arbitrary<FuzzRequest>, numRuns: number) {
  const special = SPECIAL[op.key] ?? {};
  const validate = validatorFor(op);
  await fc.assert(
    fc.asyncProperty(arb, async (req) => {
      const filled = special.prepare ? await special.prepare(world) : {};
      const res = await send(op, req, filled);
      await special.cleanup?.(world, filled, res);
      const wrong = violation(op, res, validate);
      if (wrong) throw new Error(`${op.key} [${req.label}] ${init(res)} -> ${wrong}`);
    }),
    { numRuns, seed: SEED, endOnFailure: true },
  );
}

const init = (r: { url: string; init: RequestInit }) => {
  const body = typeof r.init.body === "string" ? r.init.body.slice(0, 300) : r.init.body ? "<bytes>" : "";
  return `${r.init.method} ${r.url.slice(0, 300)} ${JSON.stringify(r.init.headers).slice(0, 300)} ${body}`;
};

describe("fuzzing every operation of /openapi.json", () => {
  test("the walk covers every operation in the document", () => {
    const inDoc = Object.values<Record<string, unknown>>(doc.paths).reduce(
      (n, item) => n + Object.keys(item).length,
      0,
    );
    expect(walk.length).toBe(inDoc);
    // Selector headers are part of the contract: an operation that needs one must declare it.
    for (const op of walk) {
      const declared = (op.spec.parameters ?? []).filter((p: any) => p.in === "header").map((p: any) => p.name);
      const selector =
        op.key === "GET /server/servers" ||
        op.path.startsWith("/server/networks") ||
        op.path.startsWith("/server/incidents") ||
        op.path.startsWith("/server/maintenance") ||
        op.path.startsWith("/players") ||
        op.path.startsWith("/analytics/")
          ? "x-team-id"
          : op.path.startsWith("/server/") && !op.path.startsWith("/server/servers")
            ? "x-server-id"
            : op.path.startsWith("/dashboard/session")
              ? "x-mcp-dashboard"
              : "";
      expect(`${op.key}: ${declared}`).toBe(`${op.key}: ${selector}`);
    }
  });

  // What the fuzzer found, kept as fixed examples: each was a 500 before its fix.
  test("regression: a NUL character in a body field, a path parameter or a tRPC input is a 400 naming where", async () => {
    const w = world;
    const body = await api(server, "PATCH", `/teams/${w.team.teamId}`, {
      token: owner(w).token,
      body: { name: "a\u0000b" },
    });
    expect(body.status).toBe(400);
    expect(body.body.error.details.issues[0].path).toBe("name");
    const path = await api(server, "DELETE", "/server/ranks/%00", {
      token: owner(w).token,
      headers: { "x-server-id": w.gameServer.serverId },
    });
    expect(`${path.status} ${path.body.error.code}`).toBe("400 validation_failed");
    const trpc = await api(server, "POST", "/trpc/teams.update", {
      token: owner(w).token,
      body: { team_id: w.team.teamId, name: "x\u0000" },
    });
    expect(trpc.status).toBe(400);
    expect((await api(server, "GET", `/teams/${w.team.teamId}`, { token: owner(w).token })).body.name).not.toContain(
      "\u0000",
    );
  });

  test("regression: a heartbeat with a TPS too small for a real column is stored as 0, not a 500", async () => {
    const w = world;
    const res = await api(server, "POST", "/agent/heartbeat", {
      token: w.gameServer.agentToken,
      body: { tps: 1e-300, mspt: 8e-323, players_online: 1 },
    });
    expect(res.status).toBe(200);
    const read = await api(server, "GET", `/server/servers/${w.gameServer.serverId}`, { token: owner(w).token });
    expect(read.body.agent).toMatchObject({ tps: 0, mspt: 0, players_online: 1 });
  });

  for (const op of walk) {
    test(op.key, async () => {
      const special = SPECIAL[op.key] ?? {};
      const hints = { ...baseHints(world), ...special.hints?.(world) };
      const creds = credentials(op, world);
      const valid = validRequest(doc, op, hints, creds);
      await property(op, valid, VALID_RUNS);
      await property(op, hostileRequest(op, valid, creds), HOSTILE_RUNS);
    }, 120_000);
  }
});

/** What every answer outside the procedures keeps: no 5xx, no stack trace, its request id; errors as HTML or the envelope. */
function plainViolation(res: Response, text: string): string | null {
  if (res.status >= 500) return `${res.status}: ${text.slice(0, 300)}`;
  if (STACK_TRACE.test(text)) return `a stack trace in the body: ${text.slice(0, 300)}`;
  const id = res.headers.get("x-request-id");
  if (!id) return `no x-request-id on ${res.status}`;
  if (res.status >= 400 && text !== "") {
    const type = res.headers.get("content-type") ?? "";
    if (type.startsWith("text/html")) return null;
    if (!type.includes("application/json")) return `error ${res.status} as ${type}: ${text.slice(0, 200)}`;
    const body = JSON.parse(text);
    if (typeof body?.error?.code !== "string" || body.error.request_id !== id)
      return `error ${res.status} outside the envelope: ${text.slice(0, 200)}`;
  }
  return null;
}

describe("fuzzing what is not a procedure: the OAuth forms, client authentication, status pages, wrong methods", () => {
  let status: StatusFixture;
  beforeAll(async () => {
    const slug = `fuzz-${crypto.randomUUID().slice(0, 8)}`;
    const made = await api(server, "POST", `/teams/${world.team.teamId}/status-pages`, {
      token: owner(world).token,
      body: {
        slug,
        title: "Fuzzed",
        host_name: `${slug}.fuzz.test`,
        server_ids: [world.gameServer.serverId],
        show: { players: true, version: true, motd: true, latency: true },
        published: true,
      },
    });
    expect(made.status).toBe(201);
    const hidden = await api(server, "POST", `/teams/${world.team.teamId}/status-pages`, {
      token: owner(world).token,
      body: { slug: `${slug}-hidden`, title: "Unpublished Zephyr", server_ids: [world.gameServer.serverId] },
    });
    expect(hidden.status).toBe(201);
    status = {
      slug,
      host: `${slug}.fuzz.test`,
      serverId: world.gameServer.serverId,
      hiddenSlug: `${slug}-hidden`,
      hiddenTitle: "Unpublished Zephyr",
    };
  });

  // What the fuzzer found, kept as a fixed example: it was a 500 before its fix.
  test("regression: a path segment that does not percent-decode on a status route is a 404, not a 500", async () => {
    const { slug, serverId } = status;
    for (const path of [
      "/status/%",
      "/status/%ZZ",
      "/status/%E0%A4%A/feed.atom",
      `/status/${slug}/badges/%/status.svg`,
      `/status/${slug}/badges/${serverId}/%.svg`,
      `/status/%/badges/${serverId}/status.svg`,
    ]) {
      const res = await fetch(`${server.url}${path}`);
      const text = await res.text();
      expect(`${path}: ${res.status}`).toBe(`${path}: 404`);
      expect(plainViolation(res, text)).toBeNull();
    }
    // The page route's 404 is the page for people; the feed's and the badges' are the envelope.
    expect((await fetch(`${server.url}/status/%`)).headers.get("content-type")).toStartWith("text/html");
  });

  for (const op of undocumented) {
    test(op.key, async () => {
      const special = SPECIAL[op.key] ?? {};
      const hints = { ...baseHints(world), ...special.hints?.(world) };
      const creds = credentials(op, world);
      const valid = validRequest(doc, op, hints, creds);
      await property(op, valid, VALID_RUNS);
      await property(op, hostileRequest(op, valid, creds), HOSTILE_RUNS);
    }, 120_000);
  }

  test("token endpoint: malformed Basic, wrong or another client's secret, unknown client: RFC 6749 401/400, and the code stays unredeemed", async () => {
    const tokenOp = walk.find((o) => o.key === "POST /oidc/token")!;
    const c = world.oidc.client;
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
    expect(before.codeUsedAt).toBeNull();
    await fc.assert(
      fc.asyncProperty(clientAuthNoise(c, world.oidc.otherClient), async ({ authorization, creds }) => {
        const form = new URLSearchParams({ grant_type: "authorization_code", code, redirect_uri: c.redirectUri });
        form.set("code_verifier", verifier);
        for (const [k, v] of Object.entries(creds)) form.set(k, v);
        const res = await fetch(`${server.url}/oidc/token`, {
          method: "POST",
          headers: {
            "content-type": "application/x-www-form-urlencoded",
            ...(authorization !== undefined && { authorization }),
          },
          body: form,
        });
        const text = await res.text();
        count("POST /oidc/token (client authentication)", res.status);
        const wrong = violation(tokenOp, { status: res.status, headers: res.headers, text }, undefined);
        if (wrong) throw new Error(`[${authorization}] ${form} -> ${wrong}`);
        // Every one of these is a refusal: a wrong secret must never redeem the code.
        if (res.status < 400) throw new Error(`[${authorization}] ${form} -> ${res.status} ${text.slice(0, 200)}`);
        // The other registered client with its own id and secret is authenticated, and the code
        // is not its own: invalid_grant (RFC 6749 section 5.2). Every other mix fails before that.
        const o = world.oidc.otherClient;
        const otherBasic = `Basic ${Buffer.from(`${encodeURIComponent(o.clientId)}:${encodeURIComponent(o.secret)}`).toString("base64")}`;
        const asOther =
          (authorization === otherBasic &&
            creds.client_secret === undefined &&
            (creds.client_id === undefined || creds.client_id === o.clientId)) ||
          (authorization === undefined && creds.client_id === o.clientId && creds.client_secret === o.secret);
        const error = res.status === 400 ? JSON.parse(text).error : null;
        if (asOther && error !== "invalid_grant")
          throw new Error(`[${authorization}] ${form} -> ${res.status} ${text.slice(0, 200)}, not invalid_grant`);
        if (!asOther && error === "invalid_grant")
          throw new Error(`[${authorization}] ${form} -> invalid_grant before the client was authenticated`);
      }),
      { numRuns: RUNS * 2, seed: SEED, endOnFailure: true },
    );
    // Nothing was written: the code is as it was, and its client still redeems it.
    expect(await grantOf()).toEqual(before);
    const res = await fetch(`${server.url}/oidc/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "authorization_code",
        code,
        redirect_uri: c.redirectUri,
        code_verifier: verifier,
        client_id: c.clientId,
        client_secret: c.secret,
      }),
    });
    expect(res.status).toBe(200);
  }, 120_000);

  test("status pages and their Host-header twins: hostile slugs, server ids, badge names, hosts and headers", async () => {
    const db = server.services.database.db;
    const rows = async () => [
      (await db.select({ id: loginRequests.id }).from(loginRequests)).length,
      (await db.select({ id: oidcGrants.id }).from(oidcGrants)).length,
    ];
    const before = await rows();
    const publishedSlug = async (segment: string) => {
      let slug: string;
      try {
        slug = decodeURIComponent(segment).toLowerCase();
      } catch {
        return false;
      }
      const found = await db
        .select({ id: statusPages.id })
        .from(statusPages)
        .where(and(eq(statusPages.slug, slug), eq(statusPages.published, true)));
      return found.length > 0;
    };
    await fc.assert(
      fc.asyncProperty(statusRequest(status), async (r) => {
        const res = await fetch(`${server.url}${r.path}`, { method: r.method, headers: r.headers, redirect: "manual" });
        const text = await res.text();
        count(`status pages (${r.route})`, res.status);
        const where = `${r.label} ${r.path.slice(0, 200)} ${JSON.stringify(r.headers).slice(0, 300)}`;
        const wrong = plainViolation(res, text);
        if (wrong) throw new Error(`${where} -> ${wrong}`);
        if (![200, 304, 400, 404].includes(res.status)) throw new Error(`${where} -> unexpected ${res.status}`);
        if (text.includes(status.hiddenTitle)) throw new Error(`${where} -> the unpublished page shows`);
        // A status route answers 200 for the published page only (a host's other paths are the service as usual).
        // Other files share this database and may publish a page whose slug the fuzzer happens to
        // generate ("c", say): a 200 for a slug is right exactly when some published page has it.
        if (res.status === 200 && !r.route.startsWith("host-") && !r.published && !(await publishedSlug(r.slug)))
          throw new Error(`${where} -> 200 for a page that is not the published one: ${text.slice(0, 200)}`);
        if (res.status === 200 && r.method === "GET" && r.published) {
          const type = res.headers.get("content-type") ?? "";
          const want =
            r.route.endsWith("page") || r.route === "host-root"
              ? "text/html"
              : r.route.endsWith("feed")
                ? "application/atom+xml"
                : "image/svg+xml";
          if (!type.startsWith(want)) throw new Error(`${where} -> 200 as ${type}`);
        }
        // The unpublished page's own address is a 404 page, not an error envelope.
        if (r.route === "page" && r.method === "GET" && r.slug === status.hiddenSlug && res.status !== 404)
          throw new Error(`${where} -> ${res.status} for the unpublished page`);
      }),
      { numRuns: RUNS * 8, seed: SEED, endOnFailure: true },
    );
    // Reading pages writes nothing (login requests and grants as witnesses).
    expect(await rows()).toEqual(before);
  }, 180_000);

  test("methods no route takes: a clean 404 or 405 with the request id, never a 5xx or a stack trace", async () => {
    const slug = status.slug;
    const problems: string[] = [];
    for (const [pattern, allowed] of Object.entries(OUTSIDE_ROUTES)) {
      const path = pattern.replace("{slug}", slug).replace("{server_id}", status.serverId);
      for (const method of ["GET", "POST", "PUT", "PATCH", "DELETE"].filter((m) => !allowed.includes(m))) {
        for (const [type, body] of [
          ["application/x-www-form-urlencoded", "a=1"],
          ["application/json", '{"a":1}'],
          ["text/plain", "\u0000"],
        ] as const) {
          const res = await fetch(`${server.url}${path}`, {
            method,
            headers: { "content-type": type, authorization: `Bearer ${owner(world).token}` },
            ...(method !== "GET" && { body }),
            redirect: "manual",
          });
          const text = await res.text();
          count(`${method} (no such route)`, res.status);
          const wrong =
            plainViolation(res, text) ?? (res.status === 404 || res.status === 405 ? null : `${res.status}`);
          if (wrong) problems.push(`${method} ${path} (${type}): ${wrong}`);
        }
      }
    }
    expect(problems).toEqual([]);
  }, 120_000);
});

afterAll(() => {
  const rows = [...tally].map(([key, t]) => ({
    operation: key,
    sent: t.sent,
    "2xx": t.ok,
    "3xx": t.redirect,
    "4xx": t.clientError,
  }));
  const total = rows.reduce((n, r) => n + r.sent, 0);
  console.log(
    `fuzz: ${total} requests over ${rows.length} operations (${VALID_RUNS} valid + ${HOSTILE_RUNS} hostile each, ${process.env.DATABASE_URL ? "PostgreSQL" : "PGlite"})`,
  );
  console.table(rows);
});
