import { describe, expect, test } from "bun:test";
import { sharedServer } from "./harness";
import { api } from "./helpers";
import { agentApi, eventId, newServer } from "./servers-fixture";

describe("agent batches at the same time", () => {
  test("concurrent batches about the same players never fail and keep one open session each", async () => {
    const server = await sharedServer();
    const f = await newServer(server);
    const players = Array.from({ length: 5 }, (_, i) => ({
      uuid: `55555555-5555-4555-8555-00000000000${i}`,
      name: `Racer${i}`,
    }));
    // Twenty batches at once, each joining every player (a plugin that missed its leaves).
    const batches = Array.from({ length: 20 }, () => ({
      events: players.map((p) => ({ event_id: eventId(), type: "join", ...p })),
    }));
    const results = await Promise.all(batches.map((b) => agentApi(server, f.agentToken, "POST", "/agent/events", b)));
    expect(results.map((r) => r.status)).toEqual(results.map(() => 200));
    expect(results.reduce((n, r) => n + r.body.accepted, 0)).toBe(100);
    const listed = await api(server, "GET", "/server/players?limit=50", {
      token: f.owner.token,
      headers: { "x-server-id": f.serverId },
    });
    expect(listed.body.players.filter((p: { online: boolean }) => p.online).length).toBe(5);
  }, 30_000);
});
