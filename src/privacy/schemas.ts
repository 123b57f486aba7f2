import { z } from "zod";
import { LIMITS } from "../lib/limits";
import { ZTimestamp, ZUuid } from "../lib/schemas";
import { ZPlayerName, ZPlayerUuid } from "../servers/community-schemas";

const NOTCH = "069a79f4-44e9-4726-a5be-fca90e38aaf5";
const TEAM = "3f1c2a4e-8b7d-4e6f-9a1b-2c3d4e5f6a7b";
const SERVER = "9b2f6c1e-4d3a-4b5c-8e7f-1a2b3c4d5e6f";
const REF = "pr_4mV0bWk9xQ1vN2c3LrT8aYdE6fGhJkLz";

export const ZPlayerPath = z.object({ uuid: ZPlayerUuid.meta({ example: NOTCH }) });

export const ZPlayerExport = z
  .object({
    uuid: z.string(),
    team_id: ZUuid,
    player_ref: z.string().meta({
      description: "What stands for the player in the audit log (a keyed hash of team and UUID): the same every time",
    }),
    generated_at: ZTimestamp,
    holders: z.record(z.string().max(64), z.array(z.record(z.string().max(64), z.unknown())).max(10_000_000)).meta({
      description:
        "One section per table that can hold a player's data (docs/privacy.md lists them), each the rows about this player",
    }),
  })
  .meta({
    examples: [
      {
        uuid: NOTCH,
        team_id: TEAM,
        player_ref: REF,
        generated_at: "2025-02-01T10:00:00.000Z",
        holders: {
          players: [
            {
              server_id: SERVER,
              name: "Notch",
              online: false,
              first_seen: "2025-01-02T18:00:00.000Z",
              last_seen: "2025-01-31T19:10:00.000Z",
              play_seconds: 3955,
            },
          ],
          player_sessions: [
            {
              session_id: "5b0e1c1e-3f7d-4a55-9c43-8f0f4f1f2a10",
              server_id: SERVER,
              joined_at: "2025-01-31T18:04:05.000Z",
              left_at: "2025-01-31T19:10:00.000Z",
              source: "agent",
              end_reason: "leave",
            },
          ],
          bans: [],
        },
      },
    ],
  });

export const ZErasure = z
  .object({
    player_ref: z.string().meta({ description: "What stands for the player in the audit log from now on" }),
    erased: z.record(z.string().max(64), z.number().int()).meta({
      description:
        "Rows deleted or rewritten per table (bans: tombstoned, server_days: rebuilt); all zero when there was nothing left",
    }),
  })
  .meta({
    examples: [
      {
        player_ref: REF,
        erased: { player_sessions: 1204, player_days: 88, server_days: 88, players: 2, bans: 1, audit_log: 3 },
      },
    ],
  });

export const ZOptOut = z.object({
  uuid: z.string(),
  name: z.string().nullable(),
  created_at: ZTimestamp,
});
const optOutExample = { uuid: NOTCH, name: "Notch", created_at: "2025-01-31T18:04:05.000Z" };
export const ZOptOutList = z
  .object({ opt_outs: z.array(ZOptOut).max(LIMITS.optOutsPerTeam).meta({ description: "Oldest first" }) })
  .meta({ examples: [{ opt_outs: [optOutExample] }] });
export const ZCreateOptOut = z
  .object({
    team_id: ZUuid,
    uuid: ZPlayerUuid.meta({ example: NOTCH }),
    name: ZPlayerName.optional().meta({ description: "Shown in the list; dropped by an erasure", example: "Notch" }),
  })
  .meta({ examples: [{ team_id: TEAM, uuid: NOTCH, name: "Notch" }] });
export const ZOptOutRef = z.object({ team_id: ZUuid, uuid: ZPlayerUuid.meta({ example: NOTCH }) });
export const ZOptOutOut = ZOptOut.meta({ examples: [optOutExample] });

const days = z.number().int().min(1).max(3650).nullable();
export const ZPrivacySettings = z
  .object({
    team_id: ZUuid,
    session_retention_days: days.meta({ description: "Closed sessions kept this long; null: the platform's default" }),
    player_retention_days: days.meta({
      description: "A player not seen for this long is forgotten; null: PLAYER_DATA_MAX_RETENTION_DAYS",
    }),
    effective_session_retention_days: z.number().int(),
    effective_player_retention_days: z.number().int(),
    max_session_retention_days: z.number().int(),
    max_player_retention_days: z.number().int(),
    updated_at: ZTimestamp.nullable(),
  })
  .meta({
    examples: [
      {
        team_id: TEAM,
        session_retention_days: 30,
        player_retention_days: null,
        effective_session_retention_days: 30,
        effective_player_retention_days: 365,
        max_session_retention_days: 90,
        max_player_retention_days: 365,
        updated_at: "2025-01-31T18:04:05.000Z",
      },
    ],
  });
export const ZUpdatePrivacy = z
  .object({
    team_id: ZUuid,
    session_retention_days: days.optional().meta({ description: "null: back to the default", example: 30 }),
    player_retention_days: days.optional().meta({ description: "null: back to the default", example: 180 }),
  })
  .meta({ examples: [{ team_id: TEAM, session_retention_days: 30, player_retention_days: 180 }] });
