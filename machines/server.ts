import { assign, setup } from "xstate";
import type { ServerEvent } from "./events";

/**
 * One game server's live state. The realtime layer runs one actor per active server: it is
 * seeded from the database, consumes every event about its server (agent pushes, pinger
 * results, dashboard changes) and, through the `broadcast` action provided at the edge,
 * publishes each change to the server's topic. The machine itself does no I/O.
 */
export interface LiveServer {
  serverId: string;
  online: boolean | null;
  latencyMs: number | null;
  playersMax: number | null;
  version: string | null;
  motd: string | null;
  checkedAt: string | null;
  /** uuid -> name, as the agent reports joins and leaves. */
  players: Record<string, string>;
  tps: number | null;
  mspt: number | null;
  memoryUsedMb: number | null;
  memoryMaxMb: number | null;
  lastHeartbeatAt: string | null;
}

export type ServerActorEvent = { type: "EVENT"; event: ServerEvent };

const num = (v: unknown) => (typeof v === "number" && Number.isFinite(v) ? v : null);
const str = (v: unknown) => (typeof v === "string" ? v : null);

/** How each event type changes the live state (events that only inform change nothing). */
export function reduceLive(s: LiveServer, e: ServerEvent): LiveServer {
  const d = e.data;
  switch (e.type) {
    case "heartbeat":
      return {
        ...s,
        tps: num(d.tps),
        mspt: num(d.mspt),
        memoryUsedMb: num(d.memory_used_mb),
        memoryMaxMb: num(d.memory_max_mb),
        lastHeartbeatAt: e.ts,
      };
    case "player_join":
      return typeof d.uuid === "string" ? { ...s, players: { ...s.players, [d.uuid]: str(d.name) ?? "" } } : s;
    case "player_leave": {
      if (typeof d.uuid !== "string" || !(d.uuid in s.players)) return s;
      const { [d.uuid]: _, ...rest } = s.players;
      return { ...s, players: rest };
    }
    case "status":
      return {
        ...s,
        online: typeof d.online === "boolean" ? d.online : s.online,
        latencyMs: num(d.latency_ms),
        playersMax: num(d.players_max) ?? s.playersMax,
        version: str(d.version) ?? s.version,
        motd: str(d.motd) ?? s.motd,
        checkedAt: e.ts,
      };
    default:
      return s;
  }
}

export const serverMachine = setup({
  types: { context: {} as LiveServer, events: {} as ServerActorEvent, input: {} as LiveServer },
  actions: {
    apply: assign(({ context, event }) => reduceLive(context, event.event)),
    // Provided by the realtime layer: publish the event to the server's topic.
    broadcast: (_, _params: { event: ServerEvent }) => {},
  },
  guards: {
    wentUp: ({ event }) => event.event.type === "status" && event.event.data.online === true,
    wentDown: ({ event }) => event.event.type === "status" && event.event.data.online === false,
    // A reading older than the one applied: on PostgreSQL an instance shows its own heartbeats at
    // once and others' when NOTIFY brings them, so two of one server can arrive out of order.
    staleHeartbeat: ({ context, event }) =>
      event.event.type === "heartbeat" && context.lastHeartbeatAt !== null && event.event.ts < context.lastHeartbeatAt,
  },
}).createMachine({
  id: "server",
  context: ({ input }) => input,
  initial: "seeded",
  states: {
    // Where the database left it; the pinger's next result says up or down.
    seeded: {
      always: [
        { guard: ({ context }) => context.online === true, target: "up" },
        { guard: ({ context }) => context.online === false, target: "down" },
        { target: "unknown" },
      ],
    },
    unknown: {},
    up: {},
    down: {},
  },
  on: {
    EVENT: [
      // Dropped, not broadcast: the newer reading is already shown.
      { guard: "staleHeartbeat" },
      {
        guard: "wentUp",
        target: ".up",
        actions: ["apply", { type: "broadcast", params: ({ event }) => ({ event: event.event }) }],
      },
      {
        guard: "wentDown",
        target: ".down",
        actions: ["apply", { type: "broadcast", params: ({ event }) => ({ event: event.event }) }],
      },
      { actions: ["apply", { type: "broadcast", params: ({ event }) => ({ event: event.event }) }] },
    ],
  },
});

/** The `snapshot` message's data: what a new subscriber needs before the first event. */
export function snapshotData(s: LiveServer, status: string) {
  return {
    status,
    online: s.online,
    latency_ms: s.latencyMs,
    players_online: Object.keys(s.players).length,
    players_max: s.playersMax,
    players: Object.entries(s.players).map(([uuid, name]) => ({ uuid, name })),
    version: s.version,
    motd: s.motd,
    checked_at: s.checkedAt,
    tps: s.tps,
    mspt: s.mspt,
    memory_used_mb: s.memoryUsedMb,
    memory_max_mb: s.memoryMaxMb,
    last_heartbeat_at: s.lastHeartbeatAt,
  };
}
