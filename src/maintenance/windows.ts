import { Cron } from "croner";
import { sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { rowsOf } from "../db/rows";

/** A maintenance window as stored, with its team's time zone (a recurring schedule is read in it). */
export interface WindowRow {
  id: string;
  team_id: string;
  server_id: string | null;
  network_name: string | null;
  title: string;
  message: string | null;
  starts_at: Date | string | null;
  ends_at: Date | string | null;
  schedule: string | null;
  duration_minutes: number | null;
  time_zone: string;
}

/** One occurrence of a window: a one-off window has one, a recurring one an occurrence per cron run. */
export interface Occurrence {
  starts_at: Date;
  ends_at: Date;
}

const ms = (v: Date | string) => (v instanceof Date ? v.getTime() : new Date(v).getTime());

/** The documented cron subset (as announcements take it): five fields of `*`, numbers, ranges, lists and steps. */
export const CRON_SHAPE = /^[\d*,/-]+(?:\s+[\d*,/-]+){4}$/;

export function cronOf(schedule: string, timeZone: string): Cron {
  return new Cron(schedule.trim(), { mode: "5-part", timezone: timeZone, paused: true });
}

/** The occurrence of a window that covers `at` (start included, end excluded), or null. */
export function occurrenceAt(w: WindowRow, at: Date): Occurrence | null {
  const t = at.getTime();
  if (w.schedule === null) {
    if (w.starts_at === null || w.ends_at === null) return null;
    const s = ms(w.starts_at);
    const e = ms(w.ends_at);
    return s <= t && t < e ? { starts_at: new Date(s), ends_at: new Date(e) } : null;
  }
  const length = (w.duration_minutes ?? 0) * 60_000;
  if (length <= 0) return null;
  // The first run strictly after `at - length` is the only one whose occurrence can still cover `at`.
  let first: Date | null;
  try {
    first = cronOf(w.schedule, w.time_zone).nextRun(new Date(t - length));
  } catch {
    return null;
  }
  if (!first || first.getTime() > t) return null;
  return { starts_at: first, ends_at: new Date(first.getTime() + length) };
}

/**
 * The occurrences of a window that are running at `from` or start before `to`, oldest first, at
 * most `max`.
 */
export function occurrencesBetween(w: WindowRow, from: Date, to: Date, max: number): Occurrence[] {
  const out: Occurrence[] = [];
  if (w.schedule === null) {
    if (w.starts_at === null || w.ends_at === null) return out;
    if (ms(w.ends_at) > from.getTime() && ms(w.starts_at) < to.getTime())
      out.push({ starts_at: new Date(ms(w.starts_at)), ends_at: new Date(ms(w.ends_at)) });
    return out;
  }
  const length = (w.duration_minutes ?? 0) * 60_000;
  if (length <= 0) return out;
  let cron: Cron;
  try {
    cron = cronOf(w.schedule, w.time_zone);
  } catch {
    return out;
  }
  let ref = new Date(from.getTime() - length);
  while (out.length < max) {
    const next = cron.nextRun(ref);
    if (!next || next.getTime() >= to.getTime()) break;
    out.push({ starts_at: next, ends_at: new Date(next.getTime() + length) });
    ref = next;
  }
  return out;
}

const idList = (ids: readonly string[]) => JSON.stringify([...new Set(ids)]);

/**
 * For each of these servers under maintenance at `at` (by a window of its own or of its network),
 * the window and its occurrence. Servers not under maintenance are absent. One statement.
 */
export async function serversUnderMaintenance(
  db: Db,
  serverIds: readonly string[],
  at: Date = new Date(),
): Promise<Map<string, { window: WindowRow; occurrence: Occurrence }>> {
  const found = new Map<string, { window: WindowRow; occurrence: Occurrence }>();
  if (serverIds.length === 0) return found;
  const iso = at.toISOString();
  const result = await db.execute(sql`
    select s.id as subject, w.id, w.team_id, w.server_id, w.network_name, w.title, w.message, w.starts_at, w.ends_at,
           w.schedule, w.duration_minutes, t.time_zone
      from servers s
      join maintenance_windows w
        on w.server_id = s.id
        or (w.team_id = s.team_id and s.kind = 'network' and w.network_name = s.network_name)
      join teams t on t.id = w.team_id
     where s.id in (select value::uuid from json_array_elements_text(${idList(serverIds)}::json))
       and (w.schedule is not null or (w.starts_at <= ${iso}::timestamptz and w.ends_at > ${iso}::timestamptz))`);
  for (const row of rowsOf<WindowRow & { subject: string }>(result)) {
    if (found.has(row.subject)) continue;
    const occurrence = occurrenceAt(row, at);
    if (occurrence) found.set(row.subject, { window: row, occurrence });
  }
  return found;
}

/** Whether a server is under maintenance at `at`: a window of its own or of its network is running. */
export async function isUnderMaintenance(db: Db, serverId: string, at: Date = new Date()): Promise<boolean> {
  return (await serversUnderMaintenance(db, [serverId], at)).has(serverId);
}

/**
 * Of these networks (a team's servers sharing a network_name), those with a network window running
 * at `at`, as `${team_id}/${network_name}` keys. A window of one server of a network does not put
 * the whole network under maintenance.
 */
export async function networksUnderMaintenance(
  db: Db,
  networks: readonly { teamId: string; networkName: string }[],
  at: Date = new Date(),
): Promise<Set<string>> {
  const found = new Set<string>();
  if (networks.length === 0) return found;
  const iso = at.toISOString();
  const input = JSON.stringify(networks.map((n) => ({ team_id: n.teamId, network_name: n.networkName })));
  const result = await db.execute(sql`
    select w.id, w.team_id, w.server_id, w.network_name, w.title, w.message, w.starts_at, w.ends_at,
           w.schedule, w.duration_minutes, t.time_zone
      from json_to_recordset(${input}::json) as x(team_id uuid, network_name text)
      join maintenance_windows w on w.team_id = x.team_id and w.network_name = x.network_name
      join teams t on t.id = w.team_id
     where w.schedule is not null or (w.starts_at <= ${iso}::timestamptz and w.ends_at > ${iso}::timestamptz)`);
  for (const row of rowsOf<WindowRow>(result))
    if (occurrenceAt(row, at)) found.add(`${row.team_id}/${row.network_name}`);
  return found;
}

/** Whether a network has a network window running at `at`. */
export async function isNetworkUnderMaintenance(
  db: Db,
  teamId: string,
  networkName: string,
  at: Date = new Date(),
): Promise<boolean> {
  return (await networksUnderMaintenance(db, [{ teamId, networkName }], at)).has(`${teamId}/${networkName}`);
}

/**
 * The occurrences of a team's windows running now or starting within `days`, soonest first: what
 * a status page shows ahead and while it runs. Filtered to a server (its own and its network's
 * windows) or a network (its windows) when asked.
 */
export async function upcomingMaintenance(
  db: Db,
  teamId: string,
  opts: { days: number; serverId?: string; networkName?: string; now?: Date; limit?: number },
) {
  const from = opts.now ?? new Date();
  const to = new Date(from.getTime() + opts.days * 86_400_000);
  const filter = opts.serverId
    ? sql`and (w.server_id = ${opts.serverId} or w.network_name = (select network_name from servers where id = ${opts.serverId} and kind = 'network'))`
    : opts.networkName
      ? sql`and w.network_name = ${opts.networkName}`
      : sql``;
  const rows = rowsOf<WindowRow>(
    await db.execute(sql`
      select w.id, w.team_id, w.server_id, w.network_name, w.title, w.message, w.starts_at, w.ends_at,
             w.schedule, w.duration_minutes, t.time_zone
        from maintenance_windows w join teams t on t.id = w.team_id
       where w.team_id = ${teamId} ${filter}
         and (w.schedule is not null or w.ends_at > ${from.toISOString()}::timestamptz)`),
  );
  const limit = opts.limit ?? 500;
  const out = rows.flatMap((w) =>
    occurrencesBetween(w, from, to, limit).map((o) => ({
      window_id: w.id,
      server_id: w.server_id,
      network_name: w.network_name,
      title: w.title,
      message: w.message,
      starts_at: o.starts_at.toISOString(),
      ends_at: o.ends_at.toISOString(),
      active: o.starts_at.getTime() <= from.getTime(),
    })),
  );
  out.sort((a, b) => a.starts_at.localeCompare(b.starts_at));
  return { from: from.toISOString(), to: to.toISOString(), occurrences: out.slice(0, limit) };
}
