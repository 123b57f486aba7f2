import type { Metric, Series } from "./series";

/**
 * What each chart of a server page shows, and its text summary ("Peak 31 players at 19:00,
 * fewest 4 at 05:10, latest 12."), computed from the same `Series` the chart draws: screen
 * readers get it as the chart's description, and it is visible as the chart's caption. Pure,
 * so a test can check the sentences without a browser.
 */

export interface ChartSpec {
  metric: Metric;
  /** The chart's heading. */
  title: string;
  /** The y axis's label, with its unit. */
  axis: string;
  /** The unit after a figure in the summary ("" for a count). */
  unit: string;
  /** Fraction digits a figure is shown with at most. */
  digits: number;
  /** Said when the window has no reading of this series. */
  empty: string;
}

export const CHARTS: ChartSpec[] = [
  {
    metric: "players",
    title: "Players online",
    axis: "Players",
    unit: "",
    digits: 1,
    empty: "No player counts in this window yet.",
  },
  {
    metric: "latency",
    title: "Latency",
    axis: "Latency (ms)",
    unit: " ms",
    digits: 0,
    empty: "No pings in this window yet.",
  },
  {
    metric: "tps",
    title: "TPS (ticks per second)",
    axis: "TPS",
    unit: "",
    digits: 1,
    empty: "No TPS readings in this window: the agent sends them.",
  },
  {
    metric: "mspt",
    title: "MSPT (milliseconds per tick)",
    axis: "MSPT (ms)",
    unit: " ms",
    digits: 1,
    empty: "No MSPT readings in this window: the agent sends them.",
  },
  {
    metric: "memory",
    title: "Memory",
    axis: "Memory (MB)",
    unit: " MB",
    digits: 0,
    empty: "No memory readings in this window: the agent sends them.",
  },
];

export interface SummaryOptions {
  /** BCP 47 locale for numbers and times; the browser's when absent. */
  locale?: string;
  /** IANA time zone for times; the browser's when absent. */
  timeZone?: string;
}

interface Extremes {
  min: { v: number; t: number };
  max: { v: number; t: number };
  avg: number;
  last: number;
}

/** The lowest and highest reading (the first time each was reached), the mean and the last reading. */
export function extremes(t: number[], values: (number | null)[]): Extremes | null {
  let min: Extremes["min"] | null = null;
  let max: Extremes["max"] | null = null;
  let sum = 0;
  let n = 0;
  let last = 0;
  values.forEach((v, i) => {
    if (v == null || !Number.isFinite(v)) return;
    if (!min || v < min.v) min = { v, t: t[i]! };
    if (!max || v > max.v) max = { v, t: t[i]! };
    sum += v;
    n++;
    last = v;
  });
  if (!min || !max) return null;
  return { min, max, avg: sum / n, last };
}

export function summarize(series: Series, metric: Metric, options: SummaryOptions = {}): string {
  const spec = CHARTS.find((c) => c.metric === metric)!;
  const e = extremes(series.t, series[metric]);
  if (!e) return spec.empty;
  const num = new Intl.NumberFormat(options.locale, { maximumFractionDigits: spec.digits });
  const fig = (v: number) => `${num.format(v)}${spec.unit}`;
  // A window longer than a day needs the day as well as the time.
  const long = series.to - series.from > 86_400;
  const time = new Intl.DateTimeFormat(options.locale, {
    timeZone: options.timeZone,
    hour: "numeric",
    minute: "2-digit",
    ...(long && { weekday: "short", day: "numeric", month: "short" }),
  });
  const at = (t: number) => `${long ? "on" : "at"} ${time.format(new Date(t * 1000))}`;
  switch (metric) {
    case "players":
      return `Peak ${num.format(e.max.v)} players ${at(e.max.t)}, fewest ${num.format(e.min.v)} ${at(e.min.t)}, latest ${num.format(e.last)}.`;
    case "latency":
      return `Latency averaged ${fig(e.avg)}, highest ${fig(e.max.v)} ${at(e.max.t)}, latest ${fig(e.last)}.`;
    case "tps":
      return `TPS min ${fig(e.min.v)} ${at(e.min.t)}, average ${fig(e.avg)}, latest ${fig(e.last)}.`;
    case "mspt":
      return `MSPT max ${fig(e.max.v)} ${at(e.max.t)}, average ${fig(e.avg)}, latest ${fig(e.last)}.`;
    case "memory": {
      const cap = extremes(series.t, series.memory_max)?.max.v;
      return `Memory peak ${fig(e.max.v)}${cap ? ` of ${fig(cap)}` : ""} ${at(e.max.t)}, latest ${fig(e.last)}.`;
    }
  }
}
