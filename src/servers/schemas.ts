import { z } from "zod";
import { LIMITS } from "../lib/limits";
import { ZName, ZTimestamp, ZUuid } from "../lib/schemas";
import { DOWN_REASONS } from "../monitoring/down-reason";

/** Selector headers: declared in the OpenAPI document, read from the context, never part of the input. */
export const ZTeamHeader = z.object({ "x-team-id": ZUuid.meta({ description: "The team to act on" }) });
export const ZServerHeader = z.object({ "x-server-id": ZUuid.meta({ description: "The server to act on" }) });

export const ZServerKind = z.enum(["single", "network"]);
/** A DNS name, an IPv4 address or an IPv6 address (no scheme, no port). */
export const ZHost = z
  .string()
  .trim()
  .toLowerCase()
  .min(1)
  .max(253)
  .regex(
    /^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*\.?$|^[0-9a-f:.]+$/,
    "must be a host name or an IP address, without scheme or port",
  );
export const ZPort = z.number().int().min(1).max(65535);
// "." and ".." cannot be a network's name: a URL drops such a path segment, so its page
// (`/server/networks/{network_name}`) could never be asked for.
const ZNetworkName = z
  .string()
  .trim()
  .min(1)
  .max(64)
  .refine((v) => v !== "." && v !== "..", { message: 'network_name cannot be "." or ".."' });

export const ZPingStatus = z.object({
  online: z.boolean().nullable().meta({ description: "null until the first check" }),
  latency_ms: z.number().int().nullable(),
  players_online: z.number().int().nullable(),
  players_max: z.number().int().nullable(),
  version: z.string().nullable(),
  motd: z.string().nullable(),
  checked_at: ZTimestamp.nullable(),
  changed_at: ZTimestamp.nullable().meta({ description: "When `online` last changed" }),
  down_reason: z
    .enum(DOWN_REASONS)
    .nullable()
    .meta({
      description:
        "Why the last check found the server down; null while it is up or not yet checked. `connection_refused`: nothing listens on the port; `timed_out`: no answer within PING_TIMEOUT_MS; `name_not_found`: the host name has no address; `unreachable`: no route to the address; `refused_by_policy`: the address is private or special and the service does not connect there (OUTBOUND_ALLOW_PRIVATE); `bad_answer`: something answered, but not a Minecraft status",
      examples: ["connection_refused"],
    }),
  down_since: ZTimestamp.nullable().meta({
    description: "When the server went down (the first failed check of this outage); null while it is up",
  }),
});

export const ZAgentStats = z.object({
  tps: z.number().nullable(),
  mspt: z.number().nullable(),
  players_online: z.number().int().nullable(),
  memory_used_mb: z.number().int().nullable(),
  memory_max_mb: z.number().int().nullable(),
  reported_at: ZTimestamp,
});

export const ZServer = z.object({
  server_id: ZUuid,
  team_id: ZUuid,
  name: z.string(),
  host: z.string(),
  port: z.number().int(),
  kind: ZServerKind,
  network_name: z.string().nullable(),
  agent_token_prefix: z
    .string()
    .meta({ description: "The start of the agent token, for recognising it; never the token" }),
  created_at: ZTimestamp,
  updated_at: ZTimestamp,
  status: ZPingStatus,
  agent: ZAgentStats.nullable().meta({ description: "The last agent heartbeat; null until one arrives" }),
});

export const ZCreatedServer = ZServer.extend({
  agent_token: z.string().meta({ description: "The agent's credential; shown only in this response" }),
});

const networkRule = (v: { kind?: string; network_name?: string | null }, ctx: z.RefinementCtx) => {
  if (v.kind === "network" && !v.network_name)
    ctx.addIssue({ code: "custom", path: ["network_name"], message: "network_name is required when kind is network" });
  if (v.kind === "single" && v.network_name)
    ctx.addIssue({ code: "custom", path: ["network_name"], message: "network_name is only for kind network" });
};

export const ZCreateServer = z
  .object({
    team_id: ZUuid,
    name: ZName,
    host: ZHost,
    port: ZPort,
    kind: ZServerKind,
    network_name: ZNetworkName.optional(),
  })
  .superRefine(networkRule);

export const ZServerRef = z.object({ server_id: ZUuid });
export const ZUpdateServer = z.object({
  server_id: ZUuid,
  name: ZName.optional(),
  host: ZHost.optional(),
  port: ZPort.optional(),
  kind: ZServerKind.optional(),
  network_name: ZNetworkName.nullable().optional(),
});
export type TUpdateServer = z.infer<typeof ZUpdateServer>;
export const ZServerList = z.object({ servers: z.array(ZServer).max(LIMITS.serversPerTeam) });

export const ZNetwork = z.object({
  network_name: z.string(),
  servers: z.array(ZServer).max(LIMITS.serversPerTeam),
  servers_total: z.number().int(),
  servers_online: z.number().int(),
  players_online: z.number().int().meta({ description: "Sum over the network's servers that are up" }),
  players_max: z.number().int(),
});
export const ZNetworkList = z.object({ networks: z.array(ZNetwork).max(LIMITS.serversPerTeam) });
