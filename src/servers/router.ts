import { z } from "zod";
import { LIMITS } from "../lib/limits";
import { ZOk } from "../lib/schemas";
import { router } from "../trpc/init";
import { authedProcedure } from "../trpc/procedures";
import {
  ZAnnouncement,
  ZAnnouncementRef,
  ZBan,
  ZKick,
  ZBanRef,
  ZCreateAnnouncement,
  ZCreateBan,
  ZCreateKick,
  ZCreateRank,
  ZPlayerList,
  ZPlayersQuery,
  ZRank,
  ZRankRef,
  ZUpdateAnnouncement,
  ZUpdateRank,
  ZUptimeQuery,
  ZUptimeStats,
} from "./community-schemas";
import { wantedMetrics, ZMetrics, ZMetricsQuery } from "../monitoring/schemas";
import { serverSelectedProcedure, teamSelectedProcedure } from "./procedures";
import {
  ZCreatedServer,
  ZCreateServer,
  ZNetworkList,
  ZServer,
  ZServerHeader,
  ZServerList,
  ZServerRef,
  ZTeamHeader,
  ZUpdateServer,
} from "./schemas";

const tags = ["servers"];
// 400 covers a missing or malformed selector header as well as bad input.
const err = [400, 401, 403, 404, 429];
const team = { requestHeaders: ZTeamHeader };
const srv = { requestHeaders: ZServerHeader };
// The document generator declares request headers only for procedures with an input.
const noInput = z.object({}).optional();

export const serversRouter = router({
  create: authedProcedure
    .meta({
      access: "team:admin",
      audit: "server.create",
      scope: "servers:write",
      status: 201,
      openapi: {
        method: "POST",
        path: "/server/servers",
        tags,
        summary: "Register a server; the agent token is shown only in this response",
        errorResponses: [...err, 409],
      },
    })
    .input(ZCreateServer)
    .output(ZCreatedServer)
    .mutation(({ ctx, input }) => ctx.services.servers.create(ctx.principal, input)),

  list: teamSelectedProcedure
    .meta({
      access: "team:viewer",
      scope: "servers:read",
      openapi: {
        method: "GET",
        path: "/server/servers",
        tags,
        summary: "The team's servers, each with its latest known status",
        errorResponses: err,
        ...team,
      },
    })
    .input(noInput)
    .output(ZServerList)
    .query(({ ctx }) => ctx.services.servers.list(ctx.principal, ctx.teamId)),

  networks: teamSelectedProcedure
    .meta({
      access: "team:viewer",
      scope: "servers:read",
      openapi: {
        method: "GET",
        path: "/server/networks",
        tags,
        summary: "The team's networks with their servers and combined player counts",
        errorResponses: err,
        ...team,
      },
    })
    .input(noInput)
    .output(ZNetworkList)
    .query(({ ctx }) => ctx.services.servers.networks(ctx.principal, ctx.teamId)),

  get: authedProcedure
    .meta({
      access: "team:viewer",
      scope: "servers:read",
      openapi: {
        method: "GET",
        path: "/server/servers/{server_id}",
        tags,
        summary: "One server with its latest known status",
        errorResponses: err,
      },
    })
    .input(ZServerRef)
    .output(ZServer)
    .query(({ ctx, input }) => ctx.services.servers.get(ctx.principal, input.server_id)),

  update: authedProcedure
    .meta({
      access: "team:admin",
      audit: "server.update",
      scope: "servers:write",
      openapi: {
        method: "PATCH",
        path: "/server/servers/{server_id}",
        tags,
        summary: "Change a server's name, address or kind",
        errorResponses: err,
      },
    })
    .input(ZUpdateServer)
    .output(ZServer)
    .mutation(({ ctx, input }) => ctx.services.servers.update(ctx.principal, input)),

  delete: authedProcedure
    .meta({
      access: "team:admin",
      audit: "server.delete",
      scope: "servers:write",
      openapi: {
        method: "DELETE",
        path: "/server/servers/{server_id}",
        tags,
        summary: "Delete a server and all its data",
        errorResponses: err,
      },
    })
    .input(ZServerRef)
    .output(ZOk)
    .mutation(({ ctx, input }) => ctx.services.servers.remove(ctx.principal, input.server_id)),

  rotateAgentToken: authedProcedure
    .meta({
      access: "team:admin",
      audit: "server.agent_token_rotate",
      scope: "servers:write",
      openapi: {
        method: "POST",
        path: "/server/servers/{server_id}/agent-token",
        tags,
        summary: "Issue a new agent token; the old one stops working at once",
        errorResponses: err,
      },
    })
    .input(ZServerRef)
    .output(z.object({ server_id: z.uuid(), agent_token: z.string(), agent_token_prefix: z.string() }))
    .mutation(({ ctx, input }) => ctx.services.servers.rotateAgentToken(ctx.principal, input.server_id)),

  uptimeStats: serverSelectedProcedure
    .meta({
      access: "team:viewer",
      scope: "servers:read",
      openapi: {
        method: "GET",
        path: "/server/uptime-stats",
        tags,
        summary: "Uptime and latency over a window (1h, 24h, 7d, 30d), with buckets for a graph",
        errorResponses: err,
        ...srv,
      },
    })
    .input(ZUptimeQuery)
    .output(ZUptimeStats)
    .query(({ ctx, input }) => ctx.services.monitoring.uptimeStats(ctx.principal, ctx.serverId, input.window)),

  metrics: serverSelectedProcedure
    .meta({
      access: "team:viewer",
      scope: "servers:read",
      openapi: {
        method: "GET",
        path: "/server/metrics",
        tags,
        summary: "Metric history (players, TPS, MSPT, memory, latency, online) as aligned min/avg/max buckets",
        description:
          "Read from buckets kept as data arrives: one-minute buckets for 48 hours, hourly buckets for 90 days. " +
          "The analytics socket's `metrics` message carries each minute as it closes, so a chart can append.",
        errorResponses: err,
        ...srv,
      },
    })
    .input(ZMetricsQuery)
    .output(ZMetrics)
    .query(({ ctx, input }) =>
      ctx.services.monitoring.metrics(ctx.principal, ctx.serverId, input.window, wantedMetrics(input.metrics)),
    ),

  players: serverSelectedProcedure
    .meta({
      access: "team:viewer",
      scope: "servers:read",
      openapi: {
        method: "GET",
        path: "/server/players",
        tags,
        summary: "Known players (online first) and bans in force, paged",
        errorResponses: err,
        ...srv,
      },
    })
    .input(ZPlayersQuery)
    .output(ZPlayerList)
    .query(({ ctx, input }) =>
      ctx.services.players.list(ctx.principal, ctx.serverId, {
        limit: input.limit,
        offset: input.offset,
        online: input.online === undefined ? undefined : input.online === "true",
        q: input.q,
        sort: input.sort,
        order: input.order,
      }),
    ),

  ban: serverSelectedProcedure
    .meta({
      access: "team:moderator",
      audit: "player.ban",
      scope: "moderation:write",
      status: 201,
      openapi: {
        method: "POST",
        path: "/server/bans",
        tags,
        summary: "Ban a player (the agent applies it in game)",
        errorResponses: err,
        ...srv,
      },
    })
    .input(ZCreateBan)
    .output(ZBan)
    .mutation(({ ctx, input }) => ctx.services.players.ban(ctx.principal, ctx.serverId, input)),

  unban: serverSelectedProcedure
    .meta({
      access: "team:moderator",
      audit: "player.unban",
      scope: "moderation:write",
      openapi: {
        method: "DELETE",
        path: "/server/bans/{uuid}",
        tags,
        summary: "Lift a ban (the agent pardons the player in game)",
        errorResponses: err,
        ...srv,
      },
    })
    .input(ZBanRef)
    .output(ZOk)
    .mutation(({ ctx, input }) => ctx.services.players.unban(ctx.principal, ctx.serverId, input.uuid)),

  kick: serverSelectedProcedure
    .meta({
      access: "team:moderator",
      audit: "player.kick",
      scope: "moderation:write",
      status: 201,
      openapi: {
        method: "POST",
        path: "/server/kicks",
        tags,
        summary: "Kick a player (the agent kicks them in game within two minutes)",
        errorResponses: [...err, 409],
        ...srv,
      },
    })
    .input(ZCreateKick)
    .output(ZKick)
    .mutation(({ ctx, input }) => ctx.services.players.kick(ctx.principal, ctx.serverId, input)),

  ranks: serverSelectedProcedure
    .meta({
      access: "team:viewer",
      scope: "servers:read",
      openapi: {
        method: "GET",
        path: "/server/ranks",
        tags,
        summary: "Rank configuration, heaviest first",
        errorResponses: err,
        ...srv,
      },
    })
    .input(noInput)
    .output(z.object({ ranks: z.array(ZRank).max(LIMITS.ranksPerServer) }))
    .query(({ ctx }) => ctx.services.ranks.list(ctx.principal, ctx.serverId)),

  createRank: serverSelectedProcedure
    .meta({
      access: "team:admin",
      audit: "rank.create",
      scope: "servers:write",
      status: 201,
      openapi: {
        method: "POST",
        path: "/server/ranks",
        tags,
        summary: "Create a rank; parents must exist and form no cycle",
        errorResponses: [...err, 409],
        ...srv,
      },
    })
    .input(ZCreateRank)
    .output(ZRank)
    .mutation(({ ctx, input: { name, ...fields } }) =>
      ctx.services.ranks.create(ctx.principal, ctx.serverId, name, fields),
    ),

  updateRank: serverSelectedProcedure
    .meta({
      access: "team:admin",
      audit: "rank.update",
      scope: "servers:write",
      openapi: {
        method: "PATCH",
        path: "/server/ranks/{name}",
        tags,
        summary: "Change a rank; parents must exist and form no cycle",
        errorResponses: err,
        ...srv,
      },
    })
    .input(ZUpdateRank)
    .output(ZRank)
    .mutation(({ ctx, input: { name, ...fields } }) =>
      ctx.services.ranks.update(ctx.principal, ctx.serverId, name, fields),
    ),

  deleteRank: serverSelectedProcedure
    .meta({
      access: "team:admin",
      audit: "rank.delete",
      scope: "servers:write",
      openapi: {
        method: "DELETE",
        path: "/server/ranks/{name}",
        tags,
        summary: "Delete a rank no other rank inherits from",
        errorResponses: [...err, 409],
        ...srv,
      },
    })
    .input(ZRankRef)
    .output(ZOk)
    .mutation(({ ctx, input }) => ctx.services.ranks.remove(ctx.principal, ctx.serverId, input.name)),

  announcements: serverSelectedProcedure
    .meta({
      access: "team:viewer",
      scope: "servers:read",
      openapi: {
        method: "GET",
        path: "/server/announcements",
        tags,
        summary: "Announcements, active or not",
        errorResponses: err,
        ...srv,
      },
    })
    .input(noInput)
    .output(z.object({ announcements: z.array(ZAnnouncement).max(LIMITS.announcementsPerServer) }))
    .query(({ ctx }) => ctx.services.announcements.list(ctx.principal, ctx.serverId)),

  createAnnouncement: serverSelectedProcedure
    .meta({
      access: "team:moderator",
      audit: "announcement.create",
      scope: "moderation:write",
      status: 201,
      openapi: {
        method: "POST",
        path: "/server/announcements",
        tags,
        summary: "Create an announcement repeated on an interval or a cron schedule",
        errorResponses: err,
        ...srv,
      },
    })
    .input(ZCreateAnnouncement)
    .output(ZAnnouncement)
    .mutation(({ ctx, input }) => ctx.services.announcements.create(ctx.principal, ctx.serverId, input)),

  updateAnnouncement: serverSelectedProcedure
    .meta({
      access: "team:moderator",
      audit: "announcement.update",
      scope: "moderation:write",
      openapi: {
        method: "PATCH",
        path: "/server/announcements/{announcement_id}",
        tags,
        summary: "Change an announcement",
        errorResponses: err,
        ...srv,
      },
    })
    .input(ZUpdateAnnouncement)
    .output(ZAnnouncement)
    .mutation(({ ctx, input: { announcement_id, ...fields } }) =>
      ctx.services.announcements.update(ctx.principal, ctx.serverId, announcement_id, fields),
    ),

  deleteAnnouncement: serverSelectedProcedure
    .meta({
      access: "team:moderator",
      audit: "announcement.delete",
      scope: "moderation:write",
      openapi: {
        method: "DELETE",
        path: "/server/announcements/{announcement_id}",
        tags,
        summary: "Delete an announcement",
        errorResponses: err,
        ...srv,
      },
    })
    .input(ZAnnouncementRef)
    .output(ZOk)
    .mutation(({ ctx, input }) =>
      ctx.services.announcements.remove(ctx.principal, ctx.serverId, input.announcement_id),
    ),
});
