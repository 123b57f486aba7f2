import { and, count, eq, inArray, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { clientApps, clientModules, teams } from "../db/schema";
import { BoundedCache } from "../lib/bounded-cache";
import { AppError } from "../lib/errors";
import { NO_TEAM_EVENTS, type TeamEventSink } from "../lib/events";
import { LIMITS, overLimit } from "../lib/limits";
import { iso } from "../lib/schemas";
import { newSecret, safeEqual, sha256 } from "../lib/secrets";
import { requireResourceRole, requireTeamRole } from "../teams/access";
import type { Principal, Role } from "../auth/principal";
import type { Bus } from "../realtime/bus";
import { audit } from "../audit/entry";

type AppRow = typeof clientApps.$inferSelect;
type ModuleRow = typeof clientModules.$inferSelect;

/** A client whose credentials were checked, with its ms_auth module (null when not enabled). */
export interface VerifiedClient {
  app: AppRow;
  msAuth: ModuleRow | null;
}

export const MS_AUTH = "ms_auth";
const NOT_FOUND = "No client with this id in your teams.";
const BAD_CLIENT = "The client credentials are invalid.";
/** Compared against when the client id is unknown, so both failures cost the same. */
const DUMMY_HASH = sha256("no such client");

const appOut = (a: AppRow, modules: string[]) => ({
  client_id: a.id,
  team_id: a.teamId,
  name: a.name,
  title: a.title,
  description: a.description,
  logo_url: a.logoUrl,
  modules: modules.filter((m): m is "ms_auth" => m === MS_AUTH),
  created_at: iso(a.createdAt),
  updated_at: iso(a.updatedAt),
  secret_rotated_at: iso(a.secretRotatedAt),
});

/** What the audit log records of a client: its public settings, never its secret. */
const clientFields = (a: AppRow) => ({
  name: a.name,
  title: a.title,
  description: a.description,
  logo_url: a.logoUrl,
});
const clientTarget = (a: AppRow) => ({ type: "client", id: a.id, name: a.name });

const moduleOut = (m: ModuleRow) => ({
  module_key: "ms_auth" as const,
  post_login_redirect_uri: m.postLoginRedirectUri,
  created_at: iso(m.createdAt),
  updated_at: iso(m.updatedAt),
});

/** How long a cached client may be used without hearing of a change: the bound if a notice is lost. */
export const CLIENT_CACHE_TTL_MS = 10_000;

export class ClientsService {
  /**
   * Client id -> the client row (secret hash included) and its ms_auth module, so a launcher's
   * calls verify credentials without a query. Every change (rotation, module, edit, deletion)
   * is announced on the bus and drops the entry on every instance.
   */
  private readonly cache: BoundedCache<string, VerifiedClient>;
  private readonly credentialQuery;

  constructor(
    private readonly db: Db,
    private readonly bus?: Bus,
    cache: { maxEntries: number; ttlMs: number } = { maxEntries: 10_000, ttlMs: CLIENT_CACHE_TTL_MS },
    private readonly events: TeamEventSink = NO_TEAM_EVENTS,
  ) {
    this.cache = new BoundedCache(cache.maxEntries, cache.ttlMs);
    this.credentialQuery = db
      .select({ app: clientApps, msAuth: clientModules })
      .from(clientApps)
      .leftJoin(clientModules, and(eq(clientModules.clientId, clientApps.id), eq(clientModules.moduleKey, MS_AUTH)))
      .where(eq(clientApps.id, sql.placeholder("id")))
      .limit(1)
      .prepare("client_with_ms_auth");
    bus?.onNotice((n) => {
      if (n.type === "client_changed") this.cache.delete(n.client_id);
      else if (n.type === "team_clients_gone") this.cache.deleteWhere((c) => c.app.teamId === n.team_id);
    });
  }

  async create(
    principal: Principal,
    input: { team_id: string; name: string; title: string; description: string; logo_url?: string },
  ) {
    await requireTeamRole(this.db, principal, input.team_id, "admin");
    const secret = newSecret("client_secret");
    const row = await this.db.transaction(async (tx) => {
      await tx.select({ id: teams.id }).from(teams).where(eq(teams.id, input.team_id)).for("update");
      const [apps] = await tx.select({ n: count() }).from(clientApps).where(eq(clientApps.teamId, input.team_id));
      if (apps!.n >= LIMITS.appsPerTeam) throw overLimit("client applications per team", LIMITS.appsPerTeam);
      const [r] = await tx
        .insert(clientApps)
        .values({
          teamId: input.team_id,
          name: input.name,
          title: input.title,
          description: input.description,
          logoUrl: input.logo_url ?? null,
          secretHash: sha256(secret),
        })
        .returning();
      await audit(tx, { teamId: r!.teamId, target: clientTarget(r!), after: clientFields(r!) });
      return r;
    });
    return { app: appOut(row!, []), client_secret: secret };
  }

  async list(principal: Principal, teamId: string) {
    await requireTeamRole(this.db, principal, teamId, "viewer");
    const apps = await this.db
      .select()
      .from(clientApps)
      .where(eq(clientApps.teamId, teamId))
      .orderBy(clientApps.createdAt);
    const modules = apps.length
      ? await this.db
          .select()
          .from(clientModules)
          .where(
            inArray(
              clientModules.clientId,
              apps.map((a) => a.id),
            ),
          )
      : [];
    return {
      apps: apps.map((a) =>
        appOut(
          a,
          modules.filter((m) => m.clientId === a.id).map((m) => m.moduleKey),
        ),
      ),
    };
  }

  async get(principal: Principal, clientId: string) {
    const app = await this.authorized(principal, clientId, "viewer");
    return appOut(app, await this.moduleKeys(clientId));
  }

  async update(
    principal: Principal,
    input: { client_id: string; name?: string; title?: string; description?: string; logo_url?: string | null },
  ) {
    const before = await this.authorized(principal, input.client_id, "admin");
    const { client_id, ...patch } = input;
    const row = await this.db.transaction(async (tx) => {
      const [r] = await tx
        .update(clientApps)
        .set({
          ...(patch.name !== undefined && { name: patch.name }),
          ...(patch.title !== undefined && { title: patch.title }),
          ...(patch.description !== undefined && { description: patch.description }),
          ...(patch.logo_url !== undefined && { logoUrl: patch.logo_url }),
          updatedAt: new Date(),
        })
        .where(eq(clientApps.id, client_id))
        .returning();
      await audit(tx, {
        teamId: r!.teamId,
        target: clientTarget(r!),
        before: clientFields(before),
        after: clientFields(r!),
      });
      return r;
    });
    await this.changed(client_id);
    return appOut(row!, await this.moduleKeys(client_id));
  }

  async remove(principal: Principal, clientId: string) {
    const app = await this.authorized(principal, clientId, "admin");
    await this.db.transaction(async (tx) => {
      await tx.delete(clientApps).where(eq(clientApps.id, clientId));
      await audit(tx, { teamId: app.teamId, target: clientTarget(app), before: clientFields(app) });
    });
    await this.changed(clientId);
    return { ok: true as const };
  }

  /** A new secret, shown once; the old one stops working at once. */
  async rotateSecret(principal: Principal, clientId: string) {
    const app = await this.authorized(principal, clientId, "admin");
    const secret = newSecret("client_secret");
    const row = await this.db.transaction(async (tx) => {
      const [r] = await tx
        .update(clientApps)
        .set({ secretHash: sha256(secret), secretRotatedAt: new Date(), updatedAt: new Date() })
        .where(eq(clientApps.id, clientId))
        .returning();
      await audit(tx, {
        teamId: app.teamId,
        target: clientTarget(app),
        before: { secret_rotated_at: iso(app.secretRotatedAt) },
        after: { secret_rotated_at: iso(r!.secretRotatedAt) },
      });
      return r;
    });
    await this.changed(clientId);
    this.events.emit({ clientId }, "client.secret_rotated", { rotated_at: row!.secretRotatedAt.toISOString() });
    return { app: appOut(row!, await this.moduleKeys(clientId)), client_secret: secret };
  }

  async enableMsAuth(principal: Principal, clientId: string, redirectUri: string) {
    const app = await this.authorized(principal, clientId, "admin");
    const now = new Date();
    const row = await this.db.transaction(async (tx) => {
      const [before] = await tx
        .select({ uri: clientModules.postLoginRedirectUri })
        .from(clientModules)
        .where(and(eq(clientModules.clientId, clientId), eq(clientModules.moduleKey, MS_AUTH)))
        .for("update");
      const [r] = await tx
        .insert(clientModules)
        .values({ clientId, moduleKey: MS_AUTH, postLoginRedirectUri: redirectUri })
        .onConflictDoUpdate({
          target: [clientModules.clientId, clientModules.moduleKey],
          set: { postLoginRedirectUri: redirectUri, updatedAt: now },
        })
        .returning();
      await audit(tx, {
        teamId: app.teamId,
        target: clientTarget(app),
        before: before ? { ms_auth: true, post_login_redirect_uri: before.uri } : { ms_auth: false },
        after: { ms_auth: true, post_login_redirect_uri: redirectUri },
      });
      return r;
    });
    await this.changed(clientId);
    return moduleOut(row!);
  }

  async getMsAuth(principal: Principal, clientId: string) {
    await this.authorized(principal, clientId, "viewer");
    const row = await this.msAuthModule(clientId);
    if (!row) throw new AppError("not_found", "The ms_auth module is not enabled for this client.");
    return moduleOut(row);
  }

  async disableMsAuth(principal: Principal, clientId: string) {
    const app = await this.authorized(principal, clientId, "admin");
    await this.db.transaction(async (tx) => {
      const [gone] = await tx
        .delete(clientModules)
        .where(and(eq(clientModules.clientId, clientId), eq(clientModules.moduleKey, MS_AUTH)))
        .returning();
      if (!gone) throw new AppError("not_found", "The ms_auth module is not enabled for this client.");
      await audit(tx, {
        teamId: app.teamId,
        target: clientTarget(app),
        before: { ms_auth: true, post_login_redirect_uri: gone.postLoginRedirectUri },
        after: { ms_auth: false },
      });
    });
    await this.changed(clientId);
    return { ok: true as const };
  }

  msAuthModule(clientId: string): Promise<ModuleRow | undefined> {
    return this.db
      .select()
      .from(clientModules)
      .where(and(eq(clientModules.clientId, clientId), eq(clientModules.moduleKey, MS_AUTH)))
      .limit(1)
      .then((r) => r[0]);
  }

  /** Client credentials as a launcher backend presents them; a mismatch is a 401. One query, module included. */
  async verify(clientId: string, secret: string): Promise<VerifiedClient> {
    const found = await this.withMsAuth(clientId);
    const ok = safeEqual(sha256(secret), found?.app.secretHash ?? DUMMY_HASH);
    if (!found || !ok) throw new AppError("invalid_client", BAD_CLIENT);
    return found;
  }

  /** A client and its ms_auth module (null when not enabled); no credentials checked. Cached. */
  async withMsAuth(clientId: string): Promise<VerifiedClient | null> {
    const hit = this.cache.get(clientId);
    if (hit) return hit;
    const epoch = this.cache.epoch;
    const [found] = await this.credentialQuery.execute({ id: clientId });
    if (!found) return null;
    this.cache.set(clientId, found, epoch);
    return found;
  }

  /** Every client of a team is gone (the team was deleted): no instance may keep one cached. */
  async teamDeleted(teamId: string) {
    this.cache.deleteWhere((c) => c.app.teamId === teamId);
    await this.announce({ type: "team_clients_gone", team_id: teamId });
  }

  private async changed(clientId: string) {
    this.cache.delete(clientId);
    await this.announce({ type: "client_changed", client_id: clientId });
  }

  private async announce(notice: Parameters<Bus["publishNotice"]>[0]) {
    // The change is already stored: a lost notice only leaves other instances on their copy
    // until its TTL, so it must not turn a completed change into an error.
    await this.bus?.publishNotice(notice).catch(() => undefined);
  }

  private async authorized(principal: Principal, clientId: string, min: Role): Promise<AppRow> {
    const [app] = await this.db.select().from(clientApps).where(eq(clientApps.id, clientId)).limit(1);
    await requireResourceRole(this.db, principal, app?.teamId, min, NOT_FOUND);
    return app!;
  }

  private async moduleKeys(clientId: string) {
    const rows = await this.db
      .select({ key: clientModules.moduleKey })
      .from(clientModules)
      .where(eq(clientModules.clientId, clientId));
    return rows.map((r) => r.key);
  }
}
