import { useEffect, useRef } from "react";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import type { Series } from "./series";

/** A uPlot time series (canvas). `data-points` counts the points drawn, for tests and the bench. */
export function Chart({ series, label }: { series: Series; label: string }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);

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
    const axes: uPlot.Axis[] = [
      { stroke: axis, grid: { stroke: grid } },
      { stroke: axis, grid: { stroke: grid }, scale: "ms", label: "ms" },
      { stroke: axis, side: 1, grid: { show: false }, scale: "n" },
    ];
    const opts: uPlot.Options = {
      width: el.clientWidth || 600,
      height: 220,
      axes,
      scales: { x: { time: true } },
      series: [
        {},
        { label: "latency ms", stroke: "#3b82f6", scale: "ms", spanGaps: true },
        { label: "players", stroke: "#10b981", scale: "n", spanGaps: true },
        { label: "TPS", stroke: "#f59e0b", scale: "n", spanGaps: true, points: { show: true, size: 5 } },
      ],
    };
    plot.current = new uPlot(opts, [[], [], [], []], el);
    const resize = new ResizeObserver(() => plot.current?.setSize({ width: el.clientWidth, height: 220 }));
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
      <div ref={box} role="img" aria-label={label} data-points={series.t.length} />
    </figure>
  );
}
