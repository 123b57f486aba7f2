import { and, asc, eq, inArray, ne, or, sql } from "drizzle-orm";
import type { Principal } from "../auth/principal";
import { audit, type Tx } from "../audit/entry";
import type { Db } from "../db/client";
import { servers, type StatusPageShow, statusPages } from "../db/schema";
import { AppError } from "../lib/errors";
import { overLimit } from "../lib/limits";
import { iso } from "../lib/schemas";
import { requireTeamRole } from "../teams/access";
import { STATUS_PAGE_LIMITS } from "./schemas";

export type StatusPageRow = typeof statusPages.$inferSelect;

export interface StatusPageInput {
  slug: string;
  title: string;
  description: string;
  host_name: string | null;
  server_ids: string[];
  network_names: string[];
  show: StatusPageShow;
  logo_url: string | null;
  accent_color: string;
  theme: "auto" | "light" | "dark";
  published: boolean;
}

export type StatusPagePatch = Partial<Omit<StatusPageInput, "show" | "published">> & { show?: Partial<StatusPageShow> };

/** A page as the management API shows it. */
export const pageOut = (p: StatusPageRow, publicUrl: string) => ({
  page_id: p.id,
  team_id: p.teamId,
  slug: p.slug,
  title: p.title,
  description: p.description,
  host_name: p.hostName,
  published: p.published,
  server_ids: p.serverIds,
  network_names: p.networkNames,
  show: p.show,
  logo_url: p.logoUrl,
  accent_color: p.accentColor,
  theme: p.theme as "auto" | "light" | "dark",
  url: `${publicUrl}/status/${p.slug}`,
  created_at: iso(p.createdAt),
  updated_at: iso(p.updatedAt),
});

/** What the audit log records of a page: its settings, never anything else. */
const pageFields = (p: StatusPageRow) => ({
  slug: p.slug,
  title: p.title,
  description: p.description,
  host_name: p.hostName,
  published: p.published,
  server_ids: p.serverIds,
  network_names: p.networkNames,
  show: p.show,
  logo_url: p.logoUrl,
  accent_color: p.accentColor,
  theme: p.theme,
});
const pageTarget = (p: StatusPageRow) => ({ type: "status_page", id: p.id, name: p.slug });

/** A unique index refused the row (PostgreSQL 23505), as either driver reports it. */
function uniqueViolation(err: unknown): string | null {
  for (
    let e = err as { code?: string; constraint_name?: string; constraint?: string; cause?: unknown } | undefined;
    e;
  ) {
    if (e.code === "23505") return e.constraint_name ?? e.constraint ?? "";
    e = e.cause as typeof e;
  }
  return null;
}

const taken = (constraint: string) =>
  constraint.includes("host")
    ? new AppError("conflict", "Another status page already uses this host name.")
    : new AppError("conflict", "Another status page already uses this slug.");

/**
 * Status pages: the team's settings of each (which servers and networks, what is shown, the
 * theme, whether it is published). What the public reads is src/status-pages/public.ts; every
 * change here tells it (`onChange`), so a cached page is never served after its settings changed.
 */
export class StatusPagesService {
  private changed: (page: StatusPageRow) => void = () => {};

  constructor(
    private readonly db: Db,
    private readonly opts: { publicUrl: string },
  ) {}

  onChange(fn: (page: StatusPageRow) => void) {
    this.changed = fn;
  }

  /** The service's own host, which no page may take. */
  private get ownHost() {
    return new URL(this.opts.publicUrl).hostname.toLowerCase();
  }

  /** Every named server is the team's, every named network has a server of the team. */
  private async checkTargets(tx: Tx, teamId: string, serverIds: string[], networkNames: string[]) {
    const wanted = [...new Set(serverIds)];
    if (wanted.length) {
      const found = await tx
        .select({ id: servers.id })
        .from(servers)
        .where(and(eq(servers.teamId, teamId), inArray(servers.id, wanted)));
      const known = new Set(found.map((r) => r.id));
      const missing = wanted.filter((id) => !known.has(id));
      if (missing.length)
        throw new AppError("validation_failed", "Some servers are not servers of this team.", {
          details: { issues: [{ path: "server_ids", message: `unknown servers: ${missing.join(", ")}` }] },
        });
    }
    const names = [...new Set(networkNames)];
    if (names.length) {
      const found = await tx
        .selectDistinct({ name: servers.networkName })
        .from(servers)
        .where(and(eq(servers.teamId, teamId), eq(servers.kind, "network"), inArray(servers.networkName, names)));
      const known = new Set(found.map((r) => r.name));
      const missing = names.filter((n) => !known.has(n));
      if (missing.length)
        throw new AppError("validation_failed", "Some networks are not networks of this team.", {
          details: { issues: [{ path: "network_names", message: `unknown networks: ${missing.join(", ")}` }] },
        });
    }
  }

  private checkHost(host: string | null | undefined) {
    if (host && host === this.ownHost)
      throw new AppError("validation_failed", "The host name is this service's own.", {
        details: { issues: [{ path: "host_name", message: "must not be the service's own host name" }] },
      });
  }

  /** Runs a write, turning a taken slug or host name into a 409. */
  private async write<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    try {
      return await this.db.transaction(fn);
    } catch (err) {
      const constraint = uniqueViolation(err);
      if (constraint !== null) throw taken(constraint);
      throw err;
    }
  }

  private async clash(tx: Tx, slug: string | undefined, host: string | null | undefined, except?: string) {
    const conds = [];
    if (slug) conds.push(eq(statusPages.slug, slug));
    if (host) conds.push(eq(statusPages.hostName, host));
    if (!conds.length) return;
    const [row] = await tx
      .select({ slug: statusPages.slug, host: statusPages.hostName })
      .from(statusPages)
      .where(and(or(...conds), except ? ne(statusPages.id, except) : undefined))
      .limit(1);
    if (row) throw taken(row.slug === slug ? "slug" : "host");
  }

  async create(principal: Principal, teamId: string, input: StatusPageInput) {
    await requireTeamRole(this.db, principal, teamId, "admin");
    this.checkHost(input.host_name);
    const row = await this.write(async (tx) => {
      // The team row locked: two creates at once cannot both pass the count.
      await tx.execute(sql`select 1 from teams where id = ${teamId} for update`);
      const [{ n } = { n: 0 }] = await tx
        .select({ n: sql<number>`count(*)::int` })
        .from(statusPages)
        .where(eq(statusPages.teamId, teamId));
      if (Number(n) >= STATUS_PAGE_LIMITS.perTeam) throw overLimit("status pages per team", STATUS_PAGE_LIMITS.perTeam);
      await this.checkTargets(tx, teamId, input.server_ids, input.network_names);
      await this.clash(tx, input.slug, input.host_name);
      const [r] = await tx
        .insert(statusPages)
        .values({
          teamId,
          slug: input.slug,
          title: input.title,
          description: input.description,
          hostName: input.host_name,
          published: input.published,
          serverIds: [...new Set(input.server_ids)],
          networkNames: [...new Set(input.network_names)],
          show: input.show,
          logoUrl: input.logo_url,
          accentColor: input.accent_color,
          theme: input.theme,
        })
        .returning();
      await audit(tx, { teamId, target: pageTarget(r!), after: pageFields(r!) });
      return r!;
    });
    this.changed(row);
    return pageOut(row, this.opts.publicUrl);
  }

  async list(principal: Principal, teamId: string) {
    await requireTeamRole(this.db, principal, teamId, "viewer");
    const rows = await this.db
      .select()
      .from(statusPages)
      .where(eq(statusPages.teamId, teamId))
      .orderBy(asc(statusPages.createdAt), asc(statusPages.id))
      .limit(STATUS_PAGE_LIMITS.perTeam);
    return { pages: rows.map((r) => pageOut(r, this.opts.publicUrl)) };
  }

  private async find(tx: Tx, teamId: string, pageId: string, lock = false) {
    const q = tx
      .select()
      .from(statusPages)
      .where(and(eq(statusPages.teamId, teamId), eq(statusPages.id, pageId)))
      .limit(1);
    const [row] = lock ? await q.for("update") : await q;
    if (!row) throw new AppError("not_found", "No such status page in this team.");
    return row;
  }

  async get(principal: Principal, teamId: string, pageId: string) {
    await requireTeamRole(this.db, principal, teamId, "viewer");
    return pageOut(await this.find(this.db, teamId, pageId), this.opts.publicUrl);
  }

  async update(principal: Principal, teamId: string, pageId: string, patch: StatusPagePatch) {
    await requireTeamRole(this.db, principal, teamId, "admin");
    this.checkHost(patch.host_name);
    const row = await this.write(async (tx) => {
      const before = await this.find(tx, teamId, pageId, true);
      await this.checkTargets(tx, teamId, patch.server_ids ?? [], patch.network_names ?? []);
      await this.clash(tx, patch.slug, patch.host_name, pageId);
      const [r] = await tx
        .update(statusPages)
        .set({
          ...(patch.slug !== undefined && { slug: patch.slug }),
          ...(patch.title !== undefined && { title: patch.title }),
          ...(patch.description !== undefined && { description: patch.description }),
          ...(patch.host_name !== undefined && { hostName: patch.host_name }),
          ...(patch.server_ids !== undefined && { serverIds: [...new Set(patch.server_ids)] }),
          ...(patch.network_names !== undefined && { networkNames: [...new Set(patch.network_names)] }),
          ...(patch.show !== undefined && { show: { ...before.show, ...patch.show } }),
          ...(patch.logo_url !== undefined && { logoUrl: patch.logo_url }),
          ...(patch.accent_color !== undefined && { accentColor: patch.accent_color }),
          ...(patch.theme !== undefined && { theme: patch.theme }),
          updatedAt: new Date(),
        })
        .where(eq(statusPages.id, pageId))
        .returning();
      await audit(tx, { teamId, target: pageTarget(r!), before: pageFields(before), after: pageFields(r!) });
      return { before, after: r! };
    });
    this.changed(row.before);
    this.changed(row.after);
    return pageOut(row.after, this.opts.publicUrl);
  }

  /** Publishes or unpublishes; doing what is already so still answers the page (and records it). */
  async setPublished(principal: Principal, teamId: string, pageId: string, published: boolean) {
    await requireTeamRole(this.db, principal, teamId, "admin");
    const row = await this.write(async (tx) => {
      const before = await this.find(tx, teamId, pageId, true);
      const [r] = await tx
        .update(statusPages)
        .set({ published, updatedAt: new Date() })
        .where(eq(statusPages.id, pageId))
        .returning();
      await audit(tx, {
        teamId,
        target: pageTarget(r!),
        changes: { published: { before: before.published, after: published } },
      });
      return r!;
    });
    this.changed(row);
    return pageOut(row, this.opts.publicUrl);
  }

  async remove(principal: Principal, teamId: string, pageId: string) {
    await requireTeamRole(this.db, principal, teamId, "admin");
    const row = await this.write(async (tx) => {
      const before = await this.find(tx, teamId, pageId, true);
      await tx.delete(statusPages).where(eq(statusPages.id, pageId));
      await audit(tx, { teamId, target: pageTarget(before), before: pageFields(before), after: null });
      return before;
    });
    this.changed(row);
    return { ok: true as const };
  }
}
