import { and, desc, eq, gt, isNotNull, sql } from "drizzle-orm";
import type { z } from "zod";
import type { Db } from "../db/client";
import { agentEvents, announcements, bans, kicks, servers } from "../db/schema";
import { Clock } from "../lib/clock";
import type { MetricBuffer } from "../monitoring/buffer";
import { AppError } from "../lib/errors";
import { iso } from "../lib/schemas";
import { LIMITS } from "../lib/limits";
import { afterSends, NO_EVENTS, type ServerEventSink, type ServerEventType } from "../realtime/events";
import { hasPrefix, sha256 } from "../lib/secrets";
import { EVENT_ID_DAYS } from "../monitoring/retention";
import { announcementOut, liveAnnouncement } from "../servers/announcements";
import {
  activeBan,
  applyBan,
  applyUnban,
  auditBan,
  banOut,
  applyPlayerEvents,
  type PlayerEvent,
  kickOut,
  pendingKick,
} from "../servers/players";
import { rankOut, type RanksService } from "../servers/ranks";
import { type NetworksService, networkBanForAgent, networkRankOut } from "../networks/service";
import { optedOut, optOutsOfServer } from "../privacy/service";
import type { PerformanceAlerts } from "../alerts/evaluate";
import type { TAgentEvent, ZHeartbeat } from "./schemas";
import { NO_TEAM_EVENTS, type TeamEventSink } from "../lib/events";
import { afterCrashReport, recordCrashReport, recordPlannedStop, recordStarted } from "../incidents/service";

/** The one server an agent token speaks for. */
export interface AgentPrincipal {
  serverId: string;
  teamId: string;
}

/** Events stamped later than this are clamped to arrival time: a plugin's clock may run fast. */
const MAX_CLOCK_SKEW_MS = 60_000;
/** The oldest join or leave taken: the most days SAMPLE_RETENTION_DAYS may keep. */
const MAX_EVENT_AGE_DAYS = 3650;
/**
 * A heartbeat stamped further back than this is a backfill (a reading kept while the agent could
 * not reach the platform): history only, not news for the live views or the latest status.
 */
const LIVE_HEARTBEAT_MS = 60_000;

/**
 * TPS and MSPT are stored as `real`; PostgreSQL refuses a double too small for it (1e-300 is
 * "value out of range: underflow"), so they keep the precision a dashboard shows.
 */
const toReal = (v: number | undefined) => (v === undefined ? null : Math.round(v * 1000) / 1000);

export class AgentService {
  constructor(
    private readonly db: Db,
    private readonly ranks: RanksService,
    private readonly sink: ServerEventSink = NO_EVENTS,
    private readonly clock: Clock = new Clock(),
    private readonly metrics?: MetricBuffer,
    private readonly opts: { backfillDays: number; hopGapSeconds?: number } = { backfillDays: 90 },
    private readonly networks?: NetworksService,
    /** Where incident.* events go (a crash report announces its incident). */
    private readonly teamEvents: TeamEventSink = NO_TEAM_EVENTS,
    private readonly alerts?: PerformanceAlerts,
  ) {}

  /** Resolves an agent token by its SHA-256; rotating the token makes the old one unknown here. */
  async authenticate(token: string): Promise<AgentPrincipal | null> {
    if (!hasPrefix("agent", token)) return null;
    const [row] = await this.db
      .select({ serverId: servers.id, teamId: servers.teamId })
      .from(servers)
      .where(eq(servers.agentTokenHash, sha256(token)))
      .limit(1);
    return row ?? null;
  }

  /**
   * The latest values on the server's status and its agent sessions' last seen time, in one
   * statement; the reading is summed in memory and reaches the metric buckets with the next flush.
   * A reading stamped more than a minute in the past (`at`: a backfill) goes to the buckets at its
   * time and nowhere else: it is not the server's latest state, nor news for live views.
   */
  async heartbeat(serverId: string, hb: z.infer<typeof ZHeartbeat>) {
    const now = this.clock.now();
    const at = hb.at === undefined ? now : Math.min(Date.parse(hb.at), now);
    const oldest = now - this.opts.backfillDays * 86_400_000;
    if (at < oldest)
      throw new AppError("validation_failed", "The request did not match the expected shape.", {
        details: {
          issues: [
            {
              path: "at",
              message: `must be within the last ${this.opts.backfillDays} days (SAMPLE_RETENTION_DAYS): older readings would not be kept`,
            },
          ],
        },
      });
    const receivedAt = new Date(now);
    const takenAt = new Date(at);
    const ts = takenAt.toISOString();
    const v = {
      tps: toReal(hb.tps),
      mspt: toReal(hb.mspt),
      players: hb.players_online ?? null,
      memUsed: hb.memory_used_mb ?? null,
      memMax: hb.memory_max_mb ?? null,
    };
    if (at < now - LIVE_HEARTBEAT_MS) {
      this.metrics?.add(serverId, at, v);
      return { server_id: serverId, received_at: iso(receivedAt) };
    }
    // Live charts get the reading as soon as it is accepted, not after the write: the write is
    // still made (the answer waits for it), but its time on a busy database is no longer on
    // the sockets' path. A write that fails leaves one extra point on a live chart, which the
    // agent's retry (a new reading) follows anyway; it never adds to the stored history.
    this.sink.publish(
      serverId,
      "heartbeat",
      {
        tps: v.tps,
        mspt: v.mspt,
        players_online: v.players,
        memory_used_mb: v.memUsed,
        memory_max_mb: v.memMax,
      },
      takenAt,
    );
    await afterSends();
    // The agent runs and has reported no leave: its open sessions were seen now (docs/history.md).
    // Sessions an event batch holds are skipped: it is setting them itself, and waiting for it
    // while holding the status row and other sessions could deadlock with its own order.
    await this.db.execute(sql`
      with touched as (
        update player_sessions set seen_at = greatest(seen_at, ${ts}::timestamptz)
         where id in (
           select id from player_sessions
            where server_id = ${serverId} and left_at is null and source = 'agent'
            for update skip locked))
      insert into server_status (server_id, tps, mspt, agent_players_online, memory_used_mb, memory_max_mb, heartbeat_at)
      values (${serverId}, ${v.tps}::real, ${v.mspt}::real, ${v.players}::int, ${v.memUsed}::int, ${v.memMax}::int, ${ts}::timestamptz)
      on conflict (server_id) do update set
        tps = excluded.tps, mspt = excluded.mspt, agent_players_online = excluded.agent_players_online,
        memory_used_mb = excluded.memory_used_mb, memory_max_mb = excluded.memory_max_mb, heartbeat_at = excluded.heartbeat_at
       where server_status.heartbeat_at is null or server_status.heartbeat_at <= excluded.heartbeat_at`);
    this.metrics?.add(serverId, at, v);
    // Held against the alert rules once stored (no statement when no rule covers the server).
    await this.alerts?.fromHeartbeat(serverId, takenAt, v);
    return { server_id: serverId, received_at: iso(receivedAt) };
  }

  /**
   * Applies a batch in one transaction. Each event id is recorded first; an id already
   * recorded (a retried batch) is skipped, so nothing is counted twice, and a batch that
   * fails part way leaves no trace.
   */
  async events(agent: AgentPrincipal, events: TAgentEvent[]) {
    const { serverId, teamId } = agent;
    const now = Date.now();
    // A join decades back would span that many quarter hours of aggregates: one older than the
    // longest any platform keeps sessions (SAMPLE_RETENTION_DAYS' ceiling, ten years) is refused,
    // nothing of the batch kept.
    const oldest = now - MAX_EVENT_AGE_DAYS * 86_400_000;
    const stale = events.flatMap((e, i) =>
      (e.type === "join" || e.type === "leave") && e.at && Date.parse(e.at) < oldest
        ? [
            {
              path: `events.${i}.at`,
              message: `must be within the last ${MAX_EVENT_AGE_DAYS} days: no platform keeps older sessions`,
            },
          ]
        : [],
    );
    if (stale.length > 0)
      throw new AppError("validation_failed", "The request did not match the expected shape.", {
        details: { issues: stale.slice(0, 20) },
      });
    // Published only after the transaction commits, in batch order, and only what was new.
    const changes: [ServerEventType, Record<string, unknown>, Date][] = [];
    const crashes: { incidentId: string; fresh: boolean }[] = [];
    const result = await this.db.transaction(async (tx) => {
      // One batch at a time per server: two batches about the same player would otherwise race
      // on its open session (and batches are meant to apply in order anyway).
      await tx.select({ id: servers.id }).from(servers).where(eq(servers.id, serverId)).for("update");
      const inserted = await tx
        .insert(agentEvents)
        .values(events.map((e) => ({ serverId, eventId: e.event_id })))
        .onConflictDoNothing()
        .returning({ id: agentEvents.eventId });
      const fresh = new Set(inserted.map((r) => r.id));
      // Joins and leaves of players who opted out are not kept (bans still apply); their ids are
      // recorded all the same, so a retried batch stays a duplicate.
      const dropped = await optedOut(
        tx,
        serverId,
        events.filter((e) => e.type === "join" || e.type === "leave").map((e) => e.uuid),
      );
      // The joins and leaves are applied together after the loop (applyPlayerEvents: set-wise,
      // in their order per player); bans and lifts touch none of what they do.
      const moves: PlayerEvent[] = [];
      let accepted = 0;
      let ignored = 0;
      for (const e of events) {
        // delete() makes a repeated id inside one batch count once, too.
        if (!fresh.delete(e.event_id)) continue;
        if ((e.type === "join" || e.type === "leave") && dropped.has(e.uuid)) {
          ignored++;
          continue;
        }
        accepted++;
        const at = new Date(Math.min(e.at ? Date.parse(e.at) : now, now + MAX_CLOCK_SKEW_MS));
        if (e.type === "join") {
          moves.push({ type: "join", uuid: e.uuid, name: e.name, at });
          changes.push(["player_join", { uuid: e.uuid, name: e.name }, at]);
        } else if (e.type === "leave") {
          moves.push({ type: "leave", uuid: e.uuid, name: e.name, at });
          changes.push(["player_leave", { uuid: e.uuid, name: e.name ?? null }, at]);
        } else if (e.type === "ban") {
          const row = await applyBan(tx, serverId, { ...e, created: at.toISOString() }, "game", null);
          // A ban made in game is recorded with the server's agent as the actor.
          await auditBan(tx, teamId, serverId, row.uuid, row.name, row);
          changes.push(["ban_added", banOut(row), at]);
        } else if (e.type === "server_stopping") {
          await recordPlannedStop(tx, serverId, at);
        } else if (e.type === "server_started") {
          await recordStarted(tx, serverId, at);
        } else if (e.type === "crash_report") {
          crashes.push(
            await recordCrashReport(
              tx,
              teamId,
              serverId,
              { file: e.file, description: e.description, lines: e.lines },
              at,
            ),
          );
        } else {
          const lifted = await applyUnban(tx, serverId, e.uuid, "game");
          if (lifted.length) await auditBan(tx, teamId, serverId, e.uuid, lifted[0]!.name, null);
          changes.push(["ban_lifted", { uuid: e.uuid, source: "game" }, at]);
        }
      }
      await applyPlayerEvents(tx, serverId, moves, "agent", this.opts.hopGapSeconds);
      // Present only when something was dropped: the answer of a team without opt-outs is unchanged.
      return { accepted, duplicates: events.length - accepted - ignored, ...(ignored > 0 && { opted_out: ignored }) };
    });
    for (const [type, data, at] of changes) this.sink.publish(serverId, type, data, at);
    for (const c of crashes) await afterCrashReport(this.db, this.teamEvents, serverId, c);
    return result;
  }

  /**
   * What the plugin should apply: ranks, live announcements, dashboard bans, recent dashboard
   * pardons and pending kicks. A server of a network also carries the network's bans, lifts and
   * ranks (docs/networks.md): a server rank of the same name wins, and a player banned by either
   * is never in the pardons, so a lift of one ban does not undo the other.
   */
  async config(serverId: string) {
    const pardonSince = new Date(Date.now() - EVENT_ID_DAYS * 86_400_000);
    const [rankRows, announcementRows, banRows, pardonRows, kickRows, network, optOuts] = await Promise.all([
      this.ranks.forServer(serverId),
      this.db.select().from(announcements).where(liveAnnouncement(serverId)).orderBy(announcements.createdAt),
      this.db
        .select()
        .from(bans)
        .where(and(activeBan(serverId), eq(bans.origin, "dashboard")))
        .orderBy(desc(bans.createdAt))
        .limit(LIMITS.bansInAgentConfig),
      this.db
        .select({ uuid: bans.uuid, liftedAt: bans.liftedAt })
        .from(bans)
        .where(
          and(
            eq(bans.serverId, serverId),
            isNotNull(bans.liftedAt),
            eq(bans.liftOrigin, "dashboard"),
            gt(bans.liftedAt, sql`${pardonSince.toISOString()}::timestamptz`),
          ),
        )
        .orderBy(desc(bans.liftedAt))
        .limit(LIMITS.pardonsInAgentConfig),
      this.db.select().from(kicks).where(pendingKick(serverId)).orderBy(kicks.createdAt).limit(LIMITS.kicksPending),
      this.networks?.forServer(serverId, pardonSince) ?? { bans: [], pardons: [], ranks: [] },
      optOutsOfServer(this.db, serverId),
    ]);
    const serverBans = banRows.map(banOut);
    const bannedHere = new Set(serverBans.map((b) => b.uuid));
    const allBans = [...serverBans, ...network.bans.filter((b) => !bannedHere.has(b.uuid)).map(networkBanForAgent)]
      .sort((a, b) => b.created.localeCompare(a.created))
      .slice(0, LIMITS.bansInAgentConfig);
    const banned = new Set(allBans.map((b) => b.uuid));
    const pardons = [...pardonRows.map((p) => ({ uuid: p.uuid, liftedAt: p.liftedAt! })), ...network.pardons]
      .filter((p) => !banned.has(p.uuid))
      .sort((a, b) => b.liftedAt.getTime() - a.liftedAt.getTime())
      .slice(0, LIMITS.pardonsInAgentConfig);
    const rankNames = new Set(rankRows.map((r) => r.name));
    const ranks = [
      ...rankRows.map(rankOut),
      ...network.ranks.filter((r) => !rankNames.has(r.name)).map(networkRankOut),
    ].sort((a, b) => b.weight - a.weight || a.name.localeCompare(b.name));
    return {
      server_id: serverId,
      generated_at: iso(new Date()),
      ranks,
      announcements: announcementRows.map(announcementOut),
      bans: allBans,
      pardons: pardons.map((p) => ({ uuid: p.uuid, lifted_at: iso(p.liftedAt) })),
      kicks: kickRows.map(kickOut),
      opt_outs: optOuts,
    };
  }
}
