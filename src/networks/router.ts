import { ZCreateRank, ZRank, ZRankRef, ZUpdateRank } from "../servers/community-schemas";
import { ZOk } from "../lib/schemas";
import { router } from "../trpc/init";
import { teamSelectedProcedure } from "../servers/procedures";
import { ZTeamHeader } from "../servers/schemas";
import {
  ZCreateNetworkBan,
  ZNetworkBan,
  ZNetworkBanList,
  ZNetworkBanRef,
  ZNetworkBansQuery,
  ZNetworkPage,
  ZNetworkPageQuery,
  ZNetworkRankList,
  ZNetworkRef,
  ZNetworkSessionPage,
  ZNetworkSessionsQuery,
} from "./schemas";

const tags = ["networks"];
const err = [400, 401, 403, 404, 429];
const team = { requestHeaders: ZTeamHeader };
const base = "/server/networks/{network_name}";

/** A network: the team's servers of kind `network` sharing a network_name (docs/networks.md). */
export const networksRouter = router({
  get: teamSelectedProcedure
    .meta({
      access: "team:viewer",
      scope: "servers:read",
      openapi: {
        method: "GET",
        path: base,
        tags,
        summary: "A network: its servers, who is online across it, and per-server shares over a window",
        errorResponses: err,
        ...team,
      },
    })
    .input(ZNetworkPageQuery)
    .output(ZNetworkPage)
    .query(({ ctx, input }) => ctx.services.networks.page(ctx.principal, ctx.teamId, input.network_name, input.window)),

  sessions: teamSelectedProcedure
    .meta({
      access: "team:viewer",
      scope: "servers:read",
      openapi: {
        method: "GET",
        path: `${base}/sessions`,
        tags,
        summary: "Network sessions, each counted once across the servers, with its hops; newest first",
        errorResponses: err,
        ...team,
      },
    })
    .input(ZNetworkSessionsQuery)
    .output(ZNetworkSessionPage)
    .query(({ ctx, input: { network_name, ...q } }) =>
      ctx.services.networks.sessions(ctx.principal, ctx.teamId, network_name, q),
    ),

  bans: teamSelectedProcedure
    .meta({
      access: "team:viewer",
      scope: "servers:read",
      openapi: {
        method: "GET",
        path: `${base}/bans`,
        tags,
        summary: "Network bans: those in force, or all with who made and lifted them",
        errorResponses: err,
        ...team,
      },
    })
    .input(ZNetworkBansQuery)
    .output(ZNetworkBanList)
    .query(({ ctx, input: { network_name, ...q } }) =>
      ctx.services.networks.bans(ctx.principal, ctx.teamId, network_name, q),
    ),

  ban: teamSelectedProcedure
    .meta({
      access: "team:moderator",
      audit: "network.ban",
      scope: "moderation:write",
      status: 201,
      openapi: {
        method: "POST",
        path: `${base}/bans`,
        tags,
        summary: "Ban a player on every server of the network (each agent applies it in game)",
        errorResponses: err,
        ...team,
      },
    })
    .input(ZCreateNetworkBan)
    .output(ZNetworkBan)
    .mutation(({ ctx, input: { network_name, ...ban } }) =>
      ctx.services.networks.ban(ctx.principal, ctx.teamId, network_name, ban),
    ),

  unban: teamSelectedProcedure
    .meta({
      access: "team:moderator",
      audit: "network.unban",
      scope: "moderation:write",
      openapi: {
        method: "DELETE",
        path: `${base}/bans/{uuid}`,
        tags,
        summary: "Lift a network ban (every server's agent pardons the player in game)",
        errorResponses: err,
        ...team,
      },
    })
    .input(ZNetworkBanRef)
    .output(ZOk)
    .mutation(({ ctx, input }) =>
      ctx.services.networks.unban(ctx.principal, ctx.teamId, input.network_name, input.uuid),
    ),

  ranks: teamSelectedProcedure
    .meta({
      access: "team:viewer",
      scope: "servers:read",
      openapi: {
        method: "GET",
        path: `${base}/ranks`,
        tags,
        summary: "The network's ranks, heaviest first",
        errorResponses: err,
        ...team,
      },
    })
    .input(ZNetworkRef)
    .output(ZNetworkRankList)
    .query(({ ctx, input }) => ctx.services.networks.ranks(ctx.principal, ctx.teamId, input.network_name)),

  createRank: teamSelectedProcedure
    .meta({
      access: "team:admin",
      audit: "network.rank_create",
      scope: "servers:write",
      status: 201,
      openapi: {
        method: "POST",
        path: `${base}/ranks`,
        tags,
        summary: "Create a network rank; parents must be ranks of the network and form no cycle",
        errorResponses: [...err, 409],
        ...team,
      },
    })
    .input(ZCreateRank.extend(ZNetworkRef.shape))
    .output(ZRank)
    .mutation(({ ctx, input: { network_name, name, ...fields } }) =>
      ctx.services.networks.createRank(ctx.principal, ctx.teamId, network_name, name, fields),
    ),

  updateRank: teamSelectedProcedure
    .meta({
      access: "team:admin",
      audit: "network.rank_update",
      scope: "servers:write",
      openapi: {
        method: "PUT",
        path: `${base}/ranks/{name}`,
        tags,
        summary: "Change a network rank; parents must be ranks of the network and form no cycle",
        errorResponses: err,
        ...team,
      },
    })
    .input(ZUpdateRank.extend(ZNetworkRef.shape))
    .output(ZRank)
    .mutation(({ ctx, input: { network_name, name, ...fields } }) =>
      ctx.services.networks.updateRank(ctx.principal, ctx.teamId, network_name, name, fields),
    ),

  deleteRank: teamSelectedProcedure
    .meta({
      access: "team:admin",
      audit: "network.rank_delete",
      scope: "servers:write",
      openapi: {
        method: "DELETE",
        path: `${base}/ranks/{name}`,
        tags,
        summary: "Delete a network rank no other rank of the network inherits from",
        errorResponses: [...err, 409],
        ...team,
      },
    })
    .input(ZRankRef.extend(ZNetworkRef.shape))
    .output(ZOk)
    .mutation(({ ctx, input }) =>
      ctx.services.networks.removeRank(ctx.principal, ctx.teamId, input.network_name, input.name),
    ),
});
