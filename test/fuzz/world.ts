import type { RunningServer } from "../../src/app";
import { api, newUser, type TestUser } from "../helpers";
import { fullLogin, start, type TestClient } from "../ms-auth-helpers";
import { browserAuthorize } from "../oidc-helpers";
import { enableTotp } from "../two-factor-helpers";
import { makePeople, makeTeam, type People, type TeamFixture } from "../security/fixture";

export interface TestGameServer {
  serverId: string;
  agentToken: string;
}

/**
 * Everything a request may need a real id or credential for, so generated requests get past
 * the first lookup and into the code behind it: the security suite's people and team, a client
 * with ms_auth in that team (and one in the outsider's team), a server with its agent token,
 * a pending login request and a completed login's session token.
 */
export interface World {
  server: RunningServer;
  people: People;
  team: TeamFixture;
  client: TestClient;
  otherClient: TestClient;
  gameServer: TestGameServer;
  /** started, never signed in: poll answers `pending` */
  pendingRequestId: string;
  /** the completed login behind `sessionToken` */
  authorizedRequestId: string;
  sessionToken: string;
  /** signs in only for /auth/refresh and /auth/logout, so rotating its tokens disturbs nobody */
  sessionUser: TestUser;
  /** has an authenticator app: its sign-ins answer a challenge; unused recovery codes to complete them */
  twoFactorUser: TestUser & { recoveryCodes: string[] };
  /** every API key the fixture team had before the fuzzer started */
  keyIds: string[];
  /** signed by the server's own key two hours ago with a one-minute life */
  expiredToken: string;
  /** the `state` of another started login, as the identity provider would send it back */
  callbackState: string;
  rankName: string;
  /** a player the agent reported joining: the team's directory has them */
  playerUuid: string;
  /** a note on that player */
  noteId: string;
  announcementId: string;
  bannedUuid: string;
  /** "Sign in with Minecraft": a confidential OpenID Connect client in the fixture team, one in the outsider's */
  oidc: OidcWorld;
}

export interface OidcClientFixture {
  clientId: string;
  secret: string;
  redirectUri: string;
}

export interface OidcWorld {
  client: OidcClientFixture;
  otherClient: OidcClientFixture;
  /** a live access token of `client` (userinfo answers for it), and one of `otherClient` */
  accessToken: string;
  otherAccessToken: string;
  /** a fresh authorization code of the client (a whole browser sign-in and consent) with its PKCE verifier */
  code(c?: OidcClientFixture, username?: string): Promise<{ code: string; verifier: string }>;
}

/** OpenID Connect enabled on a client app of the team, confidential, with one registered redirect URI. */
async function oidcClientIn(server: RunningServer, owner: TestUser, teamId: string): Promise<OidcClientFixture> {
  const created = await post(server, owner.token, "/client/apps", {
    team_id: teamId,
    name: "website",
    title: "Blocky Website",
    description: "The Blocky community site.",
  });
  const redirectUri = "http://127.0.0.1:9/cb";
  await post(server, owner.token, `/client/apps/${created.app.client_id}/modules/oidc`, {
    redirect_uris: [redirectUri],
  });
  return { clientId: created.app.client_id, secret: created.client_secret, redirectUri };
}

/** What a relying party and a player's browser do: authorize with PKCE, sign in, approve; the code comes back. */
export async function oidcCode(
  server: RunningServer,
  c: OidcClientFixture,
  username = "Steve",
): Promise<{ code: string; verifier: string }> {
  const verifier = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64url");
  const challenge = new Bun.CryptoHasher("sha256").update(verifier).digest("base64url");
  const params = new URLSearchParams({
    response_type: "code",
    client_id: c.clientId,
    redirect_uri: c.redirectUri,
    scope: "openid profile",
    state: "world",
    nonce: "world",
    code_challenge: challenge,
    code_challenge_method: "S256",
  });
  const back = await browserAuthorize(server, `${server.url}/oidc/authorize?${params}`, { username });
  const code = back.searchParams.get("code");
  if (!code) throw new Error(`fixture authorization code: ${back}`);
  return { code, verifier };
}

/** Redeems a code at the token endpoint with client_secret_basic; the access token. */
export async function oidcRedeem(server: RunningServer, c: OidcClientFixture, code: string, verifier: string) {
  const res = await fetch(`${server.url}/oidc/token`, {
    method: "POST",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      authorization: `Basic ${Buffer.from(`${encodeURIComponent(c.clientId)}:${encodeURIComponent(c.secret)}`).toString("base64")}`,
    },
    body: new URLSearchParams({
      grant_type: "authorization_code",
      code,
      redirect_uri: c.redirectUri,
      code_verifier: verifier,
    }),
  });
  const body = (await res.json()) as { access_token?: string };
  if (res.status !== 200 || !body.access_token) throw new Error(`fixture token: ${res.status} ${JSON.stringify(body)}`);
  return body.access_token;
}

async function post(
  server: RunningServer,
  token: string,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
) {
  const res = await api(server, "POST", path, { token, body, headers });
  if (res.status !== 200 && res.status !== 201) throw new Error(`fixture ${path}: ${res.status} ${res.text}`);
  return res.body;
}

/** A client application with ms_auth in the given team, created by one of its admins. */
export async function clientIn(server: RunningServer, owner: TestUser, teamId: string): Promise<TestClient> {
  const redirectUri = "com.example.launcher:/callback";
  const created = await post(server, owner.token, "/client/apps", {
    team_id: teamId,
    name: "launcher",
    title: "Blocky Launcher",
    description: "Play on Blocky servers.",
  });
  await post(server, owner.token, `/client/apps/${created.app.client_id}/modules/ms-auth`, {
    post_login_redirect_uri: redirectUri,
  });
  return { owner, teamId, clientId: created.app.client_id, secret: created.client_secret, redirectUri };
}

/** A registered server in the given team, on a loopback port that refuses at once. */
export async function gameServerIn(server: RunningServer, owner: TestUser, teamId: string): Promise<TestGameServer> {
  const created = await post(server, owner.token, "/server/servers", {
    team_id: teamId,
    name: "Survival",
    host: "127.0.0.1",
    port: 9,
    kind: "single",
  });
  return { serverId: created.server_id, agentToken: created.agent_token };
}

export async function makeWorld(server: RunningServer): Promise<World> {
  const people = await makePeople(server);
  const team = await makeTeam(server, people);
  const [client, otherClient, gameServer, sessionUser, twoFactorUser, oidcClient, oidcOther] = await Promise.all([
    clientIn(server, people.owner, team.teamId),
    clientIn(server, people.outsider, team.otherTeamId),
    gameServerIn(server, people.owner, team.teamId),
    newUser(server, "session"),
    newUser(server, "two-factor"),
    oidcClientIn(server, people.owner, team.teamId),
    oidcClientIn(server, people.outsider, team.otherTeamId),
  ]);
  const mine = await oidcCode(server, oidcClient, "Steve");
  const theirs = await oidcCode(server, oidcOther, "Alex");
  const { recoveryCodes } = await enableTotp(server, twoFactorUser);
  const login = await fullLogin(server, client);
  const pending = await start(server, client, "fuzz");
  const forCallback = await start(server, client, "callback");
  // Something for the list endpoints to return, so their 200 bodies have rows to check.
  const selected = { "x-server-id": gameServer.serverId };
  const rank = await post(
    server,
    people.owner.token,
    "/server/ranks",
    { name: "default", permissions: ["essentials.spawn"] },
    selected,
  );
  const announcement = await post(
    server,
    people.owner.token,
    "/server/announcements",
    { message: "Vote for us!", interval_seconds: 600 },
    selected,
  );
  const ban = await post(
    server,
    people.owner.token,
    "/server/bans",
    { uuid: crypto.randomUUID(), name: "Griefer", reason: "griefing" },
    selected,
  );
  const playerUuid = crypto.randomUUID();
  await post(server, gameServer.agentToken, "/agent/events", {
    events: [{ event_id: "world-1", type: "join", uuid: playerUuid, name: "Steve" }],
  });
  const note = await post(
    server,
    people.owner.token,
    `/players/${playerUuid}/notes`,
    { text: "Warned in chat" },
    {
      "x-team-id": team.teamId,
    },
  );
  await post(server, gameServer.agentToken, "/agent/heartbeat", {
    tps: 20,
    mspt: 12,
    players_online: 1,
    memory_used_mb: 1024,
    memory_max_mb: 4096,
  });
  const keys = await api(server, "GET", `/teams/${team.teamId}/api-keys`, { token: people.owner.token });
  const expiredToken = await server.services.tokens.sign(
    people.owner.id,
    (await server.services.tokens.verify(people.owner.token))!.sid,
    Math.floor(Date.now() / 1000) - 7200,
    60,
  );
  return {
    server,
    people,
    team,
    client,
    otherClient,
    gameServer,
    pendingRequestId: pending.auth_request_id,
    authorizedRequestId: login.id,
    sessionToken: login.token,
    sessionUser,
    twoFactorUser: { ...twoFactorUser, recoveryCodes },
    expiredToken,
    keyIds: keys.body.api_keys.map((k: { key_id: string }) => k.key_id),
    callbackState: new URL(forCallback.auth_url).searchParams.get("state")!,
    rankName: rank.name,
    announcementId: announcement.announcement_id,
    bannedUuid: ban.uuid,
    playerUuid,
    noteId: note.note_id,
    oidc: {
      client: oidcClient,
      otherClient: oidcOther,
      accessToken: await oidcRedeem(server, oidcClient, mine.code, mine.verifier),
      otherAccessToken: await oidcRedeem(server, oidcOther, theirs.code, theirs.verifier),
      code: (c = oidcClient, username = "Steve") => oidcCode(server, c, username),
    },
  };
}
