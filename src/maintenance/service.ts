import { sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { rowsOf } from "../db/rows";
import { AppError } from "../lib/errors";
import { type Principal, reachesServer } from "../auth/principal";
import { requireTeamRole } from "../teams/access";
import { requireServerOrNetwork } from "../servers/access";
import { audit } from "../audit/entry";
import { MAX_WINDOWS_PER_TEAM, type TCreateWindow, type TUpdateWindow } from "./schemas";
import { CRON_SHAPE, cronOf, occurrenceAt, occurrencesBetween, upcomingMaintenance, type WindowRow } from "./windows";

export {
  isNetworkUnderMaintenance,
  isUnderMaintenance,
  networksUnderMaintenance,
  serversUnderMaintenance,
  upcomingMaintenance,
} from "./windows";

type Row = WindowRow & { created_at: Date | string; updated_at: Date | string };
const iso = (v: Date | string | null) => (v === null ? null : (v instanceof Date ? v : new Date(v)).toISOString());
const NOT_FOUND = "Maintenance window not found.";

function windowOut(w: Row, now = new Date()) {
  const active = occurrenceAt(w, now);
  const next = occurrencesBetween(w, now, new Date(now.getTime() + 366 * 86_400_000), 2).find(
    (o) => o.starts_at.getTime() > now.getTime(),
  );
  const occ = (o: { starts_at: Date; ends_at: Date } | null | undefined) =>
    o ? { starts_at: o.starts_at.toISOString(), ends_at: o.ends_at.toISOString() } : null;
  return {
    window_id: w.id,
    server_id: w.server_id,
    network_name: w.network_name,
    title: w.title,
    message: w.message,
    starts_at: iso(w.starts_at),
    ends_at: iso(w.ends_at),
    schedule: w.schedule,
    duration_minutes: w.duration_minutes,
    time_zone: w.time_zone,
    active: occ(active),
    next: occ(next),
    created_at: iso(w.created_at)!,
    updated_at: iso(w.updated_at)!,
  };
}

/** Checks a window as it will be after a write: one-off or recurring, never both, with a schedule that runs. */
function checkWhen(
  w: {
    starts_at: string | null;
    ends_at: string | null;
    schedule: string | null;
    duration_minutes: number | null;
  },
  timeZone: string,
) {
  const bad = (message: string, field: string) => new AppError("bad_request", message, { details: { field } });
  if (w.schedule === null) {
    if (w.starts_at === null || w.ends_at === null)
      throw bad(
        "A one-off window needs starts_at and ends_at; a recurring one, schedule and duration_minutes.",
        "starts_at",
      );
    if (Date.parse(w.ends_at) <= Date.parse(w.starts_at)) throw bad("ends_at must be after starts_at.", "ends_at");
    if (w.duration_minutes !== null)
      throw bad("duration_minutes is for a recurring window (with schedule).", "duration_minutes");
    return;
  }
  if (w.starts_at !== null || w.ends_at !== null)
    throw bad("A recurring window (schedule) takes no starts_at or ends_at.", "schedule");
  if (w.duration_minutes === null) throw bad("A recurring window needs duration_minutes.", "duration_minutes");
  if (!CRON_SHAPE.test(w.schedule))
    throw bad(
      "schedule must be a five-field cron expression (minute hour day-of-month month day-of-week) of *, numbers, ranges, lists and steps.",
      "schedule",
    );
  let next: Date | null;
  try {
    next = cronOf(w.schedule, timeZone).nextRun();
  } catch (e) {
    throw bad(
      `schedule is not a valid cron expression: ${String((e as Error).message).replace(/^CronPattern:\s*/, "")}`,
      "schedule",
    );
  }
  if (!next) throw bad("This schedule never runs.", "schedule");
}

const SELECT = sql`select w.*, t.time_zone from maintenance_windows w join teams t on t.id = w.team_id`;

/** Maintenance windows (docs/incidents.md#maintenance-windows). */
export class MaintenanceService {
  constructor(private readonly db: Db) {}

  private visible(principal: Principal, w: Row) {
    if (principal.kind === "user" || !principal.serverIds) return true;
    return w.server_id !== null && reachesServer(principal, w.server_id);
  }

  private async load(principal: Principal, teamId: string, id: string): Promise<Row> {
    const row = rowsOf<Row>(await this.db.execute(sql`${SELECT} where w.id = ${id} and w.team_id = ${teamId}`))[0];
    if (!row || !this.visible(principal, row)) throw new AppError("not_found", NOT_FOUND);
    return row;
  }

  private async timeZone(teamId: string) {
    return rowsOf<{ time_zone: string }>(
      await this.db.execute(sql`select time_zone from teams where id = ${teamId}`),
    )[0]!.time_zone;
  }

  async list(principal: Principal, teamId: string) {
    await requireTeamRole(this.db, principal, teamId, "viewer");
    const rows = rowsOf<Row>(
      await this.db.execute(
        sql`${SELECT} where w.team_id = ${teamId} order by w.created_at, w.id limit ${MAX_WINDOWS_PER_TEAM}`,
      ),
    );
    const now = new Date();
    return { windows: rows.filter((w) => this.visible(principal, w)).map((w) => windowOut(w, now)) };
  }

  async upcoming(principal: Principal, teamId: string, q: { days: number; server_id?: string; network_name?: string }) {
    await requireTeamRole(this.db, principal, teamId, "viewer");
    if (principal.kind === "api_key" && principal.serverIds && (!q.server_id || !reachesServer(principal, q.server_id)))
      throw new AppError("forbidden", "This API key is limited to some servers: name one of them in server_id.");
    return upcomingMaintenance(this.db, teamId, { days: q.days, serverId: q.server_id, networkName: q.network_name });
  }

  async create(principal: Principal, teamId: string, input: TCreateWindow) {
    await requireTeamRole(this.db, principal, teamId, "admin");
    await requireServerOrNetwork(this.db, principal, teamId, input, "set a maintenance window");
    const when = {
      starts_at: input.starts_at ?? null,
      ends_at: input.ends_at ?? null,
      schedule: input.schedule ?? null,
      duration_minutes: input.duration_minutes ?? null,
    };
    checkWhen(when, await this.timeZone(teamId));
    const id = await this.db.transaction(async (tx) => {
      const count = rowsOf<{ n: number }>(
        await tx.execute(sql`select count(*)::int as n from maintenance_windows where team_id = ${teamId}`),
      )[0]!.n;
      if (count >= MAX_WINDOWS_PER_TEAM)
        throw new AppError("bad_request", `A team has at most ${MAX_WINDOWS_PER_TEAM} maintenance windows.`);
      const [row] = rowsOf<{ id: string }>(
        await tx.execute(sql`
          insert into maintenance_windows (team_id, server_id, network_name, title, message, starts_at, ends_at, schedule, duration_minutes)
          values (${teamId}, ${input.server_id ?? null}, ${input.network_name ?? null}, ${input.title}, ${input.message ?? null},
                  ${when.starts_at}::timestamptz, ${when.ends_at}::timestamptz, ${when.schedule}, ${when.duration_minutes})
          returning id`),
      );
      await audit(tx, {
        teamId,
        target: { type: "maintenance_window", id: row!.id, name: input.title },
        serverId: input.server_id ?? null,
        after: {
          title: input.title,
          server_id: input.server_id ?? null,
          network_name: input.network_name ?? null,
          ...when,
        },
      });
      return row!.id;
    });
    return windowOut(await this.load(principal, teamId, id));
  }

  async update(principal: Principal, teamId: string, input: TUpdateWindow) {
    await requireTeamRole(this.db, principal, teamId, "admin");
    const before = await this.load(principal, teamId, input.window_id);
    const pick = <K extends keyof TUpdateWindow>(k: K, cur: unknown) => (input[k] === undefined ? cur : input[k]);
    const next = {
      title: pick("title", before.title) as string,
      message: pick("message", before.message) as string | null,
      starts_at: pick("starts_at", iso(before.starts_at)) as string | null,
      ends_at: pick("ends_at", iso(before.ends_at)) as string | null,
      schedule: pick("schedule", before.schedule) as string | null,
      duration_minutes: pick("duration_minutes", before.duration_minutes) as number | null,
    };
    checkWhen(next, before.time_zone);
    await this.db.transaction(async (tx) => {
      await tx.execute(sql`
        update maintenance_windows set title = ${next.title}, message = ${next.message}, starts_at = ${next.starts_at}::timestamptz,
               ends_at = ${next.ends_at}::timestamptz, schedule = ${next.schedule}, duration_minutes = ${next.duration_minutes}, updated_at = now()
         where id = ${before.id}`);
      await audit(tx, {
        teamId,
        target: { type: "maintenance_window", id: before.id, name: next.title },
        serverId: before.server_id,
        before: {
          title: before.title,
          message: before.message,
          starts_at: iso(before.starts_at),
          ends_at: iso(before.ends_at),
          schedule: before.schedule,
          duration_minutes: before.duration_minutes,
        },
        after: next,
      });
    });
    return windowOut(await this.load(principal, teamId, before.id));
  }

  async delete(principal: Principal, teamId: string, id: string) {
    await requireTeamRole(this.db, principal, teamId, "admin");
    const before = await this.load(principal, teamId, id);
    await this.db.transaction(async (tx) => {
      await tx.execute(sql`delete from maintenance_windows where id = ${id}`);
      await audit(tx, {
        teamId,
        target: { type: "maintenance_window", id, name: before.title },
        serverId: before.server_id,
        before: { title: before.title, server_id: before.server_id, network_name: before.network_name },
      });
    });
    return { ok: true as const };
  }
}
