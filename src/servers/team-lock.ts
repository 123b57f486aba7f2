import { asc, eq } from "drizzle-orm";
import type { Tx } from "../analytics/aggregates";
import { servers } from "../db/schema";

/**
 * Takes a team's server rows in id order, for the rest of the transaction, and returns their ids:
 * every writer of a server's sessions and aggregates holds its row, so whoever changes the whole
 * team's (an erasure, a time zone change) waits for a batch in flight and the next batch for it.
 * `share` lets other readers in (an export).
 */
export async function lockTeamServers(tx: Tx, teamId: string, mode: "update" | "share"): Promise<string[]> {
  const rows = await tx
    .select({ id: servers.id })
    .from(servers)
    .where(eq(servers.teamId, teamId))
    .orderBy(asc(servers.id))
    .for(mode);
  return rows.map((r) => r.id);
}
