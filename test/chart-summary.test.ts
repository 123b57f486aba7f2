import { describe, expect, test } from "bun:test";
import type { Series } from "../web/series";
import { CHARTS, extremes, summarize } from "../web/summary";

/** A series over `hours` ending at 2026-11-24 20:00 UTC, a reading every hour, from columns of values. */
function series(hours: number, cols: Partial<Omit<Series, "from" | "to" | "t">>): Series {
  const to = Date.UTC(2026, 10, 24, 20) / 1000;
  const n = Math.max(...Object.values(cols).map((c) => c!.length));
  const t = Array.from({ length: n }, (_, i) => to - (n - i) * 3600);
  const empty = () => Array.from({ length: n }, () => null);
  return {
    from: to - hours * 3600,
    to,
    t,
    latency: empty(),
    players: empty(),
    tps: empty(),
    mspt: empty(),
    memory: empty(),
    memory_max: empty(),
    ...cols,
  };
}

const UTC = { locale: "en-GB", timeZone: "UTC" };

describe("chart summaries", () => {
  test("players: the peak with its hour, the fewest, the latest reading (gaps skipped)", () => {
    // Readings at 15:00 .. 19:00 UTC.
    const s = series(24, { players: [12, null, 31, 4, 9] });
    expect(summarize(s, "players", UTC)).toBe("Peak 31 players at 17:00, fewest 4 at 18:00, latest 9.");
  });

  test("the same moment in another time zone, and bucket averages shown with at most one decimal", () => {
    const s = series(24, { players: [12.25, 31.46, 4] });
    expect(summarize(s, "players", { locale: "en-GB", timeZone: "Europe/Berlin" })).toBe(
      "Peak 31.5 players at 19:00, fewest 4 at 20:00, latest 4.",
    );
  });

  test("TPS: the minimum with its time, the average and the latest", () => {
    const s = series(1, { tps: [20, 19.94, 18.9, 19.5] });
    expect(summarize(s, "tps", UTC)).toBe("TPS min 18.9 at 18:00, average 19.6, latest 19.5.");
  });

  test("a tie is reported at its first time", () => {
    const s = series(24, { tps: [18.9, 20, 18.9] });
    expect(summarize(s, "tps", UTC)).toStartWith("TPS min 18.9 at 17:00,");
  });

  test("latency and MSPT carry their unit; memory says of how much", () => {
    const s = series(24, {
      latency: [20, 120, 22],
      mspt: [12.04, 48.2, 10],
      memory: [1800, 2048, 1900],
      memory_max: [4096, 4096, 4096],
    });
    expect(summarize(s, "latency", UTC)).toBe("Latency averaged 54 ms, highest 120 ms at 18:00, latest 22 ms.");
    expect(summarize(s, "mspt", UTC)).toBe("MSPT max 48.2 ms at 18:00, average 23.4 ms, latest 10 ms.");
    expect(summarize(s, "memory", UTC)).toBe("Memory peak 2,048 MB of 4,096 MB at 18:00, latest 1,900 MB.");
  });

  test("a window longer than a day names the day", () => {
    const s = series(7 * 24, { players: [3, 31, 5] });
    expect(summarize(s, "players", UTC)).toBe(
      "Peak 31 players on Tue 24 Nov, 18:00, fewest 3 on Tue 24 Nov, 17:00, latest 5.",
    );
  });

  test("a series without a reading says so, and why where the agent is the source", () => {
    const s = series(1, { latency: [null, null] });
    for (const spec of CHARTS) expect(summarize(s, spec.metric, UTC)).toBe(spec.empty);
    expect(summarize(s, "tps", UTC)).toContain("the agent sends them");
    expect(extremes([1, 2], [null, Number.NaN])).toBeNull();
  });

  test("every chart has a title and a y axis label with its unit", () => {
    expect(CHARTS.map((c) => [c.metric, c.axis])).toEqual([
      ["players", "Players"],
      ["latency", "Latency (ms)"],
      ["tps", "TPS"],
      ["mspt", "MSPT (ms)"],
      ["memory", "Memory (MB)"],
    ]);
  });
});
