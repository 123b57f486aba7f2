import { sql, type SQL } from "drizzle-orm";
import type { Db } from "../db/client";
import { rowsOf } from "../db/rows";
import { deleteMonthRows, forgetPlayer } from "../analytics/aggregates";
import { recomputePeaks } from "../servers/players";

/** A database handle or an open transaction: an erasure runs every holder in one transaction. */
export type Tx = Parameters<Parameters<Db["transaction"]>[0]>[0] | Db;

/** What every holder is given: one player (a lower-case dashed UUID) in one team. */
export interface PlayerScope {
  tx: Tx;
  teamId: string;
  uuid: string;
  /** The team's servers, as a SQL list (`in (...)`); never empty (a team without servers uses a UUID no row has). */
  servers: SQL;
  /** What stands for the player where a record must stay (./service.ts `playerRef`). */
  ref: string;
  /** (server, day) pairs whose per-player rollups an earlier holder removed: the aggregates to rebuild. */
  touchedDays: { server_id: string; day: string }[];
  /** Holders that need more than SQL (idempotency answers are sealed) get it here. */
  forgetSealed(needles: string[]): Promise<number>;
}

/**
 * One table that may hold something about a player: how to export it and how to erase it.
 * `erase` answers how many rows it deleted or rewrote. Holders run in this list's order (the
 * aggregates are rebuilt after the rows they are made of are gone).
 */
export interface Holder {
  table: string;
  /** What the export shows of it: rows about the player, as plain JSON. */
  export(p: PlayerScope): Promise<Record<string, unknown>[]>;
  erase(p: PlayerScope): Promise<number>;
  /** What stays after an erasure and why (docs/privacy.md); absent: nothing of the player stays. */
  keeps?: string;
}

/** The placeholder name of an erased player where a record stays (a ban's tombstone). */
export const ERASED_NAME = "(erased)";
export const ERASED_REASON = "(erased)";

const rows = async (tx: Tx, q: SQL) => rowsOf<Record<string, unknown>>(await tx.execute(q)).map(plain);
const affected = async (tx: Tx, q: SQL) =>
  rowsOf<{ n: number }>(await tx.execute(sql`with d as (${q} returning 1) select count(*)::int as n from d`))[0]!.n;

/** Dates as ISO strings and bigints as numbers, whichever driver read the row. */
function plain(r: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(r))
    out[k] = v instanceof Date ? v.toISOString() : typeof v === "bigint" ? Number(v) : v;
  return out;
}

/** Both spellings of a UUID, for text that may carry either (`a1b2...` and `a1b2-...`). */
export const spellings = (uuid: string) => [uuid, uuid.replaceAll("-", "")];
const mentions = (column: SQL, uuid: string) =>
  sql`(${sql.join(
    spellings(uuid).map((s) => sql`strpos(lower(${column}), ${s}) > 0`),
    sql` or `,
  )})`;

/**
 * Rebuilds `server_days` for the given (server, day) pairs from the `player_days` rows left
 * (players, time played) and the sessions left (peak); a day with no player left loses its row,
 * as a server that never had the player has none. Answers the rows rebuilt.
 */
export async function rebuildDays(tx: Tx, all: { server_id: string; day: string }[]): Promise<number> {
  const touched = [...new Map(all.map((d) => [`${d.server_id}|${d.day}`, d])).values()];
  if (touched.length === 0) return 0;
  const days = sql`select x.server_id, x.day from json_to_recordset(${JSON.stringify(touched)}::json) as x(server_id uuid, day timestamptz)`;
  const n = await affected(
    tx,
    sql`update server_days sd set players = a.players, playtime_us = a.us, peak = 0
          from (select d.server_id, d.day, count(pd.uuid)::int as players, coalesce(sum(pd.playtime_us), 0)::bigint as us
                  from (${days}) d
                  left join player_days pd on pd.server_id = d.server_id and pd.day = d.day
                 group by d.server_id, d.day) a
         where sd.server_id = a.server_id and sd.day = a.day`,
  );
  await tx.execute(
    sql`delete from server_days sd using (${days}) d where sd.server_id = d.server_id and sd.day = d.day and sd.players = 0`,
  );
  await recomputePeaks(tx, touched);
  return n;
}

/**
 * Every table that holds player data, one entry a table. A table added later that holds a
 * player's UUID without an entry here fails test/privacy.test.ts (it scans every column of
 * the database after an erasure).
 */
export const HOLDERS: Holder[] = [
  {
    // Made from the player-hour rows below (src/analytics/aggregates.ts `monthRows`).
    table: "analytics_player_months",
    export: ({ tx, teamId, uuid }) =>
      rows(
        tx,
        sql`select scope, month, ms, first_at, last_at from analytics_player_months
             where team_id = ${teamId} and uuid = ${uuid} order by scope, month`,
      ),
    // With the month's counts (`analytics_month_counts`, no UUIDs) taken down by the rows.
    erase: ({ tx, teamId, uuid }) => deleteMonthRows(tx, sql`m.team_id = ${teamId} and m.uuid = ${uuid}`),
  },
  {
    // The month rows above summed per scope (the leaderboard's bound for long windows).
    table: "analytics_player_totals",
    export: ({ tx, teamId, uuid }) =>
      rows(
        tx,
        sql`select scope, ms from analytics_player_totals where team_id = ${teamId} and uuid = ${uuid} order by scope`,
      ),
    erase: ({ tx, teamId, uuid }) =>
      affected(tx, sql`delete from analytics_player_totals where team_id = ${teamId} and uuid = ${uuid}`),
  },
  {
    // Made from the player-hour rows below, as the month rows (`weekRows`): the activity read's weeks.
    table: "analytics_player_weeks",
    export: ({ tx, teamId, uuid }) =>
      rows(
        tx,
        sql`select scope, week, ms, first_at, last_at from analytics_player_weeks
             where team_id = ${teamId} and uuid = ${uuid} order by scope, week`,
      ),
    erase: ({ tx, teamId, uuid }) =>
      affected(tx, sql`delete from analytics_player_weeks where team_id = ${teamId} and uuid = ${uuid}`),
  },
  {
    // First: the aggregates are taken apart from the sessions they were made of, before those go.
    table: "analytics_player_hours",
    export: ({ tx, uuid, servers }) =>
      rows(
        tx,
        sql`select server_id, hour, q0, q1, q2, q3, joins from analytics_player_hours
             where server_id in ${servers} and uuid = ${uuid} order by server_id, hour`,
      ),
    async erase({ tx, teamId, uuid, servers }) {
      const [n] = rowsOf<{ n: number }>(
        await tx.execute(
          sql`select count(*)::int as n from analytics_player_hours where server_id in ${servers} and uuid = ${uuid}`,
        ),
      );
      // Also subtracts the player's sessions from the per-server and per-network slots and lengths.
      await forgetPlayer(tx, teamId, uuid);
      return n!.n;
    },
  },
  {
    table: "network_sessions",
    export: ({ tx, teamId, uuid }) =>
      rows(
        tx,
        sql`select id as network_session_id, network_name, joined_at, left_at from network_sessions
             where team_id = ${teamId} and uuid = ${uuid} order by joined_at, id`,
      ),
    // Their hops go with them (and with the player's sessions).
    erase: ({ tx, teamId, uuid }) =>
      affected(tx, sql`delete from network_sessions where team_id = ${teamId} and uuid = ${uuid}`),
  },
  {
    table: "network_bans",
    keeps:
      "A network ban keeps the UUID (so the ban still holds on every server of the network), its times and source; the name becomes `(erased)` and the reason is dropped.",
    export: ({ tx, teamId, uuid }) =>
      rows(
        tx,
        sql`select network_name, name, reason, source, created_at, expires_at, lifted_at, end_reason from network_bans
             where team_id = ${teamId} and uuid = ${uuid} order by created_at`,
      ),
    erase: ({ tx, teamId, uuid }) =>
      affected(
        tx,
        sql`update network_bans set name = ${ERASED_NAME}, reason = ${ERASED_REASON}
             where team_id = ${teamId} and uuid = ${uuid} and (name <> ${ERASED_NAME} or reason <> ${ERASED_REASON})`,
      ),
  },
  {
    table: "team_players",
    export: ({ tx, teamId, uuid }) =>
      rows(
        tx,
        sql`select name, first_seen, last_seen, play_seconds, sessions from team_players where team_id = ${teamId} and uuid = ${uuid}`,
      ),
    erase: ({ tx, teamId, uuid }) =>
      affected(tx, sql`delete from team_players where team_id = ${teamId} and uuid = ${uuid}`),
  },
  {
    table: "player_names",
    export: ({ tx, teamId, uuid }) =>
      rows(
        tx,
        sql`select name, first_used, last_used from player_names where team_id = ${teamId} and uuid = ${uuid} order by first_used`,
      ),
    erase: ({ tx, teamId, uuid }) =>
      affected(tx, sql`delete from player_names where team_id = ${teamId} and uuid = ${uuid}`),
  },
  {
    // The history of bans, lifts and kicks; the bans themselves stay as tombstones (below).
    table: "moderation_events",
    export: ({ tx, teamId, uuid }) =>
      rows(
        tx,
        sql`select server_id, server_name, name, action, origin, actor_kind, actor_name, reason, source, expires_at, at
              from moderation_events where team_id = ${teamId} and uuid = ${uuid} order by at`,
      ),
    erase: ({ tx, teamId, uuid }) =>
      affected(tx, sql`delete from moderation_events where team_id = ${teamId} and uuid = ${uuid}`),
  },
  {
    table: "player_notes",
    export: ({ tx, teamId, uuid }) =>
      rows(
        tx,
        sql`select id as note_id, text, created_at from player_notes where team_id = ${teamId} and uuid = ${uuid} order by created_at`,
      ),
    erase: ({ tx, teamId, uuid }) =>
      affected(tx, sql`delete from player_notes where team_id = ${teamId} and uuid = ${uuid}`),
  },
  {
    table: "player_sessions",
    export: ({ tx, uuid, servers }) =>
      rows(
        tx,
        sql`select id as session_id, server_id, joined_at, left_at, source, seen_at, end_reason
              from player_sessions where server_id in ${servers} and uuid = ${uuid} order by joined_at, id`,
      ),
    erase: ({ tx, uuid, servers }) =>
      affected(tx, sql`delete from player_sessions where server_id in ${servers} and uuid = ${uuid}`),
  },
  {
    table: "player_days",
    export: ({ tx, uuid, servers }) =>
      rows(
        tx,
        sql`select server_id, day, playtime_us::float8 as playtime_us, joins from player_days
             where server_id in ${servers} and uuid = ${uuid} order by server_id, day`,
      ),
    async erase(p) {
      const gone = rowsOf<{ server_id: string; day: Date | string }>(
        await p.tx.execute(
          sql`delete from player_days where server_id in ${p.servers} and uuid = ${p.uuid} returning server_id, day`,
        ),
      );
      p.touchedDays.push(...gone.map((r) => ({ server_id: r.server_id, day: new Date(r.day).toISOString() })));
      return gone.length;
    },
  },
  {
    // An aggregate over players: it holds no UUID, but the days the player was in are rebuilt
    // from the rows left (players, time played, peak), as if the player had never been there.
    table: "server_days",
    export: async () => [],
    erase: ({ tx, touchedDays }) => rebuildDays(tx, touchedDays),
  },
  {
    table: "players",
    export: ({ tx, uuid, servers }) =>
      rows(
        tx,
        sql`select server_id, name, online, first_seen, last_seen, play_seconds::float8 as play_seconds
              from players where server_id in ${servers} and uuid = ${uuid} order by server_id`,
      ),
    erase: ({ tx, uuid, servers }) =>
      affected(tx, sql`delete from players where server_id in ${servers} and uuid = ${uuid}`),
  },
  {
    table: "kicks",
    export: ({ tx, uuid, servers }) =>
      rows(
        tx,
        sql`select id as kick_id, server_id, name, reason, created_at from kicks
             where server_id in ${servers} and uuid = ${uuid} order by created_at`,
      ),
    erase: ({ tx, uuid, servers }) =>
      affected(tx, sql`delete from kicks where server_id in ${servers} and uuid = ${uuid}`),
  },
  {
    table: "bans",
    keeps:
      "The ban row keeps the UUID (so the ban still holds), its times, source and origin; the name becomes `(erased)` and the reason is dropped.",
    export: ({ tx, uuid, servers }) =>
      rows(
        tx,
        sql`select server_id, name, reason, source, origin, created_at, expires_at, lifted_at, lift_origin
              from bans where server_id in ${servers} and uuid = ${uuid} order by server_id`,
      ),
    erase: ({ tx, uuid, servers }) =>
      affected(
        tx,
        sql`update bans set name = ${ERASED_NAME}, reason = ${ERASED_REASON}
             where server_id in ${servers} and uuid = ${uuid} and (name <> ${ERASED_NAME} or reason <> ${ERASED_REASON})`,
      ),
  },
  {
    table: "player_opt_outs",
    keeps:
      "An opt-out keeps the UUID (it is the player's own request: dropping it would start collecting again); its name is dropped.",
    export: ({ tx, uuid, teamId }) =>
      rows(tx, sql`select name, created_at from player_opt_outs where team_id = ${teamId} and uuid = ${uuid}`),
    erase: ({ tx, uuid, teamId }) =>
      affected(
        tx,
        sql`update player_opt_outs set name = null where team_id = ${teamId} and uuid = ${uuid} and name is not null`,
      ),
  },
  {
    // Launcher sign-ins through the team's client applications: the session handed to the
    // launcher and the login request that made it (its context names the player).
    table: "sessions",
    export: ({ tx, uuid, teamId }) =>
      rows(
        tx,
        sql`select s.id as session_id, s.client_id, s.mc_username, s.created_at, s.expires_at, s.revoked_at
              from sessions s join client_apps c on c.id = s.client_id
             where c.team_id = ${teamId} and lower(replace(s.mc_uuid, '-', '')) = ${uuid.replaceAll("-", "")}
             order by s.created_at`,
      ),
    erase: ({ tx, uuid, teamId }) =>
      affected(
        tx,
        sql`delete from sessions s using client_apps c
             where c.id = s.client_id and c.team_id = ${teamId} and lower(replace(s.mc_uuid, '-', '')) = ${uuid.replaceAll("-", "")}`,
      ),
  },
  {
    table: "login_requests",
    export: ({ tx, uuid, teamId }) =>
      rows(
        tx,
        sql`select r.id as login_request_id, r.client_id, r.status, r.created_at
              from login_requests r join client_apps c on c.id = r.client_id
             where c.team_id = ${teamId} and ${mentions(sql`r.context::text`, uuid)}
             order by r.created_at`,
      ),
    erase: ({ tx, uuid, teamId }) =>
      affected(
        tx,
        sql`delete from login_requests r using client_apps c
             where c.id = r.client_id and c.team_id = ${teamId} and ${mentions(sql`r.context::text`, uuid)}`,
      ),
  },
  {
    // Entries stay (what was done, when, by whom) but no longer name the player: the target
    // becomes the player's reference and what the entry recorded of them is dropped.
    table: "audit_log",
    keeps:
      "Entries about the player stay, with the target replaced by the player's reference (`pr_...`) and their fields dropped.",
    export: ({ tx, uuid, teamId }) =>
      rows(
        tx,
        sql`select id::text as entry_id, at, actor_kind, actor_name, action, target_type, target_name, server_id, changes
              from audit_log
             where team_id = ${teamId}
               and (${mentions(sql`target_id`, uuid)} or ${mentions(sql`changes::text`, uuid)})
             order by id`,
      ),
    erase: ({ tx, uuid, teamId, ref }) =>
      affected(
        tx,
        sql`update audit_log set target_id = ${ref}, target_name = null, changes = '{}'::jsonb
             where team_id = ${teamId}
               and (${mentions(sql`target_id`, uuid)} or ${mentions(sql`changes::text`, uuid)}
                    or ${mentions(sql`coalesce(target_name, '')`, uuid)})`,
      ),
  },
  {
    // Webhook payloads (player.banned, audit.entry, ...) and their deliveries, pending or sent:
    // removed, so nothing still queued carries the player out after the erasure.
    table: "webhook_messages",
    export: ({ tx, uuid, teamId }) =>
      rows(
        tx,
        sql`select id as message_id, type, created_at from webhook_messages
             where team_id = ${teamId} and ${mentions(sql`payload::text`, uuid)} order by created_at`,
      ),
    erase: ({ tx, uuid, teamId }) =>
      affected(
        tx,
        sql`delete from webhook_messages where team_id = ${teamId} and ${mentions(sql`payload::text`, uuid)}`,
      ),
  },
  {
    // A delivery's stored response is what the receiver answered, which may echo the payload.
    table: "webhook_deliveries",
    export: async () => [],
    erase: ({ tx, uuid, teamId }) =>
      affected(
        tx,
        sql`update webhook_deliveries set last_response = null
             where endpoint_id in (select id from webhook_endpoints where team_id = ${teamId})
               and last_response is not null and ${mentions(sql`last_response`, uuid)}`,
      ),
  },
  {
    // Answers kept for Idempotency-Key replays (24 hours) are sealed: opened and matched in memory.
    table: "idempotency_keys",
    export: async () => [],
    erase: (p) => p.forgetSealed(spellings(p.uuid)),
  },
];
