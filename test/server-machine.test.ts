import { describe, expect, test } from "bun:test";
import { createActor } from "xstate";
import { serverMachine, snapshotData, type LiveServer } from "../machines/server";
import type { ServerEvent } from "../src/realtime/events";

const seed = (over: Partial<LiveServer> = {}): LiveServer => ({
  serverId: "s1",
  online: null,
  latencyMs: null,
  playersMax: null,
  version: null,
  motd: null,
  checkedAt: null,
  players: {},
  tps: null,
  mspt: null,
  memoryUsedMb: null,
  memoryMaxMb: null,
  lastHeartbeatAt: null,
  ...over,
});

const ev = (
  type: ServerEvent["type"],
  data: Record<string, unknown>,
  ts = "2026-01-01T00:00:00.000Z",
): ServerEvent => ({ type, server_id: "s1", ts, data });

function run(input: LiveServer) {
  const broadcast: ServerEvent[] = [];
  const actor = createActor(serverMachine.provide({ actions: { broadcast: (_, p) => void broadcast.push(p.event) } }), {
    input,
  });
  actor.start();
  return { actor, broadcast };
}

describe("server actor machine (pure)", () => {
  test("starts in the state the database seeded", () => {
    expect(run(seed()).actor.getSnapshot().value).toBe("unknown");
    expect(run(seed({ online: true })).actor.getSnapshot().value).toBe("up");
    expect(run(seed({ online: false })).actor.getSnapshot().value).toBe("down");
  });

  test("pinger results move it up and down; every event is broadcast in order", () => {
    const { actor, broadcast } = run(seed());
    const events = [
      ev("status", { online: true, latency_ms: 12, players_max: 20, version: "1.21" }),
      ev("heartbeat", { tps: 19.9, mspt: 21.5, memory_used_mb: 900, memory_max_mb: 2048 }, "2026-01-01T00:00:01.000Z"),
      ev("player_join", { uuid: "u1", name: "Alex" }),
      ev("player_join", { uuid: "u2", name: "Steve" }),
      ev("player_leave", { uuid: "u1", name: "Alex" }),
      ev("ban_added", { uuid: "u9", name: "Griefer" }),
      ev("status", { online: false, latency_ms: null }),
    ];
    for (const e of events) actor.send({ type: "EVENT", event: e });
    expect(broadcast).toEqual(events);
    expect(actor.getSnapshot().value).toBe("down");
    const data = snapshotData(actor.getSnapshot().context, String(actor.getSnapshot().value));
    expect(data).toMatchObject({
      status: "down",
      online: false,
      latency_ms: null,
      players_max: 20,
      version: "1.21",
      players_online: 1,
      players: [{ uuid: "u2", name: "Steve" }],
      tps: 19.9,
      mspt: 21.5,
      memory_used_mb: 900,
      last_heartbeat_at: "2026-01-01T00:00:01.000Z",
    });
  });

  test("a heartbeat older than the one applied is dropped, not broadcast", () => {
    const { actor, broadcast } = run(seed());
    actor.send({ type: "EVENT", event: ev("heartbeat", { tps: 20 }, "2026-01-01T00:00:02.000Z") });
    actor.send({ type: "EVENT", event: ev("heartbeat", { tps: 5 }, "2026-01-01T00:00:01.000Z") });
    actor.send({ type: "EVENT", event: ev("heartbeat", { tps: 19 }, "2026-01-01T00:00:02.000Z") });
    expect(broadcast.map((e) => e.data.tps)).toEqual([20, 19]);
    expect(actor.getSnapshot().context.tps).toBe(19);
  });

  test("a leave for a player it never saw join changes nothing", () => {
    const { actor } = run(seed({ players: { u2: "Steve" } }));
    actor.send({ type: "EVENT", event: ev("player_leave", { uuid: "u7", name: "Ghost" }) });
    expect(actor.getSnapshot().context.players).toEqual({ u2: "Steve" });
  });
});
