import { sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { rowsOf } from "../db/rows";
import { AppError } from "../lib/errors";
import { LIMITS } from "../lib/limits";

type Tx = Parameters<Parameters<Db["transaction"]>[0]>[0] | Db;

export const BEDROCK_PREFIX = "00000000-0000-0000-0009-";
export const editionOf = (uuid: string): "java" | "bedrock" => (uuid.startsWith(BEDROCK_PREFIX) ? "bedrock" : "java");

export interface Candidate {
  uuid: string;
  name: string;
  edition: "java" | "bedrock";
  last_seen: string;
}

/**
 * The players of a team a name stands for, compared without letter case: those whose current
 * name it is; when there are none, those who once used it. Never more than resolveCandidates,
 * the most recently seen first.
 */
export async function resolveName(
  db: Tx,
  teamId: string,
  name: string,
): Promise<{ match: "current" | "past"; players: Candidate[] }> {
  const key = name.toLowerCase();
  const rows = rowsOf<{ uuid: string; name: string; last_seen: string | Date; current: boolean }>(
    await db.execute(sql`
      select tp.uuid::text as uuid, tp.name, tp.last_seen, true as current
        from team_players tp
       where tp.team_id = ${teamId}::uuid and lower(tp.name) collate "C" = ${key}
      union all
      select tp.uuid::text, tp.name, tp.last_seen, false
        from team_players tp
       where tp.team_id = ${teamId}::uuid
         and tp.uuid in (select pn.uuid from player_names pn
                          where pn.team_id = ${teamId}::uuid and lower(pn.name) collate "C" = ${key})
         and lower(tp.name) collate "C" <> ${key}
       order by 4 desc, 3 desc, 1
       limit ${LIMITS.resolveCandidates * 2}`),
  );
  const current = rows.filter((r) => r.current);
  const chosen = (current.length > 0 ? current : rows).slice(0, LIMITS.resolveCandidates);
  return {
    match: current.length > 0 ? "current" : "past",
    players: chosen.map((r) => ({
      uuid: r.uuid,
      name: r.name,
      edition: editionOf(r.uuid),
      last_seen: new Date(r.last_seen).toISOString(),
    })),
  };
}

/**
 * One player for a name, as acting by name needs: 404 when the team has never seen it, 409
 * listing the candidates when several players answer to it.
 */
export async function resolveOne(db: Tx, teamId: string, name: string): Promise<Candidate> {
  const { players } = await resolveName(db, teamId, name);
  if (players.length === 0)
    throw new AppError(
      "not_found",
      `No player named ${JSON.stringify(name)} has been seen on this team's servers; give their uuid instead.`,
      { details: { field: "name" } },
    );
  if (players.length > 1)
    throw new AppError(
      "conflict",
      `${players.length} players have used the name ${JSON.stringify(name)}; give the uuid of the one you mean.`,
      { details: { field: "name", candidates: players } },
    );
  return players[0]!;
}
