import { expect, test } from "bun:test";
import { offsetSpans, sameClock, validTimeZone, zoneOffset } from "../src/lib/time-zone";

const Q = 15 * 60 * 1000;

test("zoneOffset: standard and summer time, half and quarter hours, and west of UTC", () => {
  expect(zoneOffset("UTC", Date.parse("2026-07-01T12:00:00Z"))).toBe(0);
  expect(zoneOffset("Europe/Berlin", Date.parse("2026-01-15T12:00:00Z"))).toBe(3_600_000);
  expect(zoneOffset("Europe/Berlin", Date.parse("2026-07-15T12:00:00Z"))).toBe(7_200_000);
  expect(zoneOffset("Asia/Kathmandu", Date.parse("2026-07-15T12:00:00Z"))).toBe(5.75 * 3_600_000);
  expect(zoneOffset("America/St_Johns", Date.parse("2026-01-15T12:00:00Z"))).toBe(-3.5 * 3_600_000);
  // Berlin's summer time starts 2026-03-29 at 01:00 UTC: the quarter before is still +01:00.
  expect(zoneOffset("Europe/Berlin", Date.parse("2026-03-29T00:45:00Z"))).toBe(3_600_000);
  expect(zoneOffset("Europe/Berlin", Date.parse("2026-03-29T01:00:00Z"))).toBe(7_200_000);
});

test("offsetSpans: a year in each zone is cut exactly where the offset of some quarter changes", () => {
  const from = Date.parse("2025-11-28T00:00:00Z");
  const to = Date.parse("2026-11-28T00:00:00Z");
  for (const zone of [
    "UTC",
    "Europe/Berlin",
    "America/New_York",
    "Australia/Lord_Howe",
    "Pacific/Chatham",
    "Asia/Kolkata",
  ]) {
    expect(validTimeZone(zone)).toBe(true);
    const spans = offsetSpans(zone, from, to, Q);
    // Every quarter's own offset, one by one.
    const want: { from: number; to: number; offset: number }[] = [];
    for (let t = from; t < to; t += Q) {
      const o = zoneOffset(zone, t);
      const last = want.at(-1);
      if (last && last.offset === o) last.to = t + Q;
      else want.push({ from: t, to: t + Q, offset: o });
    }
    expect([zone, spans]).toEqual([zone, want]);
    expect(spans.length).toBe(zone === "UTC" || zone === "Asia/Kolkata" ? 1 : 3);
  }
  // A window shorter than a day, and one of a single quarter.
  const day = Date.parse("2026-10-25T00:00:00Z");
  expect(offsetSpans("Europe/Berlin", day, day + 86_400_000, Q)).toEqual([
    { from: day, to: day + Q * 4, offset: 7_200_000 },
    { from: day + Q * 4, to: day + 86_400_000, offset: 3_600_000 },
  ]);
  expect(offsetSpans("Europe/Berlin", day, day + Q, Q)).toEqual([{ from: day, to: day + Q, offset: 7_200_000 }]);
});

test("two zones with the same clock over a range: the same offsets, changing at the same minutes", () => {
  const at = (s: string) => Date.parse(s);
  const year = [at("2025-10-01T00:00:00Z"), at("2026-12-01T00:00:00Z")] as const;
  // Equal by name, and zones that have kept the same rules since long before this range.
  for (const [a, b] of [
    ["Europe/Berlin", "Europe/Berlin"],
    ["Europe/Paris", "Europe/Berlin"],
    ["Europe/London", "Europe/Lisbon"],
    ["America/Toronto", "America/New_York"],
    ["UTC", "Etc/UTC"],
  ])
    expect([a, b, sameClock(a!, b!, ...year)]).toEqual([a, b, true]);
  // An hour apart in most of the year; the same offset in winter but not in summer (Phoenix keeps
  // no DST); 15 minutes apart all year.
  for (const [a, b] of [
    ["Europe/London", "Europe/Berlin"],
    ["America/Phoenix", "America/Denver"],
    ["Asia/Kolkata", "Asia/Kathmandu"],
  ])
    expect([a, b, sameClock(a!, b!, ...year)]).toEqual([a, b, false]);
  expect(sameClock("America/Phoenix", "America/Denver", at("2026-01-01T00:00:00Z"), at("2026-03-08T09:00:00Z"))).toBe(
    true,
  );
  // Denver moves to summer time at 2026-03-08 09:00 UTC: a range holding that minute differs.
  expect(sameClock("America/Phoenix", "America/Denver", at("2026-01-01T00:00:00Z"), at("2026-03-08T09:01:00Z"))).toBe(
    false,
  );
  // The same offsets all year, changing two hours apart: Havana at midnight local (05:00 UTC in
  // March), New York at 02:00 (07:00 UTC). Agreeing over a range without the change, not over one with it.
  expect(sameClock("America/Havana", "America/New_York", ...year)).toBe(false);
  expect(sameClock("America/Havana", "America/New_York", at("2026-04-01T00:00:00Z"), at("2026-10-01T00:00:00Z"))).toBe(
    true,
  );
  for (const t of ["2026-03-08T05:30:00Z", "2026-11-01T05:30:00Z"])
    expect(zoneOffset("America/Havana", at(t))).not.toBe(zoneOffset("America/New_York", at(t)));
  expect(zoneOffset("America/Havana", at("2026-03-08T04:00:00Z"))).toBe(
    zoneOffset("America/New_York", at("2026-03-08T04:00:00Z")),
  );
});
