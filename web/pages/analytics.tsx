import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import type { inferRouterOutputs } from "@trpc/server";
import type { AppRouter } from "../../src/trpc/router";
import { type ReactNode, useId, useMemo, useState } from "react";
import { errorMessage, forTeam, trpc } from "../api";
import { type Cell, downloadCsv } from "../csv";
import { Field, Q, useToast } from "../ui";

const WINDOWS = [
  { label: "7 days", days: 7 },
  { label: "30 days", days: 30 },
  { label: "90 days", days: 90 },
  { label: "1 year", days: 365 },
] as const;
const QUARTER = 15 * 60_000;
type RouterOutputs = inferRouterOutputs<AppRouter>;

const zones = (): string[] => {
  const intl = Intl as unknown as { supportedValuesOf?: (k: string) => string[] };
  return intl.supportedValuesOf?.("timeZone") ?? ["UTC"];
};

const hours = (s: number) => (s >= 3600 ? `${(s / 3600).toFixed(1)} h` : `${Math.round(s / 60)} min`);
const pct = (x: number) => `${Math.round(x * 1000) / 10}%`;

/**
 * Player analytics of one server or one network: activity, retention, the weekday-by-hour
 * heatmap, session lengths, the playtime leaderboard, peaks and editions, over a window and in a
 * time zone (the team's unless one is picked). Every table can be downloaded as CSV.
 */
export function AnalyticsPanel({ teamId, serverId, network }: { teamId: string; serverId?: string; network?: string }) {
  const [days, setDays] = useState<number>(30);
  const [zone, setZone] = useState<string>("");
  // The window ends at the next quarter hour, so a minute later the same query key still holds.
  const to = useMemo(() => new Date(Math.ceil(Date.now() / QUARTER) * QUARTER), []);
  const input = {
    ...(serverId ? { server_id: serverId } : { network }),
    from: new Date(to.getTime() - days * 86_400_000).toISOString(),
    to: to.toISOString(),
    ...(zone && { tz: zone }),
  };
  const ctx = forTeam(teamId);
  const zoneId = useId();
  const name = (serverId ?? network ?? "analytics").replace(/[^A-Za-z0-9_-]/g, "_");
  const file = (what: string) => `${what}-${name}-${days}d.csv`;

  return (
    <section className="card analytics" aria-labelledby="analytics-h">
      <div className="page-head">
        <h2 id="analytics-h">Player analytics</h2>
        <fieldset className="tabs" aria-label="Analytics window">
          {WINDOWS.map((w) => (
            <button key={w.days} type="button" aria-pressed={w.days === days} onClick={() => setDays(w.days)}>
              {w.label}
            </button>
          ))}
        </fieldset>
        <label htmlFor={zoneId} className="inline">
          Time zone{" "}
          <select id={zoneId} value={zone} onChange={(e) => setZone(e.target.value)}>
            <option value="">The team's</option>
            {zones().map((z) => (
              <option key={z} value={z}>
                {z}
              </option>
            ))}
          </select>
        </label>
      </div>
      <div className="cards">
        <Peaks q={useQuery(trpc.analytics.peaks.queryOptions(input, ctx))} />
        <Activity q={useQuery(trpc.analytics.activity.queryOptions(input, ctx))} file={file("activity")} />
        <Editions q={useQuery(trpc.analytics.editions.queryOptions(input, ctx))} file={file("editions")} />
      </div>
      <Heatmap q={useQuery(trpc.analytics.heatmap.queryOptions(input, ctx))} file={file("heatmap")} />
      <Lengths q={useQuery(trpc.analytics.sessionLengths.queryOptions(input, ctx))} file={file("session-lengths")} />
      <Retention q={useQuery(trpc.analytics.retention.queryOptions(input, ctx))} file={file("retention")} />
      <Leaderboard
        q={useQuery(trpc.analytics.leaderboard.queryOptions({ ...input, limit: 10 }, ctx))}
        file={file("leaderboard")}
      />
    </section>
  );
}

type Query<T> = { isPending: boolean; error: unknown; data: T | undefined };
type Out<K extends keyof RouterOutputs["analytics"]> = RouterOutputs["analytics"][K];

function CsvButton({ what, file, header, rows }: { what: string; file: string; header: string[]; rows: Cell[][] }) {
  return (
    <button type="button" className="secondary" onClick={() => downloadCsv(file, header, rows)}>
      Download CSV<span className="sr-only"> of {what}</span>
    </button>
  );
}

function Heading({ id, title, children }: { id: string; title: string; children?: ReactNode }) {
  return (
    <div className="page-head">
      <h3 id={id}>{title}</h3>
      {children}
    </div>
  );
}

function Peaks({ q }: { q: Query<Out<"peaks">> }) {
  const id = useId();
  return (
    <section className="card" aria-labelledby={id}>
      <h3 id={id}>Peaks</h3>
      <Q q={q}>
        {(p) => (
          <dl className="facts">
            <dt>Online now</dt>
            <dd>{p.online_now}</dd>
            <dt>Peak in window</dt>
            <dd>{p.peak ? `${p.peak.players} at ${when(p.peak.at, p.time_zone)}` : "nobody played"}</dd>
            <dt>Most online ever</dt>
            <dd>
              {p.most_online_ever
                ? `${p.most_online_ever.players} at ${when(p.most_online_ever.at, p.time_zone)}`
                : "nobody yet"}
            </dd>
          </dl>
        )}
      </Q>
    </section>
  );
}

const when = (at: string, zone: string) =>
  new Date(at).toLocaleString("en-GB", { timeZone: zone, dateStyle: "medium", timeStyle: "short" });

function Activity({ q, file }: { q: Query<Out<"activity">>; file: string }) {
  const id = useId();
  return (
    <section className="card" aria-labelledby={id}>
      <Q q={q}>
        {(a) => {
          const rows: Cell[][] = [
            ["new", a.new_players],
            ["returning", a.returning_players],
            ["regular", a.regular_players],
            ...a.activity_groups.map((g): Cell[] => [`activity: ${g.group.replace("_", " ")}`, g.players]),
          ];
          return (
            <>
              <Heading id={id} title="Players">
                <CsvButton what="players" file={file} header={["group", "players"]} rows={rows} />
              </Heading>
              <p>
                {a.players} players: {a.new_players} new, {a.returning_players} returning, {a.regular_players} regular.
              </p>
              <p className="muted">
                Activity index as of{" "}
                {new Date(a.index_at).toLocaleDateString(undefined, {
                  weekday: "short",
                  day: "numeric",
                  month: "short",
                  timeZone: "UTC",
                })}
                , 00:00 UTC: the three weeks before it (play since then counts from next Monday).
              </p>
              <table>
                <caption className="sr-only">Players seen in the window by activity index</caption>
                <thead>
                  <tr>
                    <th scope="col">Activity</th>
                    <th scope="col">Players</th>
                  </tr>
                </thead>
                <tbody>
                  {a.activity_groups.map((g) => (
                    <tr key={g.group}>
                      <td>
                        {g.group.replace("_", " ")} (index {g.min_index} or more)
                      </td>
                      <td>{g.players}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </>
          );
        }}
      </Q>
    </section>
  );
}

function Editions({ q, file }: { q: Query<Out<"editions">>; file: string }) {
  const id = useId();
  return (
    <section className="card" aria-labelledby={id}>
      <Q q={q}>
        {(e) => (
          <>
            <Heading id={id} title="Java and Bedrock">
              <CsvButton
                what="editions"
                file={file}
                header={["edition", "players", "player_share", "playtime_seconds", "playtime_share"]}
                rows={e.editions.map((x) => [
                  x.edition,
                  x.players,
                  x.player_share,
                  x.playtime_seconds,
                  x.playtime_share,
                ])}
              />
            </Heading>
            <table>
              <thead>
                <tr>
                  <th scope="col">Edition</th>
                  <th scope="col">Players</th>
                  <th scope="col">Playtime</th>
                </tr>
              </thead>
              <tbody>
                {e.editions.map((x) => (
                  <tr key={x.edition}>
                    <td>{x.edition === "java" ? "Java" : "Bedrock"}</td>
                    <td>
                      {x.players} ({pct(x.player_share)})
                    </td>
                    <td>
                      {hours(x.playtime_seconds)} ({pct(x.playtime_share)})
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </>
        )}
      </Q>
    </section>
  );
}

function Heatmap({ q, file }: { q: Query<Out<"heatmap">>; file: string }) {
  const id = useId();
  return (
    <section className="card" aria-labelledby={id}>
      <Q q={q}>
        {(h) => {
          const cells = h.days.flatMap((d) => d.hours.map((x) => ({ day: d.weekday, ...x })));
          const max = Math.max(0, ...cells.map((c) => c.average_online ?? 0));
          const busiest = cells.reduce((a, c) => ((c.average_online ?? -1) > (a.average_online ?? -1) ? c : a));
          const summary =
            max === 0
              ? "Nobody was online in this window."
              : `Busiest: ${busiest.day} ${String(busiest.hour).padStart(2, "0")}:00, ${busiest.average_online} online on average (${h.time_zone}).`;
          const W = 24 * 26 + 90;
          const H = 7 * 22 + 50;
          return (
            <>
              <Heading id={id} title="Players online by weekday and hour">
                <CsvButton
                  what="the heatmap"
                  file={file}
                  header={["weekday", ...Array.from({ length: 24 }, (_, i) => `${i}:00`)]}
                  rows={h.days.map((d) => [d.weekday, ...d.hours.map((x) => x.average_online)])}
                />
              </Heading>
              <p>{summary}</p>
              <div className="scroll">
                <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={`Heatmap of average players online. ${summary}`}>
                  <text x={90 + 12 * 26} y={H - 4} textAnchor="middle" className="axis-title">
                    Hour of day ({h.time_zone})
                  </text>
                  <text x={10} y={12} className="axis-title">
                    Weekday
                  </text>
                  {h.days.map((d, r) => (
                    <g key={d.weekday}>
                      <text x={84} y={20 + r * 22 + 15} textAnchor="end" className="axis">
                        {d.weekday.slice(0, 3)}
                      </text>
                      {d.hours.map((x) => (
                        <rect
                          key={x.hour}
                          x={90 + x.hour * 26}
                          y={20 + r * 22}
                          width={24}
                          height={20}
                          className={x.average_online === null ? "heat none" : "heat"}
                          style={{
                            fillOpacity:
                              x.average_online === null ? 1 : 0.08 + 0.92 * (max ? x.average_online / max : 0),
                          }}
                        >
                          <title>{`${d.weekday} ${x.hour}:00: ${x.average_online ?? "no such hour"}`}</title>
                        </rect>
                      ))}
                    </g>
                  ))}
                  {[0, 6, 12, 18, 23].map((x) => (
                    <text key={x} x={90 + x * 26 + 12} y={20 + 7 * 22 + 12} textAnchor="middle" className="axis">
                      {x}
                    </text>
                  ))}
                </svg>
              </div>
            </>
          );
        }}
      </Q>
    </section>
  );
}

function Lengths({ q, file }: { q: Query<Out<"sessionLengths">>; file: string }) {
  const id = useId();
  return (
    <section className="card" aria-labelledby={id}>
      <Q q={q}>
        {(l) => {
          const max = Math.max(1, ...l.buckets.map((b) => b.sessions));
          const top = l.buckets.reduce((a, b) => (b.sessions > a.sessions ? b : a));
          const summary =
            l.sessions === 0
              ? "No session ended in this window."
              : `${l.sessions} sessions; the most common length is ${top.bucket} (${pct(top.share)}).`;
          const W = 620;
          const H = 200;
          const bw = (W - 70) / l.buckets.length;
          return (
            <>
              <Heading id={id} title="Session lengths">
                <CsvButton
                  what="session lengths"
                  file={file}
                  header={["bucket", "min_seconds", "max_seconds", "sessions", "share"]}
                  rows={l.buckets.map((b) => [b.bucket, b.min_seconds, b.max_seconds, b.sessions, b.share])}
                />
              </Heading>
              <p>{summary}</p>
              <div className="scroll">
                <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={`Bar chart of session lengths. ${summary}`}>
                  <text
                    x={12}
                    y={H / 2}
                    transform={`rotate(-90 12 ${H / 2})`}
                    textAnchor="middle"
                    className="axis-title"
                  >
                    Sessions
                  </text>
                  <text x={56} y={18} textAnchor="end" className="axis">
                    {max}
                  </text>
                  <text x={56} y={H - 40} textAnchor="end" className="axis">
                    0
                  </text>
                  <text x={70 + (W - 70) / 2} y={H - 4} textAnchor="middle" className="axis-title">
                    Session length
                  </text>
                  {l.buckets.map((b, i) => {
                    const h = ((H - 55) * b.sessions) / max;
                    return (
                      <g key={b.bucket}>
                        <rect x={70 + i * bw + 4} y={H - 40 - h} width={bw - 8} height={h} className="bar">
                          <title>{`${b.bucket}: ${b.sessions}`}</title>
                        </rect>
                        <text x={70 + i * bw + bw / 2} y={H - 24} textAnchor="middle" className="axis">
                          {b.bucket.replace(" or more", "+")}
                        </text>
                      </g>
                    );
                  })}
                </svg>
              </div>
            </>
          );
        }}
      </Q>
    </section>
  );
}

function Retention({ q, file }: { q: Query<Out<"retention">>; file: string }) {
  const id = useId();
  return (
    <section className="card" aria-labelledby={id}>
      <Q q={q}>
        {(r) => {
          const n = Math.min(8, Math.max(0, ...r.cohorts.map((c) => c.retained.length)));
          const weeks = Array.from({ length: n }, (_, i) => i + 1);
          return (
            <>
              <Heading id={id} title="Weekly retention">
                <CsvButton
                  what="retention"
                  file={file}
                  header={["week_start", "players", ...weeks.map((w) => `week_${w}_share`)]}
                  rows={r.cohorts.map((c) => [c.week_start, c.players, ...weeks.map((w) => c.retained[w - 1]?.share)])}
                />
              </Heading>
              {r.cohorts.length === 0 ? (
                <p>No new players in this window.</p>
              ) : (
                <div className="scroll">
                  <table>
                    <caption className="sr-only">
                      Share of each week's new players seen again 1 to {n} weeks later ({r.time_zone} weeks, from
                      Monday)
                    </caption>
                    <thead>
                      <tr>
                        <th scope="col">First week</th>
                        <th scope="col">New players</th>
                        {weeks.map((w) => (
                          <th scope="col" key={w}>
                            Week {w}
                          </th>
                        ))}
                      </tr>
                    </thead>
                    <tbody>
                      {r.cohorts.map((c) => (
                        <tr key={c.week_start}>
                          <th scope="row">{c.week_start}</th>
                          <td>{c.players}</td>
                          {weeks.map((w) => (
                            <td key={w}>{c.retained[w - 1] ? pct(c.retained[w - 1]!.share) : ""}</td>
                          ))}
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </div>
              )}
            </>
          );
        }}
      </Q>
    </section>
  );
}

function Leaderboard({ q, file }: { q: Query<Out<"leaderboard">>; file: string }) {
  const id = useId();
  return (
    <section className="card" aria-labelledby={id}>
      <Q q={q}>
        {(b) => (
          <>
            <Heading id={id} title="Top players by playtime">
              <CsvButton
                what="the leaderboard"
                file={file}
                header={["rank", "uuid", "name", "edition", "playtime_seconds"]}
                rows={b.players.map((p) => [p.rank, p.uuid, p.name, p.edition, p.playtime_seconds])}
              />
            </Heading>
            {b.players.length === 0 ? (
              <p>Nobody played in this window.</p>
            ) : (
              <table className="stack">
                <thead>
                  <tr>
                    <th scope="col">Rank</th>
                    <th scope="col">Player</th>
                    <th scope="col">Edition</th>
                    <th scope="col">Playtime</th>
                  </tr>
                </thead>
                <tbody>
                  {b.players.map((p) => (
                    <tr key={p.uuid}>
                      <td data-label="Rank">{p.rank}</td>
                      <td data-label="Player">{p.name ?? p.uuid}</td>
                      <td data-label="Edition">{p.edition === "java" ? "Java" : "Bedrock"}</td>
                      <td data-label="Playtime">{hours(p.playtime_seconds)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </>
        )}
      </Q>
    </section>
  );
}

/** The team's time zone (the analytics' default), in the team settings; admins change it. */
export function TeamTimeZone({ teamId, canWrite }: { teamId: string; canWrite: boolean }) {
  const qc = useQueryClient();
  const toast = useToast();
  const team = useQuery(trpc.teams.get.queryOptions({ team_id: teamId }));
  const [zone, setZone] = useState<string | null>(null);
  const save = useMutation(
    trpc.teams.update.mutationOptions({
      onSuccess: () => {
        void qc.invalidateQueries(trpc.teams.get.queryFilter({ team_id: teamId }));
        void qc.invalidateQueries(trpc.analytics.pathFilter());
        toast("Time zone saved");
      },
    }),
  );
  const current = zone ?? team.data?.time_zone ?? "UTC";
  return (
    <form
      className="card row-form"
      aria-label="Team time zone"
      onSubmit={(e) => {
        e.preventDefault();
        save.mutate({ team_id: teamId, time_zone: current });
      }}
    >
      <Field
        label="Time zone for analytics (days, weeks, hours)"
        error={save.error ? errorMessage(save.error) : undefined}
      >
        {(id, d) => (
          <select
            id={id}
            aria-describedby={d}
            value={current}
            disabled={!canWrite}
            onChange={(e) => setZone(e.target.value)}
          >
            {[...new Set(["UTC", current, ...zones()])].map((z) => (
              <option key={z} value={z}>
                {z}
              </option>
            ))}
          </select>
        )}
      </Field>
      {canWrite && <button type="submit">Save time zone</button>}
    </form>
  );
}
