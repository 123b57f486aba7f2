import { keepPreviousData, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { errorMessage, forServer, trpc } from "../api";
import { BanForm } from "../ban-form";
import { useCurrent } from "../current";
import { ConfirmButton, Field, Q, TextField, useIntent, useOutcome, useToast } from "../ui";

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
  const intent = useIntent();
  const ban = useMutation(
    trpc.servers.ban.mutationOptions({
      ...intent.options({ serverId }),
      onSuccess: (b) => {
        void refresh();
        toast(`${b.name} banned`);
      },
    }),
  );
  const unban = useMutation(trpc.servers.unban.mutationOptions({ ...forServer(serverId), ...outcome("Ban lifted") }));
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
        <BanForm
          label="Ban a player"
          button="Ban"
          pending={ban.isPending}
          error={ban.error}
          submit={(b, done) => intent.submit(ban, b, done)}
        />
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
