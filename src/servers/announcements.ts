import { Cron } from "croner";
import { and, asc, count, eq, gt, isNull, lte, or, sql } from "drizzle-orm";
import { NO_EVENTS, type ServerEventSink } from "../realtime/events";
import type { Db } from "../db/client";
import { announcements, servers } from "../db/schema";
import { AppError } from "../lib/errors";
import { LIMITS, overLimit } from "../lib/limits";
import { iso } from "../lib/schemas";
import type { Principal } from "../auth/principal";
import { requireServerRole } from "./access";
import { audit } from "../audit/entry";

type Row = typeof announcements.$inferSelect;

export const announcementOut = (a: Row) => ({
  announcement_id: a.id,
  message: a.message,
  interval_seconds: a.intervalSeconds,
  schedule: a.schedule,
  active: a.active,
  starts_at: a.startsAt ? iso(a.startsAt) : null,
  ends_at: a.endsAt ? iso(a.endsAt) : null,
  created_at: iso(a.createdAt),
  updated_at: iso(a.updatedAt),
});

/** An announcement is named by the start of its message. */
const announcementTarget = (a: Row) => ({ type: "announcement", id: a.id, name: a.message.slice(0, 60) });

export interface AnnouncementFields {
  message?: string;
  interval_seconds?: number | null;
  schedule?: string | null;
  active?: boolean;
  starts_at?: string | null;
  ends_at?: string | null;
}

/**
 * The syntax the agent plugin implements (docs/agent-protocol.md): five fields of `*`, numbers,
 * ranges, lists and steps. croner reads more (names, `L`, `#`, nicknames) that the plugin
 * would not, so the shape is held to the documented subset before croner judges the values.
 */
const DOCUMENTED_SHAPE = /^[\d*,/-]+(?:\s+[\d*,/-]+){4}$/;

function cron(expr: string): Cron {
  return new Cron(expr.trim(), { mode: "5-part", timezone: "UTC", paused: true });
}

/** Why a schedule is not acceptable, or null: wrong shape, a value out of range, or no run ever. */
export function cronProblem(expr: string): string | null {
  if (!DOCUMENTED_SHAPE.test(expr.trim()))
    return "must be a five-field cron expression (minute hour day-of-month month day-of-week, UTC) of *, numbers, ranges, lists and steps";
  let next: Date | null;
  try {
    next = cron(expr).nextRun();
  } catch (err) {
    return `invalid cron expression: ${String((err as Error).message).replace(/^CronPattern:\s*/, "")}`;
  }
  return next ? null : "this cron expression never runs";
}

/** When a schedule next fires after `from` (UTC), or null if it never does. */
export function nextRun(expr: string, from: Date = new Date()): Date | null {
  return cron(expr).nextRun(from);
}

/** Announcements in force now: active and inside their optional start/end. */
export const liveAnnouncement = (serverId: string) =>
  and(
    eq(announcements.serverId, serverId),
    eq(announcements.active, true),
    or(isNull(announcements.startsAt), lte(announcements.startsAt, sql`now()`)),
    or(isNull(announcements.endsAt), gt(announcements.endsAt, sql`now()`)),
  );

/** Checks the announcement as it will be after a write: exactly one of interval and schedule, a sane window. */
function checkShape(a: {
  intervalSeconds: number | null;
  schedule: string | null;
  startsAt: Date | null;
  endsAt: Date | null;
}) {
  if ((a.intervalSeconds === null) === (a.schedule === null)) {
    throw new AppError("bad_request", "Give exactly one of interval_seconds and schedule.");
  }
  if (a.startsAt && a.endsAt && a.endsAt <= a.startsAt)
    throw new AppError("bad_request", "ends_at must be after starts_at.");
}

const toDate = (v: string | null | undefined) => (v === undefined ? undefined : v === null ? null : new Date(v));

export class AnnouncementsService {
  constructor(
    private readonly db: Db,
    private readonly events: ServerEventSink = NO_EVENTS,
  ) {}

  async list(principal: Principal, serverId: string) {
    await requireServerRole(this.db, principal, serverId, "viewer");
    const rows = await this.db
      .select()
      .from(announcements)
      .where(eq(announcements.serverId, serverId))
      .orderBy(asc(announcements.createdAt), asc(announcements.id));
    return { announcements: rows.map(announcementOut) };
  }

  async create(principal: Principal, serverId: string, f: AnnouncementFields & { message: string }) {
    const { server } = await requireServerRole(this.db, principal, serverId, "moderator");
    const values = {
      serverId,
      message: f.message,
      intervalSeconds: f.interval_seconds ?? null,
      schedule: f.schedule ?? null,
      active: f.active ?? true,
      startsAt: toDate(f.starts_at) ?? null,
      endsAt: toDate(f.ends_at) ?? null,
    };
    checkShape(values);
    const row = await this.db.transaction(async (tx) => {
      await tx.select({ id: servers.id }).from(servers).where(eq(servers.id, serverId)).for("update");
      const [n] = await tx.select({ n: count() }).from(announcements).where(eq(announcements.serverId, serverId));
      if (n!.n >= LIMITS.announcementsPerServer)
        throw overLimit("announcements per server", LIMITS.announcementsPerServer);
      const [r] = await tx.insert(announcements).values(values).returning();
      await audit(tx, { teamId: server.teamId, target: announcementTarget(r!), serverId, after: announcementOut(r!) });
      return r;
    });
    const announcement = announcementOut(row!);
    this.events.publish(serverId, "announcements_changed", { action: "created", announcement });
    return announcement;
  }

  async update(principal: Principal, serverId: string, id: string, f: AnnouncementFields) {
    const { server } = await requireServerRole(this.db, principal, serverId, "moderator");
    const announcement = await this.db.transaction(async (tx) => {
      const [current] = await tx
        .select()
        .from(announcements)
        .where(and(eq(announcements.id, id), eq(announcements.serverId, serverId)))
        .for("update");
      if (!current) throw new AppError("not_found", "No such announcement on this server.");
      const next = {
        message: f.message ?? current.message,
        intervalSeconds: f.interval_seconds !== undefined ? f.interval_seconds : current.intervalSeconds,
        schedule: f.schedule !== undefined ? f.schedule : current.schedule,
        active: f.active ?? current.active,
        startsAt: toDate(f.starts_at) !== undefined ? toDate(f.starts_at)! : current.startsAt,
        endsAt: toDate(f.ends_at) !== undefined ? toDate(f.ends_at)! : current.endsAt,
      };
      checkShape(next);
      const [row] = await tx
        .update(announcements)
        .set({ ...next, updatedAt: new Date() })
        .where(eq(announcements.id, id))
        .returning();
      const out = announcementOut(row!);
      await audit(tx, {
        teamId: server.teamId,
        target: announcementTarget(row!),
        serverId,
        before: announcementOut(current),
        after: out,
      });
      return out;
    });
    this.events.publish(serverId, "announcements_changed", { action: "updated", announcement });
    return announcement;
  }

  async remove(principal: Principal, serverId: string, id: string) {
    const { server } = await requireServerRole(this.db, principal, serverId, "moderator");
    await this.db.transaction(async (tx) => {
      const [gone] = await tx
        .delete(announcements)
        .where(and(eq(announcements.id, id), eq(announcements.serverId, serverId)))
        .returning();
      if (!gone) throw new AppError("not_found", "No such announcement on this server.");
      await audit(tx, {
        teamId: server.teamId,
        target: announcementTarget(gone),
        serverId,
        before: announcementOut(gone),
      });
    });
    this.events.publish(serverId, "announcements_changed", {
      action: "deleted",
      announcement: { announcement_id: id },
    });
    return { ok: true as const };
  }
}
