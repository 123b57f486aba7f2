import type { RunningServer } from "../../src/app";
import { addMember, api, newApiKey, newTeam, newUser, type TestUser } from "../helpers";

export interface People {
  owner: TestUser;
  admin: TestUser;
  viewer: TestUser;
  /** Owns a team of their own, belongs to nothing else. */
  outsider: TestUser;
}

export interface TeamFixture {
  teamId: string;
  otherTeamId: string;
  keys: { viewer: string; admin: string; revoked: string; otherTeamAdmin: string };
}

export async function makePeople(server: RunningServer): Promise<People> {
  const [owner, admin, viewer, outsider] = await Promise.all([
    newUser(server, "owner"),
    newUser(server, "admin"),
    newUser(server, "viewer"),
    newUser(server, "outsider"),
  ]);
  return { owner: owner!, admin: admin!, viewer: viewer!, outsider: outsider! };
}

/** A team with one member of each role and API keys of each kind, plus the outsider's team. */
export async function makeTeam(server: RunningServer, p: People): Promise<TeamFixture> {
  const teamId = await newTeam(server, p.owner);
  await addMember(server, p.owner, teamId, p.admin, "admin");
  await addMember(server, p.owner, teamId, p.viewer, "viewer");
  const otherTeamId = await newTeam(server, p.outsider);
  const [viewer, admin, revoked, otherTeamAdmin] = await Promise.all([
    newApiKey(server, p.owner, teamId, "viewer"),
    newApiKey(server, p.owner, teamId, "admin"),
    newApiKey(server, p.owner, teamId, "admin"),
    newApiKey(server, p.outsider, otherTeamId, "admin"),
  ]);
  const res = await api(server, "DELETE", `/teams/${teamId}/api-keys/${revoked!.id}`, { token: p.owner.token });
  if (res.status !== 200) throw new Error(`revoking fixture key failed: ${res.status}`);
  return {
    teamId,
    otherTeamId,
    keys: { viewer: viewer!.key, admin: admin!.key, revoked: revoked!.key, otherTeamAdmin: otherTeamAdmin!.key },
  };
}
