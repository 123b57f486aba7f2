import { expect } from "bun:test";
import type { RunningServer } from "../src/app";
import { api, newTeam, newUser, type TestUser } from "./helpers";
import { decide, signIn } from "./ms-auth-helpers";

export interface OidcTestClient {
  owner: TestUser;
  clientId: string;
  secret: string;
  redirectUri: string;
}

/** A team with a client app that has OpenID Connect enabled (and no ms_auth module). */
export async function newOidcClient(
  server: RunningServer,
  opts: { redirectUris?: string[]; public?: boolean; alg?: "RS256" | "EdDSA"; owner?: TestUser } = {},
): Promise<OidcTestClient> {
  const owner = opts.owner ?? (await newUser(server, "oidcowner"));
  const teamId = await newTeam(server, owner);
  const created = await api(server, "POST", "/client/apps", {
    token: owner.token,
    body: { team_id: teamId, name: "website", title: "Blocky Website", description: "The Blocky community site." },
  });
  expect(created.status).toBe(201);
  const clientId = created.body.app.client_id as string;
  const redirectUris = opts.redirectUris ?? ["http://127.0.0.1:9/cb"];
  const enabled = await api(server, "POST", `/client/apps/${clientId}/modules/oidc`, {
    token: owner.token,
    body: {
      redirect_uris: redirectUris,
      ...(opts.public !== undefined && { public: opts.public }),
      ...(opts.alg && { id_token_signed_response_alg: opts.alg }),
    },
  });
  expect(enabled.status).toBe(200);
  return { owner, clientId, secret: created.body.client_secret, redirectUri: redirectUris[0]! };
}

/**
 * What the player's browser does with an authorization URL: our authorization endpoint, the
 * provider's page, our callback, the consent page, Approve (or Deny). Returns where the service
 * finally sends the browser (the relying party's redirect URI with code or error).
 */
export async function browserAuthorize(
  server: RunningServer,
  authorizationUrl: string,
  opts: { username?: string; decision?: "approve" | "deny" } = {},
): Promise<URL> {
  const first = await fetch(authorizationUrl, { redirect: "manual" });
  expect(first.status).toBe(303);
  const idpUrl = first.headers.get("location")!;
  const s = await signIn(server, idpUrl, { username: opts.username ?? "Steve" });
  expect(s.callback.status).toBe(200);
  const decided = await decide(server, s, opts.decision ?? "approve");
  expect(decided.status).toBe(303);
  return new URL(decided.headers.get("location")!);
}

export function tokenRequest(
  server: RunningServer,
  params: Record<string, string>,
  headers: Record<string, string> = {},
) {
  return fetch(`${server.url}/oidc/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams(params),
  });
}

export const basic = (id: string, secret: string) =>
  `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString("base64")}`;
