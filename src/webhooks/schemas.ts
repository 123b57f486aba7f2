import { z } from "zod";
import { TEAM_EVENT_TYPES } from "../lib/events";
import { LIMITS } from "../lib/limits";
import { ZTimestamp, ZUuid } from "../lib/schemas";
import { DOWN_REASONS } from "../monitoring/down-reason";
import { ZTeamRef } from "../teams/schemas";
import { ZAuditEntry } from "../audit/schemas";
import { ALERT_METRICS, ALERT_OPS } from "../alerts/schemas";

export const ZEventType = z.enum(TEAM_EVENT_TYPES);
export const ZWebhookKind = z
  .enum(["standard", "discord", "slack"])
  .meta({ description: "`standard`: the signed event JSON; `discord` / `slack`: a chat message made from it" });

export const ZEndpoint = z.object({
  endpoint_id: ZUuid,
  team_id: ZUuid,
  url: z.string().max(2000).meta({
    description:
      "The whole URL for admins and owners; for viewers and viewer keys only scheme, host and the last 4 characters (`https://discord.com/…AbCd`), since the URL of many receivers is a credential",
  }),
  url_masked: z.boolean().meta({ description: "Whether `url` is masked (the caller is below admin)" }),
  description: z.string().max(500),
  kind: ZWebhookKind,
  event_types: z
    .array(ZEventType)
    .max(TEAM_EVENT_TYPES.length)
    .meta({ description: "Empty: every event type except `audit.entry`, which an endpoint gets only by naming it" }),
  enabled: z.boolean(),
  disabled_reason: z
    .enum(["failing"])
    .nullable()
    .meta({ description: "`failing`: the service disabled it after its deliveries failed for days" }),
  disabled_at: ZTimestamp.nullable(),
  secret_prefix: z
    .string()
    .max(20)
    .meta({ description: "The start of the current signing secret, for recognising it" }),
  previous_secret_expires_at: ZTimestamp.nullable().meta({
    description: "Until then the secret before the last rotation also signs every delivery",
  }),
  failing_since: ZTimestamp.nullable(),
  consecutive_failures: z.number().int().min(0),
  paused_at: ZTimestamp.nullable().meta({
    description:
      "Set while the endpoint is paused (its circuit open) after WEBHOOK_CIRCUIT_FAILURES failed attempts in a row: nothing is sent and its deliveries wait. A success or `POST …/resume` clears it",
  }),
  paused_until: ZTimestamp.nullable().meta({
    description: "While paused: when one delivery probes it again; null while paused means until it is resumed",
  }),
  created_at: ZTimestamp,
  updated_at: ZTimestamp,
});

export const ZWebhookUsage = z
  .object({
    events_per_minute: z.number().int(),
    deliveries_per_minute: z.number().int(),
    events_available: z.number().int().meta({ description: "Events the team may queue now" }),
    deliveries_available: z.number().int().meta({ description: "Deliveries (an event times its endpoints) likewise" }),
    dropped_events: z.number().int().meta({ description: "Events not queued because the budget was spent, ever" }),
    dropped_deliveries: z.number().int().meta({ description: "The deliveries those events would have made" }),
    last_dropped_at: ZTimestamp.nullable(),
  })
  .meta({
    description:
      "The team's webhook budget (WEBHOOK_TEAM_EVENTS_PER_MIN, WEBHOOK_TEAM_DELIVERIES_PER_MIN), refilled continuously, and what did not fit in it",
  });

export const ZDelivery = z.object({
  delivery_id: ZUuid,
  endpoint_id: ZUuid,
  message_id: z.string().max(40).meta({ description: "The event id, sent as `webhook-id`; the same on every retry" }),
  event_type: z.string().max(60),
  status: z.enum(["pending", "delivering", "succeeded", "failed"]),
  attempts: z.number().int().min(0),
  next_attempt_at: ZTimestamp.nullable(),
  last_status_code: z.number().int().nullable(),
  last_error: z.string().max(1000).nullable(),
  last_latency_ms: z.number().int().nullable(),
  last_response: z
    .string()
    .max(8192)
    .nullable()
    .meta({ description: "The start of the last response body (4 KiB at most)" }),
  last_attempt_at: ZTimestamp.nullable(),
  created_at: ZTimestamp,
});

const ZUrl = z
  .string()
  .trim()
  .min(1)
  .max(2000)
  .meta({ description: "https (or http) URL; private addresses are refused" });
const ZDescription = z.string().trim().max(500);
const ZTypes = z
  .array(ZEventType)
  .max(TEAM_EVENT_TYPES.length)
  .transform((t) => [...new Set(t)]);

export const ZCreateEndpoint = ZTeamRef.extend({
  url: ZUrl,
  description: ZDescription.optional(),
  kind: ZWebhookKind.optional(),
  event_types: ZTypes.optional(),
  enabled: z.boolean().optional(),
});
export const ZEndpointRef = ZTeamRef.extend({ endpoint_id: ZUuid });
export const ZUpdateEndpoint = ZEndpointRef.extend({
  url: ZUrl.optional(),
  description: ZDescription.optional(),
  kind: ZWebhookKind.optional(),
  event_types: ZTypes.optional(),
  enabled: z.boolean().optional(),
});
export const ZRotateSecret = ZEndpointRef.extend({
  overlap_seconds: z.coerce
    .number()
    .int()
    .min(0)
    .max(7 * 86_400)
    .default(86_400)
    .meta({ description: "How long the old secret keeps signing beside the new one (default a day)" }),
});
export const ZDeliveriesQuery = ZEndpointRef.extend({
  limit: z.coerce.number().int().min(1).max(LIMITS.webhookDeliveriesListed).default(50),
});
export const ZDeliveryRef = ZEndpointRef.extend({ delivery_id: ZUuid });
export const ZEndpointWithSecret = z.object({
  endpoint: ZEndpoint,
  secret: z.string().meta({ description: "`whsec_` + base64: shown only in this response" }),
});

const ZServerRef = {
  server_id: ZUuid,
  server_name: z.string().max(100),
};
const ZClientRef = {
  client_id: ZUuid,
  client_name: z.string().max(100),
};
const ZAgentSilence = z.object({
  ...ZServerRef,
  last_heartbeat_at: ZTimestamp,
  silence_seconds: z.number().int(),
});

/** An incident as incident.* events carry it (the team's own channels: a crash's lines are included). */
const ZIncidentEvent = z.object({
  server_id: ZUuid.optional().meta({ description: "Absent for an incident of a whole network" }),
  server_name: z.string().max(100).optional(),
  network_name: z.string().max(64).optional().meta({ description: "Only for an incident of a whole network" }),
  incident_id: ZUuid,
  kind: z.enum(["down", "crash", "manual"]),
  title: z.string().max(200),
  status: z.enum(["investigating", "identified", "monitoring", "resolved"]),
  started_at: ZTimestamp,
  ended_at: ZTimestamp.nullable(),
  crash: z
    .object({ description: z.string().max(500), lines: z.array(z.string().max(500)).max(30) })
    .nullable()
    .meta({ description: "A crash report's description and first exception lines" }),
  update: z
    .object({ status: z.string(), message: z.string().max(2000), at: ZTimestamp })
    .optional()
    .meta({ description: "The update posted, for one posted by the team" }),
});

const ZAlert = z.object({
  ...ZServerRef,
  rule_id: ZUuid,
  rule_name: z.string().max(100),
  network_name: z.string().max(100).nullable().meta({ description: "Set when the rule watches a network" }),
  metric: z.enum(ALERT_METRICS),
  op: z.enum(ALERT_OPS),
  threshold: z.number(),
  margin: z.number(),
  duration_seconds: z.number().int(),
  value: z.number().meta({ description: "The reading that decided (memory_share as 0-1)" }),
  since: ZTimestamp.nullable().meta({
    description: "Firing: since when the value has been past the threshold; resolved: since when it has been back",
  }),
  at: ZTimestamp.meta({ description: "When the deciding reading was taken" }),
});

/** Each event type's `data`, for the OpenAPI document's `webhooks` (docs/webhooks.md says when each is sent). */
export const WEBHOOK_EVENT_DATA: Record<(typeof TEAM_EVENT_TYPES)[number], { summary: string; data: z.ZodObject }> = {
  "server.down": {
    summary: "A server failed WEBHOOK_DOWN_AFTER_FAILURES pings in a row (once per outage)",
    data: z.object({
      ...ZServerRef,
      failed_pings: z.number().int(),
      error: z.string().max(500).nullable(),
      reason: z
        .enum(DOWN_REASONS)
        .nullable()
        .meta({ description: "The error as one of a fixed set, as the server record's `status.down_reason`" }),
    }),
  },
  "server.up": {
    summary: "The first answered ping after a server.down",
    data: z.object({
      ...ZServerRef,
      latency_ms: z.number().int().nullable(),
      players_online: z.number().int().nullable(),
    }),
  },
  "player.banned": {
    summary: "A ban from the dashboard or reported by the server's agent",
    data: z.object({
      ...ZServerRef,
      uuid: ZUuid,
      name: z.string().max(16).nullable(),
      reason: z.string().max(500),
      source: z.string().max(100),
      origin: z.enum(["dashboard", "game"]),
      created: ZTimestamp,
      expires: z.union([ZTimestamp, z.literal("forever")]),
    }),
  },
  "player.unbanned": {
    summary: "A ban lifted",
    data: z.object({ ...ZServerRef, uuid: ZUuid, source: z.enum(["dashboard", "game"]) }),
  },
  "agent.offline": { summary: "No agent heartbeat for WEBHOOK_AGENT_SILENCE_SECONDS", data: ZAgentSilence },
  "incident.opened": {
    summary:
      "An incident began: a server confirmed down (with server.down), a crash report, or one posted by hand; held during a maintenance window",
    data: ZIncidentEvent,
  },
  "incident.updated": {
    summary: "An update on an incident's timeline, or a crash report attached to it",
    data: ZIncidentEvent,
  },
  "incident.resolved": {
    summary: "An incident ended: the server is back, or the team resolved it",
    data: ZIncidentEvent,
  },
  "agent.online": { summary: "A heartbeat again after agent.offline", data: ZAgentSilence },
  "alert.firing": {
    summary: "A performance alert rule fired for a server: its value stayed past the threshold for the rule's duration",
    data: ZAlert,
  },
  "alert.resolved": {
    summary:
      "A performance alert rule recovered: the value stayed back past threshold and margin for the duration (sent only after an alert.firing)",
    data: ZAlert,
  },
  "login.authorized": {
    summary: "A launcher sign-in was approved",
    data: z.object({
      ...ZClientRef,
      auth_request_id: z.string().max(100),
      mc_uuid: z.string().max(36).nullable(),
      mc_username: z.string().max(16).nullable(),
    }),
  },
  "login.denied": {
    summary: "A launcher sign-in was denied; `error` is the denial code",
    data: z.object({ ...ZClientRef, auth_request_id: z.string().max(100), error: z.string().max(60).nullable() }),
  },
  "session.revoked": {
    summary: "A player revoked the client's access on their apps page: their sessions of it are no longer valid",
    data: z.object({
      ...ZClientRef,
      mc_uuid: z.string().max(36),
      mc_username: z.string().max(16),
      sessions: z.number().int().meta({ description: "How many live sessions of the player ended" }),
      revoked_at: ZTimestamp,
      by: z.literal("player").meta({ description: "Who revoked: the player (their apps page)" }),
    }),
  },
  "client.secret_rotated": {
    summary: "A client's secret was rotated",
    data: z.object({ ...ZClientRef, rotated_at: ZTimestamp }),
  },
  "endpoint.disabled": {
    summary: "Another endpoint of the team was disabled after failing (sent to the team's other endpoints)",
    data: z.object({
      endpoint_id: ZUuid,
      url: z.string().max(2000).meta({ description: "Masked, as viewers see it" }),
      failing_since: ZTimestamp,
      reason: z.literal("failing"),
    }),
  },
  "endpoint.paused": {
    summary:
      "Another endpoint of the team was paused after WEBHOOK_CIRCUIT_FAILURES failed attempts in a row (sent to the team's other endpoints)",
    data: z.object({
      endpoint_id: ZUuid,
      url: z.string().max(2000).meta({ description: "Masked, as viewers see it" }),
      consecutive_failures: z.number().int(),
      paused_until: ZTimestamp.nullable().meta({ description: "When one delivery probes it; null: until resumed" }),
    }),
  },
  "webhook.test": {
    summary: "A test event (the test route or button)",
    data: z.object({ endpoint_id: ZUuid, team_id: ZUuid, message: z.string().max(200) }),
  },
  "audit.entry": {
    summary:
      "An audit log entry, once its change has committed (docs/audit.md); sent only to endpoints that name this type",
    data: ZAuditEntry,
  },
};
