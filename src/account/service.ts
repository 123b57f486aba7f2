import type { PlayerAppGrant, PlayerGrantSource } from "../ms-auth/player-sessions";

/** One app on the player's page: what every source holds for it, merged. */
export interface PlayerApp extends PlayerAppGrant {
  /** The sources with a live grant for it (e.g. `ms_auth_session`). */
  kinds: string[];
}

/**
 * The player's view of the apps that hold a session or grant for them, over every source
 * (launcher sessions and websites' OpenID Connect grants), and the
 * revocation that ends all of an app's holds at once.
 */
export class PlayerAppsService {
  constructor(private readonly sources: readonly PlayerGrantSource[]) {}

  async list(mcUuid: string): Promise<PlayerApp[]> {
    const byClient = new Map<string, PlayerApp>();
    for (const source of this.sources) {
      for (const g of await source.list(mcUuid)) {
        const seen = byClient.get(g.clientId);
        if (!seen) {
          byClient.set(g.clientId, { ...g, kinds: [source.kind] });
          continue;
        }
        if (g.since < seen.since) seen.since = g.since;
        if (g.lastUsedAt && (!seen.lastUsedAt || g.lastUsedAt > seen.lastUsedAt)) seen.lastUsedAt = g.lastUsedAt;
        seen.count += g.count;
        seen.redirectHost ??= g.redirectHost;
        if (!seen.kinds.includes(source.kind)) seen.kinds.push(source.kind);
      }
    }
    // Most recently used first; never-used ones by their start.
    return [...byClient.values()].sort(
      (a, b) => (b.lastUsedAt ?? b.since).getTime() - (a.lastUsedAt ?? a.since).getTime(),
    );
  }

  /** Ends every hold `clientId` has on the player, in every source; how many ended. */
  async revoke(mcUuid: string, clientId: string): Promise<number> {
    let n = 0;
    for (const source of this.sources) n += await source.revoke(mcUuid, clientId);
    return n;
  }
}
