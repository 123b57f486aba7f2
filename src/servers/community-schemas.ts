import { z } from "zod";
import { LIMITS } from "../lib/limits";
import { DOWN_REASONS } from "../monitoring/down-reason";
import { ZTimestamp, ZUuid } from "../lib/schemas";
import { cronProblem } from "./announcements";

/**
 * Player UUIDs as the game writes them: any 8-4-4-4-12 hex (Bedrock players bridged by
 * Floodgate have version-0 UUIDs, which a strict RFC check would refuse).
 */
export const ZPlayerUuid = z.guid().transform((u) => u.toLowerCase());
export const ZPlayerName = z.string().min(1).max(32);
export const ZBanReason = z.string().max(500);
export const ZBanSource = z.string().min(1).max(100);

export const ZPlayer = z.object({
  uuid: z.string(),
  name: z.string(),
  online: z.boolean(),
  first_seen: ZTimestamp,
  last_seen: ZTimestamp,
  time_played_seconds: z.number().int(),
});

/** The shape of an entry in vanilla banned-players.json, plus where it came from. */
export const ZBan = z.object({
  uuid: z.string(),
  name: z.string(),
  reason: z.string(),
  source: z.string(),
  origin: z.enum(["dashboard", "game"]),
  created: ZTimestamp,
  expires: z.union([ZTimestamp, z.literal("forever")]),
});

export const ZPlayersQuery = z.object({
  limit: z.coerce.number().int().min(1).max(LIMITS.pageSize).default(50),
  offset: z.coerce.number().int().min(0).max(1_000_000).default(0),
  online: z.enum(["true", "false"]).optional().meta({ description: "Only players online (true) or offline (false)" }),
  q: z
    .string()
    .trim()
    .min(1)
    .max(36)
    .optional()
    .meta({ description: "A name prefix (any letter case) or a whole UUID; filters the players and the bans" }),
  sort: z
    .enum(["last_seen", "first_seen", "playtime", "name"])
    .optional()
    .meta({ description: "Absent: online players first, then by last seen (as before)" }),
  order: z.enum(["asc", "desc"]).optional().meta({ description: "Default: asc for name, desc for the others" }),
});
export const ZPlayerList = z.object({
  players: z.array(ZPlayer).max(LIMITS.pageSize),
  players_total: z.number().int(),
  bans: z.array(ZBan).max(LIMITS.pageSize).meta({ description: "Bans in force, paged with the same limit and offset" }),
  bans_total: z.number().int(),
  limit: z.number().int(),
  offset: z.number().int(),
});

export const BY_NAME =
  "Absent: the player is found by `name` among the players the team has seen (their current name first, then names they used before); 404 when none, 409 listing the candidates when several";
export const ZCreateBan = z.object({
  uuid: ZPlayerUuid.optional().meta({ description: BY_NAME }),
  name: ZPlayerName,
  reason: ZBanReason.optional(),
  source: ZBanSource.optional(),
  expires: ZTimestamp.nullable().optional().meta({ description: "null or absent: permanent" }),
});
export const ZBanRef = z.object({ uuid: ZPlayerUuid });

export const ZCreateKick = z.object({
  uuid: ZPlayerUuid.optional().meta({ description: BY_NAME }),
  name: ZPlayerName.meta({ description: "The name the agent kicks by (the game's `kick <name>`)" }),
  reason: ZBanReason.optional().meta({ description: "Shown to the player" }),
});
export const ZKick = z.object({
  kick_id: z.uuid(),
  uuid: z.string(),
  name: z.string(),
  reason: z.string(),
  created: ZTimestamp,
  until: ZTimestamp.meta({
    description:
      "The agent carries the kick out on a configuration read before this; a player not online is not kicked",
  }),
});

const ZRankName = z
  .string()
  .min(1)
  .max(36)
  .regex(/^[a-z0-9_-]+$/, "lower-case letters, digits, _ and - (LuckPerms group names)");
const ZPermission = z
  .string()
  .min(1)
  .max(200)
  .regex(/^-?[A-Za-z0-9_.*-]+$/, "a permission node, optionally negated with a leading -");
const ZAffix = z.string().max(100).nullable();

const rankFields = {
  display_name: z.string().max(100).nullable().optional(),
  weight: z.number().int().min(-1_000_000).max(1_000_000).optional(),
  prefix: ZAffix.optional(),
  suffix: ZAffix.optional(),
  permissions: z.array(ZPermission).max(LIMITS.permissionsPerRank).optional(),
  parents: z.array(ZRankName).max(LIMITS.parentsPerRank).optional(),
};
export const ZCreateRank = z.object({ name: ZRankName, ...rankFields });
export const ZUpdateRank = z.object({ name: ZRankName, ...rankFields });
export const ZRankRef = z.object({ name: ZRankName });
export const ZRank = z.object({
  name: z.string(),
  display_name: z.string().nullable(),
  weight: z.number().int(),
  prefix: z.string().nullable(),
  suffix: z.string().nullable(),
  permissions: z.array(z.string()).max(LIMITS.permissionsPerRank),
  parents: z.array(z.string()).max(LIMITS.parentsPerRank),
  created_at: ZTimestamp,
  updated_at: ZTimestamp,
});

const ZSchedule = z
  .string()
  .max(100)
  .superRefine((value, ctx) => {
    const problem = cronProblem(value);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  });
const announcementFields = {
  interval_seconds: z
    .number()
    .int()
    .min(10)
    .max(7 * 86_400)
    .nullable()
    .optional(),
  schedule: ZSchedule.nullable().optional(),
  active: z.boolean().optional(),
  starts_at: ZTimestamp.nullable().optional(),
  ends_at: ZTimestamp.nullable().optional(),
};
export const ZCreateAnnouncement = z.object({ message: z.string().trim().min(1).max(1000), ...announcementFields });
export const ZUpdateAnnouncement = z.object({
  announcement_id: ZUuid,
  message: z.string().trim().min(1).max(1000).optional(),
  ...announcementFields,
});
export const ZAnnouncementRef = z.object({ announcement_id: ZUuid });
export const ZAnnouncement = z.object({
  announcement_id: ZUuid,
  message: z.string(),
  interval_seconds: z.number().int().nullable(),
  schedule: z.string().nullable(),
  active: z.boolean(),
  starts_at: ZTimestamp.nullable(),
  ends_at: ZTimestamp.nullable(),
  created_at: ZTimestamp,
  updated_at: ZTimestamp,
});

export const ZUptimeQuery = z.object({ window: z.enum(["1h", "24h", "7d", "30d"]).default("24h") });
const ZNullableNumber = z.number().nullable();
export const ZUptimeStats = z.object({
  server_id: ZUuid,
  window: z.enum(["1h", "24h", "7d", "30d"]),
  from: ZTimestamp,
  to: ZTimestamp,
  bucket_seconds: z.number().int(),
  samples: z.number().int(),
  up: z.number().int(),
  down: z.number().int(),
  uptime: ZNullableNumber.meta({ description: "up / (up + down); null without samples" }),
  latency_ms: z.object({ avg: ZNullableNumber, min: ZNullableNumber, max: ZNullableNumber, p95: ZNullableNumber }),
  buckets: z
    .array(
      z.object({
        start: ZTimestamp,
        up: z.number().int(),
        down: z.number().int(),
        uptime: ZNullableNumber,
        latency_avg_ms: ZNullableNumber,
        latency_max_ms: ZNullableNumber,
        players_avg: ZNullableNumber,
      }),
    )
    .max(LIMITS.uptimeBuckets),
  incidents: z
    .array(
      z.object({
        started_at: ZTimestamp.meta({ description: "The first check that found the server down" }),
        ended_at: ZTimestamp.nullable().meta({
          description: "The first check that found it up again; null while it is still down",
        }),
        duration_seconds: z
          .number()
          .int()
          .meta({ description: "From start to end, or to the window's end while it lasts" }),
        ongoing: z.boolean(),
        reason: z.enum(DOWN_REASONS).nullable().meta({
          description: "Why the first failed check failed; null when not known (recorded before reasons were)",
        }),
      }),
    )
    .max(LIMITS.uptimeIncidents)
    .meta({
      description:
        "Down periods that overlap the window, the most recent first: whole, from the pinger's flips, whatever the window's bucket size",
    }),
});
