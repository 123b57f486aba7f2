import { z } from "zod";
import { LIMITS } from "../lib/limits";
import { ZTimestamp, ZUuid } from "../lib/schemas";
import { ZBan, ZPlayerName, ZPlayerUuid } from "../servers/community-schemas";
import { MAX_SESSION_PAGE, ZSession } from "../player-history/schemas";

export const DIRECTORY_SORTS = ["last_seen", "playtime", "sessions", "name"] as const;
export type DirectorySort = (typeof DIRECTORY_SORTS)[number];

const ZEdition = z.enum(["java", "bedrock"]).meta({
  description: "bedrock for a Floodgate UUID (00000000-0000-0000-0009-…), java otherwise",
});

export const ZDirectoryQuery = z.object({
  q: z
    .string()
    .trim()
    .min(1)
    .max(36)
    .optional()
    .meta({ description: "A name prefix (any letter case), or a whole UUID", example: "jeb" }),
  sort: z.enum(DIRECTORY_SORTS).default("last_seen"),
  order: z.enum(["asc", "desc"]).optional().meta({ description: "Default: asc for name, desc for the others" }),
  limit: z.coerce.number().int().min(1).max(LIMITS.pageSize).default(50),
  cursor: z
    .string()
    .min(1)
    .max(300)
    .optional()
    .meta({ description: "next_cursor of the previous page, with the same sort and order; absent for the first page" }),
  server_id: ZUuid.optional().meta({ description: "Only players seen on this server of the team" }),
});

export const ZDirectoryPlayer = z.object({
  uuid: z.string(),
  name: z.string().meta({ description: "The name of the latest join" }),
  edition: ZEdition,
  first_seen: ZTimestamp,
  last_seen: ZTimestamp,
  online: z.boolean().meta({ description: "On any of the team's servers now" }),
  playtime_seconds: z
    .number()
    .int()
    .meta({ description: "Every server of the team, with the running session of a player online" }),
  sessions: z.number().int().meta({ description: "Sessions started on the team's servers" }),
  banned: z.boolean().meta({ description: "A ban is in force on at least one of the team's servers" }),
});

export const ZDirectoryPage = z.object({
  players: z.array(ZDirectoryPlayer).max(LIMITS.pageSize),
  next_cursor: z.string().nullable().meta({ description: "Pass as cursor for the next page; null on the last" }),
});

export const ZPlayerUuidRef = z.object({ uuid: ZPlayerUuid });

export const ZActor = z.object({
  kind: z.enum(["user", "api_key", "agent", "system"]),
  id: z.string().nullable(),
  name: z.string().meta({ description: "An email, an API key's name, or `game` for what was done in game" }),
});

export const ZModerationEvent = z.object({
  event_id: ZUuid,
  action: z.enum(["ban", "unban", "kick"]),
  server_id: z.string().nullable().meta({ description: "null once the server is deleted" }),
  server_name: z.string(),
  name: z.string().nullable(),
  origin: z.enum(["dashboard", "game"]),
  actor: ZActor,
  reason: z.string().nullable(),
  source: z.string().nullable(),
  expires: z
    .union([ZTimestamp, z.literal("forever")])
    .nullable()
    .meta({ description: "For a ban; null otherwise" }),
  at: ZTimestamp,
});

export const ZNote = z.object({
  note_id: ZUuid,
  text: z.string(),
  author: ZActor,
  created_at: ZTimestamp,
});

export const ZTeamSession = ZSession.extend({ server_id: z.string(), server_name: z.string() });

export const ZPlayerPage = ZDirectoryPlayer.extend({
  names: z
    .array(z.object({ name: z.string(), first_used: ZTimestamp, last_used: ZTimestamp, current: z.boolean() }))
    .max(LIMITS.namesListed)
    .meta({ description: "Every name the player joined with, the most recently used first" }),
  servers: z
    .array(
      z.object({
        server_id: z.string(),
        server_name: z.string(),
        online: z.boolean(),
        first_seen: ZTimestamp,
        last_seen: ZTimestamp,
        playtime_seconds: z.number().int(),
        sessions: z.number().int().meta({ description: "Sessions still held (see SAMPLE_RETENTION_DAYS)" }),
      }),
    )
    .max(LIMITS.serversPerTeam)
    .meta({ description: "Playtime per server, the most played first" }),
  recent_sessions: z.array(ZTeamSession).max(10).meta({ description: "Across the team's servers, newest first" }),
  bans_in_force: z.array(ZBan.extend({ server_id: z.string(), server_name: z.string() })).max(LIMITS.serversPerTeam),
  moderation: z
    .array(ZModerationEvent)
    .max(LIMITS.moderationListed)
    .meta({ description: "Bans, lifts and kicks on the team's servers, newest first" }),
  notes: z.array(ZNote).max(LIMITS.notesPerPlayer).meta({ description: "Newest first" }),
});

export const ZPlayerSessionsQuery = z.object({
  uuid: ZPlayerUuid,
  limit: z.coerce.number().int().min(1).max(MAX_SESSION_PAGE).default(50),
  cursor: z.string().min(1).max(200).optional().meta({ description: "next_cursor of the previous page" }),
});
export const ZTeamSessionPage = z.object({
  sessions: z.array(ZTeamSession).max(MAX_SESSION_PAGE).meta({ description: "Newest first" }),
  next_cursor: z.string().nullable(),
});

export const ZCreateNote = z.object({
  uuid: ZPlayerUuid,
  text: z
    .string()
    .trim()
    .min(1)
    .max(LIMITS.noteChars)
    .meta({ description: `At most ${LIMITS.noteChars} characters` }),
});
export const ZNoteRef = z.object({ uuid: ZPlayerUuid, note_id: ZUuid });

export const ZResolveQuery = z.object({ name: ZPlayerName.meta({ example: "jeb_" }) });
export const ZResolvedPlayer = z.object({
  uuid: z.string(),
  name: z.string().meta({ description: "The player's current name" }),
  edition: ZEdition,
  last_seen: ZTimestamp,
});
export const ZResolved = z.object({
  name: z.string(),
  match: z.enum(["current", "past"]).meta({
    description: "current: players whose latest name it is; past: none, but these players once used it",
  }),
  players: z
    .array(ZResolvedPlayer)
    .max(LIMITS.resolveCandidates)
    .meta({ description: "One when the name is unambiguous; several otherwise, the most recently seen first" }),
});
