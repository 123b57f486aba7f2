import { z } from "zod";
import { ZTimestamp, ZUuid } from "../lib/schemas";
import { AUDIT_ACTION_NAMES } from "./actions";

/** The most entries one page may carry. */
export const MAX_AUDIT_PAGE = 200;

export const ZAuditAction = z.enum(AUDIT_ACTION_NAMES).meta({ description: "One of the actions docs/audit.md lists" });
export const ZActorKind = z.enum(["user", "api_key", "agent", "system"]);

const entryExample = {
  entry_id: "1042",
  team_id: "3f1c9a52-8d4e-4b7a-9c21-5e6f7a8b9c0d",
  at: "2026-03-14T10:02:11.204Z",
  actor: { kind: "user", id: "b7e2d1c4-5a6f-4e3b-8c9d-0a1b2c3d4e5f", name: "ada@example.com" },
  action: "server.update",
  target: { type: "server", id: "5b0e1c1e-3f7d-4a55-9c43-8f0f4f1f2a10", name: "Survival" },
  server_id: "5b0e1c1e-3f7d-4a55-9c43-8f0f4f1f2a10",
  changes: { port: { before: 25565, after: 25566 } },
  ip: "203.0.113.7",
  user_agent: "Mozilla/5.0 (X11; Linux x86_64)",
  request_id: "7a6b5c4d-3e2f-4a1b-8c9d-0e1f2a3b4c5d",
};

export const ZAuditEntry = z
  .object({
    entry_id: z.string().max(20).meta({ description: "Increasing; newer entries have larger ids" }),
    team_id: ZUuid,
    at: ZTimestamp,
    actor: z.object({
      kind: ZActorKind.meta({
        description: "`user`: a person; `api_key`: a team API key; `agent`: a server's agent; `system`: the platform",
      }),
      id: ZUuid.nullable().meta({ description: "The user, key or server (for an agent); null for the system" }),
      name: z.string().max(300).meta({ description: "As it was when the entry was written: an email, a key's name" }),
    }),
    action: ZAuditAction,
    target: z.object({
      type: z.string().max(40),
      id: z.string().max(200),
      name: z.string().max(2100).nullable().meta({ description: "Its name at the time (a masked URL for a webhook)" }),
    }),
    server_id: ZUuid.nullable().meta({ description: "The server the change concerns, when there is one" }),
    changes: z.record(z.string().max(60), z.object({ before: z.unknown(), after: z.unknown() })).meta({
      description:
        "The fields that changed, before and after (null before: created; null after: removed); never a secret",
    }),
    ip: z
      .string()
      .max(100)
      .nullable()
      .meta({ description: "The client address as the edge saw it; null for the system" }),
    user_agent: z.string().max(500).nullable(),
    request_id: z.string().max(100).nullable().meta({ description: "The request's `x-request-id`" }),
  })
  .meta({ examples: [entryExample] });

export const ZAuditQuery = z.object({
  team_id: ZUuid,
  actor_id: ZUuid.optional().meta({ description: "Only entries by this user, key or server's agent" }),
  actor_kind: ZActorKind.optional().meta({ description: "Only entries by this kind of actor" }),
  action: ZAuditAction.optional(),
  target_type: z.string().trim().min(1).max(40).optional().meta({ example: "server" }),
  target_id: z
    .string()
    .trim()
    .min(1)
    .max(200)
    .optional()
    .meta({ description: "Only entries about this target (a server's id, a player's UUID, a rank's name)" }),
  since: ZTimestamp.optional().meta({ description: "Only entries at or after this time" }),
  until: ZTimestamp.optional().meta({ description: "Only entries before this time" }),
  limit: z.coerce.number().int().min(1).max(MAX_AUDIT_PAGE).default(50).meta({ example: 50 }),
  cursor: z
    .string()
    .max(18)
    .regex(/^[1-9][0-9]{0,17}$/, "must be a next_cursor this endpoint returned")
    .optional()
    .meta({ description: "next_cursor of the previous page; absent for the newest entries" }),
});
export type TAuditQuery = z.infer<typeof ZAuditQuery>;

export const ZAuditPage = z
  .object({
    entries: z.array(ZAuditEntry).max(MAX_AUDIT_PAGE).meta({ description: "Newest first" }),
    next_cursor: z.string().nullable().meta({ description: "Pass as cursor for the next page; null on the last" }),
  })
  .meta({ examples: [{ entries: [entryExample], next_cursor: null }] });
