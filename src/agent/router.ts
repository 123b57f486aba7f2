import { sha256 } from "../lib/secrets";
import { router } from "../trpc/init";
import { agentProcedure } from "../trpc/procedures";
import { ZAgentConfig, ZEventBatch, ZEventResult, ZHeartbeat, ZHeartbeatResult } from "./schemas";

const tags = ["agent"];
const err = [400, 401, 413, 429];

/** The API a plugin on the Minecraft server speaks, with its agent token. See docs/agent-protocol.md. */
export const agentRouter = router({
  heartbeat: agentProcedure
    .meta({
      access: "agent",
      audit: { none: "a reading of the server, not a change anyone made" },
      openapi: {
        method: "POST",
        path: "/agent/heartbeat",
        tags,
        summary: "Report TPS, MSPT, players online and memory (agent token)",
        errorResponses: err,
      },
    })
    .input(ZHeartbeat)
    .output(ZHeartbeatResult)
    .mutation(({ ctx, input }) => ctx.services.agent.heartbeat(ctx.agent.serverId, input)),

  events: agentProcedure
    .meta({
      access: "agent",
      audit: { perEvent: ["player.ban", "player.unban"] },
      openapi: {
        method: "POST",
        path: "/agent/events",
        tags,
        summary: "Deliver a batch of joins, leaves, bans and unbans; retried event ids are ignored (agent token)",
        errorResponses: err,
      },
    })
    .input(ZEventBatch)
    .output(ZEventResult)
    .mutation(({ ctx, input }) => ctx.services.agent.events(ctx.agent, input.events)),

  config: agentProcedure
    .meta({
      access: "agent",
      openapi: {
        method: "GET",
        path: "/agent/config",
        tags,
        summary: "Ranks, active announcements and dashboard bans to apply (agent token)",
        description:
          "Sent with an `ETag`; send it back as `If-None-Match` and an unchanged configuration answers `304 Not Modified` with no body.",
        errorResponses: [401, 429],
      },
    })
    .output(ZAgentConfig)
    .query(async ({ ctx }) => {
      const config = await ctx.services.agent.config(ctx.agent.serverId);
      // The version is what the agent applies, not when it was read.
      const { generated_at: _, ...content } = config;
      ctx.resHeaders.etag = `"${sha256(JSON.stringify(content)).slice(0, 32)}"`;
      return config;
    }),
});
