import { useEffect, useRef, useState } from "react";
import { session } from "./api";
import { connection } from "./connection";

/**
 * The analytics socket of one server, authenticated with the first `auth` message (browsers
 * cannot set headers on a WebSocket). Reconnects with backoff, and at once when the service is
 * back after an outage (web/connection.ts); renews the token when the server says it is expiring.
 * While a socket that was open is down, what it reported is not known to be true any more:
 * `lost` says so, and the badge shows "unknown" (`liveOnline`).
 */

export interface LiveEvent {
  type: string;
  server_id: string;
  ts: string;
  data: Record<string, unknown>;
}

export interface LiveState {
  connected: boolean;
  /** The socket closed and has not come back yet. */
  lost: boolean;
  online: boolean | null;
  latency_ms: number | null;
  players_online: number | null;
  players_max: number | null;
  players: { uuid: string; name: string }[];
  version: string | null;
  tps: number | null;
  mspt: number | null;
  memory_used_mb: number | null;
  memory_max_mb: number | null;
}

const EMPTY: LiveState = {
  connected: false,
  lost: false,
  online: null,
  latency_ms: null,
  players_online: null,
  players_max: null,
  players: [],
  version: null,
  tps: null,
  mspt: null,
  memory_used_mb: null,
  memory_max_mb: null,
};

const n = (v: unknown) => (typeof v === "number" && Number.isFinite(v) ? v : null);

export function reduce(s: LiveState, e: LiveEvent): LiveState {
  const d = e.data;
  switch (e.type) {
    case "snapshot":
      return {
        connected: true,
        lost: false,
        online: typeof d.online === "boolean" ? d.online : null,
        latency_ms: n(d.latency_ms),
        // The snapshot counts the players the agent reported; without an agent the ping's count
        // (from the server's status) is the better figure, so leave it unknown here.
        players_online: Array.isArray(d.players) && d.players.length ? n(d.players_online) : null,
        players_max: n(d.players_max),
        players: Array.isArray(d.players) ? (d.players as LiveState["players"]) : [],
        version: typeof d.version === "string" ? d.version : null,
        tps: n(d.tps),
        mspt: n(d.mspt),
        memory_used_mb: n(d.memory_used_mb),
        memory_max_mb: n(d.memory_max_mb),
      };
    case "status":
      return {
        ...s,
        online: typeof d.online === "boolean" ? d.online : s.online,
        latency_ms: n(d.latency_ms),
        players_max: n(d.players_max) ?? s.players_max,
        players_online: s.players.length ? s.players_online : (n(d.players_online) ?? s.players_online),
        version: typeof d.version === "string" ? d.version : s.version,
      };
    case "heartbeat":
      return {
        ...s,
        tps: n(d.tps),
        mspt: n(d.mspt),
        memory_used_mb: n(d.memory_used_mb),
        memory_max_mb: n(d.memory_max_mb),
        players_online: n(d.players_online) ?? s.players_online,
      };
    case "player_join": {
      const players = [
        ...s.players.filter((p) => p.uuid !== d.uuid),
        { uuid: String(d.uuid), name: String(d.name ?? "") },
      ];
      return { ...s, players, players_online: players.length };
    }
    case "player_leave": {
      const players = s.players.filter((p) => p.uuid !== d.uuid);
      return { ...s, players, players_online: players.length };
    }
    default:
      return s;
  }
}

/**
 * Online, offline or unknown for a badge: the socket's word while it is open, the last reading
 * (`fallback`, from the API) before it first opens, and unknown while it is down.
 */
export function liveOnline(live: LiveState, fallback: boolean | null): boolean | null {
  if (live.connected) return live.online;
  return live.lost ? null : fallback;
}

/** What the socket is doing, in a word or three. */
export const liveLabel = (live: LiveState) =>
  live.connected ? "live" : live.lost ? "reconnecting… (last known figures)" : "connecting…";

/** Live state of a server, plus every event handed to `onEvent` (for charts, invalidations). */
export function useLive(serverId: string, onEvent?: (e: LiveEvent) => void): LiveState {
  const [state, setState] = useState<LiveState>(EMPTY);
  const handler = useRef(onEvent);
  handler.current = onEvent;
  useEffect(() => {
    let ws: WebSocket | undefined;
    let stopped = false;
    let retry: ReturnType<typeof setTimeout> | undefined;
    let attempt = 0;
    const connect = async () => {
      // While the service is out of reach, the connection's return starts the next attempt.
      if (!connection.reachable()) return;
      const token = await session.freshToken();
      if (stopped || !token) return;
      const proto = location.protocol === "https:" ? "wss:" : "ws:";
      ws = new WebSocket(`${proto}//${location.host}/ws/server/${serverId}/analytics`);
      ws.onopen = () => ws?.send(JSON.stringify({ type: "auth", token }));
      ws.onmessage = async (m) => {
        const e = JSON.parse(String(m.data)) as LiveEvent;
        if (e.type === "snapshot") attempt = 0;
        if (e.type === "token_expiring") {
          const fresh = await session.freshToken();
          if (fresh) ws?.send(JSON.stringify({ type: "auth", token: fresh }));
          return;
        }
        setState((s) => reduce(s, e));
        handler.current?.(e);
      };
      ws.onclose = (c) => {
        setState((s) => ({ ...s, connected: false, lost: true }));
        // 4004: no such server (or not ours); retrying cannot help.
        if (stopped || c.code === 4004) return;
        // 1006: dropped without a close frame, as when the service stops.
        if (c.code === 1006) connection.verify();
        retry = setTimeout(connect, Math.min(30_000, 500 * 2 ** attempt++));
      };
    };
    void connect();
    const off = connection.subscribe((ok) => {
      if (!ok || stopped || ws?.readyState === WebSocket.OPEN || ws?.readyState === WebSocket.CONNECTING) return;
      clearTimeout(retry);
      attempt = 0;
      void connect();
    });
    return () => {
      stopped = true;
      off();
      clearTimeout(retry);
      ws?.close();
    };
  }, [serverId]);
  return state;
}
