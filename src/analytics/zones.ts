import { sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { rowsOf } from "../db/rows";
import { type BackgroundTask, every } from "../lib/background";
import type { Logger } from "../lib/log";
import { lockTeamServers } from "../servers/team-lock";
import { rebuildCohorts } from "./aggregates";

/** How often every instance looks for a team whose kept counts are still in an old zone. */
const SWEEP_SECONDS = 60;

/**
 * Retention's kept counts (`analytics_cohort_weeks`) are in a team's time zone. When the zone
 * changes they are made again from the team's hour rows, which at 5,000,000 sessions takes longer
 * than a request should: the change answers at once and this makes them here, one team at a time
 * in its own transaction. Until then the counts stay in their old zone (`teams.cohort_zone`), the
 * ingest keeps adding to them in it, and reads in the new zone answer from the week rows
 * (docs/analytics.md, "Retention, kept"). Every instance sweeps every minute (the first a minute
 * after start), so a change made on an instance that stopped before its rebuild is still made;
 * two instances never rebuild one team twice, as the rebuild's first statement claims the
 * team's row and sets its zone.
 */
export class CohortZones implements BackgroundTask {
  readonly name = "cohort-zones";
  private running: Promise<void> | undefined;
  private again = false;
  private readonly sweep: BackgroundTask;

  constructor(
    private readonly db: Db,
    private readonly log: Logger,
  ) {
    this.sweep = every(this.name, SWEEP_SECONDS, log, () => this.catchUp());
  }

  start() {
    this.sweep.start();
  }

  /** After the sweep, a pass a zone change started is waited for too. */
  async stop() {
    await this.sweep.stop();
    await this.running;
  }

  /**
   * Makes every team's counts whose zone is not the team's again. Called after a zone change; a
   * call while a pass runs makes one more pass after it. Resolves when no team is left behind,
   * except those whose rebuild failed in this pass (logged, tried again on the next sweep).
   */
  catchUp(): Promise<void> {
    this.again = true;
    this.running ??= (async () => {
      try {
        while (this.again) {
          this.again = false;
          await this.pass();
        }
      } catch (err) {
        this.log.error("looking for teams whose retention counts are in an old zone failed", { err });
      } finally {
        this.running = undefined;
      }
    })();
    return this.running;
  }

  private async pass() {
    const failed: string[] = [];
    for (;;) {
      const skip =
        failed.length === 0
          ? sql``
          : sql`and id not in (${sql.join(
              failed.map((f) => sql`${f}::uuid`),
              sql`, `,
            )})`;
      const [team] = rowsOf<{ id: string }>(
        await this.db.execute(sql`select id::text as id from teams where cohort_zone <> time_zone ${skip} limit 1`),
      );
      if (!team) return;
      const t0 = performance.now();
      try {
        const moved = await this.db.transaction(async (tx) => {
          // The team's row first (a no-key update: rows naming the team are still written): it
          // sets the zone the rebuild below counts in, and a second instance's update finds nothing.
          const claimed = rowsOf(
            await tx.execute(sql`update teams set cohort_zone = time_zone
              where id = ${team.id} and cohort_zone <> time_zone returning 1`),
          );
          if (claimed.length === 0) return false;
          await lockTeamServers(tx, team.id, "update");
          await rebuildCohorts(tx, team.id);
          return true;
        });
        if (moved)
          this.log.info("retention counts made in the team's new zone", {
            teamId: team.id,
            ms: Math.round(performance.now() - t0),
          });
      } catch (err) {
        failed.push(team.id);
        this.log.error("making retention counts in a team's new zone failed", { teamId: team.id, err });
      }
    }
  }
}
