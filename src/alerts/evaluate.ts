import { sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { rowsOf } from "../db/rows";
import type { TeamEventSink } from "../lib/events";
import type { Logger } from "../lib/log";
import type { AlertMetric } from "./schemas";

/** One metric value of one server, at the time it was read (a heartbeat's or a ping's). */
export interface Reading {
  serverId: string;
  metric: AlertMetric;
  value: number;
  at: Date;
}

/**
 * Whether alerts of a server are held at a time: the one call site where maintenance windows
 * plug in (src/services.ts passes it). A held rule still fires in the database; its notice waits
 * until a reading finds it firing outside the hold, and a recovery is told only of a firing that
 * was told.
 */
export type HoldDuring = (serverId: string, at: Date) => Promise<boolean>;
export const NEVER_HELD: HoldDuring = async () => false;

/**
 * How long the list of servers with rules is trusted before it is read again: a rule made on
 * another instance sharing the database takes effect within this time (at once on the instance
 * that made it).
 */
export const COVERED_REFRESH_MS = 5000;
/** Readings further apart than this start a rule's duration over: an agent silent for an hour is not "below for an hour". */
const MAX_GAP_SECONDS = 300;

interface Transition {
  rule_id: string;
  server_id: string;
  rule_name: string;
  network_name: string | null;
  metric: AlertMetric;
  op: "below" | "above";
  threshold: number;
  margin: number;
  duration_seconds: number;
  value: number;
  at: Date | string;
  firing: boolean;
  notified: boolean;
  flipped: boolean;
  since: Date | string | null;
}

const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());

/**
 * Performance alerts (docs/alerts.md): readings of TPS, MSPT, memory share and players online
 * are held against the rules that cover their server at ingest. Where each rule stands per server
 * is in `alert_rule_state`, decided in the statement that updates it (the whole rule is in the
 * upsert's SET, which reads the row under its lock): instances sharing a database report each
 * change once. A reading of a server no rule covers costs no statement.
 */
export class PerformanceAlerts {
  /** Server id -> the metrics some enabled rule watches on it. */
  private covered = new Map<string, Set<AlertMetric>>();
  private coveredAt = Number.NEGATIVE_INFINITY;
  private loading: Promise<void> | undefined;

  constructor(
    private readonly db: Db,
    private readonly events: TeamEventSink,
    private readonly log: Logger,
    private readonly holdDuring: HoldDuring = NEVER_HELD,
  ) {}

  /** After a rule changes on this instance: the next reading reads the list again. */
  invalidate() {
    this.coveredAt = Number.NEGATIVE_INFINITY;
  }

  private async coverage(): Promise<Map<string, Set<AlertMetric>>> {
    if (performance.now() - this.coveredAt < COVERED_REFRESH_MS) return this.covered;
    this.loading ??= (async () => {
      const started = performance.now();
      const rows = rowsOf<{ server_id: string; metric: AlertMetric }>(
        await this.db.execute(sql`
          select distinct s.id as server_id, r.metric
            from alert_rules r
            join servers s on s.team_id = r.team_id
             and (s.id = r.server_id or (r.network_name is not null and s.kind = 'network' and s.network_name = r.network_name))
           where r.enabled`),
      );
      const next = new Map<string, Set<AlertMetric>>();
      for (const r of rows) {
        const set = next.get(r.server_id) ?? new Set<AlertMetric>();
        set.add(r.metric);
        next.set(r.server_id, set);
      }
      this.covered = next;
      this.coveredAt = started;
    })().finally(() => {
      this.loading = undefined;
    });
    await this.loading;
    return this.covered;
  }

  /** The agent's heartbeat: TPS, MSPT and memory share, when reported. */
  fromHeartbeat(
    serverId: string,
    at: Date,
    v: { tps: number | null; mspt: number | null; memUsed: number | null; memMax: number | null },
  ) {
    const readings: Reading[] = [];
    if (v.tps !== null) readings.push({ serverId, metric: "tps", value: v.tps, at });
    if (v.mspt !== null) readings.push({ serverId, metric: "mspt", value: v.mspt, at });
    if (v.memUsed !== null && v.memMax !== null && v.memMax > 0)
      readings.push({ serverId, metric: "memory_share", value: v.memUsed / v.memMax, at });
    return this.evaluate(readings);
  }

  /** The pinger's stored checks (a monitoring consumer): players online of the servers that answered. */
  fromSamples(samples: readonly { serverId: string; result: { playersOnline: number | null }; at?: Date }[]) {
    const at = new Date();
    return this.evaluate(
      samples.flatMap((s) =>
        s.result.playersOnline === null
          ? []
          : [
              {
                serverId: s.serverId,
                metric: "players_online" as const,
                value: s.result.playersOnline,
                at: s.at ?? at,
              },
            ],
      ),
    );
  }

  /**
   * Holds readings against the rules; never throws (a failure is logged: the reading itself is
   * stored already). Resolves once the notices are queued.
   */
  async evaluate(all: Reading[]): Promise<void> {
    if (all.length === 0) return;
    try {
      const covered = await this.coverage();
      const readings = all.filter((r) => covered.get(r.serverId)?.has(r.metric));
      if (readings.length > 0) await this.decide(readings);
    } catch (err) {
      this.log.error("evaluating alert rules failed", { err });
    }
  }

  private async decide(readings: Reading[]) {
    const input = JSON.stringify(
      readings.map((r) => ({ server_id: r.serverId, metric: r.metric, value: r.value, at: r.at.toISOString() })),
    );
    // bad: past the threshold; good: back past threshold and margin. In between (the margin) a
    // firing rule neither recovers nor restarts its count towards recovery, a quiet one does
    // not count towards firing. The insert's breaching_since / recovering_since carry "this
    // reading is bad / good" into the update, which decides from the row as locked.
    const result = await this.db.execute(sql`
      with input as (
        select x.server_id, x.metric, x.value, x.at
          from json_to_recordset(${input}::json) as x(server_id uuid, metric text, value float8, at timestamptz)),
      matched as (
        select distinct on (r.id, i.server_id) r.id as rule_id, i.server_id, i.value, i.at, r.duration_seconds,
               case when r.op = 'below' then i.value < r.threshold else i.value > r.threshold end as bad,
               case when r.op = 'below' then i.value >= r.threshold + r.margin else i.value <= r.threshold - r.margin end as good
          from input i
          join servers s on s.id = i.server_id
          join alert_rules r on r.enabled and r.metric = i.metric and r.team_id = s.team_id
           and (r.server_id = s.id or (r.network_name is not null and s.kind = 'network' and r.network_name = s.network_name))
         order by r.id, i.server_id, i.at desc),
      up as (
        insert into alert_rule_state as st
               (rule_id, server_id, last_at, last_value, breaching_since, recovering_since, firing, flipped_at, notified)
        select rule_id, server_id, at, value,
               case when bad then at end, case when good then at end,
               bad and duration_seconds = 0, case when bad and duration_seconds = 0 then at end, false
          from matched
         order by rule_id, server_id
        on conflict (rule_id, server_id) do update
           set (last_at, last_value, breaching_since, recovering_since, firing, flipped_at, notified) = (
             select excluded.last_at, excluded.last_value, n.b, n.r, n.f,
                    case when n.f <> st.firing then excluded.last_at else st.flipped_at end,
                    case when n.f and not st.firing then false else st.notified end
               from (select x.b, x.r,
                            case when st.firing then not (x.r is not null and excluded.last_at - x.r >= x.d)
                                 else x.b is not null and excluded.last_at - x.b >= x.d end as f
                       from (select case when excluded.breaching_since is null then null
                                         else coalesce(case when fresh then st.breaching_since end, excluded.breaching_since) end as b,
                                    case when excluded.recovering_since is null then null
                                         else coalesce(case when fresh then st.recovering_since end, excluded.recovering_since) end as r,
                                    make_interval(secs => (select duration_seconds from alert_rules where id = st.rule_id)) as d
                               from (select excluded.last_at - st.last_at <= make_interval(secs => ${MAX_GAP_SECONDS}) as fresh) g) x) n)
         where st.last_at < excluded.last_at
        returning st.rule_id, st.server_id, st.last_value, st.last_at, st.firing, st.notified,
                  st.flipped_at is not distinct from st.last_at as flipped,
                  case when st.firing then st.breaching_since else st.recovering_since end as since)
      select up.rule_id, up.server_id, r.name as rule_name, r.network_name, r.metric, r.op, r.threshold, r.margin,
             r.duration_seconds, up.last_value as value, up.last_at as at, up.firing, up.notified, up.flipped, up.since
        from up join alert_rules r on r.id = up.rule_id
       where up.flipped or (up.firing and not up.notified)`);
    const rows = rowsOf<Transition>(result);
    if (rows.length === 0) return;
    const toTell: Transition[] = [];
    for (const t of rows) {
      if (t.firing) {
        if (!(await this.holdDuring(t.server_id, new Date(t.at)))) toTell.push(t);
      } else if (t.notified) this.notify("alert.resolved", t);
    }
    if (toTell.length === 0) return;
    // Once per firing across instances: only the statement that flips `notified` tells.
    const keys = JSON.stringify(toTell.map((t) => ({ rule_id: t.rule_id, server_id: t.server_id })));
    const told = new Set(
      rowsOf<{ rule_id: string; server_id: string }>(
        await this.db.execute(sql`
          update alert_rule_state st set notified = true
            from json_to_recordset(${keys}::json) as k(rule_id uuid, server_id uuid)
           where st.rule_id = k.rule_id and st.server_id = k.server_id and st.firing and not st.notified
          returning st.rule_id, st.server_id`),
      ).map((r) => `${r.rule_id}/${r.server_id}`),
    );
    for (const t of toTell) if (told.has(`${t.rule_id}/${t.server_id}`)) this.notify("alert.firing", t);
  }

  private notify(type: "alert.firing" | "alert.resolved", t: Transition) {
    this.events.emit({ serverId: t.server_id }, type, {
      rule_id: t.rule_id,
      rule_name: t.rule_name,
      network_name: t.network_name,
      metric: t.metric,
      op: t.op,
      threshold: Number(t.threshold),
      margin: Number(t.margin),
      duration_seconds: Number(t.duration_seconds),
      value: Number(t.value),
      since: iso(t.since),
      at: iso(t.at),
    });
  }
}
