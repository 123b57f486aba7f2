import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { forTeam, trpc } from "../api";
import { BanForm } from "../ban-form";
import { useCurrent } from "../current";
import { Badge, ConfirmButton, Field, PageHeading, Q, useIntent, useOutcome, useToast } from "../ui";
import { RankForm, RanksTable } from "../ranks";
import { AnalyticsPanel } from "./analytics";

type Window = "24h" | "7d" | "30d";
const WINDOWS: Window[] = ["24h", "7d", "30d"];

const hours = (s: number) => `${(s / 3600).toFixed(1)} h`;
const pct = (x: number) => `${Math.round(x * 100)}%`;
const time = (iso: string) => new Date(iso).toLocaleString();
/** The time alone today, the day and time before: what fits a phone's column. */
const shortTime = (iso: string) => {
  const d = new Date(iso);
  return d.toDateString() === new Date().toDateString()
    ? d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })
    : d.toLocaleString([], { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });
};
const span = (s: number) => (s < 3600 ? `${Math.round(s / 60)} min` : hours(s));
/** Players online listed before "Show all": a busy network's list would fill a phone's screens. */
const ONLINE_SHOWN = 12;

/** One network: who is online across it, its servers' shares, its sessions, bans and ranks (docs/networks.md). */
export function NetworkPage({ name }: { name: string }) {
  const { team } = useCurrent();
  const [window, setWindow] = useState<Window>("7d");
  const [allOnline, setAllOnline] = useState(false);
  const page = useQuery({
    ...trpc.networks.get.queryOptions({ network_name: name, window }, forTeam(team!.team_id)),
    refetchInterval: 30_000,
  });
  return (
    <>
      <p>
        <a href="#/networks">All networks</a>
      </p>
      <PageHeading title={`Network ${name}`} />
      <Q q={page}>
        {(d) => (
          <>
            <section className="card" aria-labelledby="net-online-h">
              <h2 id="net-online-h">Online now: {d.players_online}</h2>
              {d.online.length === 0 ? (
                <p className="muted">Nobody is online on this network.</p>
              ) : (
                // Not stacked on a phone: three short columns fit, and a busy network lists many.
                <table aria-label="Players online">
                  <thead>
                    <tr>
                      <th>Player</th>
                      <th>On</th>
                      <th>Since</th>
                    </tr>
                  </thead>
                  <tbody>
                    {(allOnline ? d.online : d.online.slice(0, ONLINE_SHOWN)).map((p) => (
                      <tr key={p.uuid}>
                        <td data-label="Player" title={p.uuid}>
                          {p.name}
                        </td>
                        <td data-label="On">
                          <a href={`#/servers/${p.server_id}`}>{p.server_name}</a>
                        </td>
                        <td data-label="Since" title={time(p.since)}>
                          {shortTime(p.since)}
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              )}
              {d.online.length > ONLINE_SHOWN && (
                <button type="button" onClick={() => setAllOnline(!allOnline)} aria-expanded={allOnline}>
                  {allOnline ? `Show the first ${ONLINE_SHOWN}` : `Show all ${d.online.length}`}
                </button>
              )}
            </section>
            <section className="card" aria-labelledby="net-servers-h">
              <h2 id="net-servers-h">Servers</h2>
              <Field label="Window">
                {(id) => (
                  <select id={id} value={window} onChange={(e) => setWindow(e.target.value as Window)}>
                    {WINDOWS.map((w) => (
                      <option key={w} value={w}>
                        {w}
                      </option>
                    ))}
                  </select>
                )}
              </Field>
              <p className="muted">
                {hours(d.playtime_seconds)} played · {d.network_sessions} network sessions in the last {d.window}
              </p>
              <table className="stack" aria-label="Servers of the network">
                <thead>
                  <tr>
                    <th>Server</th>
                    <th>Status</th>
                    <th>Online</th>
                    <th>Time played</th>
                    <th>Sessions</th>
                  </tr>
                </thead>
                <tbody>
                  {d.servers.map((s) => (
                    <tr key={s.server_id} data-server={s.name}>
                      <td data-label="Server">
                        <a href={`#/servers/${s.server_id}`}>{s.name}</a>
                      </td>
                      <td data-label="Status">
                        <Badge online={s.online} />
                      </td>
                      <td data-label="Online">{s.players_online}</td>
                      <td data-label="Time played">
                        <Share
                          value={s.playtime_share}
                          label={`${hours(s.playtime_seconds)} (${pct(s.playtime_share)})`}
                        />
                      </td>
                      <td data-label="Sessions">
                        <Share value={s.sessions_share} label={`${s.sessions} (${pct(s.sessions_share)})`} />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </section>
          </>
        )}
      </Q>
      <Sessions name={name} />
      <AnalyticsPanel teamId={team!.team_id} network={name} />
      <Bans name={name} />
      <Ranks name={name} />
    </>
  );
}

/** A share as a bar with its figure in words beside it (the bar is decoration). */
function Share({ value, label }: { value: number; label: string }) {
  return (
    <span className="share">
      <span className="share-bar" aria-hidden="true">
        <span style={{ width: `${Math.round(value * 100)}%` }} />
      </span>
      {label}
    </span>
  );
}

function Sessions({ name }: { name: string }) {
  const { team } = useCurrent();
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors.at(-1);
  const sessions = useQuery(
    trpc.networks.sessions.queryOptions(
      { network_name: name, limit: 10, ...(cursor && { cursor }) },
      forTeam(team!.team_id),
    ),
  );
  return (
    <section className="card" aria-labelledby="net-sessions-h">
      <h2 id="net-sessions-h">Network sessions</h2>
      <p className="muted">A session follows a player from server to server and counts once for the network.</p>
      <Q q={sessions}>
        {(d) =>
          d.sessions.length === 0 ? (
            <p className="muted">No sessions yet.</p>
          ) : (
            <>
              <table className="stack" aria-label="Network sessions">
                <thead>
                  <tr>
                    <th>Player</th>
                    <th>Joined</th>
                    <th>Length</th>
                    <th>Hops</th>
                  </tr>
                </thead>
                <tbody>
                  {d.sessions.map((s) => (
                    <tr key={s.network_session_id} data-session={s.name ?? s.uuid}>
                      <td data-label="Player" title={s.uuid}>
                        {s.name ?? s.uuid}
                      </td>
                      <td data-label="Joined" title={time(s.joined_at)}>
                        {shortTime(s.joined_at)}
                      </td>
                      <td data-label="Length">
                        {s.online ? `online, ${span(s.duration_seconds)}` : span(s.duration_seconds)}
                      </td>
                      <td data-label="Hops">
                        <ol className="hops" aria-label={`Servers of this session: ${s.hops.length}`}>
                          {s.hops.map((h) => (
                            <li key={`${h.server_id}-${h.joined_at}`}>{h.server_name}</li>
                          ))}
                        </ol>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
              <div className="row">
                {cursors.length > 0 && (
                  <button type="button" onClick={() => setCursors(cursors.slice(0, -1))}>
                    Newer
                  </button>
                )}
                {d.next_cursor && (
                  <button type="button" onClick={() => setCursors([...cursors, d.next_cursor!])}>
                    Older
                  </button>
                )}
              </div>
            </>
          )
        }
      </Q>
    </section>
  );
}

function Bans({ name }: { name: string }) {
  const { team, canModerate } = useCurrent();
  const qc = useQueryClient();
  const toast = useToast();
  const ctx = forTeam(team!.team_id);
  const bans = useQuery(trpc.networks.bans.queryOptions({ network_name: name, state: "active" }, ctx));
  const refresh = () => qc.invalidateQueries(trpc.networks.bans.queryFilter());
  const outcome = useOutcome(refresh);
  const intent = useIntent();
  const ban = useMutation(
    trpc.networks.ban.mutationOptions({
      ...intent.options({ teamId: team!.team_id }),
      onSuccess: (b) => {
        void refresh();
        toast(`${b.name} banned on the network`);
      },
    }),
  );
  const unban = useMutation(trpc.networks.unban.mutationOptions({ ...ctx, ...outcome("Network ban lifted") }));
  return (
    <section className="card" aria-labelledby="net-bans-h">
      <h2 id="net-bans-h">Network bans</h2>
      <p className="muted">A network ban is applied by the agent of every server of the network.</p>
      <Q q={bans}>
        {(d) =>
          d.bans.length === 0 ? (
            <p className="muted">No network bans in force.</p>
          ) : (
            <table className="stack" aria-label="Network bans">
              <thead>
                <tr>
                  <th>Player</th>
                  <th>Reason</th>
                  <th>By</th>
                  <th>Expires</th>
                  {canModerate && <th>Actions</th>}
                </tr>
              </thead>
              <tbody>
                {d.bans.map((b) => (
                  <tr key={b.ban_id} data-ban={b.name}>
                    <td data-label="Player" title={b.uuid}>
                      {b.name}
                    </td>
                    <td data-label="Reason">{b.reason}</td>
                    <td data-label="By">{b.created_by?.name ?? b.created_by?.kind ?? "unknown"}</td>
                    <td data-label="Expires">{b.expires === "forever" ? "never" : time(b.expires)}</td>
                    {canModerate && (
                      <td data-label="Actions">
                        <ConfirmButton
                          label="Lift"
                          target={b.name}
                          danger={false}
                          question={`Lift the network ban on ${b.name}? Every server of the network pardons them.`}
                          onConfirm={() => unban.mutate({ network_name: name, uuid: b.uuid })}
                        />
                      </td>
                    )}
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Q>
      {canModerate && (
        <BanForm
          label="Ban a player on the network"
          button="Ban on the network"
          pending={ban.isPending}
          error={ban.error}
          submit={(b, done) => intent.submit(ban, { network_name: name, ...b }, done)}
        />
      )}
    </section>
  );
}

function Ranks({ name }: { name: string }) {
  const { team, canWrite } = useCurrent();
  const qc = useQueryClient();
  const toast = useToast();
  const ctx = forTeam(team!.team_id);
  const ranks = useQuery(trpc.networks.ranks.queryOptions({ network_name: name }, ctx));
  const refresh = () => qc.invalidateQueries(trpc.networks.ranks.queryFilter());
  const outcome = useOutcome(refresh);
  const intent = useIntent();
  const create = useMutation(
    trpc.networks.createRank.mutationOptions({
      ...intent.options({ teamId: team!.team_id }),
      onSuccess: () => {
        void refresh();
        toast("Network rank created");
      },
    }),
  );
  const del = useMutation(trpc.networks.deleteRank.mutationOptions({ ...ctx, ...outcome("Network rank deleted") }));
  return (
    <section className="card" aria-labelledby="net-ranks-h">
      <h2 id="net-ranks-h">Network ranks</h2>
      <p className="muted">Every server of the network gets these ranks; a server's own rank of the same name wins.</p>
      <Q q={ranks}>
        {(d) =>
          d.ranks.length === 0 ? (
            <p className="muted">No network ranks.</p>
          ) : (
            <RanksTable
              ranks={d.ranks}
              label="Network ranks"
              what="network rank"
              canWrite={canWrite}
              onDelete={(rank) => del.mutate({ network_name: name, name: rank })}
            />
          )
        }
      </Q>
      {canWrite && (
        <RankForm
          label="Add a network rank"
          pending={create.isPending}
          error={create.error}
          submit={(rank, done) => intent.submit(create, { network_name: name, ...rank }, done)}
        />
      )}
    </section>
  );
}
