import { z } from "zod";
import { ZTimestamp, ZUuid } from "../lib/schemas";
import { LENGTH_BUCKETS } from "./aggregates";

export const ZTimeZone = z
  .string()
  .min(1)
  .max(64)
  .meta({ description: "An IANA time zone name, e.g. Europe/Berlin", example: "Europe/Berlin" });

/** What every analytics read takes: a server or a network, a window and a time zone. */
export const ZAnalyticsQuery = z.object({
  server_id: ZUuid.optional().meta({ description: "One server of the team (give this or network)" }),
  network: z
    .string()
    .trim()
    .min(1)
    .max(100)
    .optional()
    .meta({ description: "A network name of the team: its servers together, each player counted once" }),
  from: ZTimestamp.optional().meta({
    description: "Window start, rounded down to a quarter hour; default to minus 30 days",
  }),
  to: ZTimestamp.optional().meta({
    description: "Window end, rounded up to a quarter hour; default now. At most 400 days after from",
  }),
  tz: ZTimeZone.optional().meta({ description: "Time zone for days, weeks and hours; default the team's time zone" }),
});
export const ZLeaderboardQuery = ZAnalyticsQuery.extend({
  limit: z.coerce.number().int().min(1).max(100).default(10).meta({ example: 10 }),
});

const window = {
  from: ZTimestamp,
  to: ZTimestamp,
  time_zone: z.string(),
};
const ZShare = z.number().min(0).max(1);

export const ZActivity = z.object({
  ...window,
  players: z.number().int().meta({ description: "Players seen in the window" }),
  new_players: z.number().int().meta({ description: "First seen (in this server or network) inside the window" }),
  returning_players: z
    .number()
    .int()
    .meta({ description: "Seen before the window, activity index below 2 at its end" }),
  regular_players: z
    .number()
    .int()
    .meta({ description: "Seen before the window, activity index 2 or more at its end" }),
  activity_groups: z
    .array(z.object({ group: z.string(), min_index: z.number(), players: z.number().int() }))
    .max(5)
    .meta({ description: "Players seen in the window by activity index at its end (docs/analytics.md)" }),
  index_at: ZTimestamp.meta({
    description:
      "Where the activity index is taken: the last Monday 00:00 UTC at or before the window's end; it counts the three UTC weeks before it",
  }),
});

export const ZRetention = z.object({
  ...window,
  cohorts: z
    .array(
      z.object({
        week_start: z.string().meta({ description: "The local Monday the cohort's first week starts on" }),
        players: z.number().int().meta({ description: "Players first seen that week (inside the window)" }),
        retained: z
          .array(z.object({ week: z.number().int(), players: z.number().int(), share: ZShare }))
          .max(60)
          .meta({ description: "Week k after the first: players of the cohort seen again, and their share" }),
      }),
    )
    .max(60),
});

export const ZHeatmap = z.object({
  ...window,
  days: z
    .array(
      z.object({
        weekday: z.string(),
        hours: z
          .array(z.object({ hour: z.number().int(), average_online: z.number().nullable() }))
          .length(24)
          .meta({ description: "Average players online in that local hour; null when the window has no such hour" }),
      }),
    )
    .length(7)
    .meta({ description: "Monday first" }),
});

export const ZSessionLengths = z.object({
  ...window,
  sessions: z.number().int().meta({ description: "Sessions that started in the window and have ended" }),
  buckets: z
    .array(
      z.object({
        bucket: z.string(),
        min_seconds: z.number().int(),
        max_seconds: z.number().int().nullable().meta({ description: "Exclusive; null for the last bucket" }),
        sessions: z.number().int(),
        share: ZShare,
      }),
    )
    .length(LENGTH_BUCKETS.length),
});

const ZEdition = z
  .enum(["java", "bedrock"])
  .meta({ description: "bedrock: a Floodgate UUID (00000000-0000-0000-0009-…)" });

export const ZLeaderboard = z.object({
  ...window,
  players: z
    .array(
      z.object({
        rank: z.number().int(),
        uuid: z.string(),
        name: z.string().nullable(),
        edition: ZEdition,
        playtime_seconds: z.number().int(),
      }),
    )
    .max(100),
});

const ZPeak = z.object({
  players: z.number().int(),
  at: ZTimestamp.meta({ description: "When that level was first reached" }),
});
export const ZPeaks = z.object({
  ...window,
  online_now: z.number().int(),
  peak: ZPeak.nullable().meta({ description: "The most online at once in the window; null when nobody played" }),
  most_online_ever: ZPeak.nullable(),
});

export const ZEditions = z.object({
  ...window,
  editions: z
    .array(
      z.object({
        edition: ZEdition,
        players: z.number().int(),
        player_share: ZShare,
        playtime_seconds: z.number().int(),
        playtime_share: ZShare,
      }),
    )
    .length(2),
});
