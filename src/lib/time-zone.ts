/** True for an IANA time zone name Intl knows (the database's zone data has the same names). */
export function validTimeZone(zone: string): boolean {
  if (zone.length > 64 || !/^[A-Za-z0-9_+\-/]+$/.test(zone)) return false;
  try {
    new Intl.DateTimeFormat("en", { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

const formats = new Map<string, Intl.DateTimeFormat>();

/** The zone's offset from UTC at instant `t` (ms since the epoch), in milliseconds. */
export function zoneOffset(zone: string, t: number): number {
  let f = formats.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", {
      timeZone: zone,
      hourCycle: "h23",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric",
    });
    if (formats.size > 500) formats.clear();
    formats.set(zone, f);
  }
  const p: Record<string, number> = {};
  for (const x of f.formatToParts(t)) if (x.type !== "literal") p[x.type] = Number(x.value);
  const local = Date.UTC(p.year!, p.month! - 1, p.day!, p.hour!, p.minute!, p.second!);
  return local - (t - (((t % 1000) + 1000) % 1000));
}

/**
 * [from, to) cut where the zone's offset changes, each part with its offset; `step` is the
 * resolution (the instants are multiples of it from `from`). The offset is sampled daily and a
 * change found by halving, so a year costs a few hundred lookups, not one per step.
 */
export function offsetSpans(zone: string, from: number, to: number, step: number) {
  const DAY = 86_400_000;
  const spans: { from: number; to: number; offset: number }[] = [];
  let start = from;
  let offset = zoneOffset(zone, from);
  let t = from;
  while (t < to) {
    const next = Math.min(t + Math.max(step, Math.floor(DAY / step) * step), to - step);
    const o = next > t ? zoneOffset(zone, next) : offset;
    if (o !== offset) {
      // The first step in (t, next] with another offset than `offset`.
      let lo = t;
      let hi = next;
      while (hi - lo > step) {
        const mid = lo + Math.floor((hi - lo) / step / 2) * step;
        if (zoneOffset(zone, mid) === offset) lo = mid;
        else hi = mid;
      }
      spans.push({ from: start, to: hi, offset });
      start = hi;
      offset = zoneOffset(zone, hi);
      t = hi;
      continue;
    }
    if (next <= t) break;
    t = next;
  }
  spans.push({ from: start, to, offset });
  return spans;
}

/**
 * Whether two zones read every instant of [from, to) as the same local time: the same offsets,
 * changing at the same minutes (`Europe/Paris` and `Europe/Berlin` since 1980; `America/Phoenix`
 * and `America/Denver` only in winter). `from` is taken down to its minute.
 */
export function sameClock(a: string, b: string, from: number, to: number): boolean {
  if (a === b) return true;
  const MINUTE = 60_000;
  const start = Math.floor(from / MINUTE) * MINUTE;
  // Most pairs differ at the start already.
  if (zoneOffset(a, start) !== zoneOffset(b, start)) return false;
  const x = offsetSpans(a, start, to, MINUTE);
  const y = offsetSpans(b, start, to, MINUTE);
  return x.length === y.length && x.every((s, i) => s.to === y[i]!.to && s.offset === y[i]!.offset);
}
