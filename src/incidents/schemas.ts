import { z } from "zod";
import { ZTimestamp, ZUuid } from "../lib/schemas";

export const INCIDENT_STATUSES = ["investigating", "identified", "monitoring", "resolved"] as const;
export type IncidentStatus = (typeof INCIDENT_STATUSES)[number];
export const MAX_INCIDENTS_LISTED = 200;
/** Updates one incident may carry: a timeline longer than this is a chat, not an incident. */
export const MAX_INCIDENT_UPDATES = 200;
const ZStatus = z.enum(INCIDENT_STATUSES);
const ZMessage = z.string().trim().min(1).max(2000);
const ZNetworkName = z
  .string()
  .min(1)
  .max(64)
  .meta({ description: "A network's exact name (network_name of its servers)" });

export const ZIncidentsQuery = z.object({
  server_id: ZUuid.optional().meta({ description: "Only this server's incidents" }),
  network_name: ZNetworkName.optional().meta({
    description: "Only the network's incidents and those of its servers",
  }),
  state: z.enum(["open", "resolved", "all"]).default("all"),
  before: ZTimestamp.optional().meta({ description: "Only incidents that started before this time (paging back)" }),
  limit: z.coerce.number().int().min(1).max(MAX_INCIDENTS_LISTED).default(50),
});
export type TIncidentsQuery = z.infer<typeof ZIncidentsQuery>;

export const ZIncidentRef = z.object({ incident_id: ZUuid });

export const ZCreateIncident = z.object({
  server_id: ZUuid.optional().meta({ description: "The server it is about (give this or network_name)" }),
  network_name: ZNetworkName.optional().meta({ description: "The network it is about (give this or server_id)" }),
  title: z.string().trim().min(1).max(200),
  status: ZStatus.default("investigating"),
  message: ZMessage.meta({ description: "The first update's text, shown on the timeline" }),
  started_at: ZTimestamp.optional().meta({ description: "When it began; defaults to now" }),
});
export type TCreateIncident = z.infer<typeof ZCreateIncident>;

export const ZIncidentUpdate = z.object({ status: ZStatus, message: ZMessage });
export type TIncidentUpdate = z.infer<typeof ZIncidentUpdate>;

const ZTimelineEntry = z.object({
  at: ZTimestamp,
  status: ZStatus,
  message: z.string(),
  author: z.object({
    kind: z.string().meta({ description: "`user`, `api_key` or `system`" }),
    name: z.string(),
  }),
});

export const ZIncident = z.object({
  incident_id: ZUuid,
  server_id: ZUuid.nullable(),
  server_name: z.string().nullable(),
  network_name: z.string().nullable().meta({ description: "Set for an incident of a whole network" }),
  kind: z.enum(["down", "crash", "manual"]).meta({
    description:
      "`down`: the pinger found the server down; `crash`: down with no stop announced while its agent was reporting, or a crash report; `manual`: posted by the team",
  }),
  title: z.string(),
  status: ZStatus,
  started_at: ZTimestamp,
  ended_at: ZTimestamp.nullable(),
  reason: z.string().nullable().meta({ description: "The first failed check's down reason, for a down period" }),
  crash: z
    .object({
      file: z.string(),
      description: z.string(),
      lines: z.array(z.string()).max(30),
      reported_at: ZTimestamp,
    })
    .nullable()
    .meta({ description: "The crash report's description and first exception lines: for the team only" }),
  updated_at: ZTimestamp,
  updates: z
    .array(ZTimelineEntry)
    .max(MAX_INCIDENT_UPDATES + 2)
    .optional()
    .meta({ description: "The timeline, oldest first (one incident only)" }),
});
export const ZIncidentList = z.object({ incidents: z.array(ZIncident).max(MAX_INCIDENTS_LISTED) });
