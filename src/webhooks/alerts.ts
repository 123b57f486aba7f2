import { sql } from "drizzle-orm";
import type { Db } from "../db/client";
import type { TeamEventSink } from "../lib/events";
import { rowsOf } from "../db/rows";
import type { PingResult } from "../monitoring/ping";
import type { ServerEventSink, ServerEventType } from "../realtime/events";
import { PINGER, rawEntryOut } from "../audit/entry";
import { announceIncident, announceResolved } from "../incidents/service";
import { serversUnderMaintenance } from "../maintenance/windows";
import { PLANNED_STOP_SECONDS } from "../monitoring/planned";

/**
 * Turns what the platform measures into changes worth telling a team: a server down after
 * several failed pings in a row (one lost ping is not an outage) and up again, an agent gone
 * silent and back. The state lives in `server_alert_state`, updated in the statement that
 * decides, so instances sharing a database report each change once.
 */
export class ServerAlerts {
  constructor(
    private readonly db: Db,
    private readonly events: TeamEventSink,
    private readonly opts: { downAfterFailures: number; agentSilenceSeconds: number },
  ) {}

  /**
   * Feeds a batch of stored ping results (a monitoring consumer), at most one per server, in ONE
   * statement: a statement per ping was most of the pinger's database work.
   */
  async fromSamples(all: readonly { serverId: string; result: PingResult; changed: boolean }[]) {
    // Up now and up at the check before: that check reset the count (only the pinger writes
    // `online`), so there is nothing to change; most checks of a healthy fleet stop here.
    const samples = all.filter((s) => !s.result.online || s.changed);
    if (samples.length === 0) return;
    const input = JSON.stringify(
      samples.map((s) => ({ server_id: s.serverId, online: s.result.online, reason: s.result.reason })),
    );
    const byServer = new Map(samples.map((s) => [s.serverId, s.result]));
    // A server deleted since its sample was stored is skipped rather than failing the batch. A
    // change of state is written to the audit log (the pinger as the actor) in the same statement.
    const result = await this.db.execute(sql`
      with input as (
        select x.server_id, x.online, x.reason from json_to_recordset(${input}::json) as x(server_id uuid, online boolean, reason text)
         where exists (select 1 from servers s where s.id = x.server_id)),
      next as (
        select i.server_id, i.online, i.reason, coalesce(p.down, false) as was_down,
               case when i.online then 0 else coalesce(p.failed_pings, 0) + 1 end as failed_pings
          from input i left join server_alert_state p on p.server_id = i.server_id),
      up as (
        insert into server_alert_state as s (server_id, failed_pings, down)
        select server_id, failed_pings, not online and (was_down or failed_pings >= ${this.opts.downAfterFailures})
          from next
         order by server_id
        on conflict (server_id) do update set failed_pings = excluded.failed_pings, down = excluded.down
        returning s.server_id, s.failed_pings, s.down),
      flipped as (
        select up.server_id, up.failed_pings, up.down, n.reason from up join next n on n.server_id = up.server_id
         where up.down <> n.was_down),
      logged as (
        insert into audit_log (team_id, actor_kind, actor_name, action, target_type, target_id, target_name, server_id, changes)
        select s.team_id, 'system', ${PINGER}, case when f.down then 'server.down' else 'server.up' end, 'server', s.id::text, s.name, s.id,
               jsonb_build_object('down', jsonb_build_object('before', not f.down, 'after', f.down))
               || case when f.down then jsonb_build_object('down_reason', jsonb_build_object('before', null, 'after', f.reason)) else '{}'::jsonb end
          from flipped f join servers s on s.id = f.server_id
        returning *)
      select f.server_id, f.failed_pings, f.down, to_jsonb(l.*) as entry from flipped f left join logged l on l.server_id = f.server_id`);
    const rows = rowsOf<{ server_id: string; failed_pings: number; down: boolean; entry: unknown }>(result);
    for (const row of rows) {
      if (!row.entry) continue;
      const entry = rawEntryOut(typeof row.entry === "string" ? JSON.parse(row.entry) : (row.entry as never));
      this.events.emit({ teamId: entry.team_id }, "audit.entry", { ...entry });
    }
    if (rows.length === 0) return;
    const held = await this.hold(rows.filter((r) => r.down).map((r) => r.server_id));
    const wasHeld = await this.release(rows.filter((r) => !r.down).map((r) => r.server_id));
    for (const row of rows) {
      const r = byServer.get(row.server_id)!;
      if (row.down) {
        if (held.has(row.server_id)) continue;
        this.events.emit({ serverId: row.server_id }, "server.down", {
          failed_pings: row.failed_pings,
          error: r.error ?? null,
          reason: r.reason,
        });
        await this.announceOpen(row.server_id);
      } else {
        if (wasHeld.has(row.server_id)) continue;
        this.events.emit({ serverId: row.server_id }, "server.up", {
          latency_ms: r.latencyMs,
          players_online: r.playersOnline,
        });
        const last = rowsOf<{ id: string }>(
          await this.db.execute(sql`
            select id from server_incidents where server_id = ${row.server_id} and kind <> 'manual' and ended_at is not null
             order by started_at desc limit 1`),
        )[0];
        if (last) await announceResolved(this.db, this.events, last.id);
      }
    }
  }

  /** `incident.opened` for the server's open down period, if it has one not yet announced. */
  private async announceOpen(serverId: string) {
    const open = rowsOf<{ id: string }>(
      await this.db.execute(
        sql`select id from server_incidents where server_id = ${serverId} and kind <> 'manual' and ended_at is null`,
      ),
    )[0];
    if (open) await announceIncident(this.db, this.events, open.id);
  }

  /**
   * Of servers just confirmed down, those whose alerts are held, marked so: a stop the server
   * announced (never sent) or a maintenance window running (sent when it ends, if still down).
   */
  private async hold(serverIds: string[]): Promise<Set<string>> {
    if (serverIds.length === 0) return new Set();
    const planned = new Set(
      rowsOf<{ server_id: string }>(
        await this.db.execute(sql`
          select server_id from server_alert_state
           where server_id in (select value::uuid from json_array_elements_text(${JSON.stringify(serverIds)}::json))
             and planned_stop_at > now() - make_interval(secs => ${PLANNED_STOP_SECONDS})`),
      ).map((r) => r.server_id),
    );
    const maintenance = await serversUnderMaintenance(
      this.db,
      serverIds.filter((id) => !planned.has(id)),
    );
    const held = [
      ...[...planned].map((id) => ({ server_id: id, held_for: "planned" })),
      ...[...maintenance.keys()].map((id) => ({ server_id: id, held_for: "maintenance" })),
    ];
    if (held.length > 0)
      await this.db.execute(sql`
        update server_alert_state a set held_for = x.held_for
          from json_to_recordset(${JSON.stringify(held)}::json) as x(server_id uuid, held_for text)
         where a.server_id = x.server_id`);
    return new Set(held.map((h) => h.server_id));
  }

  /** Of servers just found up again, those whose down was held (no `server.up` either); clears the hold and any planned stop. */
  private async release(serverIds: string[]): Promise<Set<string>> {
    if (serverIds.length === 0) return new Set();
    const result = await this.db.execute(sql`
      update server_alert_state a set held_for = null, planned_stop_at = null
        from server_alert_state old
       where old.server_id = a.server_id
         and a.server_id in (select value::uuid from json_array_elements_text(${JSON.stringify(serverIds)}::json))
      returning a.server_id, old.held_for`);
    return new Set(
      rowsOf<{ server_id: string; held_for: string | null }>(result)
        .filter((r) => r.held_for !== null)
        .map((r) => r.server_id),
    );
  }

  /**
   * Servers still down whose alert a maintenance window held, now that no window runs: their
   * `server.down` and `incident.opened` go out now (each claimed in one statement, so once).
   */
  async releaseHeld() {
    const candidates = rowsOf<{ server_id: string }>(
      await this.db.execute(sql`select server_id from server_alert_state where held_for = 'maintenance' and down`),
    ).map((r) => r.server_id);
    if (candidates.length === 0) return;
    const still = await serversUnderMaintenance(this.db, candidates);
    for (const serverId of candidates) {
      if (still.has(serverId)) continue;
      const [claimed] = rowsOf<{ failed_pings: number; error: string | null; reason: string | null }>(
        await this.db.execute(sql`
          update server_alert_state a set held_for = null
            from server_status st
           where a.server_id = ${serverId} and a.held_for = 'maintenance' and a.down and st.server_id = a.server_id
          returning a.failed_pings, st.error, st.down_reason as reason`),
      );
      if (!claimed) continue;
      this.events.emit({ serverId }, "server.down", {
        failed_pings: claimed.failed_pings,
        error: claimed.error,
        reason: claimed.reason,
      });
      await this.announceOpen(serverId);
    }
  }

  /**
   * Compares every agent's last heartbeat with the silence limit and reports each server whose
   * answer changed. Only a change of a known state is reported: a server's first heartbeat
   * is not an `agent.online`.
   */
  async sweepAgents() {
    const result = await this.db.execute(sql`
      with cur as (
        select server_id, heartbeat_at, heartbeat_at < now() - make_interval(secs => ${this.opts.agentSilenceSeconds}) as silent
          from server_status where heartbeat_at is not null),
      changed as (
        insert into server_alert_state as s (server_id, agent_offline)
        select server_id, silent from cur
        on conflict (server_id) do update set agent_offline = excluded.agent_offline
         where s.agent_offline is distinct from excluded.agent_offline
        returning s.server_id, s.agent_offline, (xmax = 0) as inserted)
      select c.server_id, c.agent_offline, c.inserted, cur.heartbeat_at from changed c join cur using (server_id)`);
    for (const r of rowsOf<{
      server_id: string;
      agent_offline: boolean;
      inserted: boolean;
      heartbeat_at: Date | string;
    }>(result)) {
      if (r.inserted && !r.agent_offline) continue;
      this.events.emit({ serverId: r.server_id }, r.agent_offline ? "agent.offline" : "agent.online", {
        last_heartbeat_at: new Date(r.heartbeat_at).toISOString(),
        silence_seconds: this.opts.agentSilenceSeconds,
      });
    }
  }
}

/**
 * The server event sink the players and agent services publish to, passed through to the
 * live view, with bans and pardons (from the dashboard or from the game) also sent as
 * `player.banned` / `player.unbanned`.
 */
export function withBanEvents(inner: ServerEventSink, events: TeamEventSink): ServerEventSink {
  return {
    publish(serverId: string, type: ServerEventType, data: Record<string, unknown>, ts?: Date) {
      inner.publish(serverId, type, data, ts);
      if (type === "ban_added") events.emit({ serverId }, "player.banned", data);
      else if (type === "ban_lifted") events.emit({ serverId }, "player.unbanned", data);
    },
  };
}
