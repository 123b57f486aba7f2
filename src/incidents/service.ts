import { sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { rowsOf } from "../db/rows";
import { AppError } from "../lib/errors";
import type { TeamEventSink } from "../lib/events";
import { type Principal, reachesServer } from "../auth/principal";
import { requireTeamRole } from "../teams/access";
import { requireServerOrNetwork } from "../servers/access";
import { audit, type Tx } from "../audit/entry";
import { serversUnderMaintenance } from "../maintenance/windows";
import {
  type IncidentStatus,
  MAX_INCIDENT_UPDATES,
  type TCreateIncident,
  type TIncidentsQuery,
  type TIncidentUpdate,
} from "./schemas";

/** What the agent reads from a crash report (docs/agent-protocol.md `crash_report`). */
export interface CrashReport {
  file: string;
  description: string;
  lines: string[];
}

/** A row of `server_incidents` (snake_case, from either driver) with its server's name. */
interface Row {
  id: string;
  team_id: string;
  server_id: string | null;
  server_name: string | null;
  network_name: string | null;
  kind: "down" | "crash" | "manual";
  started_at: Date | string;
  ended_at: Date | string | null;
  reason: string | null;
  title: string | null;
  status: string;
  crash: unknown;
  announced_at: Date | string | null;
  updated_at: Date | string;
}
interface UpdateRow {
  id: string;
  incident_id: string;
  at: Date | string;
  status: string;
  message: string;
  author_kind: string;
  author_name: string;
}

const iso = (v: Date | string) => (v instanceof Date ? v : new Date(v)).toISOString();
const json = (v: unknown) => (typeof v === "string" ? JSON.parse(v) : v);
const NOT_FOUND = "Incident not found.";

const SELECT = sql`select i.id, i.team_id, i.server_id, s.name as server_name, i.network_name, i.kind, i.started_at, i.ended_at,
       i.reason, i.title, i.status, i.crash, i.announced_at, i.updated_at
  from server_incidents i left join servers s on s.id = i.server_id`;

function titleOf(r: Row): string {
  if (r.title) return r.title;
  const name = r.server_name ?? r.network_name ?? "A server";
  return r.kind === "crash" ? `${name} crashed` : `${name} is down`;
}

const statusOf = (r: Row): IncidentStatus => (r.ended_at ? "resolved" : (r.status as IncidentStatus));

function crashOf(r: Row) {
  const c = json(r.crash) as (CrashReport & { reported_at: string }) | null;
  return c ? { file: c.file, description: c.description, lines: c.lines, reported_at: c.reported_at } : null;
}

/** The timeline: the automatic opening, every posted update, and the automatic resolution. */
function timeline(r: Row, updates: UpdateRow[]) {
  const out: { at: string; status: IncidentStatus; message: string; author: { kind: string; name: string } }[] = [];
  if (r.kind !== "manual")
    out.push({
      at: iso(r.started_at),
      status: "investigating",
      message:
        r.kind === "crash"
          ? "The server went down without announcing a stop: a crash."
          : "The server stopped answering status pings.",
      author: { kind: "system", name: "pinger" },
    });
  for (const u of updates)
    out.push({
      at: iso(u.at),
      status: u.status as IncidentStatus,
      message: u.message,
      author: { kind: u.author_kind, name: u.author_name },
    });
  if (r.ended_at && !updates.some((u) => u.status === "resolved"))
    out.push({
      at: iso(r.ended_at),
      status: "resolved",
      message: "The server answers status pings again.",
      author: { kind: "system", name: "pinger" },
    });
  return out;
}

export function incidentOut(r: Row, updates?: UpdateRow[]) {
  return {
    incident_id: r.id,
    server_id: r.server_id,
    server_name: r.server_name,
    network_name: r.server_id ? null : r.network_name,
    kind: r.kind,
    title: titleOf(r),
    status: statusOf(r),
    started_at: iso(r.started_at),
    ended_at: r.ended_at ? iso(r.ended_at) : null,
    reason: r.reason,
    crash: crashOf(r),
    updated_at: iso(r.updated_at),
    ...(updates && { updates: timeline(r, updates) }),
  };
}

/** An incident as a webhook event carries it (the team's own channels: crash lines included). */
function eventData(r: Row, update?: { status: string; message: string; at: string }) {
  const c = crashOf(r);
  return {
    incident_id: r.id,
    ...(r.server_id ? {} : { network_name: r.network_name }),
    kind: r.kind,
    title: titleOf(r),
    status: statusOf(r),
    started_at: iso(r.started_at),
    ended_at: r.ended_at ? iso(r.ended_at) : null,
    crash: c && { description: c.description, lines: c.lines },
    ...(update && { update }),
  };
}

const scopeOf = (r: Row) => (r.server_id ? { serverId: r.server_id } : { teamId: r.team_id });

async function readRow(db: Tx, id: string): Promise<Row | undefined> {
  return rowsOf<Row>(await db.execute(sql`${SELECT} where i.id = ${id}`))[0];
}

/**
 * Sends `incident.opened` for an incident not yet announced, once (the stamp and the check are
 * one statement, so two instances cannot both send it).
 */
export async function announceIncident(db: Db, events: TeamEventSink, incidentId: string): Promise<boolean> {
  const result = await db.execute(
    sql`update server_incidents set announced_at = now() where id = ${incidentId} and announced_at is null returning id`,
  );
  if (rowsOf(result).length === 0) return false;
  const row = await readRow(db, incidentId);
  if (row) events.emit(scopeOf(row), "incident.opened", eventData(row));
  return true;
}

/** Sends `incident.resolved` for an incident that was announced (one never announced resolves quietly). */
export async function announceResolved(db: Db, events: TeamEventSink, incidentId: string) {
  const row = await readRow(db, incidentId);
  if (row?.announced_at && row.ended_at) events.emit(scopeOf(row), "incident.resolved", eventData(row));
}

/** The agent read a stop the server announced: its next down is planned (src/monitoring/planned.ts). */
export async function recordPlannedStop(tx: Tx, serverId: string, at: Date) {
  await tx.execute(sql`
    insert into server_alert_state as a (server_id, planned_stop_at) values (${serverId}, ${at.toISOString()}::timestamptz)
    on conflict (server_id) do update set planned_stop_at = greatest(a.planned_stop_at, excluded.planned_stop_at)`);
}

/** The server logged that it started: a stop announced before is over. */
export async function recordStarted(tx: Tx, serverId: string, at: Date) {
  await tx.execute(sql`
    update server_alert_state set planned_stop_at = null
     where server_id = ${serverId} and planned_stop_at <= ${at.toISOString()}::timestamptz`);
}

/**
 * A crash report the agent read: attached to the server's open down period (or one with no
 * report that began in the ten minutes after it, a minute before for clocks apart), which
 * becomes a crash; otherwise a crash incident of its own, already
 * resolved when the pinger has seen the server up since. A crash ends any planned stop. Returns
 * the incident and whether it should be announced now (not when a maintenance window holds it).
 */
export async function recordCrashReport(
  tx: Tx,
  teamId: string,
  serverId: string,
  crash: CrashReport,
  at: Date,
): Promise<{ incidentId: string; fresh: boolean }> {
  const body = JSON.stringify({ ...crash, reported_at: at.toISOString() });
  const when = at.toISOString();
  await tx.execute(sql`update server_alert_state set planned_stop_at = null where server_id = ${serverId}`);
  const near = rowsOf<{ id: string }>(
    await tx.execute(sql`
      select id from server_incidents
       where server_id = ${serverId} and kind <> 'manual'
         and (ended_at is null
              or (crash is null and started_at between ${when}::timestamptz - interval '1 minute' and ${when}::timestamptz + interval '10 minutes'))
       order by ended_at is null desc, started_at desc limit 1`),
  )[0];
  if (near) {
    await tx.execute(
      sql`update server_incidents set kind = 'crash', crash = ${body}::jsonb, updated_at = now() where id = ${near.id}`,
    );
    return { incidentId: near.id, fresh: false };
  }
  const created = rowsOf<{ id: string }>(
    await tx.execute(sql`
      insert into server_incidents (team_id, server_id, kind, started_at, ended_at, crash)
      select ${teamId}, ${serverId}, 'crash', ${when}::timestamptz,
             (select greatest(st.changed_at, ${when}::timestamptz) from server_status st
               where st.server_id = ${serverId} and st.online and st.changed_at > ${when}::timestamptz),
             ${body}::jsonb
      on conflict do nothing
      returning id`),
  )[0];
  if (created) return { incidentId: created.id, fresh: true };
  // A down period opened meanwhile (the unique open index): attach to it.
  const open = rowsOf<{ id: string }>(
    await tx.execute(
      sql`select id from server_incidents where server_id = ${serverId} and kind <> 'manual' and ended_at is null`,
    ),
  )[0]!;
  await tx.execute(
    sql`update server_incidents set kind = 'crash', crash = ${body}::jsonb, updated_at = now() where id = ${open.id}`,
  );
  return { incidentId: open.id, fresh: false };
}

/**
 * After a crash report commits: a new incident is announced at once (a crash report is certain,
 * no need to wait for failed pings) unless a maintenance window holds it; one that was already
 * announced gets `incident.updated` with the crash lines.
 */
export async function afterCrashReport(
  db: Db,
  events: TeamEventSink,
  serverId: string,
  incident: { incidentId: string; fresh: boolean },
) {
  const row = await readRow(db, incident.incidentId);
  if (!row) return;
  if (row.announced_at) {
    events.emit(scopeOf(row), "incident.updated", eventData(row));
    return;
  }
  if (!incident.fresh) return;
  if ((await serversUnderMaintenance(db, [serverId])).has(serverId)) return;
  await announceIncident(db, events, row.id);
  if (row.ended_at) await announceResolved(db, events, row.id);
}

function authorOf(principal: Principal) {
  return principal.kind === "user"
    ? { kind: "user", name: sql`coalesce((select email from users where id = ${principal.userId}), 'member')` }
    : { kind: "api_key", name: sql`coalesce((select name from api_keys where id = ${principal.keyId}), 'API key')` };
}

/** Incidents: the team's list, one with its timeline, and those posted by hand (docs/incidents.md). */
export class IncidentsService {
  constructor(
    private readonly db: Db,
    private readonly events: TeamEventSink,
  ) {}

  /** A key limited to some servers sees their incidents only (no network's). */
  private visible(principal: Principal, r: Row) {
    if (principal.kind === "user" || !principal.serverIds) return true;
    return r.server_id !== null && reachesServer(principal, r.server_id);
  }

  private async load(principal: Principal, teamId: string, id: string): Promise<Row> {
    const row = await readRow(this.db, id);
    if (!row || row.team_id !== teamId || !this.visible(principal, row)) throw new AppError("not_found", NOT_FOUND);
    return row;
  }

  async list(principal: Principal, teamId: string, q: TIncidentsQuery) {
    await requireTeamRole(this.db, principal, teamId, "viewer");
    const where = [sql`i.team_id = ${teamId}`];
    if (q.server_id) where.push(sql`i.server_id = ${q.server_id}`);
    if (q.network_name)
      where.push(
        sql`(i.network_name = ${q.network_name} or s.network_name = ${q.network_name} and s.kind = 'network')`,
      );
    if (q.state === "open") where.push(sql`i.ended_at is null`);
    if (q.state === "resolved") where.push(sql`i.ended_at is not null`);
    if (q.before) where.push(sql`i.started_at < ${q.before}::timestamptz`);
    const rows = rowsOf<Row>(
      await this.db.execute(
        sql`${SELECT} where ${sql.join(where, sql` and `)} order by i.started_at desc, i.id limit ${q.limit}`,
      ),
    );
    return { incidents: rows.filter((r) => this.visible(principal, r)).map((r) => incidentOut(r)) };
  }

  async get(principal: Principal, teamId: string, id: string) {
    await requireTeamRole(this.db, principal, teamId, "viewer");
    const row = await this.load(principal, teamId, id);
    return incidentOut(row, await this.updates(this.db, id));
  }

  private async updates(db: Tx, id: string) {
    return rowsOf<UpdateRow>(
      await db.execute(sql`select * from incident_updates where incident_id = ${id} order by at, id`),
    );
  }

  async create(principal: Principal, teamId: string, input: TCreateIncident) {
    await requireTeamRole(this.db, principal, teamId, "admin");
    await requireServerOrNetwork(this.db, principal, teamId, input, "post an incident");
    const author = authorOf(principal);
    const resolved = input.status === "resolved";
    const id = await this.db.transaction(async (tx) => {
      const [row] = rowsOf<{ id: string }>(
        await tx.execute(sql`
          insert into server_incidents (team_id, server_id, network_name, kind, started_at, ended_at, title, status, announced_at)
          values (${teamId}, ${input.server_id ?? null}, ${input.network_name ?? null}, 'manual',
                  coalesce(${input.started_at ?? null}::timestamptz, now()), ${resolved ? sql`now()` : null},
                  ${input.title}, ${resolved ? "investigating" : input.status}, now())
          returning id`),
      );
      await tx.execute(sql`
        insert into incident_updates (incident_id, status, message, author_kind, author_name)
        values (${row!.id}, ${input.status}, ${input.message}, ${author.kind}, ${author.name})`);
      const created = (await readRow(tx, row!.id))!;
      await audit(tx, {
        teamId,
        target: { type: "incident", id: row!.id, name: input.title },
        serverId: input.server_id ?? null,
        after: {
          title: input.title,
          status: input.status,
          server_id: input.server_id ?? null,
          network_name: input.network_name ?? null,
        },
      });
      return created.id;
    });
    const row = (await readRow(this.db, id))!;
    this.events.emit(scopeOf(row), "incident.opened", eventData(row));
    if (resolved) this.events.emit(scopeOf(row), "incident.resolved", eventData(row));
    return incidentOut(row, await this.updates(this.db, id));
  }

  async addUpdate(principal: Principal, teamId: string, id: string, input: TIncidentUpdate) {
    await requireTeamRole(this.db, principal, teamId, "admin");
    const before = await this.load(principal, teamId, id);
    const author = authorOf(principal);
    const at = new Date().toISOString();
    await this.db.transaction(async (tx) => {
      // One update at a time an incident, so the count holds.
      await tx.execute(sql`select id from server_incidents where id = ${id} for update`);
      const count = rowsOf<{ n: number }>(
        await tx.execute(sql`select count(*)::int as n from incident_updates where incident_id = ${id}`),
      )[0]!.n;
      if (count >= MAX_INCIDENT_UPDATES)
        throw new AppError("bad_request", `An incident has at most ${MAX_INCIDENT_UPDATES} updates.`);
      await tx.execute(sql`
        insert into incident_updates (incident_id, at, status, message, author_kind, author_name)
        values (${id}, ${at}::timestamptz, ${input.status}, ${input.message}, ${author.kind}, ${author.name})`);
      // Resolved by hand ends the incident; any other status reopens nothing and sets the current status.
      await tx.execute(sql`
        update server_incidents set updated_at = now(),
               status = case when ${input.status} = 'resolved' then status else ${input.status} end,
               ended_at = case when ${input.status} = 'resolved' then coalesce(ended_at, now()) else ended_at end
         where id = ${id}`);
      await audit(tx, {
        teamId,
        target: { type: "incident", id, name: titleOf(before) },
        serverId: before.server_id,
        before: { status: statusOf(before) },
        after: { status: input.status, message: input.message },
      });
    });
    const row = (await readRow(this.db, id))!;
    const update = { status: input.status, message: input.message, at };
    const type = input.status === "resolved" && !before.ended_at ? "incident.resolved" : "incident.updated";
    this.events.emit(scopeOf(row), type, eventData(row, update));
    return incidentOut(row, await this.updates(this.db, id));
  }
}

/**
 * Incidents as a public status page may show them: no crash lines, no author names (members'
 * e-mails), an automatic incident's kind shown as `down` whether or not it was a crash. For the
 * team's servers `serverIds` and networks `networkNames`, started since `since`, newest first.
 */
export async function publicIncidents(
  db: Db,
  teamId: string,
  opts: { serverIds: readonly string[]; networkNames: readonly string[]; since: Date; limit?: number },
) {
  const rows = rowsOf<Row>(
    await db.execute(sql`${SELECT}
      where i.team_id = ${teamId}
        and (i.server_id in (select value::uuid from json_array_elements_text(${JSON.stringify(opts.serverIds)}::json))
             or (i.server_id is null and i.network_name in (select value from json_array_elements_text(${JSON.stringify(opts.networkNames)}::json))))
        and (i.ended_at is null or i.ended_at >= ${opts.since.toISOString()}::timestamptz)
      order by i.started_at desc, i.id limit ${opts.limit ?? 50}`),
  );
  const ids = rows.map((r) => r.id);
  const updates = ids.length
    ? rowsOf<UpdateRow>(
        await db.execute(sql`
          select * from incident_updates
           where incident_id in (select value::uuid from json_array_elements_text(${JSON.stringify(ids)}::json))
           order by at, id`),
      )
    : [];
  return rows.map((r) => {
    const out = incidentOut(
      r,
      updates.filter((u) => u.incident_id === r.id),
    );
    return {
      incident_id: out.incident_id,
      server_id: out.server_id,
      network_name: out.network_name,
      kind: out.kind === "manual" ? ("manual" as const) : ("down" as const),
      title: r.title ?? `${r.server_name ?? r.network_name ?? "A server"} ${r.ended_at ? "was" : "is"} down`,
      status: out.status,
      started_at: out.started_at,
      ended_at: out.ended_at,
      updates: (out.updates ?? []).map((u) => ({
        at: u.at,
        status: u.status,
        // The automatic opening of a crash says so; publicly, an outage is an outage.
        message:
          u.author.kind === "system" && u.status === "investigating"
            ? "The server stopped answering status pings."
            : u.message,
      })),
    };
  });
}
