import { describe, expect, test } from "bun:test";
import { LIMITS } from "../src/lib/limits";
import { sharedServer } from "./harness";
import { api, expectError, newTeam, newUser } from "./helpers";

describe("limits on how many of a thing a team keeps", () => {
  test("active API keys stop at the cap, and concurrent creates at the last slot cannot overshoot", async () => {
    const server = await sharedServer();
    const owner = await newUser(server);
    const teamId = await newTeam(server, owner);
    const create = () =>
      api(server, "POST", `/teams/${teamId}/api-keys`, { token: owner.token, body: { name: "k", role: "viewer" } });
    const first = await create();
    for (let made = 1; made < LIMITS.activeApiKeysPerTeam - 1; made += 20) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(20, LIMITS.activeApiKeysPerTeam - 1 - made) }, create),
      );
      expect(batch.every((r) => r.status === 201)).toBe(true);
    }
    const race = await Promise.all(Array.from({ length: 5 }, create));
    expect(race.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409]);
    const refused = expectError(race.find((r) => r.status === 409)!, 409, "conflict");
    expect(refused.details).toEqual({ limit: LIMITS.activeApiKeysPerTeam });

    // Revoking one frees a slot; the list shows every active key first, then revoked ones.
    await api(server, "DELETE", `/teams/${teamId}/api-keys/${first.body.api_key.key_id}`, { token: owner.token });
    expect((await create()).status).toBe(201);
    const listed = await api(server, "GET", `/teams/${teamId}/api-keys`, { token: owner.token });
    const keys = listed.body.api_keys as { revoked_at: string | null }[];
    expect(keys.length).toBe(LIMITS.activeApiKeysPerTeam + 1);
    expect(keys.filter((k) => k.revoked_at === null).length).toBe(LIMITS.activeApiKeysPerTeam);
    expect(keys.at(-1)!.revoked_at).not.toBeNull();
  }, 60_000);
});
