/**
 * The one message shape on the analytics stream and on the bus between instances:
 * `{type, server_id, ts, data}`. docs/realtime.md and /asyncapi.json describe each type.
 * It lives beside the server machine, which consumes it; the service re-exports it.
 */
export const SERVER_EVENT_TYPES = [
  "heartbeat", // agent: tps, mspt, players_online, memory
  "player_join", // agent, or pinger sample (no agent): uuid, name
  "player_leave", // agent, pinger sample or session sweep: uuid, name
  "status", // pinger: online, latency_ms, players_online, players_max, version, changed
  "ban_added", // agent or dashboard: the ban
  "ban_lifted", // agent or dashboard: uuid
  "ranks_changed", // dashboard: action + rank
  "announcements_changed", // dashboard: action + announcement
  "metrics", // history: a one-minute bucket closed; min/avg/max per series
] as const;
export type ServerEventType = (typeof SERVER_EVENT_TYPES)[number];

export interface ServerEvent<T extends string = ServerEventType> {
  type: T;
  server_id: string;
  /** ISO 8601, when the change happened. */
  ts: string;
  data: Record<string, unknown>;
}
