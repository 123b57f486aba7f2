import { client } from "./api";

/**
 * The one place the charts get history from: `GET /server/metrics` (buckets kept as data
 * arrives, averages per bucket). The charts only see `Series`; live points are appended by
 * `appendPoint`.
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
  const m = await client.servers.metrics.query({ window, metrics: "latency,players,tps" }, { context: { serverId } });
  const latency = m.metrics.latency ?? [];
  const players = m.metrics.players ?? [];
  const tps = m.metrics.tps ?? [];
  const s: Series = { t: [], latency: [], players: [], tps: [] };
  // The window's grid starts before the server had any data; the chart starts at its first.
  const has = (i: number) => latency[i]?.avg != null || players[i]?.avg != null || tps[i]?.avg != null;
  let first = 0;
  while (first < latency.length && !has(first)) first++;
  for (let i = first; i < latency.length; i++) {
    s.t.push(Date.parse(latency[i]!.ts) / 1000);
    s.latency.push(latency[i]!.avg);
    s.players.push(players[i]?.avg ?? null);
    s.tps.push(tps[i]?.avg ?? null);
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
