import { client } from "./api";

/**
 * The one place the charts get history from. Today it reads `GET /server/uptime-stats`
 * (latency and players per bucket); when `GET /server/metrics` lands it switches here, and the
 * charts, which only see `Series`, do not change. Live points are appended by `appendPoint`.
 */

export type Window = "1h" | "24h" | "7d" | "30d";

export interface Series {
  /** Unix seconds. */
  t: number[];
  latency: (number | null)[];
  players: (number | null)[];
  tps: (number | null)[];
}

export async function loadSeries(serverId: string, window: Window): Promise<Series> {
  const stats = await client.servers.uptimeStats.query({ window }, { context: { serverId } });
  const s: Series = { t: [], latency: [], players: [], tps: [] };
  // The window's grid starts before the server had any sample; the chart starts at its first.
  const first = stats.buckets.findIndex((b) => b.up + b.down > 0);
  for (const b of first < 0 ? [] : stats.buckets.slice(first)) {
    s.t.push(Date.parse(b.start) / 1000);
    s.latency.push(b.latency_avg_ms);
    s.players.push(b.players_avg);
    s.tps.push(null);
  }
  return s;
}

const CAP = 5_000;

/** A live point (heartbeat or status) at the end; the oldest drop off past a cap. */
export function appendPoint(
  s: Series,
  p: { t: number; latency?: number | null; players?: number | null; tps?: number | null },
): Series {
  const keep = s.t.length >= CAP ? 1 : 0;
  return {
    t: [...s.t.slice(keep), p.t],
    latency: [...s.latency.slice(keep), p.latency ?? null],
    players: [...s.players.slice(keep), p.players ?? null],
    tps: [...s.tps.slice(keep), p.tps ?? null],
  };
}
