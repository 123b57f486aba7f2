import { router } from "../trpc/init";
import { teamSelectedProcedure } from "../servers/procedures";
import { ZTeamHeader } from "../servers/schemas";
import {
  ZActivity,
  ZAnalyticsQuery,
  ZEditions,
  ZHeatmap,
  ZLeaderboard,
  ZLeaderboardQuery,
  ZPeaks,
  ZRetention,
  ZSessionLengths,
} from "./schemas";

const tags = ["analytics"];
const err = [400, 401, 403, 404, 429];
const read = (path: string, summary: string) =>
  ({
    access: "team:viewer",
    scope: "servers:read",
    openapi: {
      method: "GET",
      path: `/analytics/${path}`,
      tags,
      summary,
      errorResponses: err,
      requestHeaders: ZTeamHeader,
    },
  }) as const;

/** Player analytics of a server or a network over a window, read from the aggregates (docs/analytics.md). */
export const analyticsRouter = router({
  activity: teamSelectedProcedure
    .meta(read("activity", "New, returning and regular players, and players by activity index"))
    .input(ZAnalyticsQuery)
    .output(ZActivity)
    .query(({ ctx, input }) => ctx.services.analytics.activity(ctx.principal, ctx.teamId, input)),
  retention: teamSelectedProcedure
    .meta(read("retention", "Weekly retention cohorts: share of each first-week cohort seen again in week 1..N"))
    .input(ZAnalyticsQuery)
    .output(ZRetention)
    .query(({ ctx, input }) => ctx.services.analytics.retention(ctx.principal, ctx.teamId, input)),
  heatmap: teamSelectedProcedure
    .meta(read("heatmap", "Average players online per weekday and hour in the time zone"))
    .input(ZAnalyticsQuery)
    .output(ZHeatmap)
    .query(({ ctx, input }) => ctx.services.analytics.heatmap(ctx.principal, ctx.teamId, input)),
  sessionLengths: teamSelectedProcedure
    .meta(read("session-lengths", "Distribution of session lengths in fixed buckets"))
    .input(ZAnalyticsQuery)
    .output(ZSessionLengths)
    .query(({ ctx, input }) => ctx.services.analytics.sessionLengths(ctx.principal, ctx.teamId, input)),
  leaderboard: teamSelectedProcedure
    .meta(read("leaderboard", "Top players by playtime in the window"))
    .input(ZLeaderboardQuery)
    .output(ZLeaderboard)
    .query(({ ctx, input }) => ctx.services.analytics.leaderboard(ctx.principal, ctx.teamId, input)),
  peaks: teamSelectedProcedure
    .meta(read("peaks", "Peak players online in the window and the most online ever, each with when"))
    .input(ZAnalyticsQuery)
    .output(ZPeaks)
    .query(({ ctx, input }) => ctx.services.analytics.peaks(ctx.principal, ctx.teamId, input)),
  editions: teamSelectedProcedure
    .meta(read("editions", "Java and Bedrock (Floodgate) shares of players and playtime"))
    .input(ZAnalyticsQuery)
    .output(ZEditions)
    .query(({ ctx, input }) => ctx.services.analytics.editions(ctx.principal, ctx.teamId, input)),
});
