import { ZOk } from "../lib/schemas";
import { teamSelectedProcedure } from "../servers/procedures";
import { ZTeamHeader } from "../servers/schemas";
import { ZTeamRef } from "../teams/schemas";
import { router } from "../trpc/init";
import { authedProcedure } from "../trpc/procedures";
import {
  ZCreateOptOut,
  ZErasure,
  ZOptOutList,
  ZOptOutOut,
  ZOptOutRef,
  ZPlayerExport,
  ZPlayerPath,
  ZPrivacySettings,
  ZUpdatePrivacy,
} from "./schemas";

const tags = ["privacy"];
const err = [400, 401, 403, 404, 429];
const team = { requestHeaders: ZTeamHeader };

/** Export, erasure, opt-outs and retention (docs/privacy.md). */
export const privacyRouter = router({
  exportPlayer: teamSelectedProcedure
    .meta({
      access: "team:admin",
      audit: "player.export",
      scope: "players:export",
      openapi: {
        method: "GET",
        path: "/players/{uuid}/export",
        tags,
        summary: "Everything held about one player across the team, as one JSON document",
        description:
          "Admins. One section per table that can hold a player's data. Recorded in the audit log as `player.export`, with the player named by `player_ref`, never the UUID.",
        errorResponses: err,
        ...team,
      },
    })
    .input(ZPlayerPath)
    .output(ZPlayerExport)
    .query(({ ctx, input }) => ctx.services.privacy.exportPlayer(ctx.principal, ctx.teamId, input.uuid)),

  erasePlayer: teamSelectedProcedure
    .meta({
      access: "team:admin",
      audit: "player.erase",
      scope: "players:erase",
      openapi: {
        method: "POST",
        path: "/players/{uuid}/erase",
        tags,
        summary: "Erase one player from the team; bans stay as tombstones",
        description:
          "Admins. In one transaction: sessions, per-player rows, kicks and launcher sign-ins are deleted, the daily aggregates rebuilt without them, bans kept with the UUID but the name and reason dropped, audit entries, webhook messages and kept Idempotency-Key answers that mention the player scrubbed. Erasing again answers zero counts.",
        errorResponses: err,
        ...team,
      },
    })
    .input(ZPlayerPath)
    .output(ZErasure)
    .mutation(({ ctx, input }) => ctx.services.privacy.erase(ctx.principal, ctx.teamId, input.uuid)),

  optOuts: authedProcedure
    .meta({
      access: "team:moderator",
      scope: "privacy:read",
      openapi: {
        method: "GET",
        path: "/teams/{team_id}/opt-outs",
        tags,
        summary: "Players who opted out of collection",
        errorResponses: err,
      },
    })
    .input(ZTeamRef)
    .output(ZOptOutList)
    .query(({ ctx, input }) => ctx.services.privacy.listOptOuts(ctx.principal, input.team_id)),

  addOptOut: authedProcedure
    .meta({
      access: "team:moderator",
      audit: "player.opt_out",
      scope: "privacy:write",
      status: 201,
      openapi: {
        method: "POST",
        path: "/teams/{team_id}/opt-outs",
        tags,
        summary: "Stop collecting a player's joins and leaves (bans still apply)",
        description:
          "Moderators and up. The ingest drops the player's joins and leaves and the pings' lists of them, and every agent of the team is told (GET /agent/config `opt_outs`). Data already held stays until erased (POST /players/{uuid}/erase). Adding a player already listed updates the name.",
        errorResponses: [...err, 409],
      },
    })
    .input(ZCreateOptOut)
    .output(ZOptOutOut)
    .mutation(({ ctx, input: { team_id, ...body } }) => ctx.services.privacy.addOptOut(ctx.principal, team_id, body)),

  removeOptOut: authedProcedure
    .meta({
      access: "team:admin",
      audit: "player.opt_in",
      scope: "privacy:write",
      openapi: {
        method: "DELETE",
        path: "/teams/{team_id}/opt-outs/{uuid}",
        tags,
        summary: "Collect a player's data again",
        errorResponses: err,
      },
    })
    .input(ZOptOutRef)
    .output(ZOk)
    .mutation(({ ctx, input }) => ctx.services.privacy.removeOptOut(ctx.principal, input.team_id, input.uuid)),

  settings: authedProcedure
    .meta({
      access: "team:viewer",
      scope: "privacy:read",
      openapi: {
        method: "GET",
        path: "/teams/{team_id}/privacy",
        tags,
        summary: "The team's retention of sessions and per-player data",
        errorResponses: err,
      },
    })
    .input(ZTeamRef)
    .output(ZPrivacySettings)
    .query(({ ctx, input }) => ctx.services.privacy.settings(ctx.principal, input.team_id)),

  updateSettings: authedProcedure
    .meta({
      access: "team:admin",
      audit: "team.privacy",
      scope: "privacy:write",
      openapi: {
        method: "PUT",
        path: "/teams/{team_id}/privacy",
        tags,
        summary: "Set the team's retention of sessions and per-player data",
        description:
          "Admins. Each value is in days, at most the platform's ceiling (PLAYER_DATA_MAX_RETENTION_DAYS; sessions also SAMPLE_RETENTION_DAYS); null goes back to the default. The hourly retention job applies it.",
        errorResponses: err,
      },
    })
    .input(ZUpdatePrivacy)
    .output(ZPrivacySettings)
    .mutation(({ ctx, input: { team_id, ...body } }) =>
      ctx.services.privacy.updateSettings(ctx.principal, team_id, body),
    ),
});
