import { useQuery } from "@tanstack/react-query";
import { forTeam, trpc } from "./api";
import { Field } from "./ui";

/**
 * What an incident, a maintenance window or an alert rule is about: one server or a whole
 * network, chosen in one list ("server:<id>" or "network:<name>"), as the forms share it.
 */
export type Target = { server_id?: string; network_name?: string };

export const targetOf = (value: string): Target =>
  value.startsWith("server:")
    ? { server_id: value.slice(7) }
    : value.startsWith("network:")
      ? { network_name: value.slice(8) }
      : {};

/** The team's servers and networks, for naming a target in a list. */
export function useTargets(teamId: string) {
  const servers = useQuery(trpc.servers.list.queryOptions(undefined, forTeam(teamId)));
  const networks = useQuery(trpc.servers.networks.queryOptions(undefined, forTeam(teamId)));
  return {
    servers: servers.data?.servers ?? [],
    networks: networks.data?.networks ?? [],
    loading: servers.isPending || networks.isPending,
    /** "Survival" or "the Blockworks network". */
    name(t: { server_id: string | null; network_name: string | null; server_name?: string | null }) {
      if (t.network_name && !t.server_id) return `${t.network_name} network`;
      return t.server_name ?? servers.data?.servers.find((s) => s.server_id === t.server_id)?.name ?? "a server";
    },
  };
}

export function TargetSelect({
  teamId,
  value,
  onChange,
  label = "Server or network",
  error,
}: {
  teamId: string;
  value: string;
  onChange: (value: string) => void;
  label?: string;
  error?: string;
}) {
  const { servers, networks, loading } = useTargets(teamId);
  return (
    <Field label={label} error={error}>
      {(id, d) => (
        <select id={id} aria-describedby={d} required value={value} onChange={(e) => onChange(e.target.value)}>
          <option value="" disabled>
            {loading ? "Loading…" : "Choose…"}
          </option>
          {networks.length > 0 && (
            <optgroup label="Networks (every server of it)">
              {networks.map((n) => (
                <option key={n.network_name} value={`network:${n.network_name}`}>
                  {n.network_name} network
                </option>
              ))}
            </optgroup>
          )}
          <optgroup label="Servers">
            {servers.map((s) => (
              <option key={s.server_id} value={`server:${s.server_id}`}>
                {s.name}
              </option>
            ))}
          </optgroup>
        </select>
      )}
    </Field>
  );
}
