import { SCOPE_NAMES } from "../../src/auth/scopes";
import type { Access } from "../../src/trpc/init";
import type { RestRoute } from "../../src/trpc/rest";
import { api, uniqueEmail } from "../helpers";
import { fullLogin } from "../ms-auth-helpers";
import type { Req, SecurityCase } from "../security/cases";
import type { TeamFixture } from "../security/fixture";
import type { World } from "../fuzz/world";

export const CALLERS = [
  "anonymous",
  "outsider",
  "viewer",
  "moderator",
  "admin",
  "owner",
  "key:viewer",
  "key:moderator",
  "key:admin",
  /** A scoped key holding only the route's own scope (every scope, for a route that names none). */
  "key:scope",
  /** A scoped key holding every scope but the route's own. */
  "key:other-scopes",
  "agent",
  "client",
  "client:other",
  "client:mismatched",
] as const;
export type Caller = (typeof CALLERS)[number];

const KNOWN_ACCESS: readonly Access[] = [
  "public",
  "user",
  "member",
  "team:viewer",
  "team:moderator",
  "team:admin",
  "team:owner",
  "person:admin",
  "person:owner",
  "invitee",
  "client",
  "agent",
];

/** A request that carries client credentials in its body (client_id, client_secret). */
export interface CellReq extends Req {
  clientCreds?: boolean;
}

export interface Expected {
  status: number;
  code?: string;
  /** what a 200 must also show for this caller */
  body?: Record<string, unknown>;
}

/**
 * The credential each caller kind holds, put where that caller would put it: a bearer header,
 * or the body's client_secret on client-credential routes (a person pasting their token there
 * is still not a client). Anonymous sends no credential at all.
 */
export function present(caller: Caller, req: CellReq, w: World, team: TeamFixture): CellReq {
  const bearer: Partial<Record<Caller, string>> = {
    outsider: w.people.outsider.token,
    viewer: w.people.viewer.token,
    moderator: w.people.moderator.token,
    admin: w.people.admin.token,
    owner: w.people.owner.token,
    "key:viewer": team.keys.viewer,
    "key:moderator": team.keys.moderator,
    "key:admin": team.keys.admin,
    "key:scope": team.keys.scope,
    "key:other-scopes": team.keys.otherScopes,
    agent: w.gameServer.agentToken,
    client: w.client.secret,
    "client:other": w.otherClient.secret,
    "client:mismatched": w.otherClient.secret,
  };
  if (!req.clientCreds) {
    const token = bearer[caller];
    return { ...req, headers: { ...req.headers, ...(token ? { authorization: `Bearer ${token}` } : {}) } };
  }
  const body = { ...(req.body as Record<string, unknown>) };
  const headers = { ...req.headers };
  if (caller === "anonymous") delete body.client_secret;
  else if (caller === "client") Object.assign(body, { client_id: w.client.clientId, client_secret: w.client.secret });
  else if (caller === "client:other")
    Object.assign(body, { client_id: w.otherClient.clientId, client_secret: w.otherClient.secret });
  else if (caller === "client:mismatched")
    Object.assign(body, { client_id: w.client.clientId, client_secret: w.otherClient.secret });
  else {
    body.client_secret = bearer[caller];
    headers.authorization = `Bearer ${bearer[caller]}`;
  }
  return { ...req, body, headers };
}

const ROLE_RANK = { viewer: 1, moderator: 2, admin: 3, owner: 4 } as const;
type MatrixRole = keyof typeof ROLE_RANK;
const roleOf = (c: Caller): MatrixRole | undefined =>
  c === "viewer" || c === "key:viewer"
    ? "viewer"
    : c === "moderator" || c === "key:moderator"
      ? "moderator"
      : c === "admin" || c === "key:admin"
        ? "admin"
        : c === "owner"
          ? "owner"
          : undefined;
const scopedKey = (c: Caller) => c === "key:scope" || c === "key:other-scopes";
const PEOPLE: readonly Caller[] = ["outsider", "viewer", "moderator", "admin", "owner"];

/** Scoped keys for a route: one holding only its scope (all scopes when it names none), one holding all the others. */
export function scopeSets(scope: string | undefined): { own: string[]; others: string[] } {
  const others = SCOPE_NAMES.filter((s) => s !== scope);
  return { own: scope ? [scope] : [...SCOPE_NAMES], others };
}

/** What an allowed answer must also show, by the caller's role, where roles see different things. */
const BODY_BY_ROLE: Record<string, (role: MatrixRole) => Record<string, unknown>> = {
  // A webhook URL is a credential for many receivers (Discord, Slack): masked below admin.
  "GET /teams/{team_id}/webhooks/{endpoint_id}": (role) => ({ url_masked: ROLE_RANK[role] < ROLE_RANK.admin }),
};

/** Routes whose answer for a caller is not what the access alone says. */
const BY_ROUTE: Record<string, (caller: Caller) => Expected | undefined> = {
  // The builder makes a sign-in of the owner's: anyone else's request finds no such sign-in.
  "DELETE /auth/sessions/{session_id}": (c) =>
    c !== "owner" && PEOPLE.includes(c) ? { status: 404, code: "not_found" } : undefined,
};

const unauthenticated: Expected = { status: 401, code: "unauthenticated" };
const forbidden: Expected = { status: 403, code: "forbidden" };

/** What the project's rules say a caller gets from a route, from its declared access alone. */
export function expected(route: RestRoute, caller: Caller, outsider: 403 | 404 = 403): Expected {
  const key = `${route.method} ${route.path}`;
  const access = route.access;
  if (!access || !KNOWN_ACCESS.includes(access))
    throw new Error(`${key} declares access ${access ?? "(none)"}: the matrix cannot say who may call it`);
  const bearerHolder = roleOf(caller) !== undefined || caller === "outsider" || scopedKey(caller);
  const special = BY_ROUTE[key]?.(caller);
  if (special) return special;
  // An allowed call answers the route's declared success status (201 for a create).
  const ok = (body?: Record<string, unknown>): Expected => ({ status: route.status, ...(body && { body }) });
  switch (access) {
    case "public":
      return ok();
    case "agent":
      return caller === "agent" ? ok() : unauthenticated;
    case "client":
      // Another client's credentials are good credentials: they start that client's own login,
      // and reach nothing of this client (poll 404, validate {valid:false}, revoke a no-op).
      if (caller === "client") return ok();
      if (caller === "anonymous") return { status: 400, code: "validation_failed" };
      if (caller === "client:other") {
        if (key === "POST /client/ms-auth/poll") return { status: 404, code: "not_found" };
        if (key === "POST /client/ms-auth/session/validate") return ok({ valid: false });
        return ok();
      }
      // A person's access token is longer than any client secret may be (256), so it fails
      // validation before the lookup; API keys and agent tokens fit and are simply wrong.
      if (PEOPLE.includes(caller)) return { status: 400, code: "validation_failed" };
      return { status: 401, code: "invalid_client" };
    case "user":
      if (!bearerHolder) return unauthenticated;
      return caller.startsWith("key:") ? forbidden : ok();
    case "member":
      if (caller === "key:other-scopes") return forbidden;
      return bearerHolder ? ok() : unauthenticated;
    case "invitee":
      // The builders address each invitation to the owner person; to anyone else it does not exist.
      if (!bearerHolder) return unauthenticated;
      if (caller.startsWith("key:")) return forbidden;
      return caller === "owner" ? ok() : { status: 404, code: "not_found" };
    default: {
      if (!bearerHolder) return unauthenticated;
      // A scoped key calls exactly the routes whose scope it holds, with the role the route needs.
      if (scopedKey(caller)) {
        if (caller === "key:other-scopes" || !route.scope || !access.startsWith("team:")) return forbidden;
        const need = access.slice(access.indexOf(":") + 1) as MatrixRole;
        return ok(BODY_BY_ROLE[key]?.(need));
      }
      // A person-only route refuses every API key before looking at its team or role.
      if (access.startsWith("person:") && caller.startsWith("key:")) return forbidden;
      if (caller === "outsider") return outsider === 403 ? forbidden : { status: 404, code: "not_found" };
      const need = access.slice(access.indexOf(":") + 1) as MatrixRole;
      const role = roleOf(caller)!;
      return ROLE_RANK[role] >= ROLE_RANK[need] ? ok(BODY_BY_ROLE[key]?.(role)) : forbidden;
    }
  }
}

type Builder = (w: World, team: TeamFixture, caller?: Caller) => CellReq | Promise<CellReq>;

/** The person a caller is, for requests about the sender's own account. */
const personOf = (caller: Caller | undefined, w: World) =>
  caller === "outsider" || caller === "viewer" || caller === "moderator" || caller === "admin" || caller === "owner"
    ? w.people[caller]
    : undefined;

const creds = (w: World) => ({ client_id: w.client.clientId, client_secret: w.client.secret });

/** Requests for the routes the security suite does not cover: public, client and agent ones. */
export const EXTRA_BUILDERS: Record<string, Builder> = {
  "GET /health": () => ({ method: "GET", path: "/health" }),
  "POST /auth/signup": () => ({
    method: "POST",
    path: "/auth/signup",
    body: { email: uniqueEmail("matrix"), password: "correct horse battery" },
  }),
  "POST /auth/login": (w) => ({
    method: "POST",
    path: "/auth/login",
    body: { email: w.sessionUser.email, password: w.sessionUser.password },
  }),
  // A challenge of its own per cell (each is single use), answered with a recovery code.
  "POST /auth/login/second-factor": async (w) => {
    const u = w.twoFactorUser;
    if (u.recoveryCodes.length === 0)
      u.recoveryCodes = (
        await api(w.server, "POST", "/auth/two-factor/recovery-codes", {
          token: u.token,
          body: { password: u.password },
        })
      ).body.recovery_codes;
    const challenge = await api(w.server, "POST", "/auth/login", {
      body: { email: w.twoFactorUser.email, password: w.twoFactorUser.password },
    });
    return {
      method: "POST",
      path: "/auth/login/second-factor",
      body: { challenge_token: challenge.body.challenge_token, recovery_code: w.twoFactorUser.recoveryCodes.pop() },
    };
  },
  "POST /auth/refresh": async (w) => ({
    method: "POST",
    path: "/auth/refresh",
    body: { refresh_token: await refreshToken(w) },
  }),
  "POST /auth/logout": async (w) => ({
    method: "POST",
    path: "/auth/logout",
    body: { refresh_token: await refreshToken(w) },
  }),
  "POST /client/ms-auth/start": (w) => ({
    method: "POST",
    path: "/client/ms-auth/start",
    clientCreds: true,
    body: { ...creds(w), client_state: "matrix" },
  }),
  "POST /client/ms-auth/poll": (w) => ({
    method: "POST",
    path: "/client/ms-auth/poll",
    clientCreds: true,
    body: { ...creds(w), auth_request_id: w.pendingRequestId },
  }),
  "POST /client/ms-auth/session/validate": (w) => ({
    method: "POST",
    path: "/client/ms-auth/session/validate",
    clientCreds: true,
    body: { ...creds(w), svc_session_token: w.sessionToken },
  }),
  // A session of its own per cell: the right client's revoke ends it.
  "POST /client/ms-auth/session/revoke": async (w) => ({
    method: "POST",
    path: "/client/ms-auth/session/revoke",
    clientCreds: true,
    body: { ...creds(w), svc_session_token: (await fullLogin(w.server, w.client)).token },
  }),
  "POST /agent/heartbeat": () => ({ method: "POST", path: "/agent/heartbeat", body: { tps: 19.9, players_online: 1 } }),
  "POST /agent/events": () => ({
    method: "POST",
    path: "/agent/events",
    body: {
      events: [{ event_id: `matrix-${crypto.randomUUID()}`, type: "join", uuid: crypto.randomUUID(), name: "Steve" }],
    },
  }),
  "GET /agent/config": () => ({ method: "GET", path: "/agent/config" }),
  // A published page of the fixture team, made once: anyone reads its widget.
  "GET /status-pages/{slug}/widget": async (w) => ({
    method: "GET",
    path: `/status-pages/${await publishedSlug(w)}/widget`,
  }),
};

let published: Promise<string> | undefined;
function publishedSlug(w: World): Promise<string> {
  published ??= (async () => {
    const slug = `matrix-${crypto.randomUUID()}`;
    const res = await api(w.server, "POST", `/teams/${w.team.teamId}/status-pages`, {
      token: w.people.owner.token,
      body: { slug, title: "Matrix", published: true },
    });
    if (res.status !== 201) throw new Error(`creating the matrix's status page failed: ${res.status} ${res.text}`);
    return slug;
  })();
  return published;
}

async function refreshToken(w: World): Promise<string> {
  const res = await api(w.server, "POST", "/auth/login", {
    body: { email: w.sessionUser.email, password: w.sessionUser.password },
  });
  return res.body.refresh_token;
}

export function builderFor(key: string, cases: Record<string, SecurityCase>, w: World): Builder | undefined {
  const c = cases[key];
  if (c)
    return (_w, team, caller) =>
      c.request({ server: w.server, people: w.people, team, as: personOf(caller, w), caller });
  return EXTRA_BUILDERS[key];
}
