import { sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { rowsOf } from "../db/rows";
import { iso } from "../lib/schemas";
import { closedSpansOfDays, timestampList } from "../servers/players";

/** Times here are microseconds since the epoch (what the database stores), as exact doubles. */
const DAY = 86_400_000_000;
export const TOP_PLAYERS = 10;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const us = (column: string) => sql.raw(`(extract(epoch from ${column}) * 1000000)::float8`);

interface Figures {
  unique_players: number;
  new_players: number;
  returning_players: number;
  peak_concurrent: number;
  playtime_seconds: number;
}
const figures = (unique: number, fresh: number, peak: number, playtimeUs: number): Figures => ({
  unique_players: unique,
  new_players: fresh,
  returning_players: unique - fresh,
  peak_concurrent: peak,
  playtime_seconds: Math.round(playtimeUs / 1e6),
});

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** The most spans [a, b) holding one instant; a leave and a join at the same instant are not together. */
function peakOf(spans: [number, number][]): number {
  const pts: [number, number][] = [];
  for (const [a, b] of spans) if (a < b) pts.push([a, 1], [b, -1]);
  pts.sort((x, y) => x[0] - y[0] || x[1] - y[1]);
  let level = 0;
  let peak = 0;
  for (const [, delta] of pts) {
    level += delta;
    if (level > peak) peak = level;
  }
  return peak;
}

/**
 * Per UTC day of [from, to) (the first and last day cut to it): players seen, of them first
 * seen that day, the most online at once, time played; totals, and the top players by time
 * played. A session is in a day when it overlaps it or starts in it; open sessions count up to
 * `to`. docs/history.md ("Player summary") gives the definitions.
 *
 * Whole days come from the daily rollups of closed sessions (`server_days`, `player_days`),
 * with the sessions still open added to them; only the two cut days at the window's edges,
 * and the day an open session started in, are read from the sessions themselves. So a read
 * costs a row a day, a row a player-day for the top players, and one or two days of sessions,
 * whatever the window's history holds.
 */
export async function playerSummary(db: Db, serverId: string, from: Date, to: Date) {
  const lo = from.getTime() * 1000;
  const hi = to.getTime() * 1000;
  const first = Math.floor(lo / DAY) * DAY;
  const last = Math.floor(hi / DAY) * DAY;
  const at = (t: number) => sql`${new Date(t / 1000).toISOString()}::timestamptz`;

  await turn();
  const open = rowsOf<{ uuid: string; a: number; first_seen: number | null }>(
    await db.execute(sql`
      select s.uuid, ${us("s.joined_at")} as a, ${us("p.first_seen")} as first_seen
        from player_sessions s left join players p on p.server_id = s.server_id and p.uuid = s.uuid
       where s.server_id = ${serverId} and s.left_at is null and s.joined_at < ${at(hi)}`),
  ).map((o) => ({ ...o, a: Number(o.a) }));

  // Days read from sessions: the cut ends of the window, and wherever an open session starts
  // (before that instant the day's closed sessions stand alone, after it one more is online).
  const raw = new Set([first]);
  if (last < hi) raw.add(last);
  for (const o of open) if (o.a >= first) raw.add(Math.floor(o.a / DAY) * DAY);
  const rawList = [...raw].sort((x, y) => x - y).map((d) => new Date(d / 1000));
  const rawDays = sql`select ${serverId}::uuid as server_id, day from unnest(array[${timestampList(rawList)}]) as day`;
  const whole = sql`server_id = ${serverId} and day > ${at(first)} and day < ${at(last)}
    and day not in (${timestampList(rawList)})`;
  const openUuids = [...new Set(open.map((o) => o.uuid))].filter((u) => UUID.test(u));

  // One statement at a time, with a turn of the event loop before each: PGlite runs in this
  // thread and answers without yielding to I/O, so statements awaited back to back would hold
  // every other request for the whole read; this way another tenant's query waits for one.
  await turn();
  const spanRows = await db.execute(sql`
      select ${us("x.day")} as day, x.uuid, ${us("x.joined_at")} as a, ${us("x.left_at")} as b, ${us("p.first_seen")} as first_seen
        from (${closedSpansOfDays(rawDays)}) x
        left join players p on p.server_id = x.server_id and p.uuid = x.uuid`);
  await turn();
  const dayRows = await db.execute(sql`
      select ${us("day")} as day, players, playtime_us::float8 as playtime_us, peak
        from server_days where ${whole}`);
  // Players first seen on a whole day who played that day: that day's new players.
  await turn();
  const newRows = await db.execute(sql`
      select ${us("pd.day")} as day, count(*)::int as n
        from players p
        join player_days pd
          on pd.server_id = p.server_id and pd.uuid = p.uuid and pd.day = date_bin('1 day', p.first_seen, timestamptz '2000-01-01 00:00:00+00')
       where p.server_id = ${serverId} and p.first_seen >= ${at(first + DAY)} and p.first_seen < ${at(last)}
       group by pd.day`);
  // The whole days on which a player now online also has closed sessions (counted once).
  const presenceRows =
    openUuids.length === 0
      ? []
      : await turn().then(() =>
          db.execute(sql`
          select ${us("day")} as day, uuid from player_days
           where ${whole} and uuid in (${sql.raw(openUuids.map((u) => `'${u}'::uuid`).join(", "))})`),
        );

  const firstSeen = new Map<string, number | null>();
  for (const o of open) firstSeen.set(o.uuid, o.first_seen === null ? null : Number(o.first_seen));
  const spansByDay = new Map<number, { uuid: string; a: number; b: number }[]>();
  for (const r of rowsOf<{ day: number; uuid: string; a: number; b: number; first_seen: number | null }>(spanRows)) {
    const list = spansByDay.get(Number(r.day)) ?? [];
    list.push({ uuid: r.uuid, a: Number(r.a), b: Math.min(Number(r.b), hi) });
    spansByDay.set(Number(r.day), list);
    firstSeen.set(r.uuid, r.first_seen === null ? null : Number(r.first_seen));
  }
  const rolled = new Map(
    rowsOf<{ day: number; players: number; playtime_us: number; peak: number }>(dayRows).map((r) => [Number(r.day), r]),
  );
  const newOn = new Map(rowsOf<{ day: number; n: number }>(newRows).map((r) => [Number(r.day), Number(r.n)]));
  const present = new Set(rowsOf<{ day: number; uuid: string }>(presenceRows).map((r) => `${Number(r.day)} ${r.uuid}`));

  // What the rollups' per-player sums lack: the raw days, and open sessions on whole days.
  const extra = new Map<string, { us: number; n: number }>();
  const add = (uuid: string, t: number, n: number) => {
    const e = extra.get(uuid) ?? { us: 0, n: 0 };
    e.us += t;
    e.n += n;
    extra.set(uuid, e);
  };

  const days: (Figures & { date: string; from: string; to: string })[] = [];
  for (let d = first; d < hi; d += DAY) {
    const dd = Math.max(d, lo);
    const ee = Math.min(d + DAY, hi);
    let day: Figures;
    if (raw.has(d)) {
      const spans = [...(spansByDay.get(d) ?? []), ...open.map((o) => ({ uuid: o.uuid, a: o.a, b: hi }))];
      const seen = new Set<string>();
      const cut: [number, number][] = [];
      let t = 0;
      for (const s of spans) {
        if (!(s.a < ee && (s.b > dd || s.a >= dd))) continue;
        seen.add(s.uuid);
        const piece: [number, number] = [Math.max(s.a, dd), Math.min(s.b, ee)];
        cut.push(piece);
        const len = Math.max(0, piece[1] - piece[0]);
        t += len;
        // A session is counted among a player's sessions on the first day of the window it is in.
        add(s.uuid, len, d === first || s.a >= d ? 1 : 0);
      }
      let fresh = 0;
      for (const u of seen) {
        const f = firstSeen.get(u);
        if (f !== null && f !== undefined && f >= dd && f < ee) fresh++;
      }
      day = figures(seen.size, fresh, peakOf(cut), t);
    } else {
      // An open session on a whole day that is not its first covers all of it.
      const r = rolled.get(d);
      const covering = open.filter((o) => o.a < d);
      let unique = Number(r?.players ?? 0);
      let fresh = newOn.get(d) ?? 0;
      for (const o of covering) {
        add(o.uuid, DAY, 0);
        if (present.has(`${d} ${o.uuid}`)) continue;
        unique++;
        if (o.first_seen !== null && o.first_seen >= d && o.first_seen < d + DAY) fresh++;
      }
      const t = Number(r?.playtime_us ?? 0) + covering.length * DAY;
      day = figures(unique, fresh, Number(r?.peak ?? 0) + covering.length, t);
    }
    days.push({
      date: new Date(dd / 1000).toISOString().slice(0, 10),
      from: iso(new Date(dd / 1000)),
      to: iso(new Date(ee / 1000)),
      ...day,
    });
  }

  const extraJson = JSON.stringify([...extra].map(([uuid, e]) => ({ uuid, us: e.us, n: e.n })));
  await turn();
  const [totals] = rowsOf<{ unique: number; fresh: number; playtime_us: number; top: TopRow[] | string | null }>(
    await db.execute(sql`
      with roll as (
        select uuid, sum(playtime_us)::float8 as us, sum(joins)::int as n from player_days where ${whole} group by uuid),
      extra as (select * from json_to_recordset(${extraJson}::json) as x(uuid uuid, us float8, n int)),
      everyone as (
        select uuid, sum(us) as us, sum(n)::int as n from (select * from roll union all select * from extra) u group by uuid)
      select (select count(*) from everyone)::int as unique,
             (select count(*) from everyone e join players p on p.server_id = ${serverId} and p.uuid = e.uuid
               where p.first_seen >= ${at(lo)})::int as fresh,
             (select coalesce(sum(us), 0) from everyone)::float8 as playtime_us,
             (select json_agg(t) from (
                select e.uuid, p.name, e.us, e.n from everyone e
                  left join players p on p.server_id = ${serverId} and p.uuid = e.uuid
                 order by e.us desc, e.uuid limit ${TOP_PLAYERS}) t) as top`),
  );
  const top: TopRow[] = typeof totals!.top === "string" ? JSON.parse(totals!.top) : (totals!.top ?? []);
  return {
    totals: figures(
      Number(totals!.unique),
      Number(totals!.fresh),
      Math.max(0, ...days.map((d) => d.peak_concurrent)),
      Number(totals!.playtime_us),
    ),
    days,
    top_players: top.map((t) => ({
      uuid: t.uuid,
      name: t.name,
      playtime_seconds: Math.round(Number(t.us) / 1e6),
      sessions: Number(t.n),
    })),
  };
}

interface TopRow {
  uuid: string;
  name: string | null;
  us: number;
  n: number;
}
