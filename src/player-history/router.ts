import { router } from "../trpc/init";
import { serverSelectedProcedure } from "../servers/procedures";
import { ZServerHeader } from "../servers/schemas";
import { ZPlayerProfile, ZPlayerRef, ZPlayerSummary, ZSessionPage, ZSessionsQuery, ZSummaryQuery } from "./schemas";

const tags = ["servers"];
const err = [400, 401, 403, 404, 429];
const srv = { requestHeaders: ZServerHeader };

/** Player history reads. The fixed paths sit beside /server/players/{uuid}; a UUID never spells them. */
export const playerHistoryRouter = router({
  sessions: serverSelectedProcedure
    .meta({
      access: "team:viewer",
      scope: "servers:read",
      openapi: {
        method: "GET",
        path: "/server/players/sessions",
        tags,
        summary: "Player sessions, newest first, paged by cursor; optionally one player's",
        errorResponses: err,
        ...srv,
      },
    })
    .input(ZSessionsQuery)
    .output(ZSessionPage)
    .query(({ ctx, input }) => ctx.services.playerHistory.sessions(ctx.principal, ctx.serverId, input)),

  summary: serverSelectedProcedure
    .meta({
      access: "team:viewer",
      scope: "servers:read",
      openapi: {
        method: "GET",
        path: "/server/players/summary",
        tags,
        summary: "Per UTC day: unique, new and returning players, peak concurrent, time played; top players",
        errorResponses: err,
        ...srv,
      },
    })
    .input(ZSummaryQuery)
    .output(ZPlayerSummary)
    .query(({ ctx, input }) => ctx.services.playerHistory.summary(ctx.principal, ctx.serverId, input.window)),

  profile: serverSelectedProcedure
    .meta({
      access: "team:viewer",
      scope: "servers:read",
      openapi: {
        method: "GET",
        path: "/server/players/{uuid}",
        tags,
        summary: "One player: first and last seen, time played, session count, recent sessions, ban state",
        errorResponses: err,
        ...srv,
      },
    })
    .input(ZPlayerRef)
    .output(ZPlayerProfile)
    .query(({ ctx, input }) => ctx.services.playerHistory.profile(ctx.principal, ctx.serverId, input.uuid)),
});
