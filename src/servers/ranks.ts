import { and, asc, desc, eq } from "drizzle-orm";
import { NO_EVENTS, type ServerEventSink } from "../realtime/events";
import type { Db } from "../db/client";
import { ranks, servers } from "../db/schema";
import { AppError } from "../lib/errors";
import { LIMITS, overLimit } from "../lib/limits";
import { iso } from "../lib/schemas";
import type { Principal } from "../auth/principal";
import { requireServerRole, type ServerRow } from "./access";
import { audit } from "../audit/entry";

type RankRow = typeof ranks.$inferSelect;

export const rankOut = (r: RankRow) => ({
  name: r.name,
  display_name: r.displayName,
  weight: r.weight,
  prefix: r.prefix,
  suffix: r.suffix,
  permissions: r.permissions,
  parents: r.parents,
  created_at: iso(r.createdAt),
  updated_at: iso(r.updatedAt),
});

const rankTarget = (name: string) => ({ type: "rank", id: name, name });

export interface RankFields {
  display_name?: string | null;
  weight?: number;
  prefix?: string | null;
  suffix?: string | null;
  permissions?: string[];
  parents?: string[];
}

/**
 * The first inheritance cycle reachable in `graph` (name -> parents), as a path, or null. The
 * search starts at `from` when given: a cycle an edit makes passes through the edited rank, so it
 * is reported from there whatever order the rows came in.
 */
export function findCycle(graph: Map<string, string[]>, from?: string): string[] | null {
  const state = new Map<string, "visiting" | "done">();
  const stack: string[] = [];
  const visit = (name: string): string[] | null => {
    const s = state.get(name);
    if (s === "done") return null;
    if (s === "visiting") return [...stack.slice(stack.indexOf(name)), name];
    state.set(name, "visiting");
    stack.push(name);
    for (const parent of graph.get(name) ?? []) {
      const cycle = visit(parent);
      if (cycle) return cycle;
    }
    stack.pop();
    state.set(name, "done");
    return null;
  };
  for (const name of from === undefined ? graph.keys() : [from, ...graph.keys()]) {
    const cycle = visit(name);
    if (cycle) return cycle;
  }
  return null;
}

/**
 * Why `name` may not have `parents` among the `existing` ranks (name -> parents): a parent that
 * does not exist, or a cycle the change would make; null when it may.
 */
export function findRankProblem(existing: Map<string, string[]>, name: string, parents: string[]): AppError | null {
  const unknown = parents.filter((p) => p !== name && !existing.has(p));
  if (unknown.length)
    return new AppError("bad_request", `Unknown parent rank: ${unknown.join(", ")}.`, { details: { unknown } });
  const graph = new Map(existing);
  graph.set(name, parents);
  const cycle = findCycle(graph, name);
  if (cycle)
    return new AppError("bad_request", `Inheritance would form a cycle: ${cycle.join(" -> ")}.`, {
      details: { cycle },
    });
  return null;
}

/** Ranks in the LuckPerms manner: weighted groups with prefixes, permissions and parents. */
export class RanksService {
  constructor(
    private readonly db: Db,
    private readonly events: ServerEventSink = NO_EVENTS,
  ) {}

  async list(principal: Principal, serverId: string) {
    await requireServerRole(this.db, principal, serverId, "viewer");
    return { ranks: (await this.forServer(serverId)).map(rankOut) };
  }

  forServer(serverId: string) {
    return this.db
      .select()
      .from(ranks)
      .where(eq(ranks.serverId, serverId))
      .orderBy(desc(ranks.weight), asc(ranks.name));
  }

  async create(principal: Principal, serverId: string, name: string, fields: RankFields) {
    const rank = await this.write(principal, serverId, async (tx, existing, { server }) => {
      if (existing.has(name)) throw new AppError("conflict", `A rank named ${name} already exists on this server.`);
      if (existing.size >= LIMITS.ranksPerServer) throw overLimit("ranks per server", LIMITS.ranksPerServer);
      this.checkGraph(existing, name, fields.parents ?? []);
      const [row] = await tx
        .insert(ranks)
        .values({
          serverId,
          name,
          displayName: fields.display_name ?? null,
          weight: fields.weight ?? 0,
          prefix: fields.prefix ?? null,
          suffix: fields.suffix ?? null,
          permissions: fields.permissions ?? [],
          parents: fields.parents ?? [],
        })
        .returning();
      const out = rankOut(row!);
      await audit(tx, { teamId: server.teamId, target: rankTarget(name), serverId, after: out });
      return out;
    });
    this.events.publish(serverId, "ranks_changed", { action: "created", rank });
    return rank;
  }

  async update(principal: Principal, serverId: string, name: string, fields: RankFields) {
    const rank = await this.write(principal, serverId, async (tx, existing, { server, rows }) => {
      if (!existing.has(name)) throw new AppError("not_found", `No rank named ${name} on this server.`);
      if (fields.parents) this.checkGraph(existing, name, fields.parents);
      const [row] = await tx
        .update(ranks)
        .set({
          ...(fields.display_name !== undefined && { displayName: fields.display_name }),
          ...(fields.weight !== undefined && { weight: fields.weight }),
          ...(fields.prefix !== undefined && { prefix: fields.prefix }),
          ...(fields.suffix !== undefined && { suffix: fields.suffix }),
          ...(fields.permissions !== undefined && { permissions: fields.permissions }),
          ...(fields.parents !== undefined && { parents: fields.parents }),
          updatedAt: new Date(),
        })
        .where(and(eq(ranks.serverId, serverId), eq(ranks.name, name)))
        .returning();
      const out = rankOut(row!);
      await audit(tx, {
        teamId: server.teamId,
        target: rankTarget(name),
        serverId,
        before: rankOut(rows.find((r) => r.name === name)!),
        after: out,
      });
      return out;
    });
    this.events.publish(serverId, "ranks_changed", { action: "updated", rank });
    return rank;
  }

  async remove(principal: Principal, serverId: string, name: string) {
    const out = await this.write(principal, serverId, async (tx, existing, { server, rows }) => {
      if (!existing.has(name)) throw new AppError("not_found", `No rank named ${name} on this server.`);
      const children = [...existing].filter(([, parents]) => parents.includes(name)).map(([child]) => child);
      if (children.length)
        throw new AppError(
          "conflict",
          `Ranks ${children.join(", ")} inherit from ${name}; change their parents first.`,
          { details: { children } },
        );
      await tx.delete(ranks).where(and(eq(ranks.serverId, serverId), eq(ranks.name, name)));
      await audit(tx, {
        teamId: server.teamId,
        target: rankTarget(name),
        serverId,
        before: rankOut(rows.find((r) => r.name === name)!),
      });
      return { ok: true as const };
    });
    this.events.publish(serverId, "ranks_changed", { action: "deleted", rank: { name } });
    return out;
  }

  private checkGraph(existing: Map<string, string[]>, name: string, parents: string[]) {
    const problem = findRankProblem(existing, name, parents);
    if (problem) throw problem;
  }

  /**
   * Rank writes for one server run one at a time (the server row is locked), so two
   * concurrent edits cannot each pass the cycle check and together form a cycle.
   */
  private async write<T>(
    principal: Principal,
    serverId: string,
    fn: (
      tx: Parameters<Parameters<Db["transaction"]>[0]>[0],
      existing: Map<string, string[]>,
      current: { server: ServerRow; rows: RankRow[] },
    ) => Promise<T>,
  ) {
    const { server } = await requireServerRole(this.db, principal, serverId, "admin");
    return this.db.transaction(async (tx) => {
      await tx.select({ id: servers.id }).from(servers).where(eq(servers.id, serverId)).for("update");
      // Whole rows (at most LIMITS.ranksPerServer): the audit entry records a rank before the change.
      const rows = await tx.select().from(ranks).where(eq(ranks.serverId, serverId));
      return fn(tx, new Map(rows.map((r) => [r.name, r.parents])), { server, rows });
    });
  }
}
