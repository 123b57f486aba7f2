import { z } from "zod";
import { ZTimestamp, ZUuid } from "../lib/schemas";

export const MAX_WINDOWS_PER_TEAM = 200;
export const MAX_OCCURRENCES_LISTED = 500;
const ZNetworkName = z
  .string()
  .min(1)
  .max(64)
  .meta({ description: "A network's exact name (network_name of its servers)" });
const ZSchedule = z.string().trim().max(100).meta({
  description:
    "A five-field cron expression (minute hour day-of-month month day-of-week) of *, numbers, ranges, lists and steps, read in the team's time zone",
  example: "0 4 * * 1",
});

const fields = {
  title: z.string().trim().min(1).max(200),
  message: z.string().trim().max(2000).nullable().optional(),
  starts_at: ZTimestamp.nullable().optional().meta({ description: "A one-off window's start" }),
  ends_at: ZTimestamp.nullable().optional().meta({ description: "A one-off window's end" }),
  schedule: ZSchedule.nullable()
    .optional()
    .meta({ description: "A recurring window's schedule (with duration_minutes)" }),
  duration_minutes: z
    .number()
    .int()
    .min(1)
    .max(7 * 24 * 60)
    .nullable()
    .optional(),
};

export const ZCreateWindow = z.object({
  server_id: ZUuid.optional().meta({ description: "The server it covers (give this or network_name)" }),
  network_name: ZNetworkName.optional().meta({
    description: "The network it covers: all its servers (give this or server_id)",
  }),
  ...fields,
});
export type TCreateWindow = z.infer<typeof ZCreateWindow>;
export const ZWindowRef = z.object({ window_id: ZUuid });
export const ZUpdateWindow = z.object({ ...fields, title: fields.title.optional() }).extend(ZWindowRef.shape);
export type TUpdateWindow = z.infer<typeof ZUpdateWindow>;

const ZOccurrence = z.object({ starts_at: ZTimestamp, ends_at: ZTimestamp });
export const ZWindow = z.object({
  window_id: ZUuid,
  server_id: ZUuid.nullable(),
  network_name: z.string().nullable(),
  title: z.string(),
  message: z.string().nullable(),
  starts_at: ZTimestamp.nullable(),
  ends_at: ZTimestamp.nullable(),
  schedule: z.string().nullable(),
  duration_minutes: z.number().int().nullable(),
  time_zone: z.string().meta({ description: "The team's time zone, in which the schedule is read" }),
  active: ZOccurrence.nullable().meta({ description: "The occurrence running now, if any" }),
  next: ZOccurrence.nullable().meta({ description: "The next occurrence to start, if any" }),
  created_at: ZTimestamp,
  updated_at: ZTimestamp,
});
export const ZWindowList = z.object({ windows: z.array(ZWindow).max(MAX_WINDOWS_PER_TEAM) });

export const ZUpcomingQuery = z.object({
  days: z.coerce.number().int().min(1).max(90).default(14).meta({ description: "How far ahead to look" }),
  server_id: ZUuid.optional(),
  network_name: ZNetworkName.optional(),
});
export const ZUpcoming = z.object({
  from: ZTimestamp,
  to: ZTimestamp,
  occurrences: z
    .array(
      z.object({
        window_id: ZUuid,
        server_id: ZUuid.nullable(),
        network_name: z.string().nullable(),
        title: z.string(),
        message: z.string().nullable(),
        starts_at: ZTimestamp,
        ends_at: ZTimestamp,
        active: z.boolean().meta({ description: "Running now" }),
      }),
    )
    .max(MAX_OCCURRENCES_LISTED),
});
