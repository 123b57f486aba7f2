import { eq } from "drizzle-orm";
import type { RunningServer } from "../../src/app";
import { apiKeys } from "../../src/db/schema";
import { addMember, api, newApiKey, newTeam, newUser, type TestUser } from "../helpers";

export interface People {
  owner: TestUser;
  admin: TestUser;
  moderator: TestUser;
  viewer: TestUser;
  /** Owns a team of their own, belongs to nothing else. */
  outsider: TestUser;
}

export interface TeamFixture {
  teamId: string;
  otherTeamId: string;
  keys: {
    viewer: string;
    moderator: string;
    admin: string;
    revoked: string;
    /** An admin key whose expiry has passed. */
    expired: string;
    otherTeamAdmin: string;
    /** Set by the authorization matrix per route: a key holding only the route's scope... */
    scope?: string;
    /** ...and one holding every other scope. */
    otherScopes?: string;
  };
}

export async function makePeople(server: RunningServer): Promise<People> {
  const [owner, admin, moderator, viewer, outsider] = await Promise.all([
    newUser(server, "owner"),
    newUser(server, "admin"),
    newUser(server, "moderator"),
    newUser(server, "viewer"),
    newUser(server, "outsider"),
  ]);
  return { owner: owner!, admin: admin!, moderator: moderator!, viewer: viewer!, outsider: outsider! };
}

/** A team with one member of each role and API keys of each kind, plus the outsider's team. */
export async function makeTeam(server: RunningServer, p: People): Promise<TeamFixture> {
  const teamId = await newTeam(server, p.owner);
  await addMember(server, p.owner, teamId, p.admin, "admin");
  await addMember(server, p.owner, teamId, p.moderator, "moderator");
  await addMember(server, p.owner, teamId, p.viewer, "viewer");
  const otherTeamId = await newTeam(server, p.outsider);
  const [viewer, moderator, admin, revoked, expired, otherTeamAdmin] = await Promise.all([
    newApiKey(server, p.owner, teamId, "viewer"),
    newApiKey(server, p.owner, teamId, "moderator"),
    newApiKey(server, p.owner, teamId, "admin"),
    newApiKey(server, p.owner, teamId, "admin"),
    newApiKey(server, p.owner, teamId, "admin"),
    newApiKey(server, p.outsider, otherTeamId, "admin"),
  ]);
  const res = await api(server, "DELETE", `/teams/${teamId}/api-keys/${revoked!.id}`, { token: p.owner.token });
  if (res.status !== 200) throw new Error(`revoking fixture key failed: ${res.status}`);
  // A key cannot be made already expired through the API: its expiry is moved into the past here.
  await server.services.database.db
    .update(apiKeys)
    .set({ expiresAt: new Date(Date.now() - 60_000) })
    .where(eq(apiKeys.id, expired!.id));
  return {
    teamId,
    otherTeamId,
    keys: {
      viewer: viewer!.key,
      moderator: moderator!.key,
      admin: admin!.key,
      revoked: revoked!.key,
      expired: expired!.key,
      otherTeamAdmin: otherTeamAdmin!.key,
    },
  };
}
