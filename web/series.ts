import { client } from "./api";

/**
 * The one place the charts get history from: `GET /server/metrics` (buckets kept as data
 * arrives, averages per bucket). The charts only see `Series`; live points are appended by
 * `appendPoint`.
 */

export type Window = "1h" | "24h" | "7d" | "30d";

/** The series a server page charts, each drawn on a chart of its own. */
export const METRICS = ["players", "latency", "tps", "mspt", "memory"] as const;
export type Metric = (typeof METRICS)[number];

export interface Series {
  /** The span the chart shows, Unix seconds: the window asked for, ending now. */
  from: number;
  to: number;
  /** Unix seconds. */
  t: number[];
  latency: (number | null)[];
  players: (number | null)[];
  tps: (number | null)[];
  mspt: (number | null)[];
  /** Memory used and the most the server may use, MB. */
  memory: (number | null)[];
  memory_max: (number | null)[];
}

type Point = { t: number } & Partial<Record<Exclude<keyof Series, "from" | "to" | "t">, number | null>>;
const COLUMNS = ["latency", "players", "tps", "mspt", "memory", "memory_max"] as const;

export async function loadSeries(serverId: string, window: Window): Promise<Series> {
  const m = await client.servers.metrics.query(
    { window, metrics: "latency,players,tps,mspt,memory" },
    { context: { serverId } },
  );
  const cols = Object.fromEntries(COLUMNS.map((c) => [c, m.metrics[c] ?? []]));
  const s: Series = {
    from: Date.parse(m.from) / 1000,
    to: Date.parse(m.to) / 1000,
    t: [],
    latency: [],
    players: [],
    tps: [],
    mspt: [],
    memory: [],
    memory_max: [],
  };
  // Points start at the first bucket with data; the axis still spans the whole window (`from`).
  const times = cols.latency!;
  const has = (i: number) => COLUMNS.some((c) => cols[c]![i]?.avg != null);
  let first = 0;
  while (first < times.length && !has(first)) first++;
  for (let i = first; i < times.length; i++) {
    s.t.push(Date.parse(times[i]!.ts) / 1000);
    for (const c of COLUMNS) s[c].push(cols[c]![i]?.avg ?? null);
  }
  return s;
}

const CAP = 5_000;

/**
 * A live point (heartbeat or status) at the end; the oldest drop off past a cap. A point past the
 * span's end moves the span on, keeping its length, so the axis keeps showing the window up to now.
 */
export function appendPoint(s: Series, p: Point): Series {
  const keep = s.t.length >= CAP ? 1 : 0;
  const to = Math.max(s.to, p.t);
  // uPlot needs ascending times; a ping result and a heartbeat may arrive a moment out of order.
  let at = s.t.length;
  while (at > keep && s.t[at - 1]! > p.t) at--;
  const put = <T>(a: T[], v: T) => [...a.slice(keep, at), v, ...a.slice(at)];
  const next = { from: s.from + (to - s.to), to, t: put(s.t, p.t) } as Series;
  for (const c of COLUMNS) next[c] = put(s[c], p[c] ?? null);
  return next;
}
