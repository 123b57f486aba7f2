import { expect } from "bun:test";
import type { RunningServer } from "../src/app";
import { api, newTeam, newUser, type TestUser } from "./helpers";

export interface ServerFixture {
  owner: TestUser;
  teamId: string;
  serverId: string;
  agentToken: string;
  /** Headers selecting this server, with the owner's token. */
  as(token?: string): { token: string; headers: Record<string, string> };
}

/** A new owner, team and registered server (by default on a loopback port that refuses at once). */
export async function newServer(
  server: RunningServer,
  body: Record<string, unknown> = {},
  owner?: TestUser,
): Promise<ServerFixture> {
  owner ??= await newUser(server, "srv");
  const teamId = await newTeam(server, owner);
  const res = await api(server, "POST", "/server/servers", {
    token: owner.token,
    body: { team_id: teamId, name: "Survival", host: "127.0.0.1", port: 9, kind: "single", ...body },
  });
  expect(`${res.status} ${res.text}`).toStartWith("201");
  return {
    owner,
    teamId,
    serverId: res.body.server_id,
    agentToken: res.body.agent_token,
    as: (token = owner!.token) => ({ token, headers: { "x-server-id": res.body.server_id } }),
  };
}

/** One agent request with the agent token. */
export const agentApi = (server: RunningServer, token: string, method: string, path: string, body?: unknown) =>
  api(server, method, path, { headers: { authorization: `Bearer ${token}` }, body });

let seq = 0;
export const eventId = () => `e-${Date.now().toString(36)}-${(seq++).toString(36)}`;
