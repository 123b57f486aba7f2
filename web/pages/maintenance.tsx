import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useId, useState } from "react";
import { errorMessage, fieldErrors, forTeam, trpc } from "../api";
import { fromWallClock, nextRunsIn, wallClock } from "../cron";
import { useCurrent } from "../current";
import { TargetSelect, targetOf, useTargets } from "../target-select";
import { period } from "./incidents";
import { ConfirmButton, Empty, Field, Q, SubmitButton, TextField, useIntent, useOutcome } from "../ui";

/** A moment on the team's clock ("Mon 30 Nov, 04:00"), as maintenance is planned on it. */
const inZone = (at: string | Date, timeZone: string, timeOnly = false) => {
  try {
    return new Date(at).toLocaleString(undefined, {
      timeZone,
      ...(!timeOnly && { weekday: "short", day: "numeric", month: "short" }),
      hour: "2-digit",
      minute: "2-digit",
    });
  } catch {
    return new Date(at).toISOString();
  }
};

/** An ISO time as a datetime-local value on the team's clock, and back. */
const toLocalInput = (iso: string | null, timeZone: string) =>
  iso ? wallClock(new Date(iso), timeZone).toISOString().slice(0, 16) : "";
const fromLocalInput = (value: string, timeZone: string) =>
  value ? fromWallClock(new Date(`${value}:00Z`), timeZone).toISOString() : null;

const minutes = (n: number) =>
  n % 1440 === 0
    ? `${n / 1440} d`
    : n % 60 === 0
      ? `${n / 60} h`
      : n > 60
        ? `${Math.floor(n / 60)} h ${n % 60} min`
        : `${n} min`;

interface Window {
  window_id: string;
  server_id: string | null;
  network_name: string | null;
  title: string;
  message: string | null;
  starts_at: string | null;
  ends_at: string | null;
  schedule: string | null;
  duration_minutes: number | null;
  time_zone: string;
  active: { starts_at: string; ends_at: string } | null;
  next: { starts_at: string; ends_at: string } | null;
}

/** Maintenance windows (docs/incidents.md#maintenance-windows): alerts are held while one runs. */
export function MaintenanceSection() {
  const { team, canWrite } = useCurrent();
  const team_id = team!.team_id;
  const qc = useQueryClient();
  const teamInfo = useQuery(trpc.teams.get.queryOptions({ team_id }));
  const zone = teamInfo.data?.time_zone ?? "UTC";
  const windows = useQuery({
    ...trpc.maintenance.list.queryOptions(undefined, forTeam(team_id)),
    refetchOnMount: "always",
    refetchInterval: 60_000,
  });
  const targets = useTargets(team_id);
  const [editing, setEditing] = useState<string | "new" | null>(null);
  const outcome = useOutcome(() => qc.invalidateQueries(trpc.maintenance.pathFilter()));
  const remove = useMutation(
    trpc.maintenance.delete.mutationOptions({ ...forTeam(team_id), ...outcome("Maintenance window deleted") }),
  );
  return (
    <section aria-labelledby="maintenance-h">
      <div className="page-head">
        <h2 id="maintenance-h">Maintenance windows</h2>
        {canWrite && editing !== "new" && (
          <button type="button" onClick={() => setEditing("new")}>
            Plan maintenance
          </button>
        )}
      </div>
      <p className="muted">
        While one runs, down alerts for its servers are held and status pages say so. Times are on the team's clock,{" "}
        <strong>{zone}</strong> (set on the Analytics page).
      </p>
      {editing === "new" && <WindowForm zone={zone} onDone={() => setEditing(null)} />}
      <Q q={windows}>
        {(d) =>
          d.windows.length === 0 ? (
            <Empty title="No maintenance planned." />
          ) : (
            <ul className="incidents">
              {d.windows.map((w) => (
                <li key={w.window_id} className="card incident" data-testid="maintenance-window">
                  <div className="incident-head">
                    <h3>{w.title}</h3>
                    <span
                      className={`badge ${w.active ? "badge-offline" : w.next ? "badge-unknown" : "badge-online"}`}
                      data-state={w.active ? "running" : w.next ? "planned" : "over"}
                    >
                      {w.active ? "running now" : w.next ? "planned" : "over"}
                    </span>
                  </div>
                  <p className="incident-meta">
                    {targets.name(w)} ·{" "}
                    {w.schedule
                      ? `every “${w.schedule}” for ${minutes(w.duration_minutes ?? 0)}`
                      : `once, ${period(w.starts_at!, w.ends_at!, (at, t) => inZone(at, w.time_zone, t))}`}
                  </p>
                  {w.message && <p>{w.message}</p>}
                  {/* A one-off window's times are above; a repeating one says when it runs next. */}
                  {(w.active || w.schedule || !w.next) && (
                    <p>
                      {w.active
                        ? `Running until ${inZone(w.active.ends_at, w.time_zone)}.`
                        : w.next
                          ? `Next: ${period(w.next.starts_at, w.next.ends_at, (at, t) => inZone(at, w.time_zone, t))}.`
                          : "Over: it will not run again."}
                      {w.schedule && <NextRuns schedule={w.schedule} zone={w.time_zone} skip={1} />}
                    </p>
                  )}
                  {canWrite && (
                    <div className="actions">
                      <button
                        type="button"
                        aria-label={`Edit ${w.title}`}
                        aria-expanded={editing === w.window_id}
                        onClick={() => setEditing(editing === w.window_id ? null : w.window_id)}
                      >
                        Edit
                      </button>
                      <ConfirmButton
                        label="Delete"
                        target={w.title}
                        question={`Delete the maintenance window ${w.title}? Alerts are no longer held by it.`}
                        onConfirm={() => remove.mutate({ window_id: w.window_id })}
                      />
                    </div>
                  )}
                  {editing === w.window_id && (
                    <WindowForm zone={w.time_zone} window={w} onDone={() => setEditing(null)} />
                  )}
                </li>
              ))}
            </ul>
          )
        }
      </Q>
    </section>
  );
}

/** The runs after the next (or the next three), in the team's time zone. */
function NextRuns({ schedule, zone, skip = 0 }: { schedule: string; zone: string; skip?: number }) {
  const runs = nextRunsIn(schedule, zone, 3 + skip)?.slice(skip);
  if (!runs?.length) return null;
  return (
    <span className="muted" data-testid="next-runs">
      {" "}
      {skip ? "Then" : "Next runs"}: {runs.map((r) => inZone(r, zone)).join("; ")}.
    </span>
  );
}

function WindowForm({ zone, window: w, onDone }: { zone: string; window?: Window; onDone: () => void }) {
  const { team } = useCurrent();
  const team_id = team!.team_id;
  const qc = useQueryClient();
  const [f, setF] = useState(() => ({
    target: w ? (w.server_id ? `server:${w.server_id}` : `network:${w.network_name}`) : "",
    title: w?.title ?? "",
    message: w?.message ?? "",
    recurring: w ? w.schedule !== null : false,
    starts_at: toLocalInput(w?.starts_at ?? null, zone),
    ends_at: toLocalInput(w?.ends_at ?? null, zone),
    schedule: w?.schedule ?? "0 4 * * 1",
    duration: String(w?.duration_minutes ?? 30),
  }));
  const set = (patch: Partial<typeof f>) => setF((x) => ({ ...x, ...patch }));
  const intent = useIntent();
  const outcome = useOutcome(() => {
    void qc.invalidateQueries(trpc.maintenance.pathFilter());
    onDone();
  });
  const create = useMutation(
    trpc.maintenance.create.mutationOptions({
      ...intent.options({ teamId: team_id }),
      ...outcome("Maintenance planned"),
    }),
  );
  const update = useMutation(
    trpc.maintenance.update.mutationOptions({ ...forTeam(team_id), ...outcome("Maintenance window saved") }),
  );
  const error = create.error ?? update.error;
  const errs = fieldErrors(error);
  const when = f.recurring
    ? { starts_at: null, ends_at: null, schedule: f.schedule.trim(), duration_minutes: Number(f.duration) }
    : {
        starts_at: fromLocalInput(f.starts_at, zone),
        ends_at: fromLocalInput(f.ends_at, zone),
        schedule: null,
        duration_minutes: null,
      };
  const label = w ? `Edit maintenance window ${w.title}` : "Plan maintenance";
  const preview = f.recurring ? nextRunsIn(f.schedule, zone, 3) : null;
  const radio = useId();
  return (
    <form
      className="card"
      aria-label={label}
      onSubmit={(e) => {
        e.preventDefault();
        const body = { title: f.title, message: f.message.trim() || null, ...when };
        if (w) update.mutate({ window_id: w.window_id, ...body });
        else intent.submit(create, { ...targetOf(f.target), ...body });
      }}
    >
      <h3>{w ? `Edit ${w.title}` : "Plan maintenance"}</h3>
      <div className="row-form">
        {w ? (
          <p>
            For <strong>{w.network_name && !w.server_id ? `${w.network_name} network` : "its server"}</strong> (to move
            it, delete it and plan another)
          </p>
        ) : (
          <TargetSelect
            teamId={team_id}
            value={f.target}
            error={errs.server_id ?? errs.network_name}
            onChange={(v) => set({ target: v })}
          />
        )}
        <TextField
          label="Title"
          required
          maxLength={200}
          placeholder="Weekly restart"
          error={errs.title}
          value={f.title}
          onChange={(v) => set({ title: v })}
        />
      </div>
      <fieldset className="choice">
        <legend>When</legend>
        <label className="check">
          <input type="radio" name={radio} checked={!f.recurring} onChange={() => set({ recurring: false })} /> Once
        </label>
        <label className="check">
          <input type="radio" name={radio} checked={f.recurring} onChange={() => set({ recurring: true })} /> Repeating
          (cron)
        </label>
      </fieldset>
      {f.recurring ? (
        <div className="row-form">
          <Field
            label="Schedule"
            error={errs.schedule}
            hint={`minute hour day month weekday, on ${zone} time; e.g. 0 4 * * 1 is Mondays at 04:00`}
          >
            {(id, d) => (
              <input
                id={id}
                aria-describedby={d}
                required
                maxLength={100}
                value={f.schedule}
                onChange={(e) => set({ schedule: e.target.value })}
              />
            )}
          </Field>
          <TextField
            label="Duration (minutes)"
            type="number"
            inputMode="numeric"
            required
            min={1}
            max={7 * 24 * 60}
            error={errs.duration_minutes}
            value={f.duration}
            onChange={(v) => set({ duration: v })}
          />
        </div>
      ) : (
        <div className="row-form">
          <TextField
            label={`Start (${zone})`}
            type="datetime-local"
            required
            error={errs.starts_at}
            value={f.starts_at}
            onChange={(v) => set({ starts_at: v })}
          />
          <TextField
            label={`End (${zone})`}
            type="datetime-local"
            required
            error={errs.ends_at}
            value={f.ends_at}
            onChange={(v) => set({ ends_at: v })}
          />
        </div>
      )}
      {f.recurring && (
        <p data-testid="schedule-preview" aria-live="polite">
          {preview === null
            ? "Not a five-field cron expression yet."
            : preview.length === 0
              ? "This schedule never runs."
              : `Next runs: ${preview.map((r) => inZone(r, zone)).join("; ")}.`}
        </p>
      )}
      <TextField
        label="Message for players (optional)"
        maxLength={2000}
        error={errs.message}
        value={f.message}
        onChange={(v) => set({ message: v })}
      />
      {error && !Object.keys(errs).length ? (
        <p className="field-error" role="alert">
          {errorMessage(error)}
        </p>
      ) : null}
      <div className="actions">
        <SubmitButton className="primary" pending={create.isPending || update.isPending} busy="Saving…">
          {w ? "Save" : "Plan maintenance"}
        </SubmitButton>
        <button type="button" onClick={onDone}>
          Cancel
        </button>
      </div>
    </form>
  );
}
