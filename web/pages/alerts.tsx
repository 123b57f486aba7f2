import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { errorMessage, fieldErrors, trpc } from "../api";
import { useCurrent } from "../current";
import { TargetSelect, targetOf, useTargets } from "../target-select";
import { ConfirmButton, Empty, Field, PageHeading, Q, SubmitButton, TextField, useIntent, useOutcome } from "../ui";

type Metric = "tps" | "mspt" | "memory_share" | "players_online";
type Op = "below" | "above";

/** Each metric as a person reads it; memory share is typed and shown as a percentage (the API takes 0-1). */
const METRICS: Record<Metric, { label: string; unit: string; scale: number; margin: number; example: string }> = {
  tps: { label: "TPS", unit: "", scale: 1, margin: 1, example: "18" },
  mspt: { label: "MSPT", unit: " ms", scale: 1, margin: 5, example: "50" },
  memory_share: { label: "Memory used", unit: "%", scale: 100, margin: 5, example: "90" },
  players_online: { label: "Players online", unit: "", scale: 1, margin: 1, example: "100" },
};

const shown = (metric: Metric, v: number) => {
  const m = METRICS[metric];
  return `${+(v * m.scale).toFixed(2)}${m.unit}`;
};

const seconds = (s: number) => (s === 0 ? "at once" : s % 60 === 0 ? `for ${s / 60} min` : `for ${s} s`);

interface Rule {
  id: string;
  server_id: string | null;
  network_name: string | null;
  name: string;
  metric: Metric;
  op: Op;
  threshold: number;
  margin: number;
  duration_seconds: number;
  enabled: boolean;
  firing: string[];
}

/** "TPS below 18 for 1 min; recovers at 19 or more." */
export function condition(r: Rule) {
  const back = r.op === "below" ? r.threshold + r.margin : r.threshold - r.margin;
  return `${METRICS[r.metric].label} ${r.op} ${shown(r.metric, r.threshold)} ${seconds(r.duration_seconds)}; recovers at ${shown(r.metric, back)} or ${r.op === "below" ? "more" : "less"}`;
}

/** The team's alert rules on performance (docs/alerts.md): list with what fires now, create, enable, delete. */
export function AlertRulesPage() {
  const { team, canWrite } = useCurrent();
  const team_id = team!.team_id;
  const qc = useQueryClient();
  const rules = useQuery({
    ...trpc.alerts.list.queryOptions({ team_id }),
    refetchOnMount: "always",
    refetchInterval: 30_000,
  });
  const targets = useTargets(team_id);
  const [creating, setCreating] = useState(false);
  const outcome = useOutcome(() => qc.invalidateQueries(trpc.alerts.pathFilter()));
  const update = useMutation(trpc.alerts.update.mutationOptions(outcome("Alert rule saved")));
  const remove = useMutation(trpc.alerts.delete.mutationOptions(outcome("Alert rule deleted")));
  const serverName = (id: string) => targets.servers.find((s) => s.server_id === id)?.name ?? "a server";
  return (
    <>
      <div className="page-head">
        <PageHeading title="Alert rules" />
        {canWrite && !creating && (
          <button type="button" className="primary" onClick={() => setCreating(true)}>
            New alert rule
          </button>
        )}
      </div>
      <p className="muted">
        Told through your webhooks (Discord, Slack or signed JSON) when a server stays past a limit, and again when it
        is back. The margin keeps a value hovering at the limit from alerting over and over.
      </p>
      {creating && <RuleForm onDone={() => setCreating(false)} />}
      <Q q={rules}>
        {(d) =>
          d.rules.length === 0 ? (
            <Empty title="No alert rules yet." />
          ) : (
            <table className="stack" aria-label="Alert rules">
              <thead>
                <tr>
                  <th>Rule</th>
                  <th>Watches</th>
                  <th>When</th>
                  <th>State</th>
                  <th>Actions</th>
                </tr>
              </thead>
              <tbody>
                {d.rules.map((r) => (
                  <tr key={r.id} data-testid="alert-rule">
                    <td data-label="Rule">
                      <strong>{r.name}</strong>
                    </td>
                    <td data-label="Watches">
                      {r.network_name ? `each server of ${r.network_name}` : targets.name({ ...r, server_name: null })}
                    </td>
                    <td data-label="When">{condition(r)}</td>
                    <td data-label="State">
                      {!r.enabled ? (
                        <span className="badge badge-unknown" data-state="disabled">
                          disabled
                        </span>
                      ) : r.firing.length ? (
                        <>
                          <span className="badge badge-offline" data-state="firing">
                            firing
                          </span>
                          <div className="muted">{r.firing.map(serverName).join(", ")}</div>
                        </>
                      ) : (
                        <span className="badge badge-online" data-state="quiet">
                          quiet
                        </span>
                      )}
                    </td>
                    <td data-label="Actions">
                      {canWrite && (
                        <div className="actions">
                          <button
                            type="button"
                            aria-label={`${r.enabled ? "Disable" : "Enable"} ${r.name}`}
                            disabled={update.isPending}
                            onClick={() => update.mutate({ team_id, rule_id: r.id, enabled: !r.enabled })}
                          >
                            {r.enabled ? "Disable" : "Enable"}
                          </button>
                          <ConfirmButton
                            label="Delete"
                            target={r.name}
                            question={`Delete the alert rule ${r.name}? No recovery notice is sent for a firing it has.`}
                            onConfirm={() => remove.mutate({ team_id, rule_id: r.id })}
                          />
                        </div>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Q>
    </>
  );
}

function RuleForm({ onDone }: { onDone: () => void }) {
  const { team } = useCurrent();
  const team_id = team!.team_id;
  const qc = useQueryClient();
  const [f, setF] = useState({
    name: "",
    target: "",
    metric: "tps" as Metric,
    op: "below" as Op,
    threshold: "",
    duration: "60",
    margin: "",
  });
  const set = (patch: Partial<typeof f>) => setF((x) => ({ ...x, ...patch }));
  const m = METRICS[f.metric];
  const intent = useIntent();
  const outcome = useOutcome(() => {
    void qc.invalidateQueries(trpc.alerts.pathFilter());
    onDone();
  });
  const create = useMutation(
    trpc.alerts.create.mutationOptions({ ...intent.options(), ...outcome("Alert rule created") }),
  );
  const errs = fieldErrors(create.error);
  const unit = m.unit.trim() ? ` (${m.unit.trim()})` : "";
  return (
    <form
      className="card"
      aria-label="New alert rule"
      onSubmit={(e) => {
        e.preventDefault();
        intent.submit(create, {
          team_id,
          name: f.name,
          ...targetOf(f.target),
          metric: f.metric,
          op: f.op,
          threshold: Number(f.threshold) / m.scale,
          duration_seconds: Number(f.duration),
          ...(f.margin.trim() !== "" && { margin: Number(f.margin) / m.scale }),
        });
      }}
    >
      <h2>New alert rule</h2>
      <div className="row-form">
        <TextField
          label="Name"
          required
          maxLength={100}
          placeholder="Low TPS"
          error={errs.name}
          value={f.name}
          onChange={(v) => set({ name: v })}
        />
        <TargetSelect
          teamId={team_id}
          value={f.target}
          error={errs.server_id ?? errs.network_name}
          onChange={(v) => set({ target: v })}
        />
      </div>
      <div className="row-form">
        <Field label="Metric" error={errs.metric}>
          {(id, d) => (
            <select
              id={id}
              aria-describedby={d}
              value={f.metric}
              onChange={(e) => set({ metric: e.target.value as Metric })}
            >
              {(Object.keys(METRICS) as Metric[]).map((k) => (
                <option key={k} value={k}>
                  {METRICS[k].label}
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field label="Fires when" error={errs.op}>
          {(id, d) => (
            <select id={id} aria-describedby={d} value={f.op} onChange={(e) => set({ op: e.target.value as Op })}>
              <option value="below">below</option>
              <option value="above">above</option>
            </select>
          )}
        </Field>
        <TextField
          label={`Threshold${unit}`}
          type="number"
          inputMode="decimal"
          step="any"
          min={0}
          max={f.metric === "memory_share" ? 100 : undefined}
          required
          placeholder={m.example}
          error={errs.threshold}
          value={f.threshold}
          onChange={(v) => set({ threshold: v })}
        />
      </div>
      <div className="row-form">
        <TextField
          label="For (seconds)"
          type="number"
          inputMode="numeric"
          min={0}
          max={86_400}
          required
          hint="How long it must stay past the threshold; 0 fires on the first reading"
          error={errs.duration_seconds}
          value={f.duration}
          onChange={(v) => set({ duration: v })}
        />
        <TextField
          label={`Margin${unit} (optional)`}
          type="number"
          inputMode="decimal"
          step="any"
          min={0}
          placeholder={String(m.margin)}
          hint={`How far back it must be to recover; ${m.margin}${m.unit} if left empty`}
          error={errs.margin}
          value={f.margin}
          onChange={(v) => set({ margin: v })}
        />
      </div>
      {create.error && !Object.keys(errs).length ? (
        <p className="field-error" role="alert">
          {errorMessage(create.error)}
        </p>
      ) : null}
      <div className="actions">
        <SubmitButton className="primary" pending={create.isPending}>
          Create rule
        </SubmitButton>
        <button type="button" onClick={onDone}>
          Cancel
        </button>
      </div>
    </form>
  );
}
