import { router } from "../trpc/init";
import { authedProcedure } from "../trpc/procedures";
import { ZAuditPage, ZAuditQuery } from "./schemas";

export const auditRouter = router({
  list: authedProcedure
    .meta({
      access: "team:admin",
      scope: "audit:read",
      openapi: {
        method: "GET",
        path: "/teams/{team_id}/audit",
        tags: ["audit"],
        summary: "The team's audit log, newest first, filtered by actor, action, target and time",
        errorResponses: [400, 401, 403, 429],
      },
    })
    .input(ZAuditQuery)
    .output(ZAuditPage)
    .query(({ ctx, input }) => ctx.services.audit.list(ctx.principal, input)),
});
