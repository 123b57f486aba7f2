import { and, count, eq, gt, isNull, max, min, or, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { clientApps, oidcClients, oidcGrants } from "../db/schema";
import type { Clock } from "../lib/clock";
import { NO_TEAM_EVENTS, type TeamEventSink } from "../lib/events";
import { redirectHostOf } from "../lib/redirect-host";
import type { PlayerAppGrant, PlayerGrantSource } from "../ms-auth/player-sessions";

/**
 * What websites hold for a player through "Sign in with Minecraft" (docs/oidc.md): grants whose
 * code or access token is still usable. Revoking one ends its access token at once (userinfo
 * answers 401), and the client's team hears `session.revoked`, as for a launcher session.
 */
export class OidcGrantSource implements PlayerGrantSource {
  readonly kind = "oidc_grant";

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly events: TeamEventSink = NO_TEAM_EVENTS,
  ) {}

  private live(mcUuid: string, now: Date) {
    return and(
      eq(oidcGrants.mcUuid, mcUuid),
      isNull(oidcGrants.revokedAt),
      or(gt(oidcGrants.accessExpiresAt, now), and(isNull(oidcGrants.codeUsedAt), gt(oidcGrants.codeExpiresAt, now))),
    );
  }

  async list(mcUuid: string): Promise<PlayerAppGrant[]> {
    const rows = await this.db
      .select({
        clientId: oidcGrants.clientId,
        title: clientApps.title,
        redirect: sql<string | null>`(${oidcClients.redirectUris})[1]`,
        since: min(oidcGrants.createdAt),
        lastUsedAt: max(oidcGrants.codeUsedAt),
        n: count(),
      })
      .from(oidcGrants)
      .innerJoin(clientApps, eq(clientApps.id, oidcGrants.clientId))
      .leftJoin(oidcClients, eq(oidcClients.clientId, oidcGrants.clientId))
      .where(this.live(mcUuid, this.clock.date()))
      .groupBy(oidcGrants.clientId, clientApps.title, oidcClients.redirectUris)
      .limit(500);
    return rows.map((r) => ({
      clientId: r.clientId,
      title: r.title,
      redirectHost: redirectHostOf(r.redirect),
      since: new Date(r.since!),
      lastUsedAt: r.lastUsedAt ? new Date(r.lastUsedAt) : null,
      count: r.n,
    }));
  }

  async revoke(mcUuid: string, clientId: string): Promise<number> {
    const now = this.clock.date();
    const revoked = await this.db
      .update(oidcGrants)
      .set({ revokedAt: now })
      .where(and(this.live(mcUuid, now), eq(oidcGrants.clientId, clientId)))
      .returning({ mcUsername: oidcGrants.mcUsername });
    if (revoked.length > 0)
      this.events.emit({ clientId }, "session.revoked", {
        mc_uuid: mcUuid,
        mc_username: revoked[0]!.mcUsername,
        sessions: revoked.length,
        revoked_at: now.toISOString(),
        by: "player",
      });
    return revoked.length;
  }
}
