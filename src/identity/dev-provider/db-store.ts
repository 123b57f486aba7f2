import { lt, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { devIdpGrants } from "../../db/schema";
import type { GrantStore } from "./grants";

const PRUNE_EVERY_MS = 60_000;

/** The marks in the database, so every instance of the service sees each one. */
export class DbGrantStore implements GrantStore {
  private lastPrune = 0;
  private readonly claimQuery;

  constructor(
    private readonly db: Db,
    private readonly now: () => number = Date.now,
  ) {
    // The primary key decides: of two instances claiming at once, one insert wins.
    this.claimQuery = db
      .insert(devIdpGrants)
      .values({ key: sql.placeholder("key"), expiresAt: sql.placeholder("expiresAt") })
      .onConflictDoNothing()
      .returning({ key: devIdpGrants.key })
      .prepare("dev_idp_grant_claim");
  }

  async claim(key: string, expiresAt: number): Promise<boolean> {
    await this.prune();
    const rows = await this.claimQuery.execute({ key, expiresAt: new Date(expiresAt) });
    return rows.length === 1;
  }

  /** Expired marks guard nothing (their tokens no longer verify); dropped at most once a minute. */
  private async prune() {
    const now = this.now();
    if (now - this.lastPrune < PRUNE_EVERY_MS) return;
    this.lastPrune = now;
    await this.db.delete(devIdpGrants).where(lt(devIdpGrants.expiresAt, new Date(now)));
  }
}
