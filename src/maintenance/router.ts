import { z } from "zod";
import { ZOk } from "../lib/schemas";
import { router } from "../trpc/init";
import { teamSelectedProcedure } from "../servers/procedures";
import { ZTeamHeader } from "../servers/schemas";
import { ZCreateWindow, ZUpcoming, ZUpcomingQuery, ZUpdateWindow, ZWindow, ZWindowList, ZWindowRef } from "./schemas";

const tags = ["maintenance"];
const err = [400, 401, 403, 404, 429];
const team = { requestHeaders: ZTeamHeader };
const base = "/server/maintenance";

/** Maintenance windows: alerts are held while one runs (docs/incidents.md#maintenance-windows). */
export const maintenanceRouter = router({
  list: teamSelectedProcedure
    .meta({
      access: "team:viewer",
      scope: "servers:read",
      openapi: {
        method: "GET",
        path: base,
        tags,
        summary: "The team's maintenance windows",
        errorResponses: err,
        ...team,
      },
    })
    .input(z.object({}).optional())
    .output(ZWindowList)
    .query(({ ctx }) => ctx.services.maintenance.list(ctx.principal, ctx.teamId)),

  upcoming: teamSelectedProcedure
    .meta({
      access: "team:viewer",
      scope: "servers:read",
      openapi: {
        method: "GET",
        path: `${base}/upcoming`,
        tags,
        summary: "Maintenance running now or starting within `days`, soonest first",
        errorResponses: err,
        ...team,
      },
    })
    .input(ZUpcomingQuery)
    .output(ZUpcoming)
    .query(({ ctx, input }) => ctx.services.maintenance.upcoming(ctx.principal, ctx.teamId, input)),

  create: teamSelectedProcedure
    .meta({
      access: "team:admin",
      audit: "maintenance.create",
      scope: "servers:write",
      status: 201,
      openapi: {
        method: "POST",
        path: base,
        tags,
        summary: "Plan a maintenance window, one-off or recurring, for a server or a network",
        errorResponses: err,
        ...team,
      },
    })
    .input(ZCreateWindow)
    .output(ZWindow)
    .mutation(({ ctx, input }) => ctx.services.maintenance.create(ctx.principal, ctx.teamId, input)),

  update: teamSelectedProcedure
    .meta({
      access: "team:admin",
      audit: "maintenance.update",
      scope: "servers:write",
      openapi: {
        method: "PATCH",
        path: `${base}/{window_id}`,
        tags,
        summary: "Change a maintenance window",
        errorResponses: err,
        ...team,
      },
    })
    .input(ZUpdateWindow)
    .output(ZWindow)
    .mutation(({ ctx, input }) => ctx.services.maintenance.update(ctx.principal, ctx.teamId, input)),

  delete: teamSelectedProcedure
    .meta({
      access: "team:admin",
      audit: "maintenance.delete",
      scope: "servers:write",
      openapi: {
        method: "DELETE",
        path: `${base}/{window_id}`,
        tags,
        summary: "Delete a maintenance window",
        errorResponses: err,
        ...team,
      },
    })
    .input(ZWindowRef)
    .output(ZOk)
    .mutation(({ ctx, input }) => ctx.services.maintenance.delete(ctx.principal, ctx.teamId, input.window_id)),
});
