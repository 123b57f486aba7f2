import { zoneOffset } from "../src/lib/time-zone";
/**
 * The next runs of a five-field cron expression (minute hour day month weekday, UTC), for the
 * announcement form's preview. The server is the judge of validity; this only previews.
 */
const RANGES: [number, number][] = [
  [0, 59],
  [0, 23],
  [1, 31],
  [1, 12],
  [0, 6],
];

function field(src: string, [lo, hi]: [number, number]): Set<number> | null {
  const out = new Set<number>();
  for (const part of src.split(",")) {
    const m = /^(\*|\d+(?:-\d+)?)(?:\/(\d+))?$/.exec(part);
    if (!m) return null;
    const step = m[2] ? Number(m[2]) : 1;
    let a = lo;
    let b = hi;
    if (m[1] !== "*") {
      const [x, y] = m[1]!.split("-").map(Number);
      a = x!;
      b = y ?? (m[2] ? hi : x!);
    }
    if (a < lo || b > hi || a > b || step < 1) return null;
    for (let v = a; v <= b; v += step) out.add(v === 7 && hi === 6 ? 0 : v);
  }
  return out;
}

export function nextRuns(expr: string, count = 3, from = new Date()): Date[] | null {
  const parts = expr.trim().split(/\s+/);
  if (parts.length !== 5) return null;
  const sets = parts.map((p, i) => field(p, RANGES[i]!));
  if (sets.some((s) => !s)) return null;
  const [min, hour, dom, mon, dow] = sets as Set<number>[];
  const domAny = parts[2] === "*";
  const dowAny = parts[4] === "*";
  const t = new Date(from);
  t.setUTCSeconds(0, 0);
  t.setUTCMinutes(t.getUTCMinutes() + 1);
  const out: Date[] = [];
  // A year of minutes bounds the search for expressions that rarely match.
  for (let i = 0; i < 527_040 && out.length < count; i++) {
    const dayOk =
      domAny || dowAny
        ? dom!.has(t.getUTCDate()) && dow!.has(t.getUTCDay())
        : dom!.has(t.getUTCDate()) || dow!.has(t.getUTCDay());
    if (mon!.has(t.getUTCMonth() + 1) && dayOk && hour!.has(t.getUTCHours()) && min!.has(t.getUTCMinutes()))
      out.push(new Date(t));
    t.setUTCMinutes(t.getUTCMinutes() + 1);
  }
  return out;
}

/** A time's wall clock in `timeZone`, as a Date whose UTC fields are that wall clock (to the second). */
export function wallClock(at: Date, timeZone: string): Date {
  return new Date(Math.floor(at.getTime() / 1000) * 1000 + zoneOffset(timeZone, at.getTime()));
}

/** The moment a wall clock time (UTC fields of `wall`) happens in `timeZone` (the later offset in a gap or overlap). */
export function fromWallClock(wall: Date, timeZone: string): Date {
  const offset = (at: Date) => wallClock(at, timeZone).getTime() - Math.floor(at.getTime() / 1000) * 1000;
  const guess = new Date(wall.getTime() - offset(wall));
  return new Date(wall.getTime() - offset(guess));
}

/**
 * The next runs of a five-field cron expression read in `timeZone` (a maintenance window's
 * schedule is read in the team's time zone): matched on the wall clock, then placed in time.
 */
export function nextRunsIn(expr: string, timeZone: string, count = 3, from = new Date()): Date[] | null {
  let wall: Date;
  try {
    wall = wallClock(from, timeZone);
  } catch {
    return null;
  }
  return nextRuns(expr, count, wall)?.map((w) => fromWallClock(w, timeZone)) ?? null;
}
