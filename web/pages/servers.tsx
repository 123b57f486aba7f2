import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useCallback, useState } from "react";
import { fieldErrors, forTeam, trpc } from "../api";
import { useCurrent } from "../current";
import { type DownStatus, DownNote } from "../down";
import { type LiveEvent, liveOnline, useLive } from "../live";
import { Badge, Empty, ErrorState, Field, go, PageHeading, Q, SubmitButton, useIntent } from "../ui";

interface ServerRow {
  server_id: string;
  name: string;
  host: string;
  port: number;
  kind: "single" | "network";
  network_name: string | null;
  status: { online: boolean | null; players_online: number | null; players_max: number | null } & DownStatus;
}

/** One row with its own analytics socket, so the badge and the count move live. */
function ServerItem({ s }: { s: ServerRow }) {
  const qc = useQueryClient();
  // A flip brings the record again: it has the reason and the time the server went down.
  const onEvent = useCallback(
    (e: LiveEvent) => {
      if (e.type === "status" && e.data.changed === true) {
        void qc.invalidateQueries(trpc.servers.list.queryFilter());
        void qc.invalidateQueries(trpc.servers.networks.queryFilter());
      }
    },
    [qc],
  );
  const live = useLive(s.server_id, onEvent);
  const online = liveOnline(live, s.status.online);
  // A server that is down has no players; the last count it reported would read as current.
  const players = online === false ? null : (live.players_online ?? s.status.players_online);
  const max = live.players_max ?? s.status.players_max;
  return (
    <li className={live.lost ? "card server-item stale" : "card server-item"} data-server={s.name}>
      <div className="page-head">
        <h2>
          <a href={`#/servers/${s.server_id}`}>{s.name}</a>
        </h2>
        <Badge online={online} />
      </div>
      <p className="muted">
        {s.host}:{s.port}
        {s.network_name ? ` · network ${s.network_name}` : ""}
      </p>
      {online === false && <DownNote status={s.status} />}
      <p>
        Players: <strong data-testid="players">{players ?? "—"}</strong>
        {max !== null ? ` / ${max}` : ""}
      </p>
    </li>
  );
}

export function ServersPage() {
  const { team, canWrite } = useCurrent();
  // Ping results between two visits reach an open list only through its sockets, whose snapshot
  // lacks the ping's player count: a list is always read again when it is shown.
  const list = useQuery({
    ...trpc.servers.list.queryOptions(undefined, forTeam(team!.team_id)),
    refetchOnMount: "always",
  });
  const [creating, setCreating] = useState(false);
  return (
    <>
      <div className="page-head">
        <PageHeading title="Servers" />
        {canWrite && !creating && (
          <button type="button" className="primary" onClick={() => setCreating(true)}>
            Add server
          </button>
        )}
      </div>
      {creating && <CreateServer onClose={() => setCreating(false)} />}
      <Q q={list}>
        {(d) =>
          d.servers.length === 0 ? (
            <Empty
              title="No servers yet."
              next={canWrite ? <p>Add one with its address; the platform starts pinging it at once.</p> : null}
            />
          ) : (
            <ul className="cards">
              {d.servers.map((s) => (
                <ServerItem key={s.server_id} s={s} />
              ))}
            </ul>
          )
        }
      </Q>
    </>
  );
}

function CreateServer({ onClose }: { onClose: () => void }) {
  const { team } = useCurrent();
  const qc = useQueryClient();
  const [form, setForm] = useState({ name: "", host: "", port: "25565", kind: "single", network_name: "" });
  const intent = useIntent();
  const create = useMutation(
    trpc.servers.create.mutationOptions({
      ...intent.options(),
      onSuccess: (s) => {
        void qc.invalidateQueries(trpc.servers.list.queryFilter());
        sessionAgentTokens.set(s.server_id, s.agent_token);
        onClose();
        // Its Settings tab: the agent token, shown once, and the command that uses it.
        go(`servers/${s.server_id}/settings`);
      },
    }),
  );
  const errs = fieldErrors(create.error);
  const set = (k: keyof typeof form) => (e: React.ChangeEvent<HTMLInputElement | HTMLSelectElement>) =>
    setForm({ ...form, [k]: e.target.value });
  return (
    <form
      className="card"
      aria-label="Add a server"
      onSubmit={(e) => {
        e.preventDefault();
        intent.submit(create, {
          team_id: team!.team_id,
          name: form.name,
          host: form.host,
          port: Number(form.port),
          kind: form.kind as "single" | "network",
          network_name: form.kind === "network" ? form.network_name : undefined,
        });
      }}
    >
      <h2>Add a server</h2>
      <Field label="Server name" error={errs.name}>
        {(id, d) => <input id={id} aria-describedby={d} required value={form.name} onChange={set("name")} />}
      </Field>
      <div className="row-form">
        <Field label="Host" error={errs.host} hint="A host name or IP address">
          {(id, d) => <input id={id} aria-describedby={d} required value={form.host} onChange={set("host")} />}
        </Field>
        <Field label="Port" error={errs.port}>
          {(id, d) => (
            <input
              id={id}
              aria-describedby={d}
              type="number"
              min={1}
              max={65535}
              value={form.port}
              onChange={set("port")}
            />
          )}
        </Field>
      </div>
      <div className="row-form">
        <Field label="Kind">
          {(id) => (
            <select id={id} value={form.kind} onChange={set("kind")}>
              <option value="single">single</option>
              <option value="network">network</option>
            </select>
          )}
        </Field>
        {form.kind === "network" && (
          <Field label="Network name" error={errs.network_name}>
            {(id, d) => <input id={id} aria-describedby={d} value={form.network_name} onChange={set("network_name")} />}
          </Field>
        )}
      </div>
      {create.error && !Object.keys(errs).length && <ErrorState error={create.error} />}
      <div className="row">
        <SubmitButton className="primary" pending={create.isPending} busy="Adding…">
          Add server
        </SubmitButton>
        <button type="button" onClick={onClose}>
          Cancel
        </button>
      </div>
    </form>
  );
}

/** Agent tokens shown at creation, held in memory until the server page has shown them once. */
export const sessionAgentTokens = new Map<string, string>();

export function NetworksPage() {
  const { team } = useCurrent();
  const nets = useQuery({
    ...trpc.servers.networks.queryOptions(undefined, forTeam(team!.team_id)),
    refetchOnMount: "always",
  });
  return (
    <>
      <PageHeading title="Networks" />
      <Q q={nets}>
        {(d) =>
          d.networks.length === 0 ? (
            <Empty title="No networks. Add a server of kind network with a network name to group servers." />
          ) : (
            d.networks.map((n) => (
              <section key={n.network_name} className="card" aria-label={`Network ${n.network_name}`}>
                <h2>
                  <a href={`#/networks/${encodeURIComponent(n.network_name)}`}>{n.network_name}</a>
                </h2>
                <p className="muted">
                  {n.servers_online} of {n.servers_total} servers online · {n.players_online} / {n.players_max} players
                </p>
                <ul className="cards">
                  {n.servers.map((s) => (
                    <ServerItem key={s.server_id} s={s} />
                  ))}
                </ul>
              </section>
            ))
          )
        }
      </Q>
    </>
  );
}
