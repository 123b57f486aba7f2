import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { forServer, forTeam, trpc } from "../api";
import { useCurrent } from "../current";
import { ConfirmButton, ErrorState, Field, Loading, PageHeading, Q, SubmitButton, TextField, useToast } from "../ui";
import { DURATIONS, expiresIn } from "../ban-form";
import { hours } from "./server-players";

/** Players a page: each is a card on a phone, so a long page is a long scroll. */
const PAGE = 20;
import { PlayerPrivacyActions } from "./player-privacy";

type Sort = "last_seen" | "playtime" | "sessions" | "name";
const SORTS: [Sort, string][] = [
  ["last_seen", "Last seen"],
  ["playtime", "Time played"],
  ["sessions", "Sessions"],
  ["name", "Name"],
];
const when = (t: string) => new Date(t).toLocaleString();

/** The team's servers, for the server a ban or kick applies to. */
function useServers(teamId: string) {
  return useQuery(trpc.servers.list.queryOptions(undefined, forTeam(teamId)));
}

function ServerSelect({ teamId, value, onChange }: { teamId: string; value: string; onChange: (id: string) => void }) {
  const servers = useServers(teamId);
  const list = servers.data?.servers ?? [];
  if (!value && list[0]) queueMicrotask(() => onChange(list[0]!.server_id));
  return (
    <Field label="Server to act on">
      {(id) => (
        <select id={id} value={value} onChange={(e) => onChange(e.target.value)}>
          {list.map((s) => (
            <option key={s.server_id} value={s.server_id}>
              {s.name}
            </option>
          ))}
        </select>
      )}
    </Field>
  );
}

/** Ban and kick by name on one server; the service resolves the name among the players the team has seen. */
function useModeration(serverId: string, after?: () => void) {
  const toast = useToast();
  const qc = useQueryClient();
  const done = (what: string) => {
    toast(what);
    void qc.invalidateQueries(trpc.playerDirectory.pathFilter());
    void qc.invalidateQueries(trpc.servers.players.queryFilter());
    after?.();
  };
  const opts = { ...forServer(serverId), onError: (e: unknown) => toast(e instanceof Error ? e.message : String(e)) };
  return {
    ban: useMutation(trpc.servers.ban.mutationOptions({ ...opts, onSuccess: (b) => done(`${b.name} banned`) })),
    unban: useMutation(trpc.servers.unban.mutationOptions({ ...opts, onSuccess: () => done("Ban lifted") })),
    kick: useMutation(
      trpc.servers.kick.mutationOptions({ ...opts, onSuccess: (k) => done(`${k.name} will be kicked by the agent`) }),
    ),
  };
}

/** The team's player directory: search, sort, "Load more" by cursor; Ban and Kick on each row. */
export function PlayersPage() {
  const { team, canModerate } = useCurrent();
  const teamId = team!.team_id;
  const [q, setQ] = useState("");
  const [sort, setSort] = useState<Sort>("last_seen");
  const [order, setOrder] = useState<"asc" | "desc">("desc");
  const [serverId, setServerId] = useState("");
  const mod = useModeration(serverId);
  const input = { limit: PAGE, sort, order, ...(q.trim() && { q: q.trim() }) };
  const pages = useInfiniteQuery(
    trpc.playerDirectory.list.infiniteQueryOptions(input, {
      ...forTeam(teamId),
      getNextPageParam: (last) => last.next_cursor ?? undefined,
    }),
  );
  const rows = pages.data?.pages.flatMap((p) => p.players) ?? [];
  return (
    <>
      <PageHeading title="Players" />
      <section className="card" aria-labelledby="directory-h">
        <h2 id="directory-h">Every player your servers have seen</h2>
        <search>
          <form className="row-form" aria-label="Find players" onSubmit={(e) => e.preventDefault()}>
            <TextField label="Search by name or UUID" value={q} onChange={setQ} />
            <Field label="Sort by">
              {(id) => (
                <select
                  id={id}
                  value={sort}
                  onChange={(e) => {
                    const next = e.target.value as Sort;
                    setSort(next);
                    setOrder(next === "name" ? "asc" : "desc");
                  }}
                >
                  {SORTS.map(([v, l]) => (
                    <option key={v} value={v}>
                      {l}
                    </option>
                  ))}
                </select>
              )}
            </Field>
            <Field label="Order">
              {(id) => (
                <select id={id} value={order} onChange={(e) => setOrder(e.target.value as "asc" | "desc")}>
                  <option value="desc">Descending</option>
                  <option value="asc">Ascending</option>
                </select>
              )}
            </Field>
            {canModerate && <ServerSelect teamId={teamId} value={serverId} onChange={setServerId} />}
          </form>
        </search>
        {pages.isPending ? (
          <Loading />
        ) : pages.error ? (
          <ErrorState error={pages.error} />
        ) : rows.length === 0 ? (
          <p className="muted">
            {q ? "No player matches." : "No player seen yet. The agent reports joins and leaves."}
          </p>
        ) : (
          <table aria-label="Players" className="stack">
            <thead>
              <tr>
                <th>Name</th>
                <th>Edition</th>
                <th>Status</th>
                <th>Last seen</th>
                <th>Played</th>
                <th>Sessions</th>
                {canModerate && <th>Actions</th>}
              </tr>
            </thead>
            <tbody>
              {rows.map((p) => (
                <tr key={p.uuid} data-player={p.name}>
                  <td data-label="Name">
                    <a href={`#/players/${p.uuid}`}>{p.name}</a>
                  </td>
                  <td data-label="Edition">{p.edition === "bedrock" ? "Bedrock" : "Java"}</td>
                  <td data-label="Status">{p.banned ? "banned" : p.online ? "online" : "offline"}</td>
                  <td data-label="Last seen">{when(p.last_seen)}</td>
                  <td data-label="Played">{hours(p.playtime_seconds)}</td>
                  <td data-label="Sessions">{p.sessions}</td>
                  {canModerate && (
                    <td data-label="Actions">
                      <div className="actions">
                        <ConfirmButton
                          label="Ban"
                          target={p.name}
                          question={`Ban ${p.name} from the selected server?`}
                          onConfirm={() => mod.ban.mutate({ name: p.name, uuid: p.uuid })}
                        />
                        <ConfirmButton
                          label="Kick"
                          target={p.name}
                          danger={false}
                          question={`Kick ${p.name} from the selected server? The agent does it within two minutes.`}
                          onConfirm={() => mod.kick.mutate({ name: p.name, uuid: p.uuid })}
                        />
                      </div>
                    </td>
                  )}
                </tr>
              ))}
            </tbody>
          </table>
        )}
        {pages.hasNextPage && (
          <button type="button" disabled={pages.isFetchingNextPage} onClick={() => void pages.fetchNextPage()}>
            {pages.isFetchingNextPage ? "Loading…" : "Load more"}
          </button>
        )}
      </section>
    </>
  );
}

/** One player across the team: names, playtime per server, sessions, moderation history, notes. */
export function PlayerPage({ uuid }: { uuid: string }) {
  const { team, canModerate } = useCurrent();
  const teamId = team!.team_id;
  const qc = useQueryClient();
  const toast = useToast();
  const page = useQuery(trpc.playerDirectory.get.queryOptions({ uuid }, forTeam(teamId)));
  const [serverId, setServerId] = useState("");
  const [reason, setReason] = useState("");
  const [duration, setDuration] = useState("0");
  const [note, setNote] = useState("");
  const refresh = () => qc.invalidateQueries(trpc.playerDirectory.pathFilter());
  const mod = useModeration(serverId, () => setReason(""));
  const addNote = useMutation(
    trpc.playerDirectory.addNote.mutationOptions({
      ...forTeam(teamId),
      onSuccess: () => {
        setNote("");
        toast("Note added");
        void refresh();
      },
    }),
  );
  const deleteNote = useMutation(
    trpc.playerDirectory.deleteNote.mutationOptions({
      ...forTeam(teamId),
      onSuccess: () => {
        toast("Note deleted");
        void refresh();
      },
      onError: (e) => toast(e.message),
    }),
  );
  return (
    <Q q={page}>
      {(p) => (
        <>
          <div className="page-head">
            <PageHeading title={p.name} />
            <div className="actions">
              <PlayerPrivacyActions teamId={teamId} uuid={p.uuid} name={p.name} />
            </div>
          </div>
          <p className="muted">
            <code>{p.uuid}</code> · {p.edition === "bedrock" ? "Bedrock (Floodgate)" : "Java"} ·{" "}
            {p.online ? "online now" : "offline"}
            {p.banned && " · banned"}
          </p>
          <div className="stats">
            {(
              [
                ["First seen", when(p.first_seen)],
                ["Last seen", when(p.last_seen)],
                ["Time played", hours(p.playtime_seconds)],
                ["Sessions", String(p.sessions)],
              ] as const
            ).map(([label, value]) => (
              <div className="stat" key={label}>
                <span className="muted">{label}</span>
                <strong>{value}</strong>
              </div>
            ))}
          </div>
          {canModerate && (
            <section className="card" aria-labelledby="act-h">
              <h2 id="act-h">Moderate</h2>
              <form className="row-form" aria-label="Moderate this player" onSubmit={(e) => e.preventDefault()}>
                <ServerSelect teamId={teamId} value={serverId} onChange={setServerId} />
                <TextField label="Reason" value={reason} onChange={setReason} maxLength={500} />
                <Field label="Duration">
                  {(id) => (
                    <select id={id} value={duration} onChange={(e) => setDuration(e.target.value)}>
                      {DURATIONS.map(([l, v]) => (
                        <option key={l} value={String(v ?? 0)}>
                          {l}
                        </option>
                      ))}
                    </select>
                  )}
                </Field>
              </form>
              <div className="actions">
                <ConfirmButton
                  label="Ban"
                  target={p.name}
                  question={`Ban ${p.name} from the selected server?`}
                  onConfirm={() => {
                    mod.ban.mutate({ name: p.name, reason: reason || undefined, expires: expiresIn(duration) });
                  }}
                />
                <ConfirmButton
                  label="Lift ban"
                  target={p.name}
                  danger={false}
                  question={`Lift ${p.name}'s ban on the selected server?`}
                  onConfirm={() => mod.unban.mutate({ uuid: p.uuid })}
                />
                <ConfirmButton
                  label="Kick"
                  target={p.name}
                  danger={false}
                  question={`Kick ${p.name} from the selected server? The agent does it within two minutes.`}
                  onConfirm={() => mod.kick.mutate({ name: p.name, reason: reason || undefined })}
                />
              </div>
            </section>
          )}
          <div className="two">
            <section className="card" aria-labelledby="names-h">
              <h2 id="names-h">Names used</h2>
              <ul>
                {p.names.map((n) => (
                  <li key={n.name}>
                    <strong>{n.name}</strong>
                    {n.current && " (current)"} — {when(n.first_used)} to {when(n.last_used)}
                  </li>
                ))}
              </ul>
            </section>
            <section className="card" aria-labelledby="per-server-h">
              <h2 id="per-server-h">Playtime per server</h2>
              <table aria-label="Playtime per server" className="stack">
                <thead>
                  <tr>
                    <th>Server</th>
                    <th>Played</th>
                    <th>Sessions</th>
                    <th>Last seen</th>
                  </tr>
                </thead>
                <tbody>
                  {p.servers.map((s) => (
                    <tr key={s.server_id}>
                      <td data-label="Server">
                        <a href={`#/servers/${s.server_id}`}>{s.server_name}</a>
                        {s.online && " (online)"}
                      </td>
                      <td data-label="Played">{hours(s.playtime_seconds)}</td>
                      <td data-label="Sessions">{s.sessions}</td>
                      <td data-label="Last seen">{when(s.last_seen)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </section>
          </div>
          <section className="card" aria-labelledby="sessions-h">
            <h2 id="sessions-h">Recent sessions</h2>
            {p.recent_sessions.length === 0 ? (
              <p className="muted">No session held.</p>
            ) : (
              <ol className="timeline">
                {p.recent_sessions.map((s) => (
                  <li key={s.session_id}>
                    {when(s.joined_at)} on <strong>{s.server_name}</strong>:{" "}
                    {s.online ? "still online" : `${Math.round(s.duration_seconds / 60)} min`}
                  </li>
                ))}
              </ol>
            )}
          </section>
          <section className="card" aria-labelledby="history-h">
            <h2 id="history-h">Bans, lifts and kicks</h2>
            {p.moderation.length === 0 ? (
              <p className="muted">Nothing yet.</p>
            ) : (
              <table aria-label="Moderation history" className="stack">
                <thead>
                  <tr>
                    <th>When</th>
                    <th>What</th>
                    <th>Server</th>
                    <th>Who</th>
                    <th>Why</th>
                  </tr>
                </thead>
                <tbody>
                  {p.moderation.map((m) => (
                    <tr key={m.event_id} data-moderation={m.action}>
                      <td data-label="When">{when(m.at)}</td>
                      <td data-label="What">
                        {m.action === "unban" ? "ban lifted" : m.action}
                        {m.action === "ban" && m.expires && m.expires !== "forever" && ` until ${when(m.expires)}`}
                      </td>
                      <td data-label="Server">{m.server_name}</td>
                      <td data-label="Who">
                        {m.origin === "game" ? `in game${m.source ? ` (${m.source})` : ""}` : m.actor.name}
                      </td>
                      <td data-label="Why">{m.reason ?? ""}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </section>
          <section className="card" aria-labelledby="notes-h">
            <h2 id="notes-h">Notes</h2>
            {p.notes.length === 0 ? (
              <p className="muted">No notes.</p>
            ) : (
              <ul className="notes">
                {p.notes.map((n) => (
                  <li key={n.note_id}>
                    <p>{n.text}</p>
                    <p className="muted">
                      {n.author.name}, {when(n.created_at)}
                    </p>
                    {canModerate && (
                      <ConfirmButton
                        label="Delete"
                        name={`Delete the note of ${when(n.created_at)}`}
                        question="Delete this note?"
                        onConfirm={() => deleteNote.mutate({ uuid: p.uuid, note_id: n.note_id })}
                      />
                    )}
                  </li>
                ))}
              </ul>
            )}
            {canModerate && (
              <form
                aria-label="Add a note"
                onSubmit={(e) => {
                  e.preventDefault();
                  addNote.mutate({ uuid: p.uuid, text: note });
                }}
              >
                <Field label="New note">
                  {(id) => (
                    <textarea
                      id={id}
                      value={note}
                      maxLength={2000}
                      rows={3}
                      onChange={(e) => setNote(e.target.value)}
                    />
                  )}
                </Field>
                <SubmitButton pending={addNote.isPending} busy="Adding…">
                  Add note
                </SubmitButton>
                {addNote.error && <ErrorState error={addNote.error} />}
              </form>
            )}
          </section>
        </>
      )}
    </Q>
  );
}
