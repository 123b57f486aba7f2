import { useEffect, useRef } from "react";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import type { Series } from "./series";

const COLORS = { latency: "#3b82f6", players: "#10b981", tps: "#f59e0b" };
const HEIGHT = 240;

/** From zero to a little above the highest value (at least `floor`), so a flat line is not drawn at the edge. */
const fromZero =
  (floor: number) =>
  (_u: uPlot, _min: number | null, max: number | null): uPlot.Range.MinMax => [0, Math.max(floor, (max ?? 0) * 1.1)];

/**
 * A uPlot time series (canvas). The x axis spans the series' window (`from`-`to`) whatever data
 * it has: left to uPlot, one point made a range of 86,400 x 1,000 seconds. Latency, players and
 * TPS each have their own scale and a labelled axis. `data-points` counts the points drawn, for
 * tests and the bench; `data-x-min`/`data-x-max` and `data-axes` say what the last draw showed.
 */
export function Chart({ series, label }: { series: Series; label: string }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  // The x range is asked for on every redraw; the options are made once.
  const span = useRef({ from: series.from, to: series.to });
  span.current = { from: series.from, to: series.to };

  useEffect(() => {
    const el = box.current!;
    // The palette uses light-dark(), which a canvas cannot parse: let the page resolve it.
    const resolve = (variable: string) => {
      el.style.color = `var(${variable})`;
      const color = getComputedStyle(el).color;
      el.style.color = "";
      return color;
    };
    const axis = resolve("--muted");
    const grid = resolve("--line");
    const narrow = (el.clientWidth || 600) < 500;
    const y = (scale: string, label: string, side: number, showGrid: boolean): uPlot.Axis => ({
      scale,
      label,
      side,
      stroke: axis,
      grid: { show: showGrid, stroke: grid },
      size: narrow ? 40 : 50,
      labelSize: 18,
      labelFont: "bold 12px system-ui, sans-serif",
    });
    const opts: uPlot.Options = {
      // What was drawn, for tests: the x range and each axis's label.
      hooks: {
        draw: [
          (u) => {
            el.dataset.xMin = String(u.scales.x!.min);
            el.dataset.xMax = String(u.scales.x!.max);
            el.dataset.axes = u.axes.map((a) => a.label ?? "").join("|");
          },
        ],
      },
      width: el.clientWidth || 600,
      height: HEIGHT,
      axes: [
        { stroke: axis, grid: { stroke: grid } },
        y("players", "Players", 3, true),
        y("ms", "Latency (ms)", 3, false),
        y("tps", "TPS", 1, false),
      ],
      scales: {
        x: { time: true, range: () => [span.current.from, span.current.to] },
        players: { range: fromZero(5) },
        ms: { range: fromZero(10) },
        tps: { range: fromZero(20) },
      },
      series: [
        {},
        { label: "Latency (ms)", stroke: COLORS.latency, scale: "ms", spanGaps: true },
        { label: "Players", stroke: COLORS.players, scale: "players", spanGaps: true, width: 2 },
        // uPlot shows points where they are sparse (a new server's first readings), not on a full line.
        { label: "TPS", stroke: COLORS.tps, scale: "tps", spanGaps: true },
      ],
    };
    plot.current = new uPlot(opts, [[], [], [], []], el);
    const resize = new ResizeObserver(() => plot.current?.setSize({ width: el.clientWidth, height: HEIGHT }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.current?.destroy();
      plot.current = null;
    };
  }, []);

  useEffect(() => {
    plot.current?.setData([series.t, series.latency, series.players, series.tps] as uPlot.AlignedData);
  }, [series]);

  return (
    <figure className="chart">
      <div
        ref={box}
        role="img"
        aria-label={label}
        data-points={series.t.length}
        data-from={series.from}
        data-to={series.to}
      />
    </figure>
  );
}
