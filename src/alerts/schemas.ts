import { z } from "zod";
import { LIMITS } from "../lib/limits";
import { ZTimestamp, ZUuid } from "../lib/schemas";
import { ZTeamRef } from "../teams/schemas";

export const ALERT_METRICS = ["tps", "mspt", "memory_share", "players_online"] as const;
export type AlertMetric = (typeof ALERT_METRICS)[number];
export const ALERT_OPS = ["below", "above"] as const;

/**
 * The margin a rule takes when none is given: how far back past the threshold a value must be
 * before it counts towards recovery (docs/alerts.md, "Hysteresis").
 */
export const DEFAULT_MARGIN: Record<AlertMetric, number> = {
  tps: 1,
  mspt: 5,
  memory_share: 0.05,
  players_online: 1,
};
/** The largest threshold each metric takes (what the agent's heartbeat accepts, or 1 for a share). */
export const METRIC_MAX: Record<AlertMetric, number> = {
  tps: 1000,
  mspt: 600_000,
  memory_share: 1,
  players_online: 1_000_000,
};

const ZMetric = z.enum(ALERT_METRICS).meta({
  description:
    "`tps` and `mspt` from the agent's heartbeats, `memory_share` (memory_used_mb / memory_max_mb, 0-1) from them too, `players_online` from the pinger",
});
const ZOp = z.enum(ALERT_OPS).meta({ description: "Fires while the value is below (or above) the threshold" });
const ZName = z.string().trim().min(1).max(100);
const ZNetworkName = z.string().trim().min(1).max(100);
const ZThreshold = z.number().min(0).max(1_000_000);
const ZMargin = z.number().min(0).max(1_000_000).meta({
  description:
    "Hysteresis: after firing, the value must be back past threshold ± margin for the whole duration before the rule recovers. Defaults per metric: tps 1, mspt 5, memory_share 0.05, players_online 1",
});
const ZDuration = z.number().int().min(0).max(86_400).meta({
  description:
    "How long (seconds) the value must stay past the threshold before the rule fires, and back past the margin before it recovers; 0 fires on the first reading",
});

const RULE = "7c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f";
const TEAM = "3f1c2a4e-8b7d-4e6f-9a1b-2c3d4e5f6a7b";
const SERVER = "9b2f6c1e-4d3a-4b5c-8e7f-1a2b3c4d5e6f";

export const ZAlertRule = z
  .object({
    id: ZUuid,
    team_id: ZUuid,
    server_id: ZUuid.nullable().meta({ description: "The one server the rule watches; null for a network rule" }),
    network_name: z
      .string()
      .nullable()
      .meta({ description: "The network (the team's servers of kind network with this name): each server alone" }),
    name: z.string(),
    metric: ZMetric,
    op: ZOp,
    threshold: z.number(),
    margin: z.number(),
    duration_seconds: z.number().int(),
    enabled: z.boolean(),
    firing: z.array(ZUuid).max(LIMITS.serversPerTeam).meta({ description: "The servers for which the rule fires now" }),
    created_at: ZTimestamp,
    updated_at: ZTimestamp,
  })
  .meta({
    examples: [
      {
        id: RULE,
        team_id: TEAM,
        server_id: SERVER,
        network_name: null,
        name: "Low TPS",
        metric: "tps",
        op: "below",
        threshold: 18,
        margin: 1,
        duration_seconds: 60,
        enabled: true,
        firing: [],
        created_at: "2025-02-01T10:00:00.000Z",
        updated_at: "2025-02-01T10:00:00.000Z",
      },
    ],
  });

export const ZAlertRuleList = z.object({ rules: z.array(ZAlertRule).max(LIMITS.alertRulesPerTeam) });
export const ZAlertRuleRef = ZTeamRef.extend({ rule_id: ZUuid });

export const ZCreateAlertRule = ZTeamRef.extend({
  name: ZName,
  server_id: ZUuid.optional().meta({ description: "One of server_id and network_name" }),
  network_name: ZNetworkName.optional().meta({ description: "One of server_id and network_name" }),
  metric: ZMetric,
  op: ZOp,
  threshold: ZThreshold,
  margin: ZMargin.optional(),
  duration_seconds: ZDuration.default(60),
  enabled: z.boolean().default(true),
});

export const ZUpdateAlertRule = ZAlertRuleRef.extend({
  name: ZName.optional(),
  op: ZOp.optional(),
  threshold: ZThreshold.optional(),
  margin: ZMargin.optional(),
  duration_seconds: ZDuration.optional(),
  enabled: z.boolean().optional(),
});
