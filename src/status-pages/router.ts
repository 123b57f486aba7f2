import { AppError } from "../lib/errors";
import { ZOk } from "../lib/schemas";
import { router } from "../trpc/init";
import { authedProcedure, publicProcedure } from "../trpc/procedures";
import { ZTeamRef } from "../teams/schemas";
import {
  ZCreateStatusPage,
  ZStatusPage,
  ZStatusPageList,
  ZStatusPageRef,
  ZUpdateStatusPage,
  ZWidget,
  ZWidgetQuery,
} from "./schemas";
import { PAGE_TTL_MS } from "./published";

const tags = ["status-pages"];
const err = [400, 401, 403, 404, 429];
const base = "/teams/{team_id}/status-pages";

/** Status pages (docs/status-pages.md): the team's settings here; the public reads /status/<slug>. */
export const statusPagesRouter = router({
  create: authedProcedure
    .meta({
      access: "team:admin",
      audit: "status_page.create",
      scope: "status_pages:write",
      status: 201,
      openapi: {
        method: "POST",
        path: base,
        tags,
        summary: "Create a status page: its slug, servers and networks, what it shows, its theme",
        description:
          "Nothing is shown of a server beyond its state, uptime bars and incidents unless `show` turns it on. The page is public at `/status/<slug>` (and at `/` of `host_name`) only while `published`. A slug or host name another page uses is a 409.",
        errorResponses: [...err, 409],
      },
    })
    .input(ZCreateStatusPage)
    .output(ZStatusPage)
    .mutation(({ ctx, input: { team_id, ...page } }) => ctx.services.statusPages.create(ctx.principal, team_id, page)),

  list: authedProcedure
    .meta({
      access: "team:viewer",
      scope: "status_pages:read",
      openapi: { method: "GET", path: base, tags, summary: "The team's status pages", errorResponses: err },
    })
    .input(ZTeamRef)
    .output(ZStatusPageList)
    .query(({ ctx, input }) => ctx.services.statusPages.list(ctx.principal, input.team_id)),

  get: authedProcedure
    .meta({
      access: "team:viewer",
      scope: "status_pages:read",
      openapi: { method: "GET", path: `${base}/{page_id}`, tags, summary: "One status page", errorResponses: err },
    })
    .input(ZStatusPageRef)
    .output(ZStatusPage)
    .query(({ ctx, input }) => ctx.services.statusPages.get(ctx.principal, input.team_id, input.page_id)),

  update: authedProcedure
    .meta({
      access: "team:admin",
      audit: "status_page.update",
      scope: "status_pages:write",
      openapi: {
        method: "PATCH",
        path: `${base}/{page_id}`,
        tags,
        summary: "Change a status page's settings (fields left out stay as they are)",
        errorResponses: [...err, 409],
      },
    })
    .input(ZUpdateStatusPage)
    .output(ZStatusPage)
    .mutation(({ ctx, input: { team_id, page_id, ...patch } }) =>
      ctx.services.statusPages.update(ctx.principal, team_id, page_id, patch),
    ),

  publish: authedProcedure
    .meta({
      access: "team:admin",
      audit: "status_page.publish",
      scope: "status_pages:write",
      openapi: {
        method: "POST",
        path: `${base}/{page_id}/publish`,
        tags,
        summary: "Publish a status page: /status/<slug> (and its host name) answer it",
        errorResponses: err,
      },
    })
    .input(ZStatusPageRef)
    .output(ZStatusPage)
    .mutation(({ ctx, input }) =>
      ctx.services.statusPages.setPublished(ctx.principal, input.team_id, input.page_id, true),
    ),

  unpublish: authedProcedure
    .meta({
      access: "team:admin",
      audit: "status_page.unpublish",
      scope: "status_pages:write",
      openapi: {
        method: "POST",
        path: `${base}/{page_id}/unpublish`,
        tags,
        summary: "Unpublish a status page: its addresses, feed, badges and widget answer 404",
        errorResponses: err,
      },
    })
    .input(ZStatusPageRef)
    .output(ZStatusPage)
    .mutation(({ ctx, input }) =>
      ctx.services.statusPages.setPublished(ctx.principal, input.team_id, input.page_id, false),
    ),

  delete: authedProcedure
    .meta({
      access: "team:admin",
      audit: "status_page.delete",
      scope: "status_pages:write",
      openapi: {
        method: "DELETE",
        path: `${base}/{page_id}`,
        tags,
        summary: "Delete a status page",
        errorResponses: err,
      },
    })
    .input(ZStatusPageRef)
    .output(ZOk)
    .mutation(({ ctx, input }) => ctx.services.statusPages.remove(ctx.principal, input.team_id, input.page_id)),

  widget: publicProcedure
    .meta({
      access: "public",
      openapi: {
        method: "GET",
        path: "/status-pages/{slug}/widget",
        tags,
        summary: "A published status page's servers as JSON, for server lists and bots (CORS open)",
        description: `The figures of the page's badges: each server's state, uptime over 24 hours, 7 and 30 days, the outage going on now, and players, version, MOTD and latency only where the page shows them. Anyone may read it, from any origin (\`Access-Control-Allow-Origin: *\`); it is cached for ${PAGE_TTL_MS / 1000} seconds and carries an ETag (If-None-Match answers 304). An unpublished or unknown page is a 404.`,
        errorResponses: [400, 404, 429],
      },
    })
    .input(ZWidgetQuery)
    .output(ZWidget)
    .query(async ({ ctx, input }) => {
      const v = await ctx.services.publishedPages.get(input.slug);
      if (!v || (input.server_id && !v.view.servers.some((s) => s.id === input.server_id)))
        throw new AppError("not_found", "There is no published status page here, or it does not show that server.");
      ctx.resHeaders["access-control-allow-origin"] = "*";
      ctx.resHeaders["cache-control"] = `public, max-age=${PAGE_TTL_MS / 1000}`;
      ctx.resHeaders.etag = v.widgetEtag(input.server_id);
      return v.widget(input.server_id);
    }),
});
