import { useEffect, useId, useMemo, useRef } from "react";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import type { Series, Window } from "./series";
import { CHARTS, type ChartSpec, summarize } from "./summary";

const COLORS: Record<ChartSpec["metric"], string> = {
  players: "#10b981",
  latency: "#3b82f6",
  tps: "#f59e0b",
  mspt: "#8b5cf6",
  memory: "#e0457b",
};
const HEIGHT = 150;
/** The least each y axis shows, so a flat line is not drawn at the top edge: 20 TPS is a full tick rate, 50 ms a tick's budget. */
const FLOOR: Record<ChartSpec["metric"], number> = { players: 5, latency: 10, tps: 20, mspt: 50, memory: 1024 };

/** From zero to a little above the highest value (at least `floor`). */
const fromZero =
  (floor: number) =>
  (_u: uPlot, _min: number | null, max: number | null): uPlot.Range.MinMax => [0, Math.max(floor, (max ?? 0) * 1.1)];

/**
 * One chart a series (players, latency, TPS, MSPT, memory), stacked: each with its own labelled
 * y axis, all on the same time axis (the window asked for, whatever data there is) and with one
 * cursor, so hovering one shows the same moment on all. Under each, its summary in words.
 */
export function Charts({ series, window }: { series: Series; window: Window }) {
  // One sync group per page: the cursor moves on this page's charts only.
  const sync = useId();
  return (
    <div className="charts">
      {CHARTS.map((spec) => (
        <MetricChart key={spec.metric} spec={spec} series={series} window={window} sync={sync} />
      ))}
    </div>
  );
}

/**
 * A uPlot time series (canvas). The x axis spans the series' window (`from`-`to`) whatever data
 * it has: left to uPlot, one point made a range of 86,400 x 1,000 seconds. `data-points` counts
 * the points drawn, for tests and the bench; `data-x-min`/`data-x-max` and `data-axes` say what
 * the last draw showed.
 */
function MetricChart({
  spec,
  series,
  window,
  sync,
}: {
  spec: ChartSpec;
  series: Series;
  window: Window;
  sync: string;
}) {
  const box = useRef<HTMLDivElement>(null);
  const readout = useRef<HTMLSpanElement>(null);
  const plot = useRef<uPlot | null>(null);
  const id = useId();
  // The x range is asked for on every redraw; the options are made once.
  const span = useRef({ from: series.from, to: series.to });
  span.current = { from: series.from, to: series.to };
  const summary = useMemo(() => summarize(series, spec.metric), [series, spec.metric]);
  const memory = spec.metric === "memory";

  useEffect(() => {
    const el = box.current!;
    const digits = new Intl.NumberFormat(undefined, { maximumFractionDigits: spec.digits });
    // The palette uses light-dark(), which a canvas cannot parse: let the page resolve it.
    const resolve = (variable: string) => {
      el.style.color = `var(${variable})`;
      const color = getComputedStyle(el).color;
      el.style.color = "";
      return color;
    };
    const axis = resolve("--muted");
    const grid = resolve("--line");
    // The figure under the cursor (the same moment on every chart of the page), else nothing.
    const show = (u: uPlot) => {
      const i = u.cursor.idx;
      const out = readout.current;
      if (!out) return;
      const v = i == null ? null : (u.data[1]?.[i] ?? null);
      if (i == null || v == null) {
        out.textContent = "";
        return;
      }
      const cap = memory ? u.data[2]?.[i] : null;
      const when = new Date(u.data[0]![i]! * 1000).toLocaleString(undefined, {
        hour: "numeric",
        minute: "2-digit",
        ...(span.current.to - span.current.from > 86_400 && { weekday: "short" }),
      });
      out.textContent = `${digits.format(v)}${cap != null ? ` / ${digits.format(cap)}` : ""}${spec.unit} at ${when}`;
    };
    const opts: uPlot.Options = {
      hooks: {
        // What was drawn, for tests: the x range and each axis's label.
        draw: [
          (u) => {
            el.dataset.xMin = String(u.scales.x!.min);
            el.dataset.xMax = String(u.scales.x!.max);
            el.dataset.axes = u.axes.map((a) => a.label ?? "").join("|");
          },
        ],
        setCursor: [show],
      },
      width: el.clientWidth || 600,
      height: HEIGHT,
      // The figure under the cursor is shown in the chart's heading; no legend under every chart.
      legend: { show: false },
      cursor: { sync: { key: sync }, drag: { x: false, y: false }, points: { size: 7 } },
      axes: [
        { stroke: axis, grid: { stroke: grid }, size: 30 },
        {
          scale: "y",
          label: spec.axis,
          stroke: axis,
          grid: { stroke: grid },
          // The tick (10 px), the gap (5 px) and the longest figure ("4,096"): figures are not cut and
          // do not run into the axis's label.
          size: (_u, values) => Math.ceil(Math.max(2, ...(values ?? []).map((v) => v.length)) * 7.5) + 22,
          // Whole players: no tick at 2.5 players.
          ...(spec.metric === "players" && { incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000] }),
          labelSize: 18,
          labelFont: "bold 12px system-ui, sans-serif",
        },
      ],
      scales: {
        x: { time: true, range: () => [span.current.from, span.current.to] },
        y: { range: fromZero(FLOOR[spec.metric]) },
      },
      series: [
        {},
        // uPlot shows points where they are sparse (a new server's first readings), not on a full line.
        { label: spec.axis, stroke: COLORS[spec.metric], scale: "y", spanGaps: true, width: 2 },
        ...(memory ? [{ label: "Memory max (MB)", stroke: axis, scale: "y", spanGaps: true, dash: [6, 4] }] : []),
      ],
    };
    const data = memory ? [[], [], []] : [[], []];
    plot.current = new uPlot(opts, data as unknown as uPlot.AlignedData, el);
    const resize = new ResizeObserver(() => plot.current?.setSize({ width: el.clientWidth, height: HEIGHT }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.current?.destroy();
      plot.current = null;
    };
  }, [sync, spec, memory]);

  useEffect(() => {
    const data = memory ? [series.t, series.memory, series.memory_max] : [series.t, series[spec.metric]];
    plot.current?.setData(data as uPlot.AlignedData);
  }, [series, spec.metric, memory]);

  return (
    <figure className="chart" data-chart={spec.metric} aria-labelledby={`${id}-t`}>
      <div className="chart-head">
        <h3 id={`${id}-t`}>{spec.title}</h3>
        {/* Pointer users' figure; screen readers get the summary below instead. */}
        <span className="readout" ref={readout} aria-hidden="true" />
      </div>
      <div
        ref={box}
        role="img"
        aria-label={`${spec.title}, last ${window}`}
        aria-describedby={`${id}-s`}
        data-points={series.t.length}
        data-from={series.from}
        data-to={series.to}
      />
      <figcaption id={`${id}-s`} data-testid="chart-summary">
        {summary}
      </figcaption>
    </figure>
  );
}
