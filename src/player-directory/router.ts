import { ZOk } from "../lib/schemas";
import { router } from "../trpc/init";
import { teamSelectedProcedure } from "../servers/procedures";
import { ZTeamHeader } from "../servers/schemas";
import {
  ZCreateNote,
  ZDirectoryPage,
  ZDirectoryQuery,
  ZNote,
  ZNoteRef,
  ZPlayerPage,
  ZPlayerSessionsQuery,
  ZPlayerUuidRef,
  ZResolved,
  ZResolveQuery,
  ZTeamSessionPage,
} from "./schemas";

const tags = ["players"];
const err = [400, 401, 403, 404, 429];
const team = { requestHeaders: ZTeamHeader };

/**
 * The team's players across its servers (docs/players.md). The fixed path /players/resolve sits
 * beside /players/{uuid}; a UUID never spells it.
 */
export const playerDirectoryRouter = router({
  list: teamSelectedProcedure
    .meta({
      access: "team:viewer",
      scope: "servers:read",
      openapi: {
        method: "GET",
        path: "/players",
        tags,
        summary: "The team's player directory: search by name prefix or UUID, sorted, paged by cursor",
        errorResponses: err,
        ...team,
      },
    })
    .input(ZDirectoryQuery)
    .output(ZDirectoryPage)
    .query(({ ctx, input }) => ctx.services.playerDirectory.list(ctx.principal, ctx.teamId, input)),

  resolve: teamSelectedProcedure
    .meta({
      access: "team:viewer",
      scope: "servers:read",
      openapi: {
        method: "GET",
        path: "/players/resolve",
        tags,
        summary: "The players a name stands for, among those the team has seen",
        errorResponses: err,
        ...team,
      },
    })
    .input(ZResolveQuery)
    .output(ZResolved)
    .query(({ ctx, input }) => ctx.services.playerDirectory.resolve(ctx.principal, ctx.teamId, input.name)),

  get: teamSelectedProcedure
    .meta({
      access: "team:viewer",
      scope: "servers:read",
      openapi: {
        method: "GET",
        path: "/players/{uuid}",
        tags,
        summary: "A player page: names used, playtime per server, recent sessions, bans, moderation history, notes",
        errorResponses: err,
        ...team,
      },
    })
    .input(ZPlayerUuidRef)
    .output(ZPlayerPage)
    .query(({ ctx, input }) => ctx.services.playerDirectory.page(ctx.principal, ctx.teamId, input.uuid)),

  sessions: teamSelectedProcedure
    .meta({
      access: "team:viewer",
      scope: "servers:read",
      openapi: {
        method: "GET",
        path: "/players/{uuid}/sessions",
        tags,
        summary: "A player's sessions across the team's servers, newest first, paged by cursor",
        errorResponses: err,
        ...team,
      },
    })
    .input(ZPlayerSessionsQuery)
    .output(ZTeamSessionPage)
    .query(({ ctx, input }) => ctx.services.playerDirectory.sessions(ctx.principal, ctx.teamId, input)),

  addNote: teamSelectedProcedure
    .meta({
      access: "team:moderator",
      audit: "player.note_add",
      scope: "moderation:write",
      status: 201,
      openapi: {
        method: "POST",
        path: "/players/{uuid}/notes",
        tags,
        summary: "Leave a note on a player",
        errorResponses: [...err, 409],
        ...team,
      },
    })
    .input(ZCreateNote)
    .output(ZNote)
    .mutation(({ ctx, input }) =>
      ctx.services.playerDirectory.addNote(ctx.principal, ctx.teamId, input.uuid, input.text),
    ),

  deleteNote: teamSelectedProcedure
    .meta({
      access: "team:moderator",
      audit: "player.note_delete",
      scope: "moderation:write",
      openapi: {
        method: "DELETE",
        path: "/players/{uuid}/notes/{note_id}",
        tags,
        summary: "Delete a note (its author, or an admin)",
        errorResponses: err,
        ...team,
      },
    })
    .input(ZNoteRef)
    .output(ZOk)
    .mutation(({ ctx, input }) =>
      ctx.services.playerDirectory.deleteNote(ctx.principal, ctx.teamId, input.uuid, input.note_id),
    ),
});
