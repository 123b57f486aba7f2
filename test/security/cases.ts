import type { RunningServer } from "../../src/app";
import type { Access } from "../../src/trpc/init";
import { api, type TestUser, uniqueEmail } from "../helpers";
import { addPasskey, SoftAuthenticator, totpCode } from "../two-factor-helpers";
import { ensureFactor, ensureTotp, roomForPasskey, withoutFactors, withoutTotp } from "./two-factor-state";
import type { People, TeamFixture } from "./fixture";

export interface Req {
  method: string;
  path: string;
  body?: unknown;
  headers?: Record<string, string>;
}

export interface SecurityCase {
  /** Must equal the procedure's declared access. */
  access: Exclude<Access, "public" | "client" | "agent">;
  /**
   * What a member of another team gets. 403 for routes addressed by team id; 404 for
   * resources addressed by their own id (a client, a server), which answer exactly as if
   * they did not exist.
   */
  outsider?: 403 | 404;
  /**
   * Builds a well-formed request against the fixture's team; async to create what it needs. `as`
   * is the person who will send it, where the request is about their own account (their
   * password, their factors); the owner when not given.
   */
  request(f: {
    server: RunningServer;
    people: People;
    team: TeamFixture;
    as?: TestUser;
    /** The authorization matrix's caller (`key:moderator`, ...), for requests about what the sender made. */
    caller?: string;
  }): Req | Promise<Req>;
}

/**
 * Every protected route, keyed `METHOD /openapi/path`. A procedure with a bearer-protected
 * access rule and no entry here fails the coverage test: new routes join by adding one.
 */
export const SECURITY_CASES: Record<string, SecurityCase> = {
  "GET /auth/me": { access: "user", request: () => ({ method: "GET", path: "/auth/me" }) },
  "GET /auth/two-factor": { access: "user", request: () => ({ method: "GET", path: "/auth/two-factor" }) },
  "POST /auth/two-factor/totp": {
    access: "user",
    request: async ({ server, people, as = people.owner }) => {
      await withoutTotp(server, as);
      return { method: "POST", path: "/auth/two-factor/totp", body: { password: as.password } };
    },
  },
  "POST /auth/two-factor/totp/confirm": {
    access: "user",
    // A pending secret of the sender's, and a right code from it.
    request: async ({ server, people, as = people.owner }) => {
      await withoutTotp(server, as);
      const setup = await api(server, "POST", "/auth/two-factor/totp", {
        token: as.token,
        body: { password: as.password },
      });
      return {
        method: "POST",
        path: "/auth/two-factor/totp/confirm",
        body: { code: await totpCode(setup.body.secret, -1) },
      };
    },
  },
  "POST /auth/two-factor/totp/remove": {
    access: "user",
    request: async ({ server, people, as = people.owner }) => {
      await ensureTotp(server, as);
      return { method: "POST", path: "/auth/two-factor/totp/remove", body: { password: as.password } };
    },
  },
  "POST /auth/two-factor/passkeys/options": {
    access: "user",
    request: ({ people, as = people.owner }) => ({
      method: "POST",
      path: "/auth/two-factor/passkeys/options",
      body: { password: as.password },
    }),
  },
  "POST /auth/two-factor/passkeys": {
    access: "user",
    // The registration answer of a software authenticator to the sender's own options.
    request: async ({ server, people, as = people.owner }) => {
      await roomForPasskey(server, as);
      const { options } = (
        await api(server, "POST", "/auth/two-factor/passkeys/options", {
          token: as.token,
          body: { password: as.password },
        })
      ).body;
      return {
        method: "POST",
        path: "/auth/two-factor/passkeys",
        body: { name: "Matrix key", response: new SoftAuthenticator(server.url).create(options) },
      };
    },
  },
  "POST /auth/two-factor/passkeys/{passkey_id}/remove": {
    access: "user",
    request: async ({ server, people, as = people.owner }) => {
      // Callers that are not the person (keys, clients, agents) leave the passkey made for them.
      await roomForPasskey(server, as);
      const { passkeyId } = await addPasskey(server, as);
      return {
        method: "POST",
        path: `/auth/two-factor/passkeys/${passkeyId}/remove`,
        body: { password: as.password },
      };
    },
  },
  "POST /auth/two-factor/recovery-codes": {
    access: "user",
    request: async ({ server, people, as = people.owner }) => {
      await ensureFactor(server, as);
      return { method: "POST", path: "/auth/two-factor/recovery-codes", body: { password: as.password } };
    },
  },
  "PUT /teams/{team_id}/two-factor": {
    access: "person:admin",
    // Turning the requirement off: allowed to any admin, and it locks no one out of the fixture.
    request: ({ team }) => ({ method: "PUT", path: `/teams/${team.teamId}/two-factor`, body: { required: false } }),
  },
  "GET /auth/sessions": { access: "user", request: () => ({ method: "GET", path: "/auth/sessions" }) },
  // A sign-in of the owner's, made for the call: the owner ends it; anyone else finds no such sign-in (404).
  "DELETE /auth/sessions/{session_id}": {
    access: "user",
    request: async ({ server, people }) => {
      // A password alone signs in only without a second factor: earlier cases may have left one.
      await withoutFactors(server, people.owner);
      const res = await fetch(`${server.url}/auth/login`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ email: people.owner.email, password: people.owner.password }),
      });
      const { access_token } = (await res.json()) as { access_token: string };
      const sid = (await server.services.tokens.verify(access_token))!.sid;
      return { method: "DELETE", path: `/auth/sessions/${sid}` };
    },
  },
  "POST /auth/sessions/revoke-others": {
    access: "user",
    request: () => ({ method: "POST", path: "/auth/sessions/revoke-others" }),
  },
  // Every test person has this password: the change keeps it, and ends the person's other sign-ins.
  "POST /auth/password": {
    access: "user",
    request: ({ people }) => ({
      method: "POST",
      path: "/auth/password",
      body: { current_password: people.owner.password, new_password: people.owner.password },
    }),
  },
  "POST /teams": { access: "user", request: () => ({ method: "POST", path: "/teams", body: { name: "x" } }) },
  "GET /teams": { access: "member", request: () => ({ method: "GET", path: "/teams" }) },
  "GET /teams/{team_id}": {
    access: "team:viewer",
    request: ({ team }) => ({ method: "GET", path: `/teams/${team.teamId}` }),
  },
  "PATCH /teams/{team_id}": {
    access: "team:admin",
    request: ({ team }) => ({ method: "PATCH", path: `/teams/${team.teamId}`, body: { name: "renamed" } }),
  },
  "DELETE /teams/{team_id}": {
    access: "team:owner",
    request: ({ team }) => ({ method: "DELETE", path: `/teams/${team.teamId}` }),
  },
  "GET /teams/{team_id}/members": {
    access: "team:viewer",
    request: ({ team }) => ({ method: "GET", path: `/teams/${team.teamId}/members` }),
  },
  "POST /teams/{team_id}/members": {
    access: "person:admin",
    request: ({ team, people }) => ({
      method: "POST",
      path: `/teams/${team.teamId}/members`,
      body: { email: people.outsider.email, role: "viewer" },
    }),
  },
  "GET /teams/{team_id}/invitations": {
    access: "team:admin",
    request: ({ team }) => ({ method: "GET", path: `/teams/${team.teamId}/invitations` }),
  },
  "DELETE /teams/{team_id}/invitations/{invitation_id}": {
    access: "person:admin",
    request: async (f) => {
      const made = await ownerCall(f, "POST", `/teams/${f.team.teamId}/members`, {
        email: uniqueEmail("revoked"),
        role: "viewer",
      });
      return { method: "DELETE", path: `/teams/${f.team.teamId}/invitations/${made.invitation_id}` };
    },
  },
  "PATCH /teams/{team_id}/members/{user_id}": {
    access: "person:admin",
    request: ({ team, people }) => ({
      method: "PATCH",
      path: `/teams/${team.teamId}/members/${people.viewer.id}`,
      body: { role: "viewer" },
    }),
  },
  "DELETE /teams/{team_id}/members/{user_id}": {
    access: "person:admin",
    request: ({ team, people }) => ({ method: "DELETE", path: `/teams/${team.teamId}/members/${people.admin.id}` }),
  },
  "POST /teams/{team_id}/transfer": {
    access: "person:owner",
    request: ({ team, people }) => ({
      method: "POST",
      path: `/teams/${team.teamId}/transfer`,
      body: { user_id: people.admin.id },
    }),
  },
  "POST /teams/{team_id}/api-keys": {
    access: "person:admin",
    request: ({ team }) => ({
      method: "POST",
      path: `/teams/${team.teamId}/api-keys`,
      body: { name: "k", role: "viewer" },
    }),
  },
  "GET /teams/{team_id}/api-keys": {
    access: "person:admin",
    request: ({ team }) => ({ method: "GET", path: `/teams/${team.teamId}/api-keys` }),
  },
  "DELETE /teams/{team_id}/api-keys/{key_id}": {
    access: "person:admin",
    request: async ({ server, team, people }) => {
      const res = await fetch(`${server.url}/teams/${team.teamId}/api-keys`, {
        method: "POST",
        headers: { authorization: `Bearer ${people.owner.token}`, "content-type": "application/json" },
        body: JSON.stringify({ name: "to revoke", role: "viewer" }),
      });
      const { api_key } = (await res.json()) as { api_key: { key_id: string } };
      return { method: "DELETE", path: `/teams/${team.teamId}/api-keys/${api_key.key_id}` };
    },
  },

  "GET /invitations": { access: "user", request: () => ({ method: "GET", path: "/invitations" }) },
  "POST /invitations/{invitation_id}/accept": {
    access: "invitee",
    outsider: 404,
    request: async (f) => ({ method: "POST", path: `/invitations/${await invitationToOwner(f)}/accept` }),
  },
  "POST /invitations/{invitation_id}/decline": {
    access: "invitee",
    outsider: 404,
    request: async (f) => ({ method: "POST", path: `/invitations/${await invitationToOwner(f)}/decline` }),
  },

  "POST /client/apps": {
    access: "team:admin",
    request: ({ team }) => ({
      method: "POST",
      path: "/client/apps",
      body: { team_id: team.teamId, name: "c", title: "t", description: "d" },
    }),
  },
  "GET /client/apps": {
    access: "team:viewer",
    request: ({ team }) => ({ method: "GET", path: `/client/apps?team_id=${team.teamId}` }),
  },
  "GET /client/apps/{client_id}": {
    access: "team:viewer",
    outsider: 404,
    request: async (f) => ({ method: "GET", path: `/client/apps/${await fixtureClient(f)}` }),
  },
  "PATCH /client/apps/{client_id}": {
    access: "team:admin",
    outsider: 404,
    request: async (f) => ({ method: "PATCH", path: `/client/apps/${await fixtureClient(f)}`, body: { title: "t2" } }),
  },
  "DELETE /client/apps/{client_id}": {
    access: "team:admin",
    outsider: 404,
    request: async (f) => ({ method: "DELETE", path: `/client/apps/${await fixtureClient(f)}` }),
  },
  "POST /client/apps/{client_id}/secret": {
    access: "team:admin",
    outsider: 404,
    request: async (f) => ({ method: "POST", path: `/client/apps/${await fixtureClient(f)}/secret` }),
  },
  "POST /client/apps/{client_id}/modules/ms-auth": {
    access: "team:admin",
    outsider: 404,
    request: async (f) => ({
      method: "POST",
      path: `/client/apps/${await fixtureClient(f)}/modules/ms-auth`,
      body: { post_login_redirect_uri: "https://l.example.com/cb" },
    }),
  },
  "GET /client/ms-auth/diagnostics": {
    access: "team:owner",
    outsider: 404,
    request: async (f) => ({
      method: "GET",
      path: `/client/ms-auth/diagnostics?client_id=${await fixtureClient(f, true)}&probe=false`,
    }),
  },
  "GET /client/apps/{client_id}/modules/ms-auth": {
    access: "team:viewer",
    outsider: 404,
    request: async (f) => ({ method: "GET", path: `/client/apps/${await fixtureClient(f, true)}/modules/ms-auth` }),
  },
  "DELETE /client/apps/{client_id}/modules/ms-auth": {
    access: "team:admin",
    outsider: 404,
    request: async (f) => ({ method: "DELETE", path: `/client/apps/${await fixtureClient(f, true)}/modules/ms-auth` }),
  },
  "POST /client/apps/{client_id}/modules/oidc": {
    access: "team:admin",
    outsider: 404,
    request: async (f) => ({
      method: "POST",
      path: `/client/apps/${await fixtureClient(f)}/modules/oidc`,
      body: { redirect_uris: ["https://site.example.com/cb"] },
    }),
  },
  "GET /client/apps/{client_id}/modules/oidc": {
    access: "team:viewer",
    outsider: 404,
    request: async (f) => ({ method: "GET", path: `/client/apps/${await fixtureClient(f, false, true)}/modules/oidc` }),
  },
  "DELETE /client/apps/{client_id}/modules/oidc": {
    access: "team:admin",
    outsider: 404,
    request: async (f) => ({
      method: "DELETE",
      path: `/client/apps/${await fixtureClient(f, false, true)}/modules/oidc`,
    }),
  },

  "POST /server/servers": {
    access: "team:admin",
    request: ({ team }) => ({
      method: "POST",
      path: "/server/servers",
      body: { team_id: team.teamId, name: "s", host: "127.0.0.1", port: 9, kind: "single" },
    }),
  },
  "GET /server/servers": {
    access: "team:viewer",
    request: ({ team }) => ({ method: "GET", path: "/server/servers", headers: { "x-team-id": team.teamId } }),
  },
  "GET /server/networks": {
    access: "team:viewer",
    request: ({ team }) => ({ method: "GET", path: "/server/networks", headers: { "x-team-id": team.teamId } }),
  },
  "GET /analytics/activity": {
    access: "team:viewer",
    request: async (f) => ({
      method: "GET",
      path: `/analytics/activity?server_id=${await fixtureServer(f)}`,
      headers: { "x-team-id": f.team.teamId },
    }),
  },
  "GET /analytics/retention": {
    access: "team:viewer",
    request: async (f) => ({
      method: "GET",
      path: `/analytics/retention?server_id=${await fixtureServer(f)}`,
      headers: { "x-team-id": f.team.teamId },
    }),
  },
  "GET /analytics/heatmap": {
    access: "team:viewer",
    request: async (f) => ({
      method: "GET",
      path: `/analytics/heatmap?server_id=${await fixtureServer(f)}`,
      headers: { "x-team-id": f.team.teamId },
    }),
  },
  "GET /analytics/session-lengths": {
    access: "team:viewer",
    request: async (f) => ({
      method: "GET",
      path: `/analytics/session-lengths?server_id=${await fixtureServer(f)}`,
      headers: { "x-team-id": f.team.teamId },
    }),
  },
  "GET /analytics/leaderboard": {
    access: "team:viewer",
    request: async (f) => ({
      method: "GET",
      path: `/analytics/leaderboard?server_id=${await fixtureServer(f)}`,
      headers: { "x-team-id": f.team.teamId },
    }),
  },
  "GET /analytics/peaks": {
    access: "team:viewer",
    request: async (f) => ({
      method: "GET",
      path: `/analytics/peaks?server_id=${await fixtureServer(f)}`,
      headers: { "x-team-id": f.team.teamId },
    }),
  },
  "GET /analytics/editions": {
    access: "team:viewer",
    request: async (f) => ({
      method: "GET",
      path: `/analytics/editions?server_id=${await fixtureServer(f)}`,
      headers: { "x-team-id": f.team.teamId },
    }),
  },
  "GET /server/servers/{server_id}": {
    access: "team:viewer",
    outsider: 404,
    request: async (f) => ({ method: "GET", path: `/server/servers/${await fixtureServer(f)}` }),
  },
  "PATCH /server/servers/{server_id}": {
    access: "team:admin",
    outsider: 404,
    request: async (f) => ({
      method: "PATCH",
      path: `/server/servers/${await fixtureServer(f)}`,
      body: { name: "renamed" },
    }),
  },
  "DELETE /server/servers/{server_id}": {
    access: "team:admin",
    outsider: 404,
    request: async (f) => ({ method: "DELETE", path: `/server/servers/${await fixtureServer(f)}` }),
  },
  "POST /server/servers/{server_id}/agent-token": {
    access: "team:admin",
    outsider: 404,
    request: async (f) => ({ method: "POST", path: `/server/servers/${await fixtureServer(f)}/agent-token` }),
  },
  "GET /server/uptime-stats": {
    access: "team:viewer",
    outsider: 404,
    request: (f) => serverReq(f, "GET", "/server/uptime-stats?window=1h"),
  },
  "GET /server/metrics": {
    access: "team:viewer",
    outsider: 404,
    request: (f) => serverReq(f, "GET", "/server/metrics?window=1h&metrics=players,online"),
  },
  "GET /server/players": {
    access: "team:viewer",
    outsider: 404,
    request: (f) => serverReq(f, "GET", "/server/players"),
  },
  "GET /server/players/sessions": {
    access: "team:viewer",
    outsider: 404,
    request: (f) => serverReq(f, "GET", "/server/players/sessions?limit=5"),
  },
  "GET /server/players/summary": {
    access: "team:viewer",
    outsider: 404,
    request: (f) => serverReq(f, "GET", "/server/players/summary?window=7d"),
  },
  // A profile exists once the player has been seen: the server's agent reports a join first.
  "GET /server/players/{uuid}": {
    access: "team:viewer",
    outsider: 404,
    request: async ({ server, people, team }) => {
      const created = (await fetch(`${server.url}/server/servers`, {
        method: "POST",
        headers: { authorization: `Bearer ${people.owner.token}`, "content-type": "application/json" },
        body: JSON.stringify({ team_id: team.teamId, name: "sec", host: "127.0.0.1", port: 9, kind: "single" }),
      }).then((r) => r.json())) as { server_id: string; agent_token: string };
      const uuid = crypto.randomUUID();
      await fetch(`${server.url}/agent/events`, {
        method: "POST",
        headers: { authorization: `Bearer ${created.agent_token}`, "content-type": "application/json" },
        body: JSON.stringify({ events: [{ event_id: `sec-${uuid}`, type: "join", uuid, name: "Steve" }] }),
      });
      return { method: "GET", path: `/server/players/${uuid}`, headers: { "x-server-id": created.server_id } };
    },
  },
  "POST /server/bans": {
    access: "team:moderator",
    outsider: 404,
    request: (f) => serverReq(f, "POST", "/server/bans", { uuid: crypto.randomUUID(), name: "Griefer" }),
  },
  "GET /players": {
    access: "team:viewer",
    request: ({ team }) => ({
      method: "GET",
      path: "/players?sort=name&limit=5",
      headers: { "x-team-id": team.teamId },
    }),
  },
  "GET /players/resolve": {
    access: "team:viewer",
    request: async (f) => {
      await seenPlayer(f, "Resolvable");
      return { method: "GET", path: "/players/resolve?name=resolvable", headers: { "x-team-id": f.team.teamId } };
    },
  },
  "GET /players/{uuid}": {
    access: "team:viewer",
    request: async (f) => ({
      method: "GET",
      path: `/players/${await seenPlayer(f)}`,
      headers: { "x-team-id": f.team.teamId },
    }),
  },
  "GET /players/{uuid}/sessions": {
    access: "team:viewer",
    request: async (f) => ({
      method: "GET",
      path: `/players/${await seenPlayer(f)}/sessions?limit=5`,
      headers: { "x-team-id": f.team.teamId },
    }),
  },
  "POST /players/{uuid}/notes": {
    access: "team:moderator",
    request: async (f) => ({
      method: "POST",
      path: `/players/${await seenPlayer(f)}/notes`,
      body: { text: "Warned in chat" },
      headers: { "x-team-id": f.team.teamId },
    }),
  },
  // The note is the sender's own where the sender may write one (its author may delete it).
  "DELETE /players/{uuid}/notes/{note_id}": {
    access: "team:moderator",
    request: async (f) => {
      const uuid = await seenPlayer(f);
      const byKey: Record<string, string | undefined> = {
        "key:moderator": f.team.keys.moderator,
        "key:admin": f.team.keys.admin,
        "key:scope": f.team.keys.scope,
      };
      // Without a caller (the security suite), the moderator its control sends as.
      const author =
        (f.as && f.as !== f.people.viewer && f.as !== f.people.outsider ? f.as.token : undefined) ??
        byKey[f.caller ?? ""] ??
        f.people.moderator.token;
      const res = await fetch(`${f.server.url}/players/${uuid}/notes`, {
        method: "POST",
        headers: { authorization: `Bearer ${author}`, "content-type": "application/json", "x-team-id": f.team.teamId },
        body: JSON.stringify({ text: "To delete" }),
      });
      const note = (await res.json()) as { note_id: string };
      return {
        method: "DELETE",
        path: `/players/${uuid}/notes/${note.note_id}`,
        headers: { "x-team-id": f.team.teamId },
      };
    },
  },
  "POST /server/kicks": {
    access: "team:moderator",
    outsider: 404,
    request: (f) => serverReq(f, "POST", "/server/kicks", { uuid: crypto.randomUUID(), name: "Griefer" }),
  },
  "DELETE /server/bans/{uuid}": {
    access: "team:moderator",
    outsider: 404,
    request: (f) =>
      serverReq(
        f,
        "DELETE",
        "/server/bans/{uuid}",
        undefined,
        async (post) => (await post("/server/bans", { uuid: crypto.randomUUID(), name: "Griefer" })).uuid,
      ),
  },
  "GET /server/ranks": { access: "team:viewer", outsider: 404, request: (f) => serverReq(f, "GET", "/server/ranks") },
  "POST /server/ranks": {
    access: "team:admin",
    outsider: 404,
    request: (f) => serverReq(f, "POST", "/server/ranks", { name: "vip", weight: 10 }),
  },
  "PATCH /server/ranks/{name}": {
    access: "team:admin",
    outsider: 404,
    request: (f) =>
      serverReq(
        f,
        "PATCH",
        "/server/ranks/{name}",
        { weight: 20 },
        async (post) => (await post("/server/ranks", { name: "vip" })).name,
      ),
  },
  "DELETE /server/ranks/{name}": {
    access: "team:admin",
    outsider: 404,
    request: (f) =>
      serverReq(
        f,
        "DELETE",
        "/server/ranks/{name}",
        undefined,
        async (post) => (await post("/server/ranks", { name: "vip" })).name,
      ),
  },
  "GET /server/networks/{network_name}": {
    access: "team:viewer",
    request: (f) => networkReq(f, "GET", ""),
  },
  "GET /server/networks/{network_name}/sessions": {
    access: "team:viewer",
    request: (f) => networkReq(f, "GET", "/sessions"),
  },
  "GET /server/networks/{network_name}/bans": {
    access: "team:viewer",
    request: (f) => networkReq(f, "GET", "/bans"),
  },
  "POST /server/networks/{network_name}/bans": {
    access: "team:moderator",
    request: (f) => networkReq(f, "POST", "/bans", { uuid: crypto.randomUUID(), name: "Griefer" }),
  },
  "DELETE /server/networks/{network_name}/bans/{uuid}": {
    access: "team:moderator",
    request: async (f) => {
      const uuid = crypto.randomUUID();
      return networkReq(f, "DELETE", `/bans/${uuid}`, undefined, { path: "/bans", body: { uuid, name: "Griefer" } });
    },
  },
  "GET /server/networks/{network_name}/ranks": {
    access: "team:viewer",
    request: (f) => networkReq(f, "GET", "/ranks"),
  },
  "POST /server/networks/{network_name}/ranks": {
    access: "team:admin",
    request: (f) => networkReq(f, "POST", "/ranks", { name: `vip-${crypto.randomUUID().slice(0, 8)}`, weight: 10 }),
  },
  "PUT /server/networks/{network_name}/ranks/{name}": {
    access: "team:admin",
    request: async (f) => {
      const name = `vip-${crypto.randomUUID().slice(0, 8)}`;
      return networkReq(f, "PUT", `/ranks/${name}`, { weight: 20 }, { path: "/ranks", body: { name } });
    },
  },
  "DELETE /server/networks/{network_name}/ranks/{name}": {
    access: "team:admin",
    request: async (f) => {
      const name = `vip-${crypto.randomUUID().slice(0, 8)}`;
      return networkReq(f, "DELETE", `/ranks/${name}`, undefined, { path: "/ranks", body: { name } });
    },
  },
  "GET /server/incidents": {
    access: "team:viewer",
    request: ({ team }) => ({ method: "GET", path: "/server/incidents", headers: { "x-team-id": team.teamId } }),
  },
  "GET /server/incidents/{incident_id}": {
    access: "team:viewer",
    request: async (f) => {
      const incident = await ownerPost(f, "/server/incidents", {
        server_id: await fixtureServer(f),
        title: "Sec",
        message: "m",
      });
      return {
        method: "GET",
        path: `/server/incidents/${incident.incident_id}`,
        headers: { "x-team-id": f.team.teamId },
      };
    },
  },
  "POST /server/incidents": {
    access: "team:admin",
    request: async (f) => ({
      method: "POST",
      path: "/server/incidents",
      body: { server_id: await fixtureServer(f), title: "Sec", message: "m" },
      headers: { "x-team-id": f.team.teamId },
    }),
  },
  "POST /server/incidents/{incident_id}/updates": {
    access: "team:admin",
    request: async (f) => {
      const incident = await ownerPost(f, "/server/incidents", {
        server_id: await fixtureServer(f),
        title: "Sec",
        message: "m",
      });
      return {
        method: "POST",
        path: `/server/incidents/${incident.incident_id}/updates`,
        body: { status: "monitoring", message: "m" },
        headers: { "x-team-id": f.team.teamId },
      };
    },
  },
  "GET /server/maintenance": {
    access: "team:viewer",
    request: ({ team }) => ({ method: "GET", path: "/server/maintenance", headers: { "x-team-id": team.teamId } }),
  },
  "GET /server/maintenance/upcoming": {
    access: "team:viewer",
    request: async (f) => ({
      method: "GET",
      path: `/server/maintenance/upcoming?server_id=${await fixtureServer(f)}`,
      headers: { "x-team-id": f.team.teamId },
    }),
  },
  "POST /server/maintenance": {
    access: "team:admin",
    request: async (f) => ({
      method: "POST",
      path: "/server/maintenance",
      body: { server_id: await fixtureServer(f), title: "Sec", schedule: "0 4 * * 1", duration_minutes: 30 },
      headers: { "x-team-id": f.team.teamId },
    }),
  },
  "PATCH /server/maintenance/{window_id}": {
    access: "team:admin",
    request: async (f) => {
      const w = await ownerPost(f, "/server/maintenance", {
        server_id: await fixtureServer(f),
        title: "Sec",
        schedule: "0 4 * * 1",
        duration_minutes: 30,
      });
      return {
        method: "PATCH",
        path: `/server/maintenance/${w.window_id}`,
        body: { title: "Sec 2" },
        headers: { "x-team-id": f.team.teamId },
      };
    },
  },
  "DELETE /server/maintenance/{window_id}": {
    access: "team:admin",
    request: async (f) => {
      const w = await ownerPost(f, "/server/maintenance", {
        server_id: await fixtureServer(f),
        title: "Sec",
        schedule: "0 4 * * 1",
        duration_minutes: 30,
      });
      return { method: "DELETE", path: `/server/maintenance/${w.window_id}`, headers: { "x-team-id": f.team.teamId } };
    },
  },
  "GET /server/announcements": {
    access: "team:viewer",
    outsider: 404,
    request: (f) => serverReq(f, "GET", "/server/announcements"),
  },
  "POST /server/announcements": {
    access: "team:moderator",
    outsider: 404,
    request: (f) => serverReq(f, "POST", "/server/announcements", { message: "Vote for us!", interval_seconds: 600 }),
  },
  "PATCH /server/announcements/{announcement_id}": {
    access: "team:moderator",
    outsider: 404,
    request: (f) =>
      serverReq(
        f,
        "PATCH",
        "/server/announcements/{announcement_id}",
        { active: false },
        async (post) => (await post("/server/announcements", { message: "Hi", interval_seconds: 600 })).announcement_id,
      ),
  },
  "DELETE /server/announcements/{announcement_id}": {
    access: "team:moderator",
    outsider: 404,
    request: (f) =>
      serverReq(
        f,
        "DELETE",
        "/server/announcements/{announcement_id}",
        undefined,
        async (post) => (await post("/server/announcements", { message: "Hi", interval_seconds: 600 })).announcement_id,
      ),
  },
  "POST /teams/{team_id}/webhooks": {
    access: "team:admin",
    request: async (f) => {
      await trimWebhooks(f);
      return { method: "POST", path: `/teams/${f.team.teamId}/webhooks`, body: { url: hookUrl() } };
    },
  },
  "GET /teams/{team_id}/webhooks": {
    access: "team:viewer",
    request: ({ team }) => ({ method: "GET", path: `/teams/${team.teamId}/webhooks` }),
  },
  "GET /teams/{team_id}/webhooks/{endpoint_id}": {
    access: "team:viewer",
    request: async (f) => ({ method: "GET", path: await webhookPath(f) }),
  },
  "PATCH /teams/{team_id}/webhooks/{endpoint_id}": {
    access: "team:admin",
    request: async (f) => ({ method: "PATCH", path: await webhookPath(f), body: { description: "patched" } }),
  },
  "DELETE /teams/{team_id}/webhooks/{endpoint_id}": {
    access: "team:admin",
    request: async (f) => ({ method: "DELETE", path: await webhookPath(f, true) }),
  },
  "POST /teams/{team_id}/webhooks/{endpoint_id}/secret": {
    access: "team:admin",
    request: async (f) => ({ method: "POST", path: `${await webhookPath(f)}/secret`, body: { overlap_seconds: 60 } }),
  },
  "POST /teams/{team_id}/webhooks/{endpoint_id}/resume": {
    access: "team:admin",
    request: async (f) => ({ method: "POST", path: `${await webhookPath(f)}/resume` }),
  },
  "GET /teams/{team_id}/webhooks/{endpoint_id}/deliveries": {
    access: "team:viewer",
    request: async (f) => ({ method: "GET", path: `${await webhookPath(f)}/deliveries` }),
  },
  "POST /teams/{team_id}/webhooks/{endpoint_id}/deliveries/{delivery_id}/redeliver": {
    access: "team:admin",
    request: async (f) => {
      const path = await webhookPath(f);
      const test = await ownerCall(f, "POST", `${path}/test`);
      return { method: "POST", path: `${path}/deliveries/${test.delivery_id}/redeliver` };
    },
  },
  "GET /teams/{team_id}/alert-rules": {
    access: "team:viewer",
    request: ({ team }) => ({ method: "GET", path: `/teams/${team.teamId}/alert-rules` }),
  },
  "POST /teams/{team_id}/alert-rules": {
    access: "team:admin",
    request: async (f) => ({
      method: "POST",
      path: `/teams/${f.team.teamId}/alert-rules`,
      body: await alertRuleBody(f),
    }),
  },
  "GET /teams/{team_id}/alert-rules/{rule_id}": {
    access: "team:viewer",
    request: async (f) => ({ method: "GET", path: await alertRulePath(f) }),
  },
  "PATCH /teams/{team_id}/alert-rules/{rule_id}": {
    access: "team:admin",
    request: async (f) => ({ method: "PATCH", path: await alertRulePath(f), body: { name: "patched" } }),
  },
  "DELETE /teams/{team_id}/alert-rules/{rule_id}": {
    access: "team:admin",
    request: async (f) => ({ method: "DELETE", path: await alertRulePath(f, true) }),
  },
  "GET /teams/{team_id}/audit": {
    access: "team:admin",
    request: ({ team }) => ({ method: "GET", path: `/teams/${team.teamId}/audit?action=member.add&limit=5` }),
  },
  "GET /players/{uuid}/export": {
    access: "team:admin",
    request: ({ team }) => ({
      method: "GET",
      path: `/players/${crypto.randomUUID()}/export`,
      headers: { "x-team-id": team.teamId },
    }),
  },
  "POST /players/{uuid}/erase": {
    access: "team:admin",
    request: ({ team }) => ({
      method: "POST",
      path: `/players/${crypto.randomUUID()}/erase`,
      headers: { "x-team-id": team.teamId },
    }),
  },
  "GET /teams/{team_id}/opt-outs": {
    access: "team:moderator",
    request: ({ team }) => ({ method: "GET", path: `/teams/${team.teamId}/opt-outs` }),
  },
  "POST /teams/{team_id}/opt-outs": {
    access: "team:moderator",
    request: ({ team }) => ({
      method: "POST",
      path: `/teams/${team.teamId}/opt-outs`,
      body: { uuid: crypto.randomUUID(), name: "Quiet" },
    }),
  },
  "DELETE /teams/{team_id}/opt-outs/{uuid}": {
    access: "team:admin",
    // A player on the list, added by the owner, so the request finds something to remove.
    request: async ({ server, people, team }) => {
      const uuid = crypto.randomUUID();
      await api(server, "POST", `/teams/${team.teamId}/opt-outs`, { token: people.owner.token, body: { uuid } });
      return { method: "DELETE", path: `/teams/${team.teamId}/opt-outs/${uuid}` };
    },
  },
  "GET /teams/{team_id}/privacy": {
    access: "team:viewer",
    request: ({ team }) => ({ method: "GET", path: `/teams/${team.teamId}/privacy` }),
  },
  "PUT /teams/{team_id}/privacy": {
    access: "team:admin",
    request: ({ team }) => ({
      method: "PUT",
      path: `/teams/${team.teamId}/privacy`,
      body: { session_retention_days: 30 },
    }),
  },
  "POST /teams/{team_id}/webhooks/{endpoint_id}/test": {
    access: "team:admin",
    request: async (f) => ({ method: "POST", path: `${await webhookPath(f)}/test` }),
  },
  "POST /teams/{team_id}/status-pages": {
    access: "team:admin",
    request: async (f) => {
      await trimStatusPages(f);
      return {
        method: "POST",
        path: `/teams/${f.team.teamId}/status-pages`,
        body: { slug: `sec-${crypto.randomUUID()}`, title: "Security" },
      };
    },
  },
  "GET /teams/{team_id}/status-pages": {
    access: "team:viewer",
    request: ({ team }) => ({ method: "GET", path: `/teams/${team.teamId}/status-pages` }),
  },
  "GET /teams/{team_id}/status-pages/{page_id}": {
    access: "team:viewer",
    request: async (f) => ({ method: "GET", path: await statusPagePath(f) }),
  },
  "PATCH /teams/{team_id}/status-pages/{page_id}": {
    access: "team:admin",
    request: async (f) => ({ method: "PATCH", path: await statusPagePath(f), body: { title: "Patched" } }),
  },
  "POST /teams/{team_id}/status-pages/{page_id}/publish": {
    access: "team:admin",
    request: async (f) => ({ method: "POST", path: `${await statusPagePath(f)}/publish` }),
  },
  "POST /teams/{team_id}/status-pages/{page_id}/unpublish": {
    access: "team:admin",
    request: async (f) => ({ method: "POST", path: `${await statusPagePath(f)}/unpublish` }),
  },
  "DELETE /teams/{team_id}/status-pages/{page_id}": {
    access: "team:admin",
    request: async (f) => ({ method: "DELETE", path: await statusPagePath(f, true) }),
  },
};

type Fixture = Parameters<SecurityCase["request"]>[0];

/** A fresh server in the fixture team, registered by its owner (on a loopback port that refuses, so pings end at once). */
/** A player the fixture team has seen: a fresh server of the team whose agent reports a join. */
async function seenPlayer(f: Fixture, name = "Steve"): Promise<string> {
  const created = (await fetch(`${f.server.url}/server/servers`, {
    method: "POST",
    headers: { authorization: `Bearer ${f.people.owner.token}`, "content-type": "application/json" },
    body: JSON.stringify({ team_id: f.team.teamId, name: "sec", host: "127.0.0.1", port: 9, kind: "single" }),
  }).then((r) => r.json())) as { agent_token: string };
  const uuid = crypto.randomUUID();
  await fetch(`${f.server.url}/agent/events`, {
    method: "POST",
    headers: { authorization: `Bearer ${created.agent_token}`, "content-type": "application/json" },
    body: JSON.stringify({ events: [{ event_id: `sec-${uuid}`, type: "join", uuid, name }] }),
  });
  return uuid;
}

async function fixtureServer({ server, people, team }: Fixture): Promise<string> {
  const res = await fetch(`${server.url}/server/servers`, {
    method: "POST",
    headers: { authorization: `Bearer ${people.owner.token}`, "content-type": "application/json" },
    body: JSON.stringify({ team_id: team.teamId, name: "sec", host: "127.0.0.1", port: 9, kind: "single" }),
  });
  return ((await res.json()) as { server_id: string }).server_id;
}

/** A POST to an `x-team-id` route as the fixture team's owner (to create what a case's path names). */
async function ownerPost(f: Fixture, path: string, body: unknown): Promise<any> {
  const res = await fetch(f.server.url + path, {
    method: "POST",
    headers: {
      authorization: `Bearer ${f.people.owner.token}`,
      "content-type": "application/json",
      "x-team-id": f.team.teamId,
    },
    body: JSON.stringify(body),
  });
  return res.json();
}

/**
 * A request to an `x-server-id` route on a fresh fixture server. `setup` may create the
 * resource the path names (as the owner) and returns the value for its `{param}`.
 */
async function serverReq(
  f: Fixture,
  method: string,
  path: string,
  body?: unknown,
  setup?: (post: (p: string, b: unknown) => Promise<any>) => Promise<string>,
): Promise<Req> {
  const serverId = await fixtureServer(f);
  const headers = { "x-server-id": serverId };
  const post = (p: string, b: unknown) =>
    fetch(f.server.url + p, {
      method: "POST",
      headers: { ...headers, authorization: `Bearer ${f.people.owner.token}`, "content-type": "application/json" },
      body: JSON.stringify(b),
    }).then((r) => r.json() as Promise<any>);
  const param = setup ? await setup(post) : undefined;
  return {
    method,
    path: param === undefined ? path : path.replace(/\{\w+\}/, encodeURIComponent(param)),
    body,
    headers,
  };
}

/**
 * A request to a route of the fixture team's network "Sec net / 1" (a server of it registered
 * first, by the owner), with `first` made there by the owner before (a ban, a rank to act on).
 */
async function networkReq(
  f: Fixture,
  method: string,
  rest: string,
  body?: unknown,
  first?: { path: string; body: unknown },
): Promise<Req> {
  const network = "Sec net / 1";
  const owner = { authorization: `Bearer ${f.people.owner.token}`, "content-type": "application/json" };
  await fetch(`${f.server.url}/server/servers`, {
    method: "POST",
    headers: owner,
    body: JSON.stringify({
      team_id: f.team.teamId,
      name: "sec",
      host: "127.0.0.1",
      port: 9,
      kind: "network",
      network_name: network,
    }),
  });
  const base = `/server/networks/${encodeURIComponent(network)}`;
  const headers = { "x-team-id": f.team.teamId };
  if (first)
    await fetch(f.server.url + base + first.path, {
      method: "POST",
      headers: { ...owner, ...headers },
      body: JSON.stringify(first.body),
    });
  return { method, path: base + rest, body, headers };
}

/** A fresh client in the fixture team (created by its owner), with ms_auth when asked. */
async function fixtureClient(
  { server, people, team }: Parameters<SecurityCase["request"]>[0],
  withModule = false,
  withOidc = false,
): Promise<string> {
  const post = (path: string, body: unknown) =>
    fetch(server.url + path, {
      method: "POST",
      headers: { authorization: `Bearer ${people.owner.token}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    }).then((r) => r.json() as Promise<any>);
  const created = await post("/client/apps", {
    team_id: team.teamId,
    name: "sec",
    title: "Sec",
    description: "security fixture",
  });
  if (withModule)
    await post(`/client/apps/${created.app.client_id}/modules/ms-auth`, {
      post_login_redirect_uri: "https://l.example.com/cb",
    });
  if (withOidc)
    await post(`/client/apps/${created.app.client_id}/modules/oidc`, {
      redirect_uris: ["https://site.example.com/cb"],
    });
  return created.app.client_id;
}

async function ownerCall(f: Fixture, method: string, path: string, body?: unknown) {
  const res = await fetch(`${f.server.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${f.people.owner.token}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return res.json() as Promise<Record<string, any>>;
}

/**
 * A pending invitation to the fixture's owner (the invitee every `invitee` case is sent for),
 * from the outsider's team; one already pending there is revoked first, as each call needs a
 * fresh one.
 */
async function invitationToOwner({ server, people, team }: Fixture): Promise<string> {
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await api(server, method, path, { token: people.outsider.token, body });
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${res.text}`);
    return res.body;
  };
  const base = `/teams/${team.otherTeamId}`;
  const { invitations } = await call("GET", `${base}/invitations`);
  for (const i of invitations as { invitation_id: string; email: string }[])
    if (i.email === people.owner.email) await call("DELETE", `${base}/invitations/${i.invitation_id}`);
  return (await call("POST", `${base}/members`, { email: people.owner.email, role: "viewer" })).invitation_id;
}

const kept = new Map<string, string>();

/** A URL of its own for each endpoint: a team may not have two endpoints with the same URL. */
const hookUrl = () => `https://hooks.invalid/in/${crypto.randomUUID()}`;

/** Keeps the fixture team well under its endpoint limit, however many cells create one. */
async function trimWebhooks(f: Fixture) {
  const { endpoints } = await ownerCall(f, "GET", `/teams/${f.team.teamId}/webhooks`);
  const extra = (endpoints as { endpoint_id: string }[]).filter((e) => e.endpoint_id !== kept.get(f.team.teamId));
  for (const e of extra.slice(0, Math.max(0, extra.length - 8)))
    await ownerCall(f, "DELETE", `/teams/${f.team.teamId}/webhooks/${e.endpoint_id}`);
}

/** The path of a webhook endpoint of the fixture team: one kept for reads and writes, or a fresh one to delete. */
/** A TPS rule on the fixture team's own server (one server per team, kept). */
const alertServers = new Map<string, Promise<string>>();
async function alertRuleBody(f: Fixture) {
  const id = alertServers.get(f.team.teamId) ?? fixtureServer(f);
  alertServers.set(f.team.teamId, id);
  return { name: "sec", server_id: await id, metric: "tps", op: "below", threshold: 15 };
}

const keptRules = new Map<string, string>();
async function alertRulePath(f: Fixture, fresh = false): Promise<string> {
  const base = `/teams/${f.team.teamId}/alert-rules`;
  if (!fresh && keptRules.has(f.team.teamId)) return `${base}/${keptRules.get(f.team.teamId)}`;
  const created = await ownerCall(f, "POST", base, await alertRuleBody(f));
  if (!fresh) keptRules.set(f.team.teamId, created.id);
  return `${base}/${created.id}`;
}

async function webhookPath(f: Fixture, fresh = false): Promise<string> {
  const base = `/teams/${f.team.teamId}/webhooks`;
  if (!fresh && kept.has(f.team.teamId)) return `${base}/${kept.get(f.team.teamId)}`;
  await trimWebhooks(f);
  const created = await ownerCall(f, "POST", base, { url: hookUrl() });
  if (!fresh) kept.set(f.team.teamId, created.endpoint.endpoint_id);
  return `${base}/${created.endpoint.endpoint_id}`;
}

const keptPages = new Map<string, string>();

/** Keeps the fixture team well under its status page limit, however many cells create one. */
async function trimStatusPages(f: Fixture) {
  const { pages } = await ownerCall(f, "GET", `/teams/${f.team.teamId}/status-pages`);
  const extra = (pages as { page_id: string }[]).filter((p) => p.page_id !== keptPages.get(f.team.teamId));
  for (const p of extra.slice(0, Math.max(0, extra.length - 8)))
    await ownerCall(f, "DELETE", `/teams/${f.team.teamId}/status-pages/${p.page_id}`);
}

/** The path of a status page of the fixture team: one kept for reads and writes, or a fresh one to delete. */
async function statusPagePath(f: Fixture, fresh = false): Promise<string> {
  const base = `/teams/${f.team.teamId}/status-pages`;
  if (!fresh && keptPages.has(f.team.teamId)) return `${base}/${keptPages.get(f.team.teamId)}`;
  await trimStatusPages(f);
  const created = await ownerCall(f, "POST", base, { slug: `sec-${crypto.randomUUID()}`, title: "Security" });
  if (!fresh) keptPages.set(f.team.teamId, created.page_id);
  return `${base}/${created.page_id}`;
}
