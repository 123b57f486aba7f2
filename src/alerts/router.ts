import { ZOk } from "../lib/schemas";
import { router } from "../trpc/init";
import { authedProcedure } from "../trpc/procedures";
import { ZAlertRule, ZAlertRuleList, ZAlertRuleRef, ZCreateAlertRule, ZUpdateAlertRule } from "./schemas";

const tags = ["alerts"];
const err = [400, 401, 403, 404, 429];

/** Alert rules on performance (docs/alerts.md); their notices go out as webhook events. */
export const alertsRouter = router({
  list: authedProcedure
    .meta({
      access: "team:viewer",
      scope: "webhooks:read",
      openapi: {
        method: "GET",
        path: "/teams/{team_id}/alert-rules",
        tags,
        summary: "The team's alert rules on performance, with the servers each fires for now",
        errorResponses: err,
      },
    })
    .input(ZAlertRuleRef.pick({ team_id: true }))
    .output(ZAlertRuleList)
    .query(({ ctx, input }) => ctx.services.alertRules.list(ctx.principal, input.team_id)),

  get: authedProcedure
    .meta({
      access: "team:viewer",
      scope: "webhooks:read",
      openapi: {
        method: "GET",
        path: "/teams/{team_id}/alert-rules/{rule_id}",
        tags,
        summary: "One alert rule",
        errorResponses: err,
      },
    })
    .input(ZAlertRuleRef)
    .output(ZAlertRule)
    .query(({ ctx, input }) => ctx.services.alertRules.get(ctx.principal, input.team_id, input.rule_id)),

  create: authedProcedure
    .meta({
      access: "team:admin",
      audit: "alert_rule.create",
      scope: "webhooks:write",
      status: 201,
      openapi: {
        method: "POST",
        path: "/teams/{team_id}/alert-rules",
        tags,
        summary: "Create an alert rule on TPS, MSPT, memory share or players online",
        description:
          "Admins. The rule watches one server (`server_id`) or each server of a network (`network_name`). It fires (`alert.firing`) once the value has stayed below or above `threshold` for `duration_seconds`, and recovers (`alert.resolved`) once it has stayed back past `threshold` ± `margin` as long: the margin keeps a value hovering at the threshold from flapping. Both go to the team's webhook endpoints that take those types.",
        errorResponses: [...err, 409],
      },
    })
    .input(ZCreateAlertRule)
    .output(ZAlertRule)
    .mutation(({ ctx, input: { team_id, ...body } }) => ctx.services.alertRules.create(ctx.principal, team_id, body)),

  update: authedProcedure
    .meta({
      access: "team:admin",
      audit: "alert_rule.update",
      scope: "webhooks:write",
      openapi: {
        method: "PATCH",
        path: "/teams/{team_id}/alert-rules/{rule_id}",
        tags,
        summary: "Change an alert rule (a change of what it decides on starts it afresh)",
        errorResponses: err,
      },
    })
    .input(ZUpdateAlertRule)
    .output(ZAlertRule)
    .mutation(({ ctx, input: { team_id, rule_id, ...body } }) =>
      ctx.services.alertRules.update(ctx.principal, team_id, rule_id, body),
    ),

  delete: authedProcedure
    .meta({
      access: "team:admin",
      audit: "alert_rule.delete",
      scope: "webhooks:write",
      openapi: {
        method: "DELETE",
        path: "/teams/{team_id}/alert-rules/{rule_id}",
        tags,
        summary: "Delete an alert rule (no recovery notice is sent for a firing it had)",
        errorResponses: err,
      },
    })
    .input(ZAlertRuleRef)
    .output(ZOk)
    .mutation(({ ctx, input }) => ctx.services.alertRules.delete(ctx.principal, input.team_id, input.rule_id)),
});
