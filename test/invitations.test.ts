import { beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import type { RunningServer } from "../src/app";
import { teamInvitations, teamMembers } from "../src/db/schema";
import { LIMITS } from "../src/lib/limits";
import { sharedServer, startTestServer } from "./harness";
import { api, expectError, invite, newApiKey, newTeam, newUser, uniqueEmail, type TestUser } from "./helpers";

let server: RunningServer;
beforeAll(async () => {
  server = await sharedServer();
});

const teamIds = async (srv: RunningServer, u: TestUser) =>
  (await api(srv, "GET", "/teams", { token: u.token })).body.teams.map((t: { team_id: string }) => t.team_id);
const mine = async (srv: RunningServer, u: TestUser) =>
  (await api(srv, "GET", "/invitations", { token: u.token })).body.invitations as {
    invitation_id: string;
    team_id: string;
    team_name: string;
    role: string;
    status: string;
    invited_by: string | null;
  }[];
const accept = (srv: RunningServer, u: TestUser, id: string) =>
  api(srv, "POST", `/invitations/${id}/accept`, { token: u.token });

describe("team invitations", () => {
  test("the finding: an account adding a victim to all its teams fills nothing of theirs until they accept", async () => {
    const attacker = await newUser(server, "attacker");
    const victim = await newUser(server, "victim");
    const ids: string[] = [];
    for (let i = 0; i < LIMITS.teamsPerUser; i++) {
      const teamId = await newTeam(server, attacker, `Pay to ${i}`);
      ids.push(await invite(server, attacker, teamId, victim.email, "viewer"));
    }
    // Nothing changed for the victim: no team in their list, their own team creation works.
    expect(await teamIds(server, victim)).toEqual([]);
    expect((await api(server, "GET", "/auth/me", { token: victim.token })).body.teams).toEqual([]);
    const own = await newTeam(server, victim, "Mine");
    expect(await teamIds(server, victim)).toEqual([own]);
    const memberships = await server.services.database.db
      .select({ teamId: teamMembers.teamId })
      .from(teamMembers)
      .where(eq(teamMembers.userId, victim.id));
    expect(memberships).toEqual([{ teamId: own }]);
    // They are offered, and choose: accepting counts against their cap then, and past it is refused.
    expect((await mine(server, victim)).length).toBe(LIMITS.invitationsListed);
    for (const id of ids.slice(0, LIMITS.teamsPerUser - 1)) expect((await accept(server, victim, id)).status).toBe(200);
    expect((await teamIds(server, victim)).length).toBe(LIMITS.teamsPerUser);
    const over = expectError(await accept(server, victim, ids.at(-1)!), 409, "conflict");
    expect(over.details).toEqual({ limit: LIMITS.teamsPerUser });
    expect((await teamIds(server, victim)).length).toBe(LIMITS.teamsPerUser);
    // Refused, not consumed: the invitation is still there to accept after leaving a team.
    expect((await mine(server, victim)).map((i) => i.invitation_id)).toEqual([ids.at(-1)!]);
  }, 120_000);

  test("ownership cannot go to someone only invited", async () => {
    const owner = await newUser(server);
    const invitee = await newUser(server);
    const teamId = await newTeam(server, owner);
    await invite(server, owner, teamId, invitee.email, "admin");
    expectError(
      await api(server, "POST", `/teams/${teamId}/transfer`, { token: owner.token, body: { user_id: invitee.id } }),
      404,
      "not_found",
    );
    const members = await api(server, "GET", `/teams/${teamId}/members`, { token: owner.token });
    expect(members.body.members.map((m: { user_id: string; role: string }) => [m.user_id, m.role])).toEqual([
      [owner.id, "owner"],
    ]);
    expectError(await api(server, "GET", `/teams/${teamId}`, { token: invitee.token }), 403, "forbidden");
  });

  test("an email with no account is invited; whoever signs up with it sees the invitation and can accept", async () => {
    const owner = await newUser(server, "inviter");
    const teamId = await newTeam(server, owner, "Blockworks");
    const email = uniqueEmail("later");
    const made = await api(server, "POST", `/teams/${teamId}/members`, {
      token: owner.token,
      body: { email, role: "admin" },
    });
    expect(made.status).toBe(201);
    expect(made.body).toEqual({
      invitation_id: expect.any(String),
      team_id: teamId,
      team_name: "Blockworks",
      email,
      role: "admin",
      status: "pending",
      invited_by: owner.email,
      created_at: expect.any(String),
      expires_at: expect.any(String),
    });
    // Seven days by default.
    const days = (Date.parse(made.body.expires_at) - Date.parse(made.body.created_at)) / 86_400_000;
    expect(days).toBe(7);
    const listed = await api(server, "GET", `/teams/${teamId}/invitations`, { token: owner.token });
    expect(listed.body.invitations).toEqual([made.body]);

    const signup = await api(server, "POST", "/auth/signup", { body: { email, password: "correct horse battery" } });
    expect(signup.status).toBe(201);
    const login = await api(server, "POST", "/auth/login", { body: { email, password: "correct horse battery" } });
    const later: TestUser = { ...signup.body, email, password: "", token: login.body.access_token, refresh: "" };
    expect(await mine(server, later)).toEqual([made.body]);
    expect(await teamIds(server, later)).toEqual([]);
    const joined = await accept(server, later, made.body.invitation_id);
    expect(joined.body).toMatchObject({ team_id: teamId, name: "Blockworks", role: "admin" });
    expect(await teamIds(server, later)).toEqual([teamId]);
    expect(await mine(server, later)).toEqual([]);
    expect((await api(server, "GET", `/teams/${teamId}/invitations`, { token: owner.token })).body.invitations).toEqual(
      [],
    );
  });

  test("only the invitee may accept or decline; declined and revoked invitations are gone", async () => {
    const owner = await newUser(server);
    const invitee = await newUser(server);
    const stranger = await newUser(server);
    const teamId = await newTeam(server, owner);
    const key = await newApiKey(server, owner, teamId, "admin");
    const id = await invite(server, owner, teamId, invitee.email, "viewer");
    for (const who of [stranger, owner])
      for (const action of ["accept", "decline"])
        expectError(await api(server, "POST", `/invitations/${id}/${action}`, { token: who.token }), 404, "not_found");
    expectError(await api(server, "POST", `/invitations/${id}/accept`, { token: key.key }), 403, "forbidden");
    expectError(await api(server, "GET", "/invitations", { token: key.key }), 403, "forbidden");
    expect(await mine(server, stranger)).toEqual([]);
    // Nobody else's attempt used it up.
    expect((await mine(server, invitee)).map((i) => i.invitation_id)).toEqual([id]);
    expect((await api(server, "POST", `/invitations/${id}/decline`, { token: invitee.token })).body).toEqual({
      ok: true,
    });
    expectError(await accept(server, invitee, id), 404, "not_found");
    expect(await teamIds(server, invitee)).toEqual([]);

    // Invited again, then revoked by the team before an answer.
    const again = await invite(server, owner, teamId, invitee.email, "admin");
    expectError(
      await api(server, "DELETE", `/teams/${teamId}/invitations/${again}`, { token: key.key }),
      403,
      "forbidden",
    );
    const revoked = await api(server, "DELETE", `/teams/${teamId}/invitations/${again}`, { token: owner.token });
    expect(revoked.body).toEqual({ ok: true });
    expectError(
      await api(server, "DELETE", `/teams/${teamId}/invitations/${again}`, { token: owner.token }),
      404,
      "not_found",
    );
    expectError(await accept(server, invitee, again), 404, "not_found");
    expect(await mine(server, invitee)).toEqual([]);
    expect(await teamIds(server, invitee)).toEqual([]);
  });

  test("a team has at most the allowed pending invitations out; revoking one makes room", async () => {
    const owner = await newUser(server);
    const teamId = await newTeam(server, owner);
    const ids: string[] = [];
    for (let i = 0; i < LIMITS.pendingInvitationsPerTeam; i++)
      ids.push(await invite(server, owner, teamId, uniqueEmail("cap"), "viewer"));
    const refused = expectError(
      await api(server, "POST", `/teams/${teamId}/members`, {
        token: owner.token,
        body: { email: uniqueEmail("cap"), role: "viewer" },
      }),
      409,
      "conflict",
    );
    expect(refused.details).toEqual({ limit: LIMITS.pendingInvitationsPerTeam });
    await api(server, "DELETE", `/teams/${teamId}/invitations/${ids[0]}`, { token: owner.token });
    await invite(server, owner, teamId, uniqueEmail("cap"), "viewer");
  }, 60_000);
});

describe("invitation expiry and the per-inviter limit (own server: INVITATION_TTL_HOURS=1, INVITATIONS_PER_HOUR=3)", () => {
  let srv: RunningServer;
  beforeAll(async () => {
    srv = await startTestServer({ INVITATION_TTL_HOURS: "1", INVITATIONS_PER_HOUR: "3" });
  });

  test("an expired invitation cannot be accepted (409 invitation_expired); inviting again replaces it", async () => {
    const owner = await newUser(srv);
    const invitee = await newUser(srv);
    const teamId = await newTeam(srv, owner);
    const id = await invite(srv, owner, teamId, invitee.email, "viewer");
    expect((await mine(srv, invitee)).map((i) => i.status)).toEqual(["pending"]);
    srv.services.clock.advance(3600_000 + 1000);
    expect(await mine(srv, invitee)).toEqual([]);
    expectError(await accept(srv, invitee, id), 409, "invitation_expired");
    expect(await teamIds(srv, invitee)).toEqual([]);
    const listed = await api(srv, "GET", `/teams/${teamId}/invitations`, { token: owner.token });
    expect(listed.body.invitations.map((i: { status: string }) => i.status)).toEqual(["expired"]);

    const again = await invite(srv, owner, teamId, invitee.email, "admin");
    const rows = await srv.services.database.db
      .select({ id: teamInvitations.id })
      .from(teamInvitations)
      .where(eq(teamInvitations.teamId, teamId));
    expect(rows).toEqual([{ id: again }]);
    expect((await accept(srv, invitee, again)).body).toMatchObject({ team_id: teamId, role: "admin" });
  });

  test("each person may send only so many invitations an hour: then 429 with Retry-After", async () => {
    const owner = await newUser(srv);
    const teamId = await newTeam(srv, owner);
    for (let i = 0; i < 3; i++) await invite(srv, owner, teamId, uniqueEmail("limited"), "viewer");
    const res = await api(srv, "POST", `/teams/${teamId}/members`, {
      token: owner.token,
      body: { email: uniqueEmail("limited"), role: "viewer" },
    });
    const err = expectError(res, 429, "rate_limited");
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(err.details).toMatchObject({ limit: 3, window_seconds: 3600 });
    // Refused before any write.
    const rows = await srv.services.database.db
      .select({ id: teamInvitations.id })
      .from(teamInvitations)
      .where(eq(teamInvitations.teamId, teamId));
    expect(rows.length).toBe(3);
    // Per inviter: someone else still invites.
    const other = await newUser(srv);
    const otherTeam = await newTeam(srv, other);
    await invite(srv, other, otherTeam, uniqueEmail("limited"), "viewer");
  });
});
