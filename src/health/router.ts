import { z } from "zod";
import { router } from "../trpc/init";
import { publicProcedure } from "../trpc/procedures";

export const healthRouter = router({
  check: publicProcedure
    .meta({
      access: "public",
      openapi: {
        method: "GET",
        path: "/health",
        tags: ["operations"],
        protect: false,
        summary: "Liveness and database reachability",
        errorResponses: { 503: "The database is unreachable" },
      },
    })
    .output(
      z.object({ status: z.literal("ok"), database: z.literal("ok"), version: z.string(), uptime_s: z.number().int() }),
    )
    .query(({ ctx }) => ctx.services.health.check()),
});
