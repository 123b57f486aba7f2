import { z } from "zod";
import { LIMITS } from "../lib/limits";
import { ZTimestamp } from "../lib/schemas";
import { BY_NAME, ZBanReason, ZBanSource, ZPlayerName, ZPlayerUuid, ZRank } from "../servers/community-schemas";

/** Hops a network session lists; a longer one (a player hopping all evening) is cut to its latest. */
export const MAX_HOPS = 100;
export const MAX_NETWORK_SESSION_PAGE = 200;
export const NETWORK_WINDOWS = { "24h": 1, "7d": 7, "30d": 30 } as const;
export type NetworkWindow = keyof typeof NETWORK_WINDOWS;

/** The network, by its exact name (URL-encoded in the path). */
const ZNetworkNameParam = z
  .string()
  .min(1)
  .max(64)
  .meta({ description: "The network's exact name (network_name of its servers), URL-encoded", example: "blockworks" });

export const ZNetworkRef = z.object({ network_name: ZNetworkNameParam });

export const ZNetworkPageQuery = z.object({
  network_name: ZNetworkNameParam,
  window: z
    .enum(["24h", "7d", "30d"])
    .default("7d")
    .meta({ description: "The window of the shares and the session count" }),
});

const ZNetworkServer = z.object({
  server_id: z.uuid(),
  name: z.string(),
  online: z.boolean().nullable().meta({ description: "The last ping's answer; null until the first check" }),
  players_online: z.number().int().meta({ description: "Players with a session open on it now" }),
  playtime_seconds: z.number().int().meta({ description: "Time played on it inside the window" }),
  playtime_share: z.number().min(0).max(1).meta({ description: "Its part of the network's time played (0..1)" }),
  sessions: z.number().int().meta({ description: "Its sessions (hops) that started inside the window" }),
  sessions_share: z.number().min(0).max(1).meta({ description: "Its part of those sessions (0..1)" }),
});

export const ZNetworkPage = z.object({
  network_name: z.string(),
  window: z.enum(["24h", "7d", "30d"]),
  from: ZTimestamp,
  to: ZTimestamp,
  servers: z.array(ZNetworkServer).max(LIMITS.serversPerTeam),
  players_online: z.number().int().meta({ description: "Players online across the network now, each once" }),
  online: z
    .array(
      z.object({
        uuid: z.string(),
        name: z.string(),
        server_id: z.uuid(),
        server_name: z.string(),
        since: ZTimestamp.meta({ description: "When they joined that server" }),
      }),
    )
    .max(LIMITS.pageSize * 10)
    .meta({ description: "Who is online, each once, with the server they are on (the latest joined)" }),
  playtime_seconds: z.number().int().meta({ description: "Time played across the network inside the window" }),
  network_sessions: z.number().int().meta({ description: "Network sessions that started inside the window" }),
});

export const ZNetworkSessionsQuery = z.object({
  network_name: ZNetworkNameParam,
  limit: z.coerce.number().int().min(1).max(MAX_NETWORK_SESSION_PAGE).default(50).meta({ example: 50 }),
  cursor: z
    .string()
    .min(1)
    .max(200)
    .optional()
    .meta({ description: "next_cursor of the previous page; absent for the newest sessions" }),
  uuid: ZPlayerUuid.optional().meta({
    description: "Only this player's sessions",
    example: "069a79f4-44e9-4726-a5be-fca90e38aaf5",
  }),
});

const ZHop = z.object({
  server_id: z.uuid(),
  server_name: z.string(),
  joined_at: ZTimestamp,
  left_at: ZTimestamp.nullable().meta({ description: "null while the player is on it" }),
});

export const ZNetworkSession = z.object({
  network_session_id: z.uuid(),
  uuid: z.string(),
  name: z.string().nullable(),
  joined_at: ZTimestamp,
  left_at: ZTimestamp.nullable().meta({ description: "The last hop's leave; null while online" }),
  duration_seconds: z.number().int(),
  online: z.boolean(),
  hops: z.array(ZHop).max(MAX_HOPS).meta({ description: "The servers in the order they were joined" }),
});

export const ZNetworkSessionPage = z.object({
  sessions: z.array(ZNetworkSession).max(MAX_NETWORK_SESSION_PAGE).meta({ description: "Newest first" }),
  next_cursor: z.string().nullable().meta({ description: "Pass as cursor for the next page; null on the last" }),
});

export const ZNetworkBansQuery = z.object({
  network_name: ZNetworkNameParam,
  state: z
    .enum(["active", "all"])
    .default("active")
    .meta({ description: "active: bans in force; all: every ban with the lifted and replaced ones" }),
  limit: z.coerce.number().int().min(1).max(LIMITS.pageSize).default(50),
  offset: z.coerce.number().int().min(0).max(1_000_000).default(0),
});

const ZActorRef = z
  .object({ kind: z.enum(["user", "api_key"]), id: z.string().nullable(), name: z.string().nullable() })
  .nullable();

export const ZNetworkBan = z.object({
  ban_id: z.uuid(),
  network_name: z.string(),
  uuid: z.string(),
  name: z.string(),
  reason: z.string(),
  source: z.string(),
  created: ZTimestamp,
  expires: z.union([ZTimestamp, z.literal("forever")]),
  created_by: ZActorRef.meta({ description: "Who banned; null when no longer known" }),
  active: z.boolean().meta({ description: "In force: not lifted, not replaced, not expired" }),
  lifted_at: ZTimestamp.nullable(),
  lifted_by: ZActorRef,
  end_reason: z.enum(["lifted", "replaced"]).nullable(),
});

export const ZNetworkBanList = z.object({
  bans: z.array(ZNetworkBan).max(LIMITS.pageSize).meta({ description: "Newest first" }),
  total: z.number().int(),
  limit: z.number().int(),
  offset: z.number().int(),
});

export const ZCreateNetworkBan = z.object({
  network_name: ZNetworkNameParam,
  uuid: ZPlayerUuid.optional().meta({ description: BY_NAME }),
  name: ZPlayerName,
  reason: ZBanReason.optional(),
  source: ZBanSource.optional(),
  expires: ZTimestamp.nullable().optional().meta({ description: "null or absent: permanent" }),
});
export const ZNetworkBanRef = z.object({ network_name: ZNetworkNameParam, uuid: ZPlayerUuid });

export const ZNetworkRankList = z.object({ ranks: z.array(ZRank).max(LIMITS.ranksPerNetwork) });
