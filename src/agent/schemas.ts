import { z } from "zod";
import { LIMITS } from "../lib/limits";
import { ZTimestamp } from "../lib/schemas";
import {
  ZAnnouncement,
  ZBan,
  ZKick,
  ZPlayerUuid,
  ZPlayerName,
  ZRank,
  ZBanReason,
  ZBanSource,
} from "../servers/community-schemas";

/** The most events one batch may carry; a plugin sends more as several batches. */
export const MAX_EVENTS_PER_BATCH = 500;

export const ZHeartbeat = z.object({
  at: ZTimestamp.optional().meta({
    description:
      "When the reading was taken; defaults to when it arrives. A past time backfills history (readings an agent kept while it could not reach the platform): it goes to the metric buckets only, and is refused when older than SAMPLE_RETENTION_DAYS. A future time is taken as arrival time",
  }),
  tps: z.number().min(0).max(1000).optional(),
  mspt: z.number().min(0).max(600_000).optional(),
  players_online: z.number().int().min(0).max(1_000_000).optional(),
  memory_used_mb: z.number().int().min(0).max(16_777_216).optional(),
  memory_max_mb: z.number().int().min(0).max(16_777_216).optional(),
});

const ZEventId = z
  .string()
  .min(1)
  .max(100)
  .regex(/^[A-Za-z0-9._:-]+$/, "letters, digits and . _ : - only");
const base = {
  event_id: ZEventId,
  at: ZTimestamp.optional().meta({
    description:
      "When it happened in game; defaults to when it arrives. A join or leave more than 3650 days old (the most SAMPLE_RETENTION_DAYS keeps) is refused (400, nothing of the batch kept); a future time is taken as arrival time",
  }),
};

/**
 * Text the agent read from a log or a crash report, kept as read except a lone UTF-16 surrogate,
 * which becomes U+FFFD as a text column would store it (the crash report goes into jsonb, which
 * refuses one: a batch is not refused for one broken line). A NUL is refused with every input.
 */
const logText = (max: number) =>
  z
    .string()
    .max(max)
    .overwrite((s) => s.toWellFormed());

export const ZAgentEvent = z.discriminatedUnion("type", [
  z.object({ ...base, type: z.literal("join"), uuid: ZPlayerUuid, name: ZPlayerName }),
  z.object({ ...base, type: z.literal("leave"), uuid: ZPlayerUuid, name: ZPlayerName.optional() }),
  z.object({
    ...base,
    type: z.literal("ban"),
    uuid: ZPlayerUuid,
    name: ZPlayerName,
    reason: ZBanReason.optional(),
    source: ZBanSource.optional(),
    expires: ZTimestamp.nullable().optional().meta({ description: "null or absent: permanent" }),
  }),
  z.object({ ...base, type: z.literal("unban"), uuid: ZPlayerUuid }),
  z.object({
    ...base,
    type: z.literal("server_stopping"),
    line: logText(300).optional().meta({
      description: 'The log line that announced the stop ("Stopping the server", a restart script\'s line)',
    }),
  }),
  z.object({ ...base, type: z.literal("server_started") }),
  z.object({
    ...base,
    type: z.literal("crash_report"),
    file: logText(200).min(1).meta({ description: "The report's file name in crash-reports/" }),
    description: logText(500).meta({ description: "The report's Description: line" }),
    lines: z
      .array(logText(500))
      .max(30)
      .meta({ description: "The first lines after the description: the exception and the top of its stack" }),
  }),
]);
export type TAgentEvent = z.infer<typeof ZAgentEvent>;

export const ZEventBatch = z.object({ events: z.array(ZAgentEvent).min(1).max(MAX_EVENTS_PER_BATCH) });
export const ZEventResult = z.object({
  accepted: z.number().int().meta({ description: "Events applied now" }),
  duplicates: z.number().int().meta({ description: "Events whose event_id was already received; ignored" }),
  opted_out: z.number().int().optional().meta({
    description: "Joins and leaves of players on the team's opt-out list: received, not kept. Absent when none",
  }),
});

export const ZHeartbeatResult = z.object({ server_id: z.uuid(), received_at: ZTimestamp });

export const ZAgentConfig = z.object({
  server_id: z.uuid(),
  generated_at: ZTimestamp,
  ranks: z
    .array(ZRank)
    .max(LIMITS.ranksPerServer + LIMITS.ranksPerNetwork)
    .meta({
      description: "The server's ranks and its network's; a server rank wins over a network rank of the same name",
    }),
  announcements: z
    .array(ZAnnouncement)
    .max(LIMITS.announcementsPerServer)
    .meta({ description: "Only those active now (active flag set, inside start/end)" }),
  bans: z
    .array(ZBan)
    .max(LIMITS.bansInAgentConfig)
    .meta({
      description: `Bans issued from the dashboard that are in force, on the server or on its network (the ${LIMITS.bansInAgentConfig} most recent)`,
    }),
  pardons: z
    .array(z.object({ uuid: z.string(), lifted_at: ZTimestamp }))
    .max(LIMITS.pardonsInAgentConfig)
    .meta({
      description:
        "Bans lifted from the dashboard (on the server or on its network) in the last 7 days, except players still banned by another: pardon these in game",
    }),
  opt_outs: z.array(z.string()).max(LIMITS.optOutsPerTeam).optional().meta({
    description:
      "UUIDs of players who opted out of collection (docs/privacy.md): send no joins, leaves or chat of theirs. Bans still apply to them",
  }),
  kicks: z.array(ZKick).max(LIMITS.kicksPending).meta({
    description: "Kicks asked for in the last two minutes: run each once (`kick <name> <reason>`), by kick_id",
  }),
});
