import { sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { rowsOf } from "../db/rows";
import type { StatusPageShow } from "../db/schema";
import type { StatusPageRow } from "./service";
import { publicIncidents } from "../incidents/service";
import { upcomingMaintenance } from "../maintenance/service";
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
 * One incident as the public sees it (`publicIncidents` of docs/incidents.md: no crash lines, no
 * author names; an automatic incident is `down` whether or not it was a crash). Every reader (the
 * page, the widget, the feed) takes incidents from this shape.
 */
export interface PublicIncident {
  id: string;
  /** null: an incident of a whole network. */
  serverId: string | null;
  /** The server's name, or the network's for a network incident. */
  serverName: string;
  title: string;
  kind: "down" | "manual";
  status: string;
  startedAt: string;
  endedAt: string | null;
  durationSeconds: number;
  ongoing: boolean;
  updates: { at: string; status: string; message: string }[];
}

/** A planned maintenance window as the public sees it. */
export interface PublicMaintenance {
  /** The window and this occurrence's start: a repeating window has one per run. */
  id: string;
  windowId: string;
  title: string;
  /** What the team tells players about it (may be empty). */
  message: string;
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
 * The incidents of the page's servers and networks since `since` (ongoing ones whenever they
 * began), newest first, from the incidents' own public view (src/incidents/service.ts).
 */
export async function pageIncidents(
  db: Db,
  page: StatusPageRow,
  servers: readonly { id: string; name: string }[],
  since: Date,
  now = new Date(),
): Promise<PublicIncident[]> {
  if (servers.length === 0 && page.networkNames.length === 0) return [];
  const names = new Map(servers.map((s) => [s.id, s.name]));
  const found = await publicIncidents(db, page.teamId, {
    serverIds: servers.map((s) => s.id),
    networkNames: page.networkNames,
    since,
    limit: MAX_INCIDENTS,
  });
  return found.map((i) => {
    const start = new Date(i.started_at);
    const end = i.ended_at ? new Date(i.ended_at) : null;
    return {
      id: i.incident_id,
      serverId: i.server_id,
      serverName: (i.server_id ? names.get(i.server_id) : i.network_name) ?? "",
      title: i.title,
      kind: i.kind,
      status: i.status,
      startedAt: start.toISOString(),
      endedAt: end ? end.toISOString() : null,
      durationSeconds: Math.max(0, Math.round(((end ?? now).getTime() - start.getTime()) / 1000)),
      ongoing: end === null,
      updates: i.updates,
    };
  });
}

/** How far ahead a page shows planned maintenance. */
const MAINTENANCE_AHEAD_DAYS = 30;

/**
 * Planned maintenance of the page's servers and networks that is running or to come within
 * MAINTENANCE_AHEAD_DAYS, soonest first (docs/incidents.md, maintenance windows).
 */
export async function pageMaintenance(
  db: Db,
  page: StatusPageRow,
  servers: readonly { id: string; name: string }[],
  now: Date,
): Promise<PublicMaintenance[]> {
  const names = new Map(servers.map((s) => [s.id, s.name]));
  const networks = new Set(page.networkNames);
  const { occurrences } = await upcomingMaintenance(db, page.teamId, {
    days: MAINTENANCE_AHEAD_DAYS,
    now,
    limit: MAX_INCIDENTS,
  });
  return occurrences
    .filter((o) => (o.server_id ? names.has(o.server_id) : o.network_name !== null && networks.has(o.network_name)))
    .map((o) => ({
      id: `${o.window_id}:${o.starts_at}`,
      windowId: o.window_id,
      title: o.title,
      message: o.message ?? "",
      serverNames: [o.server_id ? names.get(o.server_id)! : o.network_name!],
      startsAt: o.starts_at,
      endsAt: o.ends_at,
      active: o.active,
    }));
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
    pageIncidents(db, page, rows, since, now),
    pageMaintenance(db, page, rows, now),
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
