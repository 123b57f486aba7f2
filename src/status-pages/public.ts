import { sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { rowsOf } from "../db/rows";
import type { StatusPageShow } from "../db/schema";
import type { StatusPageRow } from "./service";
import { STATUS_PAGE_LIMITS } from "./schemas";

/** Days of uptime bars each server shows. */
export const BAR_DAYS = 90;
const DAY_MS = 86_400_000;
/** The most servers one page shows (its own plus its networks'). */
export const MAX_PAGE_SERVERS = STATUS_PAGE_LIMITS.servers * 2;
/** The most incidents the history and the feed list. */
export const MAX_INCIDENTS = 50;

export interface DayBar {
  /** UTC midnight of the day, ms. */
  day: number;
  up: number;
  down: number;
  /** Share of pings up, null when the day had none. */
  uptime: number | null;
  /** Outages that overlap the day. */
  incidents: number;
}

export interface PublicServer {
  id: string;
  name: string;
  online: boolean | null;
  checkedAt: string | null;
  latencyMs: number | null;
  playersOnline: number | null;
  playersMax: number | null;
  version: string | null;
  motd: string | null;
  days: DayBar[];
  uptime: { "24h": number | null; "7d": number | null; "30d": number | null };
  /** The outage going on now. */
  incident: { startedAt: string; durationSeconds: number } | null;
}

/**
 * One incident as the public sees it. Today it is an outage the pinger recorded in
 * `server_incidents` (start, end, server); titles, kinds and an update timeline join here when
 * incidents carry them, and every reader (the page, the feed) takes them from this shape.
 */
export interface PublicIncident {
  id: string;
  serverId: string;
  serverName: string;
  title: string;
  kind: "outage";
  startedAt: string;
  endedAt: string | null;
  durationSeconds: number;
  ongoing: boolean;
  updates: { at: string; status: string; message: string }[];
}

/** A planned maintenance window as the public sees it. */
export interface PublicMaintenance {
  id: string;
  title: string;
  serverNames: string[];
  startsAt: string;
  endsAt: string;
  active: boolean;
}

/** Everything a page shows, read at one moment; only what the page chose to show is filled in. */
export interface PublicView {
  page: StatusPageRow;
  servers: PublicServer[];
  incidents: PublicIncident[];
  maintenance: PublicMaintenance[];
  generatedAt: string;
}

const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));
const ratio = (up: number, down: number) => (up + down === 0 ? null : Math.round((up / (up + down)) * 1e6) / 1e6);
const toIso = (v: unknown) => (v === null || v === undefined ? null : new Date(v as string).toISOString());

/**
 * The incidents of these servers since `since` (ongoing ones whenever they began), newest first.
 * The one place the public pages, the widget and the feed read incidents from.
 */
export async function publicIncidents(
  db: Db,
  serverIds: readonly string[],
  since: Date,
  now = new Date(),
): Promise<PublicIncident[]> {
  if (serverIds.length === 0) return [];
  const result = await db.execute(sql`
    select i.id, i.server_id, s.name as server_name, i.started_at, i.ended_at
      from server_incidents i join servers s on s.id = i.server_id
     where i.server_id = any(${`{${serverIds.join(",")}}`}::uuid[])
       and (i.ended_at is null or i.ended_at > ${since.toISOString()}::timestamptz)
     order by i.started_at desc, i.id
     limit ${MAX_INCIDENTS}`);
  return rowsOf<{ id: string; server_id: string; server_name: string; started_at: unknown; ended_at: unknown }>(
    result,
  ).map((r) => {
    const start = new Date(r.started_at as string);
    const end = r.ended_at ? new Date(r.ended_at as string) : null;
    return {
      id: r.id,
      serverId: r.server_id,
      serverName: r.server_name,
      title: `${r.server_name} was unreachable`,
      kind: "outage" as const,
      startedAt: start.toISOString(),
      endedAt: end ? end.toISOString() : null,
      durationSeconds: Math.max(0, Math.round(((end ?? now).getTime() - start.getTime()) / 1000)),
      ongoing: end === null,
      updates: [],
    };
  });
}

/**
 * Planned maintenance of these servers that is running or still to come. Maintenance windows
 * are not stored yet: until they are, there is none, and the page shows no such section.
 */
export async function publicMaintenance(
  _db: Db,
  _serverIds: readonly string[],
  _now: Date,
): Promise<PublicMaintenance[]> {
  return [];
}

/** The page's servers: those it names and every server of the networks it names, by name. */
async function pageServers(db: Db, page: StatusPageRow) {
  const ids = `{${page.serverIds.join(",")}}`;
  const networks = `{${page.networkNames.map((n) => `"${n.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"`).join(",")}}`;
  const result = await db.execute(sql`
    select s.id, s.name, st.online, st.checked_at, st.latency_ms, st.players_online, st.players_max, st.version, coalesce(st.motd_raw, st.motd) as motd,
           st.changed_at
      from servers s left join server_status st on st.server_id = s.id
     where s.team_id = ${page.teamId}
       and (s.id = any(${ids}::uuid[]) or (s.kind = 'network' and s.network_name = any(${networks}::text[])))
     order by s.name, s.id
     limit ${MAX_PAGE_SERVERS}`);
  return rowsOf<{
    id: string;
    name: string;
    online: boolean | null;
    checked_at: unknown;
    latency_ms: number | null;
    players_online: number | null;
    players_max: number | null;
    version: string | null;
    motd: string | null;
  }>(result);
}

/**
 * Per server and UTC day of the last BAR_DAYS, the pings up and down (the hourly tier of the
 * metric history, docs/history.md), with the last 24 hours, 7 and 30 days summed beside them.
 */
async function dailyUptime(db: Db, serverIds: string[], now: Date) {
  const todayStart = Math.floor(now.getTime() / DAY_MS) * DAY_MS;
  const from = new Date(todayStart - (BAR_DAYS - 1) * DAY_MS).toISOString();
  const h24 = new Date(Math.floor((now.getTime() - DAY_MS) / 3_600_000) * 3_600_000).toISOString();
  const d7 = new Date(now.getTime() - 7 * DAY_MS).toISOString();
  const d30 = new Date(now.getTime() - 30 * DAY_MS).toISOString();
  const result = await db.execute(sql`
    select server_id, (floor(extract(epoch from bucket) / 86400) * 86400000)::float8 as day,
           sum(up_n)::int as up, sum(down_n)::int as down,
           coalesce(sum(up_n) filter (where bucket >= ${h24}::timestamptz), 0)::int as up24,
           coalesce(sum(down_n) filter (where bucket >= ${h24}::timestamptz), 0)::int as down24,
           coalesce(sum(up_n) filter (where bucket >= ${d7}::timestamptz), 0)::int as up7,
           coalesce(sum(down_n) filter (where bucket >= ${d7}::timestamptz), 0)::int as down7,
           coalesce(sum(up_n) filter (where bucket >= ${d30}::timestamptz), 0)::int as up30,
           coalesce(sum(down_n) filter (where bucket >= ${d30}::timestamptz), 0)::int as down30
      from server_metrics_hour
     where server_id = any(${`{${serverIds.join(",")}}`}::uuid[]) and bucket >= ${from}::timestamptz
     group by 1, 2`);
  return {
    todayStart,
    rows: rowsOf<Record<string, unknown> & { server_id: string; day: number }>(result),
  };
}

/** Reads everything a published page shows. */
export async function readPublicView(db: Db, page: StatusPageRow, now = new Date()): Promise<PublicView> {
  const rows = await pageServers(db, page);
  const ids = rows.map((r) => r.id);
  const since = new Date(Math.floor(now.getTime() / DAY_MS) * DAY_MS - (BAR_DAYS - 1) * DAY_MS);
  const [daily, incidents, maintenance] = await Promise.all([
    ids.length ? dailyUptime(db, ids, now) : { todayStart: 0, rows: [] },
    publicIncidents(db, ids, since, now),
    publicMaintenance(db, ids, now),
  ]);
  const show: StatusPageShow = page.show;
  const byServer = new Map<string, (typeof daily.rows)[number][]>();
  for (const r of daily.rows) {
    const list = byServer.get(r.server_id);
    if (list) list.push(r);
    else byServer.set(r.server_id, [r]);
  }
  const firstDay = daily.todayStart - (BAR_DAYS - 1) * DAY_MS;
  const servers = rows.map((r): PublicServer => {
    const days: DayBar[] = Array.from({ length: BAR_DAYS }, (_, i) => ({
      day: firstDay + i * DAY_MS,
      up: 0,
      down: 0,
      uptime: null,
      incidents: 0,
    }));
    const sums = { up24: 0, down24: 0, up7: 0, down7: 0, up30: 0, down30: 0 };
    for (const d of byServer.get(r.id) ?? []) {
      const i = Math.round((Number(d.day) - firstDay) / DAY_MS);
      const bar = days[i];
      if (bar) {
        bar.up = Number(d.up);
        bar.down = Number(d.down);
        bar.uptime = ratio(bar.up, bar.down);
      }
      for (const k of Object.keys(sums) as (keyof typeof sums)[]) sums[k] += Number(d[k] ?? 0);
    }
    let incident: PublicServer["incident"] = null;
    for (const inc of incidents) {
      if (inc.serverId !== r.id) continue;
      if (inc.ongoing && !incident) incident = { startedAt: inc.startedAt, durationSeconds: inc.durationSeconds };
      const start = Date.parse(inc.startedAt);
      const end = inc.endedAt ? Date.parse(inc.endedAt) : now.getTime();
      for (const bar of days) if (start < bar.day + DAY_MS && end >= bar.day) bar.incidents++;
    }
    return {
      id: r.id,
      name: r.name,
      online: r.online,
      checkedAt: toIso(r.checked_at),
      latencyMs: show.latency && r.online ? num(r.latency_ms) : null,
      playersOnline: show.players && r.online ? num(r.players_online) : null,
      playersMax: show.players && r.online ? num(r.players_max) : null,
      version: show.version ? r.version : null,
      motd: show.motd ? r.motd : null,
      days,
      uptime: {
        "24h": ratio(sums.up24, sums.down24),
        "7d": ratio(sums.up7, sums.down7),
        "30d": ratio(sums.up30, sums.down30),
      },
      incident,
    };
  });
  return { page, servers, incidents, maintenance, generatedAt: now.toISOString() };
}
