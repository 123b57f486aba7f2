import { and, count, eq, gt, isNull, max, min } from "drizzle-orm";
import type { Db } from "../db/client";
import { clientApps, clientModules, sessions } from "../db/schema";
import type { Clock } from "../lib/clock";
import { redirectHostOf } from "../lib/redirect-host";
import type { MsAuthService } from "./service";

/**
 * One app's hold on a player, from one source (launcher sessions here; an OpenID Provider's
 * grants are another). The player's apps page merges the sources by client.
 */
export interface PlayerAppGrant {
  clientId: string;
  /** The client's public title, as the consent page showed it. */
  title: string;
  /** The host (or custom scheme) the client's sign-ins return to; null when it has none. */
  redirectHost: string | null;
  /** The oldest live grant's start. */
  since: Date;
  /** When the client last used one; null when it has not since it was kept. */
  lastUsedAt: Date | null;
  /** Live sessions (or grants) behind this entry. */
  count: number;
}

/** A kind of hold an app can have on a player, listed and revoked per client. */
export interface PlayerGrantSource {
  /** Stable name, e.g. `ms_auth_session`. */
  readonly kind: string;
  list(mcUuid: string): Promise<PlayerAppGrant[]>;
  /** Ends every grant of this kind the client holds for the player; how many ended. */
  revoke(mcUuid: string, clientId: string): Promise<number>;
}

/** The launcher sessions (ms_auth) a player holds: live ones (not revoked, not expired), per client. */
export class MsAuthSessionSource implements PlayerGrantSource {
  readonly kind = "ms_auth_session";

  constructor(
    private readonly db: Db,
    private readonly msAuth: MsAuthService,
    private readonly clock: Clock,
  ) {}

  async list(mcUuid: string): Promise<PlayerAppGrant[]> {
    const rows = await this.db
      .select({
        clientId: sessions.clientId,
        title: clientApps.title,
        redirect: clientModules.postLoginRedirectUri,
        since: min(sessions.createdAt),
        lastUsedAt: max(sessions.lastUsedAt),
        n: count(),
      })
      .from(sessions)
      .innerJoin(clientApps, eq(clientApps.id, sessions.clientId))
      .leftJoin(
        clientModules,
        and(eq(clientModules.clientId, sessions.clientId), eq(clientModules.moduleKey, "ms_auth")),
      )
      .where(and(eq(sessions.mcUuid, mcUuid), isNull(sessions.revokedAt), gt(sessions.expiresAt, this.clock.date())))
      .groupBy(sessions.clientId, clientApps.title, clientModules.postLoginRedirectUri)
      .limit(500);
    return rows.map((r) => ({
      clientId: r.clientId,
      title: r.title,
      redirectHost: redirectHostOf(r.redirect),
      since: r.since!,
      lastUsedAt: r.lastUsedAt,
      count: r.n,
    }));
  }

  revoke(mcUuid: string, clientId: string): Promise<number> {
    return this.msAuth.revokeForPlayer(mcUuid, clientId);
  }
}
