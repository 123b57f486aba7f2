import { and, asc, eq, sql } from "drizzle-orm";
import type { Principal } from "../auth/principal";
import { audit } from "../audit/entry";
import type { Db } from "../db/client";
import { rowsOf } from "../db/rows";
import { playerOptOuts, teamPrivacy } from "../db/schema";
import type { IdempotencyStore } from "../idempotency/store";
import { AppError } from "../lib/errors";
import type { Keyring } from "../lib/keyring";
import { LIMITS, overLimit } from "../lib/limits";
import { iso } from "../lib/schemas";
import { closeSessions } from "../servers/players";
import { lockTeamServers } from "../servers/team-lock";
import { requireTeamRole } from "../teams/access";
import { HOLDERS, type PlayerScope, type Tx } from "./holders";

export interface PrivacyLimits {
  /** PLAYER_DATA_MAX_RETENTION_DAYS: the most a team may keep per-player data. */
  maxRetentionDays: number;
  /** SAMPLE_RETENTION_DAYS: closed sessions are never kept longer, whatever a team sets. */
  sessionCeilingDays: number;
}

/** A UUID no server has: keeps `in (...)` valid for a team without servers. */
const NO_SERVER = "00000000-0000-0000-0000-000000000000";

/**
 * Export, erasure, opt-outs and retention settings (docs/privacy.md). Export and erasure walk
 * the holders (./holders.ts), one entry per table that can hold a player's data.
 */
export class PrivacyService {
  constructor(
    private readonly db: Db,
    private readonly keyring: Keyring,
    private readonly idempotency: IdempotencyStore,
    private readonly limits: PrivacyLimits,
    /** Settles what requests have queued but not yet stored (webhook events), before an erasure. */
    private readonly settle: () => Promise<void> = async () => {},
  ) {}

  /**
   * What stands for a player in the audit log: a keyed hash of the team and the UUID, the same
   * every time (so a team's privacy entries about one player can be found, from the export or
   * erasure answer), and not reversible without the service's key.
   */
  playerRef(teamId: string, uuid: string): string {
    return `pr_${this.keyring.mac("player-ref", teamId, uuid).slice(0, 32)}`;
  }

  private async scope(tx: Tx, teamId: string, uuid: string, lock: boolean): Promise<PlayerScope> {
    const ids = await lockTeamServers(tx, teamId, lock ? "update" : "share");
    return {
      tx,
      teamId,
      uuid,
      servers: sql`(${sql.join(
        (ids.length ? ids : [NO_SERVER]).map((id) => sql`${id}::uuid`),
        sql`, `,
      )})`,
      ref: this.playerRef(teamId, uuid),
      touchedDays: [],
      forgetSealed: async (needles) => {
        // Answers kept for the team's own credentials: its members and its API keys (a former
        // member's answers expire with the rest, within 24 hours; docs/privacy.md).
        const scopes = rowsOf<{ scope: string }>(
          await tx.execute(sql`
            select 'user:' || user_id::text as scope from team_members where team_id = ${teamId}
            union all select 'key:' || id::text from api_keys where team_id = ${teamId}`),
        ).map((r) => r.scope);
        return this.idempotency.forgetMentions(tx as Db, needles, scopes);
      },
    };
  }

  /** Everything held about one player across the team: one section per holder. Admins. */
  async exportPlayer(principal: Principal, teamId: string, uuid: string) {
    await requireTeamRole(this.db, principal, teamId, "admin");
    return this.db.transaction(async (tx) => {
      const p = await this.scope(tx, teamId, uuid, false);
      const holders: Record<string, Record<string, unknown>[]> = {};
      for (const h of HOLDERS) holders[h.table] = await h.export(p);
      // The entry is written after the sections are read: the export does not list itself.
      await audit(tx, { teamId, target: { type: "player", id: p.ref }, changes: {} });
      return { uuid, team_id: teamId, player_ref: p.ref, generated_at: iso(new Date()), holders };
    });
  }

  /**
   * Erases one player from the team in one transaction: every holder deletes or rewrites its
   * rows, the daily aggregates are rebuilt without them, bans stay as tombstones. Erasing a
   * player already erased changes nothing and answers zero counts. Admins.
   */
  async erase(principal: Principal, teamId: string, uuid: string) {
    await requireTeamRole(this.db, principal, teamId, "admin");
    await this.settle();
    return this.db.transaction(async (tx) => {
      const p = await this.scope(tx, teamId, uuid, true);
      const erased: Record<string, number> = {};
      for (const h of HOLDERS) erased[h.table] = await h.erase(p);
      const changes = Object.fromEntries(
        Object.entries(erased)
          .filter(([, n]) => n > 0)
          .map(([table, n]) => [table, { before: n, after: 0 }]),
      );
      await audit(tx, { teamId, target: { type: "player", id: p.ref }, changes });
      return { player_ref: p.ref, erased };
    });
  }

  async listOptOuts(principal: Principal, teamId: string) {
    await requireTeamRole(this.db, principal, teamId, "moderator");
    const rows = await this.db
      .select()
      .from(playerOptOuts)
      .where(eq(playerOptOuts.teamId, teamId))
      .orderBy(asc(playerOptOuts.createdAt), asc(playerOptOuts.uuid))
      .limit(LIMITS.optOutsPerTeam);
    return { opt_outs: rows.map(optOutOut) };
  }

  /**
   * Adds a player to the opt-out list: from now on their joins and leaves are dropped at ingest.
   * A session of theirs still open is closed now, so nothing goes on counting them. Moderators.
   */
  async addOptOut(principal: Principal, teamId: string, input: { uuid: string; name?: string }) {
    await requireTeamRole(this.db, principal, teamId, "moderator");
    return this.db.transaction(async (tx) => {
      const [{ n }] = rowsOf<{ n: number }>(
        await tx.execute(sql`select count(*)::int as n from player_opt_outs where team_id = ${teamId}`),
      ) as [{ n: number }];
      const [existing] = await tx
        .select()
        .from(playerOptOuts)
        .where(and(eq(playerOptOuts.teamId, teamId), eq(playerOptOuts.uuid, input.uuid)))
        .for("update");
      if (!existing && n >= LIMITS.optOutsPerTeam) throw overLimit("opted-out players", LIMITS.optOutsPerTeam);
      const [row] = await tx
        .insert(playerOptOuts)
        .values({
          teamId,
          uuid: input.uuid,
          name: input.name ?? null,
          createdBy: principal.kind === "user" ? principal.userId : null,
        })
        .onConflictDoUpdate({
          target: [playerOptOuts.teamId, playerOptOuts.uuid],
          set: { name: input.name === undefined ? sql`${playerOptOuts.name}` : input.name },
        })
        .returning();
      const ids = await lockTeamServers(tx, teamId, "update");
      if (ids.length > 0)
        await closeSessions(
          tx,
          sql`s.server_id in (${sql.join(
            ids.map((id) => sql`${id}::uuid`),
            sql`, `,
          )}) and s.uuid = ${input.uuid}`,
          sql`coalesce(s.seen_at, s.joined_at)`,
          "leave",
        );
      await audit(tx, {
        teamId,
        target: { type: "player", id: input.uuid, name: row!.name },
        before: existing ? optOutOut(existing) : null,
        after: optOutOut(row!),
      });
      return optOutOut(row!);
    });
  }

  /** Takes a player off the list: collection starts again with their next join. Admins. */
  async removeOptOut(principal: Principal, teamId: string, uuid: string) {
    await requireTeamRole(this.db, principal, teamId, "admin");
    return this.db.transaction(async (tx) => {
      const [gone] = await tx
        .delete(playerOptOuts)
        .where(and(eq(playerOptOuts.teamId, teamId), eq(playerOptOuts.uuid, uuid)))
        .returning();
      if (!gone) throw new AppError("not_found", "This player is not on the team's opt-out list.");
      await audit(tx, {
        teamId,
        target: { type: "player", id: uuid, name: gone.name },
        before: optOutOut(gone),
        after: null,
      });
      return { ok: true as const };
    });
  }

  async settings(principal: Principal, teamId: string) {
    await requireTeamRole(this.db, principal, teamId, "viewer");
    const [row] = await this.db.select().from(teamPrivacy).where(eq(teamPrivacy.teamId, teamId));
    return this.settingsOut(teamId, row);
  }

  async updateSettings(
    principal: Principal,
    teamId: string,
    input: { session_retention_days?: number | null; player_retention_days?: number | null },
  ) {
    await requireTeamRole(this.db, principal, teamId, "admin");
    const issues: { path: string; message: string }[] = [];
    const check = (field: keyof typeof input, max: number, why: string) => {
      const v = input[field];
      if (v !== undefined && v !== null && v > max)
        issues.push({ path: field, message: `must be at most ${max} (${why})` });
    };
    check("session_retention_days", this.sessionMax(), "the platform keeps closed sessions no longer");
    check("player_retention_days", this.limits.maxRetentionDays, "PLAYER_DATA_MAX_RETENTION_DAYS");
    if (issues.length)
      throw new AppError("validation_failed", "The request did not match the expected shape.", { details: { issues } });
    return this.db.transaction(async (tx) => {
      const [before] = await tx.select().from(teamPrivacy).where(eq(teamPrivacy.teamId, teamId)).for("update");
      const next = {
        sessionRetentionDays:
          input.session_retention_days === undefined
            ? (before?.sessionRetentionDays ?? null)
            : input.session_retention_days,
        playerRetentionDays:
          input.player_retention_days === undefined
            ? (before?.playerRetentionDays ?? null)
            : input.player_retention_days,
      };
      const [row] = await tx
        .insert(teamPrivacy)
        .values({ teamId, ...next, updatedAt: new Date() })
        .onConflictDoUpdate({ target: teamPrivacy.teamId, set: { ...next, updatedAt: new Date() } })
        .returning();
      const out = this.settingsOut(teamId, row);
      await audit(tx, {
        teamId,
        target: { type: "team", id: teamId },
        before: before ? this.retentionFields(before) : { session_retention_days: null, player_retention_days: null },
        after: this.retentionFields(row!),
      });
      return out;
    });
  }

  private sessionMax() {
    return Math.min(this.limits.maxRetentionDays, this.limits.sessionCeilingDays);
  }

  private retentionFields(r: typeof teamPrivacy.$inferSelect) {
    return { session_retention_days: r.sessionRetentionDays, player_retention_days: r.playerRetentionDays };
  }

  private settingsOut(teamId: string, row: typeof teamPrivacy.$inferSelect | undefined) {
    const session = row?.sessionRetentionDays ?? null;
    const player = row?.playerRetentionDays ?? null;
    return {
      team_id: teamId,
      session_retention_days: session,
      player_retention_days: player,
      effective_session_retention_days: Math.min(session ?? this.sessionMax(), this.sessionMax()),
      effective_player_retention_days: Math.min(player ?? this.limits.maxRetentionDays, this.limits.maxRetentionDays),
      max_session_retention_days: this.sessionMax(),
      max_player_retention_days: this.limits.maxRetentionDays,
      updated_at: row ? iso(row.updatedAt) : null,
    };
  }
}

const optOutOut = (r: typeof playerOptOuts.$inferSelect) => ({
  uuid: r.uuid,
  name: r.name,
  created_at: iso(r.createdAt),
});

/** The opted-out players of a server's team among `uuids` (lower-case): what the ingest drops. */
export async function optedOut(tx: Tx, serverId: string, uuids: string[]): Promise<Set<string>> {
  if (uuids.length === 0) return new Set();
  const rows = rowsOf<{ uuid: string }>(
    await tx.execute(sql`
      select o.uuid::text as uuid from player_opt_outs o join servers s on s.team_id = o.team_id
       where s.id = ${serverId} and o.uuid in (${sql.join(
         [...new Set(uuids)].map((u) => sql`${u}::uuid`),
         sql`, `,
       )})`),
  );
  return new Set(rows.map((r) => r.uuid));
}

/** The UUIDs a server's agent must not report (GET /agent/config `opt_outs`). */
export async function optOutsOfServer(db: Db, serverId: string): Promise<string[]> {
  const rows = rowsOf<{ uuid: string }>(
    await db.execute(sql`
      select o.uuid::text as uuid from player_opt_outs o join servers s on s.team_id = o.team_id
       where s.id = ${serverId} order by o.created_at, o.uuid limit ${LIMITS.optOutsPerTeam}`),
  );
  return rows.map((r) => r.uuid);
}
