import { z } from "zod";
import { LIMITS } from "../lib/limits";
import { ZOk } from "../lib/schemas";
import { router } from "../trpc/init";
import { authedProcedure } from "../trpc/procedures";
import {
  ZCreateEndpoint,
  ZDeliveriesQuery,
  ZDelivery,
  ZDeliveryRef,
  ZEndpoint,
  ZEndpointRef,
  ZEndpointWithSecret,
  ZRotateSecret,
  ZUpdateEndpoint,
  ZWebhookUsage,
} from "./schemas";

const tags = ["webhooks"];
const err = [400, 401, 403, 404, 429];

/** The events and their payloads, for the document; docs/webhooks.md has the full description. */
export const EVENTS_DESCRIPTION = `Every delivery is a POST with the Standard Webhooks headers \`webhook-id\` (the event id, \`msg_...\`, the same on every retry), \`webhook-timestamp\` (Unix seconds) and \`webhook-signature\` (\`v1,\` + base64 HMAC-SHA256 of \`id.timestamp.body\` with the base64-decoded secret after \`whsec_\`; two signatures, space-separated, during a rotation's overlap). The body of a \`standard\` endpoint is \`{"type", "timestamp", "data"}\`:

- \`server.down\` {server_id, server_name, failed_pings, error, reason}: after WEBHOOK_DOWN_AFTER_FAILURES failed pings in a row
- \`server.up\` {server_id, server_name, latency_ms, players_online}: the first answered ping after a \`server.down\`
- \`player.banned\` {server_id, server_name, uuid, name, reason, source, origin, created, expires}
- \`player.unbanned\` {server_id, server_name, uuid, source}
- \`agent.offline\` / \`agent.online\` {server_id, server_name, last_heartbeat_at, silence_seconds}
- \`incident.opened\` / \`incident.updated\` / \`incident.resolved\` {server_id, server_name (or network_name), incident_id, kind, title, status, started_at, ended_at, crash, update}: an incident began (held during a maintenance window), got an update or a crash report, ended
- \`alert.firing\` / \`alert.resolved\` {server_id, server_name, rule_id, rule_name, network_name, metric, op, threshold, margin, duration_seconds, value, since, at}: a performance alert rule fired or recovered (docs/alerts.md)
- \`login.authorized\` {client_id, client_name, auth_request_id, mc_uuid, mc_username}
- \`login.denied\` {client_id, client_name, auth_request_id, error}: \`error\` is the denial code
- \`session.revoked\` {client_id, client_name, mc_uuid, mc_username, sessions, revoked_at, by}: a player revoked the client's access on their apps page; their sessions of it no longer validate
- \`client.secret_rotated\` {client_id, client_name, rotated_at}
- \`endpoint.disabled\` {endpoint_id, url, failing_since, reason}: sent to the team's other endpoints (url masked)
- \`endpoint.paused\` {endpoint_id, url, consecutive_failures, paused_until}: sent to the team's other endpoints when one's circuit opens (url masked)
- \`webhook.test\` {endpoint_id, team_id, message}
- \`audit.entry\` {entry_id, team_id, at, actor, action, target, server_id, changes, ip, user_agent, request_id}: an audit log entry once its change has committed; only to endpoints that name this type (an empty filter does not take it)

Failed attempts (timeout, network error, 5xx, 429) are retried with backoff for about a day; no order between events is guaranteed. A second endpoint with the same URL in a team is refused (409). Each team has a budget of events and deliveries per minute; what exceeds it is not queued and is counted in the list's \`usage\`.`;

export const webhooksRouter = router({
  create: authedProcedure
    .meta({
      access: "team:admin",
      audit: "webhook.create",
      scope: "webhooks:write",
      status: 201,
      openapi: {
        method: "POST",
        path: "/teams/{team_id}/webhooks",
        tags,
        summary: "Create a webhook endpoint; its signing secret is shown only in this response",
        description: EVENTS_DESCRIPTION,
        errorResponses: [...err, 409],
      },
    })
    .input(ZCreateEndpoint)
    .output(ZEndpointWithSecret)
    .mutation(({ ctx, input }) => {
      const { team_id, ...rest } = input;
      return ctx.services.webhooks.create(ctx.principal, team_id, rest);
    }),

  list: authedProcedure
    .meta({
      access: "team:viewer",
      scope: "webhooks:read",
      openapi: {
        method: "GET",
        path: "/teams/{team_id}/webhooks",
        tags,
        summary: "The team's webhook endpoints and its webhook budget",
        errorResponses: err,
      },
    })
    .input(ZEndpointRef.pick({ team_id: true }))
    .output(z.object({ endpoints: z.array(ZEndpoint).max(LIMITS.webhooksPerTeam), usage: ZWebhookUsage }))
    .query(({ ctx, input }) => ctx.services.webhooks.list(ctx.principal, input.team_id)),

  get: authedProcedure
    .meta({
      access: "team:viewer",
      scope: "webhooks:read",
      openapi: {
        method: "GET",
        path: "/teams/{team_id}/webhooks/{endpoint_id}",
        tags,
        summary: "One webhook endpoint",
        errorResponses: err,
      },
    })
    .input(ZEndpointRef)
    .output(ZEndpoint)
    .query(({ ctx, input }) => ctx.services.webhooks.get(ctx.principal, input.team_id, input.endpoint_id)),

  update: authedProcedure
    .meta({
      access: "team:admin",
      audit: "webhook.update",
      scope: "webhooks:write",
      openapi: {
        method: "PATCH",
        path: "/teams/{team_id}/webhooks/{endpoint_id}",
        tags,
        summary: "Change a webhook endpoint (enabling it again clears its failure count)",
        errorResponses: [...err, 409],
      },
    })
    .input(ZUpdateEndpoint)
    .output(ZEndpoint)
    .mutation(({ ctx, input }) => {
      const { team_id, endpoint_id, ...patch } = input;
      return ctx.services.webhooks.update(ctx.principal, team_id, endpoint_id, patch);
    }),

  delete: authedProcedure
    .meta({
      access: "team:admin",
      audit: "webhook.delete",
      scope: "webhooks:write",
      openapi: {
        method: "DELETE",
        path: "/teams/{team_id}/webhooks/{endpoint_id}",
        tags,
        summary: "Delete a webhook endpoint and its deliveries",
        errorResponses: err,
      },
    })
    .input(ZEndpointRef)
    .output(ZOk)
    .mutation(({ ctx, input }) => ctx.services.webhooks.remove(ctx.principal, input.team_id, input.endpoint_id)),

  rotateSecret: authedProcedure
    .meta({
      access: "team:admin",
      audit: "webhook.secret_rotate",
      scope: "webhooks:write",
      openapi: {
        method: "POST",
        path: "/teams/{team_id}/webhooks/{endpoint_id}/secret",
        tags,
        summary: "Rotate the signing secret; the new one is shown only in this response",
        description:
          "During `overlap_seconds` every delivery carries two signatures (new and old), so a receiver can switch secrets without rejecting anything.",
        errorResponses: [...err, 409],
      },
    })
    .input(ZRotateSecret)
    .output(ZEndpointWithSecret)
    .mutation(({ ctx, input }) =>
      ctx.services.webhooks.rotateSecret(ctx.principal, input.team_id, input.endpoint_id, input.overlap_seconds),
    ),

  resume: authedProcedure
    .meta({
      access: "team:admin",
      audit: "webhook.resume",
      scope: "webhooks:write",
      openapi: {
        method: "POST",
        path: "/teams/{team_id}/webhooks/{endpoint_id}/resume",
        tags,
        summary: "Resume a paused endpoint: its failure count cleared, its waiting deliveries due now",
        errorResponses: err,
      },
    })
    .input(ZEndpointRef)
    .output(ZEndpoint)
    .mutation(({ ctx, input }) => ctx.services.webhooks.resume(ctx.principal, input.team_id, input.endpoint_id)),

  deliveries: authedProcedure
    .meta({
      access: "team:viewer",
      scope: "webhooks:read",
      openapi: {
        method: "GET",
        path: "/teams/{team_id}/webhooks/{endpoint_id}/deliveries",
        tags,
        summary: "Recent deliveries to an endpoint, newest first: status, attempts, latency, last response",
        errorResponses: err,
      },
    })
    .input(ZDeliveriesQuery)
    .output(z.object({ deliveries: z.array(ZDelivery).max(LIMITS.webhookDeliveriesListed) }))
    .query(({ ctx, input }) =>
      ctx.services.webhooks.deliveries(ctx.principal, input.team_id, input.endpoint_id, input.limit),
    ),

  redeliver: authedProcedure
    .meta({
      access: "team:admin",
      audit: "webhook.redeliver",
      scope: "webhooks:write",
      openapi: {
        method: "POST",
        path: "/teams/{team_id}/webhooks/{endpoint_id}/deliveries/{delivery_id}/redeliver",
        tags,
        summary: "Send a delivery's event again (a new delivery, the same webhook-id)",
        errorResponses: err,
      },
    })
    .input(ZDeliveryRef)
    .output(ZDelivery)
    .mutation(({ ctx, input }) =>
      ctx.services.webhooks.redeliver(ctx.principal, input.team_id, input.endpoint_id, input.delivery_id),
    ),

  test: authedProcedure
    .meta({
      access: "team:admin",
      audit: "webhook.send_test",
      scope: "webhooks:write",
      openapi: {
        method: "POST",
        path: "/teams/{team_id}/webhooks/{endpoint_id}/test",
        tags,
        summary: "Queue a `webhook.test` event for this endpoint",
        errorResponses: [...err, 409],
      },
    })
    .input(ZEndpointRef)
    .output(ZDelivery)
    .mutation(({ ctx, input }) => ctx.services.webhooks.sendTest(ctx.principal, input.team_id, input.endpoint_id)),
});
