import { keepPreviousData, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { errorMessage, fieldErrors, forServer, trpc } from "../api";
import { useCurrent } from "../current";
import { ConfirmButton, ErrorState, Field, Q, SubmitButton, TextField, useIntent, useOutcome, useToast } from "../ui";

export const DURATIONS: [string, number | null][] = [
  ["Permanent", null],
  ["1 hour", 3600],
  ["1 day", 86_400],
  ["7 days", 7 * 86_400],
  ["30 days", 30 * 86_400],
];

const PAGE = 25;
type Sort = "" | "last_seen" | "first_seen" | "playtime" | "name";
const SORTS: [Sort, string][] = [
  ["", "Online first"],
  ["last_seen", "Last seen"],
  ["first_seen", "First seen"],
  ["playtime", "Time played"],
  ["name", "Name"],
];

export const hours = (seconds: number) => `${(seconds / 3600).toFixed(1)} h`;

/** The server page's players: search, sort and pages; kick who is online; each player links to their page. */
export function ServerPlayers({ serverId }: { serverId: string }) {
  const { canModerate } = useCurrent();
  const [q, setQ] = useState("");
  const [sort, setSort] = useState<Sort>("");
  const [order, setOrder] = useState<"asc" | "desc">("desc");
  const [offset, setOffset] = useState(0);
  const input = {
    limit: PAGE,
    offset,
    ...(q.trim() && { q: q.trim() }),
    ...(sort && { sort, order }),
  };
  const players = useQuery({
    ...trpc.servers.players.queryOptions(input, forServer(serverId)),
    placeholderData: keepPreviousData,
  });
  return (
    <section className="card" aria-labelledby="players-h">
      <h2 id="players-h">Players</h2>
      <search>
        <form className="row-form" aria-label="Find players" onSubmit={(e) => e.preventDefault()}>
          <TextField
            label="Search by name or UUID"
            value={q}
            onChange={(v) => {
              setQ(v);
              setOffset(0);
            }}
          />
          <Field label="Sort by">
            {(id) => (
              <select
                id={id}
                value={sort}
                onChange={(e) => {
                  const next = e.target.value as Sort;
                  setSort(next);
                  setOrder(next === "name" ? "asc" : "desc");
                  setOffset(0);
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
          {sort && (
            <Field label="Order">
              {(id) => (
                <select
                  id={id}
                  value={order}
                  onChange={(e) => {
                    setOrder(e.target.value as "asc" | "desc");
                    setOffset(0);
                  }}
                >
                  <option value="desc">Descending</option>
                  <option value="asc">Ascending</option>
                </select>
              )}
            </Field>
          )}
        </form>
      </search>
      <Q q={players}>
        {(d) => (
          <div>
            <p className="muted">{d.players_total} seen</p>
            {d.players.length === 0 ? (
              <p className="muted">
                {q ? "No player matches." : "No player seen yet. The agent reports joins and leaves."}
              </p>
            ) : (
              <table aria-label="Players">
                <thead>
                  <tr>
                    <th>Name</th>
                    <th>Status</th>
                    <th>Played</th>
                    {canModerate && <th>Actions</th>}
                  </tr>
                </thead>
                <tbody>
                  {d.players.map((p) => (
                    <tr key={p.uuid} data-player={p.name}>
                      <td className="nowrap">
                        <a href={`#/players/${p.uuid}`} title={p.uuid}>
                          {p.name}
                        </a>
                      </td>
                      <td title={p.online ? undefined : new Date(p.last_seen).toLocaleString()}>
                        {p.online
                          ? "online"
                          : `seen ${new Date(p.last_seen).toLocaleDateString(undefined, { month: "short", day: "numeric" })}`}
                      </td>
                      <td>{hours(p.time_played_seconds)}</td>
                      {canModerate && <td>{p.online && <KickButton serverId={serverId} player={p} />}</td>}
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
            {d.players_total > PAGE && (
              <nav className="row pager" aria-label="Player pages">
                <button type="button" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - PAGE))}>
                  Previous
                </button>
                <span>
                  {offset + 1}–{Math.min(offset + PAGE, d.players_total)} of {d.players_total}
                </span>
                <button
                  type="button"
                  disabled={offset + PAGE >= d.players_total}
                  onClick={() => setOffset(offset + PAGE)}
                >
                  Next
                </button>
              </nav>
            )}
          </div>
        )}
      </Q>
    </section>
  );
}

/** The server's bans in force (paged with the players' first page) and the ban form: by name, or a UUID for someone never seen. */
export function ServerBans({ serverId }: { serverId: string }) {
  const { canModerate } = useCurrent();
  const qc = useQueryClient();
  const toast = useToast();
  const players = useQuery(trpc.servers.players.queryOptions({ limit: PAGE }, forServer(serverId)));
  const refresh = () => qc.invalidateQueries(trpc.servers.players.queryFilter());
  const outcome = useOutcome(refresh);
  const [form, setForm] = useState({ uuid: "", name: "", reason: "", duration: "0" });
  const intent = useIntent();
  const ban = useMutation(
    trpc.servers.ban.mutationOptions({
      ...intent.options({ serverId }),
      onSuccess: (b) => {
        void refresh();
        toast(`${b.name} banned`);
        setForm({ uuid: "", name: "", reason: "", duration: "0" });
      },
    }),
  );
  const unban = useMutation(trpc.servers.unban.mutationOptions({ ...forServer(serverId), ...outcome("Ban lifted") }));
  const errs = fieldErrors(ban.error);
  return (
    <section className="card" aria-labelledby="bans-h">
      <h2 id="bans-h">Bans</h2>
      <Q q={players}>
        {(d) => (
          <div>
            <p className="muted">{d.bans_total} in force</p>
            {d.bans.length === 0 ? (
              <p className="muted">No bans in force.</p>
            ) : (
              <table aria-label="Bans">
                <thead>
                  <tr>
                    <th>Player</th>
                    <th>Reason</th>
                    <th>Expires</th>
                    {canModerate && <th>Actions</th>}
                  </tr>
                </thead>
                <tbody>
                  {d.bans.map((b) => (
                    <tr key={b.uuid} data-ban={b.name}>
                      <td>
                        <a href={`#/players/${b.uuid}`} title={b.uuid}>
                          {b.name}
                        </a>
                      </td>
                      <td>{b.reason}</td>
                      <td>{b.expires === "forever" ? "never" : new Date(b.expires).toLocaleString()}</td>
                      {canModerate && (
                        <td>
                          <ConfirmButton
                            label="Unban"
                            target={b.name}
                            danger={false}
                            question={`Lift the ban on ${b.name}?`}
                            onConfirm={() => unban.mutate({ uuid: b.uuid })}
                          />
                        </td>
                      )}
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </div>
        )}
      </Q>
      {canModerate && (
        <form
          aria-label="Ban a player"
          onSubmit={(e) => {
            e.preventDefault();
            const secs = Number(form.duration);
            intent.submit(ban, {
              ...(form.uuid.trim() && { uuid: form.uuid.trim() }),
              name: form.name,
              reason: form.reason || undefined,
              expires: secs ? new Date(Date.now() + secs * 1000).toISOString() : null,
            });
          }}
        >
          <h3>Ban a player</h3>
          <p className="muted">By name: any player the team has seen. Give the UUID only for someone never seen.</p>
          <div className="row-form">
            <TextField
              label="Player name"
              error={errs.name}
              required
              value={form.name}
              onChange={(v) => setForm({ ...form, name: v })}
            />
            <TextField
              label="Player UUID (optional)"
              error={errs.uuid}
              value={form.uuid}
              onChange={(v) => setForm({ ...form, uuid: v })}
            />
          </div>
          <div className="row-form">
            <TextField
              label="Reason"
              error={errs.reason}
              value={form.reason}
              onChange={(v) => setForm({ ...form, reason: v })}
            />
            <Field label="Duration">
              {(id) => (
                <select id={id} value={form.duration} onChange={(e) => setForm({ ...form, duration: e.target.value })}>
                  {DURATIONS.map(([l, v]) => (
                    <option key={l} value={String(v ?? 0)}>
                      {l}
                    </option>
                  ))}
                </select>
              )}
            </Field>
            <SubmitButton className="danger" pending={ban.isPending} busy="Banning…">
              Ban
            </SubmitButton>
          </div>
          {ban.error && !Object.keys(errs).length && <ErrorState error={ban.error} />}
        </form>
      )}
    </section>
  );
}

/** Kick one player from a server, after a confirmation: the agent does it on its next configuration read. */
export function KickButton({ serverId, player }: { serverId: string; player: { uuid: string; name: string } }) {
  const toast = useToast();
  const kick = useMutation(
    trpc.servers.kick.mutationOptions({
      ...forServer(serverId),
      onSuccess: (k) => toast(`${k.name} will be kicked by the agent`),
      onError: (e) => toast(errorMessage(e), "error"),
    }),
  );
  return (
    <ConfirmButton
      label="Kick"
      name={`Kick ${player.name}`}
      danger={false}
      question={`Kick ${player.name} from the server? The agent does it within two minutes.`}
      onConfirm={() => kick.mutate({ uuid: player.uuid, name: player.name })}
    />
  );
}
