import { beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import type { RunningServer } from "../src/app";
import { apiKeys } from "../src/db/schema";
import { sha256 } from "../src/lib/secrets";
import { sharedServer } from "./harness";
import { addMember, api, expectError, newApiKey, newTeam, newUser, trpcClient } from "./helpers";

let server: RunningServer;
beforeAll(async () => {
  server = await sharedServer();
});

describe("teams", () => {
  test("the creator owns a new team and sees it in their list", async () => {
    const u = await newUser(server);
    const res = await api(server, "POST", "/teams", { token: u.token, body: { name: "  Blocky Builders  " } });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      team_id: expect.any(String),
      name: "Blocky Builders",
      role: "owner",
      require_two_factor: false,
      time_zone: "UTC",
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    const list = await api(server, "GET", "/teams", { token: u.token });
    expect(list.body.teams.map((t: any) => [t.team_id, t.role])).toEqual([[res.body.team_id, "owner"]]);
  });

  test("admins rename, only the owner deletes, and a deleted team is gone", async () => {
    const owner = await newUser(server);
    const admin = await newUser(server);
    const teamId = await newTeam(server, owner);
    await addMember(server, owner, teamId, admin, "admin");
    const renamed = await api(server, "PATCH", `/teams/${teamId}`, { token: admin.token, body: { name: "Renamed" } });
    expect(renamed.body.name).toBe("Renamed");
    expectError(await api(server, "DELETE", `/teams/${teamId}`, { token: admin.token }), 403, "forbidden");
    expect((await api(server, "DELETE", `/teams/${teamId}`, { token: owner.token })).body).toEqual({ ok: true });
    expectError(await api(server, "GET", `/teams/${teamId}`, { token: owner.token }), 403, "forbidden");
  });

  test("members: invited by email, accepted, change role, remove; the owner cannot be demoted or removed", async () => {
    const owner = await newUser(server);
    const member = await newUser(server);
    const teamId = await newTeam(server, owner);
    const invited = await api(server, "POST", `/teams/${teamId}/members`, {
      token: owner.token,
      body: { email: member.email.toUpperCase(), role: "viewer" },
    });
    expect(invited.status).toBe(201);
    expect(invited.body).toMatchObject({ email: member.email, role: "viewer", status: "pending", team_id: teamId });
    expectError(
      await api(server, "POST", `/teams/${teamId}/members`, {
        token: owner.token,
        body: { email: member.email, role: "admin" },
      }),
      409,
      "conflict",
    );
    expectError(
      await api(server, "POST", `/teams/${teamId}/members`, {
        token: owner.token,
        body: { email: member.email, role: "owner" },
      }),
      400,
      "validation_failed",
    );
    const accepted = await api(server, "POST", `/invitations/${invited.body.invitation_id}/accept`, {
      token: member.token,
    });
    expect(accepted.body).toMatchObject({ team_id: teamId, role: "viewer" });
    expectError(
      await api(server, "POST", `/teams/${teamId}/members`, {
        token: owner.token,
        body: { email: member.email, role: "viewer" },
      }),
      409,
      "conflict",
    );
    const promoted = await api(server, "PATCH", `/teams/${teamId}/members/${member.id}`, {
      token: owner.token,
      body: { role: "admin" },
    });
    expect(promoted.body.role).toBe("admin");
    expectError(
      await api(server, "PATCH", `/teams/${teamId}/members/${owner.id}`, {
        token: member.token,
        body: { role: "viewer" },
      }),
      409,
      "conflict",
    );
    expectError(
      await api(server, "DELETE", `/teams/${teamId}/members/${owner.id}`, { token: member.token }),
      409,
      "conflict",
    );
    expect((await api(server, "DELETE", `/teams/${teamId}/members/${member.id}`, { token: owner.token })).status).toBe(
      200,
    );
    const members = await api(server, "GET", `/teams/${teamId}/members`, { token: owner.token });
    expect(members.body.members.map((m: any) => m.user_id)).toEqual([owner.id]);
  });

  test("a viewer can leave a team on their own", async () => {
    const owner = await newUser(server);
    const viewer = await newUser(server);
    const teamId = await newTeam(server, owner);
    await addMember(server, owner, teamId, viewer, "viewer");
    expect((await api(server, "DELETE", `/teams/${teamId}/members/${viewer.id}`, { token: viewer.token })).status).toBe(
      200,
    );
    expectError(await api(server, "GET", `/teams/${teamId}`, { token: viewer.token }), 403);
  });

  test("ownership transfer makes the member owner and the old owner admin", async () => {
    const owner = await newUser(server);
    const next = await newUser(server);
    const teamId = await newTeam(server, owner);
    await addMember(server, owner, teamId, next, "viewer");
    const res = await api(server, "POST", `/teams/${teamId}/transfer`, {
      token: owner.token,
      body: { user_id: next.id },
    });
    expect(res.status).toBe(200);
    const roles = Object.fromEntries(res.body.members.map((m: any) => [m.user_id, m.role]));
    expect(roles).toEqual({ [owner.id]: "admin", [next.id]: "owner" });
    expectError(await api(server, "DELETE", `/teams/${teamId}`, { token: owner.token }), 403);
    expectError(
      await api(server, "POST", `/teams/${teamId}/transfer`, {
        token: next.token,
        body: { user_id: crypto.randomUUID() },
      }),
      404,
    );
  });

  test("API keys: shown once, stored as SHA-256, act only within their team and role, revocable", async () => {
    const owner = await newUser(server);
    const teamId = await newTeam(server, owner);
    const otherTeam = await newTeam(server, owner);
    const { key, id } = await newApiKey(server, owner, teamId, "viewer");
    expect(key).toMatch(/^mcp_key_[A-Za-z0-9_-]{43}$/);

    const [row] = await server.services.database.db.select().from(apiKeys).where(eq(apiKeys.id, id));
    expect(row!.keyHash).toBe(sha256(key));
    expect(JSON.stringify(row)).not.toContain(key);

    const listed = await api(server, "GET", `/teams/${teamId}/api-keys`, { token: owner.token });
    expect(listed.text).not.toContain(key);
    expect(listed.body.api_keys[0]).toMatchObject({ key_id: id, role: "viewer", revoked_at: null });

    expect((await api(server, "GET", `/teams/${teamId}`, { token: key })).body.role).toBe("viewer");
    expectError(await api(server, "GET", `/teams/${otherTeam}`, { token: key }), 403);
    expectError(await api(server, "PATCH", `/teams/${teamId}`, { token: key, body: { name: "nope" } }), 403);

    const revoked = await api(server, "DELETE", `/teams/${teamId}/api-keys/${id}`, { token: owner.token });
    expect(revoked.body.revoked_at).toEqual(expect.any(String));
    expectError(await api(server, "GET", `/teams/${teamId}`, { token: key }), 401, "unauthenticated");
  });

  test("the typed tRPC client reaches team procedures with the same rules", async () => {
    const owner = await newUser(server);
    const outsider = await newUser(server);
    const client = trpcClient(server, owner.token);
    const team = await client.teams.create.mutate({ name: "Typed" });
    expect((await client.teams.get.query({ team_id: team.team_id })).name).toBe("Typed");
    const err = await trpcClient(server, outsider.token)
      .teams.get.query({ team_id: team.team_id })
      .catch((e) => e);
    expect(err.data).toMatchObject({ code: "forbidden", httpStatus: 403 });
  });
});
