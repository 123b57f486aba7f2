import { router } from "../trpc/init";
import { teamSelectedProcedure } from "../servers/procedures";
import { ZTeamHeader } from "../servers/schemas";
import { ZCreateIncident, ZIncident, ZIncidentList, ZIncidentRef, ZIncidentsQuery, ZIncidentUpdate } from "./schemas";

const tags = ["incidents"];
const err = [400, 401, 403, 404, 429];
const team = { requestHeaders: ZTeamHeader };

/** Incidents: opened and resolved by the pinger and the agent, posted and updated by the team (docs/incidents.md). */
export const incidentsRouter = router({
  list: teamSelectedProcedure
    .meta({
      access: "team:viewer",
      scope: "servers:read",
      openapi: {
        method: "GET",
        path: "/server/incidents",
        tags,
        summary: "The team's incidents, newest first",
        errorResponses: err,
        ...team,
      },
    })
    .input(ZIncidentsQuery)
    .output(ZIncidentList)
    .query(({ ctx, input }) => ctx.services.incidents.list(ctx.principal, ctx.teamId, input)),

  get: teamSelectedProcedure
    .meta({
      access: "team:viewer",
      scope: "servers:read",
      openapi: {
        method: "GET",
        path: "/server/incidents/{incident_id}",
        tags,
        summary: "An incident with its timeline (and a crash's report lines)",
        errorResponses: err,
        ...team,
      },
    })
    .input(ZIncidentRef)
    .output(ZIncident)
    .query(({ ctx, input }) => ctx.services.incidents.get(ctx.principal, ctx.teamId, input.incident_id)),

  create: teamSelectedProcedure
    .meta({
      access: "team:admin",
      audit: "incident.create",
      scope: "servers:write",
      status: 201,
      openapi: {
        method: "POST",
        path: "/server/incidents",
        tags,
        summary: "Post an incident by hand, for a server or a network",
        errorResponses: err,
        ...team,
      },
    })
    .input(ZCreateIncident)
    .output(ZIncident)
    .mutation(({ ctx, input }) => ctx.services.incidents.create(ctx.principal, ctx.teamId, input)),

  addUpdate: teamSelectedProcedure
    .meta({
      access: "team:admin",
      audit: "incident.update",
      scope: "servers:write",
      status: 201,
      openapi: {
        method: "POST",
        path: "/server/incidents/{incident_id}/updates",
        tags,
        summary: "Add an update to an incident's timeline (resolved ends it)",
        errorResponses: err,
        ...team,
      },
    })
    .input(ZIncidentUpdate.extend(ZIncidentRef.shape))
    .output(ZIncident)
    .mutation(({ ctx, input: { incident_id, ...update } }) =>
      ctx.services.incidents.addUpdate(ctx.principal, ctx.teamId, incident_id, update),
    ),
});
