import { z } from "zod";
import { ZTimestamp, ZUuid } from "../lib/schemas";
import { ZBan, ZPlayerUuid } from "../servers/community-schemas";

/** The most sessions one page may carry. */
export const MAX_SESSION_PAGE = 200;

const NOTCH = "069a79f4-44e9-4726-a5be-fca90e38aaf5";

export const ZSession = z.object({
  session_id: ZUuid,
  uuid: z.string(),
  name: z.string().nullable(),
  joined_at: ZTimestamp,
  left_at: ZTimestamp.nullable().meta({ description: "null while the session is open" }),
  duration_seconds: z.number().int().meta({ description: "Up to now for an open session" }),
  online: z.boolean(),
  source: z.enum(["agent", "ping"]).meta({
    description: "agent: the plugin's join and leave; ping: the Server List Ping sample (no agent running)",
  }),
  end_reason: z
    .enum(["leave", "rejoin", "agent_silent", "not_seen", "server_offline"])
    .nullable()
    .meta({ description: "Why it ended (docs/history.md, Player sessions); null while open" }),
});

const sessionExample = {
  session_id: "5b0e1c1e-3f7d-4a55-9c43-8f0f4f1f2a10",
  uuid: NOTCH,
  name: "Notch",
  joined_at: "2025-01-31T18:04:05.000Z",
  left_at: "2025-01-31T19:10:00.000Z",
  duration_seconds: 3955,
  online: false,
  source: "agent",
  end_reason: "leave",
};

export const ZSessionsQuery = z.object({
  limit: z.coerce.number().int().min(1).max(MAX_SESSION_PAGE).default(50).meta({ example: 50 }),
  cursor: z
    .string()
    .min(1)
    .max(200)
    .optional()
    .meta({ description: "next_cursor of the previous page; absent for the newest sessions" }),
  uuid: ZPlayerUuid.optional().meta({ description: "Only this player's sessions", example: NOTCH }),
});

export const ZSessionPage = z
  .object({
    sessions: z.array(ZSession).max(MAX_SESSION_PAGE).meta({ description: "Newest first" }),
    next_cursor: z.string().nullable().meta({ description: "Pass as cursor for the next page; null on the last" }),
  })
  .meta({
    examples: [{ sessions: [sessionExample], next_cursor: "czEuNWIwZTFjMWUtM2Y3ZC00YTU1LTljNDMtOGYwZjRmMWYyYTEw" }],
  });

export const ZPlayerRef = z.object({ uuid: ZPlayerUuid.meta({ example: NOTCH }) });

export const ZPlayerProfile = z
  .object({
    uuid: z.string(),
    name: z.string(),
    online: z.boolean(),
    first_seen: ZTimestamp,
    last_seen: ZTimestamp,
    time_played_seconds: z.number().int().meta({ description: "Closed sessions plus the open one up to now" }),
    session_count: z.number().int(),
    recent_sessions: z.array(ZSession).max(10).meta({ description: "The 10 most recent, newest first" }),
    banned: z.boolean(),
    ban: ZBan.nullable().meta({ description: "The ban in force, if any" }),
  })
  .meta({
    examples: [
      {
        uuid: NOTCH,
        name: "Notch",
        online: false,
        first_seen: "2025-01-02T10:00:00.000Z",
        last_seen: "2025-01-31T19:10:00.000Z",
        time_played_seconds: 86_400,
        session_count: 42,
        recent_sessions: [sessionExample],
        banned: false,
        ban: null,
      },
    ],
  });

export const ZSummaryWindow = z.enum(["24h", "7d", "30d", "90d"]);
export const ZSummaryQuery = z.object({ window: ZSummaryWindow.default("7d").meta({ example: "7d" }) });

const ZDayFigures = z.object({
  unique_players: z.number().int(),
  new_players: z.number().int().meta({ description: "Seen for the first time on this server" }),
  returning_players: z.number().int().meta({ description: "unique_players - new_players" }),
  peak_concurrent: z.number().int().meta({ description: "The most sessions open at one instant" }),
  playtime_seconds: z.number().int(),
});

export const ZPlayerSummary = z
  .object({
    server_id: ZUuid,
    window: ZSummaryWindow,
    from: ZTimestamp,
    to: ZTimestamp,
    totals: ZDayFigures,
    days: z
      .array(
        ZDayFigures.extend({
          date: z.string().meta({ description: "UTC day, YYYY-MM-DD" }),
          from: ZTimestamp,
          to: ZTimestamp,
        }),
      )
      .max(91)
      .meta({ description: "UTC days, oldest first; the first and last are cut to the window" }),
    top_players: z
      .array(
        z.object({
          uuid: z.string(),
          name: z.string().nullable(),
          playtime_seconds: z.number().int(),
          sessions: z.number().int(),
        }),
      )
      .max(10)
      .meta({ description: "Most time played inside the window" }),
  })
  .meta({
    examples: [
      {
        server_id: "9d3c2a51-7e0b-4a8e-b1f2-0c6f1d2e3a4b",
        window: "24h",
        from: "2025-01-30T19:30:00.000Z",
        to: "2025-01-31T19:30:00.000Z",
        totals: { unique_players: 3, new_players: 1, returning_players: 2, peak_concurrent: 2, playtime_seconds: 9000 },
        days: [
          {
            date: "2025-01-30",
            from: "2025-01-30T19:30:00.000Z",
            to: "2025-01-31T00:00:00.000Z",
            unique_players: 1,
            new_players: 0,
            returning_players: 1,
            peak_concurrent: 1,
            playtime_seconds: 1800,
          },
          {
            date: "2025-01-31",
            from: "2025-01-31T00:00:00.000Z",
            to: "2025-01-31T19:30:00.000Z",
            unique_players: 3,
            new_players: 1,
            returning_players: 2,
            peak_concurrent: 2,
            playtime_seconds: 7200,
          },
        ],
        top_players: [{ uuid: NOTCH, name: "Notch", playtime_seconds: 5400, sessions: 2 }],
      },
    ],
  });
