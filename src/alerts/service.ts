import { and, asc, eq, sql } from "drizzle-orm";
import type { z } from "zod";
import { audit } from "../audit/entry";
import type { Principal } from "../auth/principal";
import type { Db } from "../db/client";
import { alertRules, alertRuleState, servers } from "../db/schema";
import { AppError } from "../lib/errors";
import { LIMITS, overLimit } from "../lib/limits";
import { iso } from "../lib/schemas";
import { requireTeamRole } from "../teams/access";
import type { PerformanceAlerts } from "./evaluate";
import {
  type AlertMetric,
  DEFAULT_MARGIN,
  METRIC_MAX,
  type ZAlertRule,
  type ZCreateAlertRule,
  type ZUpdateAlertRule,
} from "./schemas";

type Row = typeof alertRules.$inferSelect;

const NOT_FOUND = "No such alert rule in this team.";

function ruleOut(r: Row, firing: string[] = []): z.infer<typeof ZAlertRule> {
  return {
    id: r.id,
    team_id: r.teamId,
    server_id: r.serverId,
    network_name: r.networkName,
    name: r.name,
    metric: r.metric as AlertMetric,
    op: r.op as "below" | "above",
    threshold: r.threshold,
    margin: r.margin,
    duration_seconds: r.durationSeconds,
    enabled: r.enabled,
    firing,
    created_at: iso(r.createdAt),
    updated_at: iso(r.updatedAt),
  };
}

/** What the audit log keeps of a rule: its settings, not where it stands. */
const audited = (r: Row) => {
  const { firing: _, created_at: __, updated_at: ___, ...rest } = ruleOut(r);
  return rest;
};

function invalid(path: string, message: string): AppError {
  return new AppError("validation_failed", "The request did not match the expected shape.", {
    details: { issues: [{ path, message }] },
  });
}

function checkThreshold(metric: AlertMetric, threshold: number) {
  if (threshold > METRIC_MAX[metric]) throw invalid("threshold", `must be at most ${METRIC_MAX[metric]} for ${metric}`);
}

/** Alert rules on performance (docs/alerts.md): their settings; `PerformanceAlerts` runs them. */
export class AlertRulesService {
  constructor(
    private readonly db: Db,
    private readonly evaluator?: PerformanceAlerts,
  ) {}

  private async firingOf(ruleIds: string[]): Promise<Map<string, string[]>> {
    const out = new Map<string, string[]>();
    if (ruleIds.length === 0) return out;
    const rows = await this.db
      .select({ ruleId: alertRuleState.ruleId, serverId: alertRuleState.serverId })
      .from(alertRuleState)
      .where(
        and(
          eq(alertRuleState.firing, true),
          sql`${alertRuleState.ruleId} in (${sql.join(
            ruleIds.map((id) => sql`${id}::uuid`),
            sql`, `,
          )})`,
        ),
      )
      .orderBy(asc(alertRuleState.serverId));
    for (const r of rows) out.set(r.ruleId, [...(out.get(r.ruleId) ?? []), r.serverId]);
    return out;
  }

  async list(principal: Principal, teamId: string) {
    await requireTeamRole(this.db, principal, teamId, "viewer");
    const rows = await this.db
      .select()
      .from(alertRules)
      .where(eq(alertRules.teamId, teamId))
      .orderBy(asc(alertRules.createdAt), asc(alertRules.id));
    const firing = await this.firingOf(rows.map((r) => r.id));
    return { rules: rows.map((r) => ruleOut(r, firing.get(r.id))) };
  }

  async get(principal: Principal, teamId: string, ruleId: string) {
    await requireTeamRole(this.db, principal, teamId, "viewer");
    const [row] = await this.db
      .select()
      .from(alertRules)
      .where(and(eq(alertRules.teamId, teamId), eq(alertRules.id, ruleId)));
    if (!row) throw new AppError("not_found", NOT_FOUND);
    const firing = await this.firingOf([row.id]);
    return ruleOut(row, firing.get(row.id));
  }

  async create(principal: Principal, teamId: string, input: Omit<z.infer<typeof ZCreateAlertRule>, "team_id">) {
    await requireTeamRole(this.db, principal, teamId, "admin");
    if ((input.server_id === undefined) === (input.network_name === undefined))
      throw invalid("server_id", "give exactly one of server_id and network_name");
    checkThreshold(input.metric, input.threshold);
    const row = await this.db.transaction(async (tx) => {
      if (input.server_id !== undefined) {
        const [server] = await tx
          .select({ id: servers.id })
          .from(servers)
          .where(and(eq(servers.id, input.server_id), eq(servers.teamId, teamId)));
        if (!server) throw new AppError("not_found", "No such server in this team.");
      } else {
        const [member] = await tx
          .select({ id: servers.id })
          .from(servers)
          .where(
            and(eq(servers.teamId, teamId), eq(servers.kind, "network"), eq(servers.networkName, input.network_name!)),
          )
          .limit(1);
        if (!member) throw new AppError("not_found", "No such network in this team.");
      }
      // Counted under the team's row lock: two creates at once cannot both take the last place.
      await tx.execute(sql`select 1 from teams where id = ${teamId} for update`);
      const [{ n }] = (await tx
        .select({ n: sql<number>`count(*)::int` })
        .from(alertRules)
        .where(eq(alertRules.teamId, teamId))) as [{ n: number }];
      if (n >= LIMITS.alertRulesPerTeam) throw overLimit("alert rules in a team", LIMITS.alertRulesPerTeam);
      const [created] = await tx
        .insert(alertRules)
        .values({
          teamId,
          serverId: input.server_id ?? null,
          networkName: input.network_name ?? null,
          name: input.name,
          metric: input.metric,
          op: input.op,
          threshold: input.threshold,
          margin: input.margin ?? DEFAULT_MARGIN[input.metric],
          durationSeconds: input.duration_seconds,
          enabled: input.enabled,
        })
        .returning();
      await audit(tx, {
        teamId,
        target: { type: "alert_rule", id: created!.id, name: created!.name },
        serverId: created!.serverId,
        before: null,
        after: audited(created!),
      });
      return created!;
    });
    this.evaluator?.invalidate();
    return ruleOut(row);
  }

  /**
   * Changes a rule. A change of what it decides on (op, threshold, margin, duration, enabled)
   * starts it afresh: where it stood is forgotten, and no recovery is sent for a firing it had.
   */
  async update(
    principal: Principal,
    teamId: string,
    ruleId: string,
    input: Omit<z.infer<typeof ZUpdateAlertRule>, "team_id" | "rule_id">,
  ) {
    await requireTeamRole(this.db, principal, teamId, "admin");
    const row = await this.db.transaction(async (tx) => {
      const [before] = await tx
        .select()
        .from(alertRules)
        .where(and(eq(alertRules.teamId, teamId), eq(alertRules.id, ruleId)))
        .for("update");
      if (!before) throw new AppError("not_found", NOT_FOUND);
      if (input.threshold !== undefined) checkThreshold(before.metric as AlertMetric, input.threshold);
      const [after] = await tx
        .update(alertRules)
        .set({
          ...(input.name !== undefined && { name: input.name }),
          ...(input.op !== undefined && { op: input.op }),
          ...(input.threshold !== undefined && { threshold: input.threshold }),
          ...(input.margin !== undefined && { margin: input.margin }),
          ...(input.duration_seconds !== undefined && { durationSeconds: input.duration_seconds }),
          ...(input.enabled !== undefined && { enabled: input.enabled }),
          updatedAt: new Date(),
        })
        .where(eq(alertRules.id, ruleId))
        .returning();
      const decides = (r: Row) => [r.op, r.threshold, r.margin, r.durationSeconds, r.enabled].join("|");
      if (decides(before) !== decides(after!)) await tx.delete(alertRuleState).where(eq(alertRuleState.ruleId, ruleId));
      await audit(tx, {
        teamId,
        target: { type: "alert_rule", id: ruleId, name: after!.name },
        serverId: after!.serverId,
        before: audited(before),
        after: audited(after!),
      });
      return after!;
    });
    this.evaluator?.invalidate();
    const firing = await this.firingOf([row.id]);
    return ruleOut(row, firing.get(row.id));
  }

  async delete(principal: Principal, teamId: string, ruleId: string) {
    await requireTeamRole(this.db, principal, teamId, "admin");
    await this.db.transaction(async (tx) => {
      const [gone] = await tx
        .delete(alertRules)
        .where(and(eq(alertRules.teamId, teamId), eq(alertRules.id, ruleId)))
        .returning();
      if (!gone) throw new AppError("not_found", NOT_FOUND);
      await audit(tx, {
        teamId,
        target: { type: "alert_rule", id: ruleId, name: gone.name },
        serverId: gone.serverId,
        before: audited(gone),
        after: null,
      });
    });
    this.evaluator?.invalidate();
    return { ok: true as const };
  }
}
