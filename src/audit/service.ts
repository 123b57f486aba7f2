import { and, desc, eq, gte, lt, type SQL } from "drizzle-orm";
import type { Principal } from "../auth/principal";
import type { Db } from "../db/client";
import { auditLog } from "../db/schema";
import { requireTeamRole } from "../teams/access";
import { entryOut } from "./entry";
import type { TAuditQuery } from "./schemas";

/**
 * Reads the audit log. There is no write path here: entries are written by the changes
 * themselves (`audit()` in ./entry.ts, inside their transactions), and removed only by the
 * retention job, by age.
 */
export class AuditService {
  constructor(private readonly db: Db) {}

  /** A team's entries, newest first, filtered, a page at a time. Admins and owners only. */
  async list(principal: Principal, q: TAuditQuery) {
    await requireTeamRole(this.db, principal, q.team_id, "admin");
    const where: (SQL | undefined)[] = [
      eq(auditLog.teamId, q.team_id),
      q.actor_id ? eq(auditLog.actorId, q.actor_id) : undefined,
      q.actor_kind ? eq(auditLog.actorKind, q.actor_kind) : undefined,
      q.action ? eq(auditLog.action, q.action) : undefined,
      q.target_type ? eq(auditLog.targetType, q.target_type) : undefined,
      q.target_id ? eq(auditLog.targetId, q.target_id) : undefined,
      q.since ? gte(auditLog.at, new Date(q.since)) : undefined,
      q.until ? lt(auditLog.at, new Date(q.until)) : undefined,
      q.cursor ? lt(auditLog.id, Number(q.cursor)) : undefined,
    ];
    const rows = await this.db
      .select()
      .from(auditLog)
      .where(and(...where))
      .orderBy(desc(auditLog.id))
      .limit(q.limit + 1);
    const page = rows.slice(0, q.limit);
    return {
      entries: page.map(entryOut),
      next_cursor: rows.length > q.limit ? String(page.at(-1)!.id) : null,
    };
  }
}
