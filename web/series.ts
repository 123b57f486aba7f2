import { client } from "./api";

/**
 * The one place the charts get history from: `GET /server/metrics` (buckets kept as data
 * arrives, averages per bucket). The charts only see `Series`; live points are appended by
 * `appendPoint`.
 */

export type Window = "1h" | "24h" | "7d" | "30d";

export interface Series {
  /** The span the chart shows, Unix seconds: the window asked for, ending now. */
  from: number;
  to: number;
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
  const s: Series = {
    from: Date.parse(m.from) / 1000,
    to: Date.parse(m.to) / 1000,
    t: [],
    latency: [],
    players: [],
    tps: [],
  };
  // Points start at the first bucket with data; the axis still spans the whole window (`from`).
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

/**
 * A live point (heartbeat or status) at the end; the oldest drop off past a cap. A point past the
 * span's end moves the span on, keeping its length, so the axis keeps showing the window up to now.
 */
export function appendPoint(
  s: Series,
  p: { t: number; latency?: number | null; players?: number | null; tps?: number | null },
): Series {
  const keep = s.t.length >= CAP ? 1 : 0;
  const to = Math.max(s.to, p.t);
  // uPlot needs ascending times; a ping result and a heartbeat may arrive a moment out of order.
  let at = s.t.length;
  while (at > keep && s.t[at - 1]! > p.t) at--;
  const put = <T>(a: T[], v: T) => [...a.slice(keep, at), v, ...a.slice(at)];
  return {
    from: s.from + (to - s.to),
    to,
    t: put(s.t, p.t),
    latency: put(s.latency, p.latency ?? null),
    players: put(s.players, p.players ?? null),
    tps: put(s.tps, p.tps ?? null),
  };
}
