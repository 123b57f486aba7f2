import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { errorMessage, fieldErrors, forTeam, trpc } from "../api";
import { useCurrent } from "../current";
import { TargetSelect, targetOf } from "../target-select";
import { Empty, ErrorState, Field, PageHeading, Q, SubmitButton, TextField, useIntent, useOutcome } from "../ui";
import { MaintenanceSection } from "./maintenance";

export const STATUSES = ["investigating", "identified", "monitoring", "resolved"] as const;
type Status = (typeof STATUSES)[number];
const STATUS_LABEL: Record<Status, string> = {
  investigating: "Investigating",
  identified: "Identified",
  monitoring: "Monitoring",
  resolved: "Resolved",
};
const KIND_LABEL = { down: "Down", crash: "Crash", manual: "Posted by hand" } as const;
const HISTORY_PAGE = 20;

/** A moment in the reader's locale and time zone, as the rest of the dashboard shows times. */
export const when = (iso: string) =>
  new Date(iso).toLocaleString(undefined, {
    weekday: "short",
    day: "numeric",
    month: "short",
    hour: "2-digit",
    minute: "2-digit",
  });

/** "Fri 27 Nov, 10:01 – 13:02": the end names its day only when it is another day. */
export function period(from: string, to: string, show: (at: string, timeOnly: boolean) => string) {
  const sameDay = show(from, false).replace(show(from, true), "") === show(to, false).replace(show(to, true), "");
  return `${show(from, false)} – ${show(to, sameDay)}`;
}
const whenOrTime = (at: string, timeOnly: boolean) =>
  timeOnly ? new Date(at).toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit" }) : when(at);

/** "2 h 5 min": how long an incident lasted (or has lasted). */
function lasted(from: string, to: string | null) {
  const mins = Math.max(0, Math.round(((to ? Date.parse(to) : Date.now()) - Date.parse(from)) / 60_000));
  if (mins < 60) return `${mins} min`;
  const h = Math.floor(mins / 60);
  if (h < 48) return `${h} h${mins % 60 ? ` ${mins % 60} min` : ""}`;
  return `${Math.floor(h / 24)} days`;
}

function StatusBadge({ status }: { status: Status }) {
  const tone = status === "resolved" ? "online" : status === "monitoring" ? "unknown" : "offline";
  return (
    <span className={`badge badge-${tone}`} data-status={status}>
      {STATUS_LABEL[status]}
    </span>
  );
}

/**
 * The team's incidents (docs/incidents.md): open ones first with their timeline, then the history;
 * post one by hand, add updates; below, the maintenance windows.
 */
export function IncidentsPage() {
  const { team, canWrite } = useCurrent();
  const team_id = team!.team_id;
  const [posting, setPosting] = useState(false);
  const [limit, setLimit] = useState(HISTORY_PAGE);
  const open = useQuery({
    ...trpc.incidents.list.queryOptions({ state: "open", limit: 200 }, forTeam(team_id)),
    refetchOnMount: "always",
    refetchInterval: 30_000,
  });
  const history = useQuery({
    ...trpc.incidents.list.queryOptions({ state: "resolved", limit }, forTeam(team_id)),
    refetchOnMount: "always",
    placeholderData: (prev) => prev,
  });
  return (
    <>
      <div className="page-head">
        <PageHeading title="Incidents" />
        {canWrite && !posting && (
          <button type="button" className="primary" onClick={() => setPosting(true)}>
            Post an incident
          </button>
        )}
      </div>
      <p className="muted">
        Opened when a server goes down or crashes and resolved when it is back; post your own for anything players
        should know. Each update goes to your webhooks and the status pages.
      </p>
      {posting && <IncidentForm onDone={() => setPosting(false)} />}
      <section aria-labelledby="open-incidents-h">
        <h2 id="open-incidents-h">Open incidents</h2>
        <Q q={open}>
          {(d) =>
            d.incidents.length === 0 ? (
              <Empty title="No open incidents: every server is running as it should." />
            ) : (
              <ul className="incidents">
                {d.incidents.map((i) => (
                  <IncidentCard key={i.incident_id} incident={i} expanded />
                ))}
              </ul>
            )
          }
        </Q>
      </section>
      <section aria-labelledby="history-h">
        <h2 id="history-h">History</h2>
        <Q q={history}>
          {(d) =>
            d.incidents.length === 0 ? (
              <Empty title="No incidents yet." />
            ) : (
              <>
                <ul className="incidents">
                  {d.incidents.map((i) => (
                    <IncidentCard key={i.incident_id} incident={i} />
                  ))}
                </ul>
                {d.incidents.length >= limit && limit < 200 && (
                  <button
                    type="button"
                    disabled={history.isFetching}
                    onClick={() => setLimit((l) => Math.min(200, l + HISTORY_PAGE))}
                  >
                    {history.isFetching ? "Loading…" : "Show older incidents"}
                  </button>
                )}
              </>
            )
          }
        </Q>
      </section>
      <MaintenanceSection />
    </>
  );
}

interface Incident {
  incident_id: string;
  server_id: string | null;
  server_name: string | null;
  network_name: string | null;
  kind: "down" | "crash" | "manual";
  title: string;
  status: Status;
  started_at: string;
  ended_at: string | null;
  reason: string | null;
  crash: { file: string; description: string; lines: string[]; reported_at: string } | null;
}

function IncidentCard({ incident: i, expanded = false }: { incident: Incident; expanded?: boolean }) {
  const [open, setOpen] = useState(expanded);
  const about = i.network_name && !i.server_id ? `${i.network_name} network` : (i.server_name ?? "a server");
  const headingId = `inc-${i.incident_id}`;
  const toggle = open ? "Hide timeline" : i.crash ? "Timeline and crash report" : "Timeline";
  return (
    <li className="card incident" data-testid="incident" data-kind={i.kind}>
      <div className="incident-head">
        <h3 id={headingId}>{i.title}</h3>
        <StatusBadge status={i.status} />
      </div>
      <p className="incident-meta">
        <span className={`kind kind-${i.kind}`}>{KIND_LABEL[i.kind]}</span> · {about} ·{" "}
        {i.ended_at
          ? `${period(i.started_at, i.ended_at, whenOrTime)} (${lasted(i.started_at, i.ended_at)})`
          : `${when(i.started_at)} · for ${lasted(i.started_at, null)}`}
      </p>
      {i.reason && <p className="muted">Why: {i.reason.replaceAll("_", " ")}</p>}
      <button
        type="button"
        className="link"
        aria-expanded={open}
        aria-label={`${toggle} of ${i.title}`}
        aria-controls={open ? `${headingId}-more` : undefined}
        onClick={() => setOpen(!open)}
      >
        {toggle}
      </button>
      {open && (
        <div id={`${headingId}-more`}>
          <Timeline incident={i} />
        </div>
      )}
    </li>
  );
}

function Timeline({ incident: i }: { incident: Incident }) {
  const { team, canWrite } = useCurrent();
  const full = useQuery(trpc.incidents.get.queryOptions({ incident_id: i.incident_id }, forTeam(team!.team_id)));
  return (
    <>
      {i.crash && (
        <div className="crash" data-testid="crash-report">
          <h4>
            Crash report <code>{i.crash.file}</code>
          </h4>
          <p>{i.crash.description}</p>
          {/* Long exception lines scroll sideways on a phone: the region takes the focus to scroll by keyboard. */}
          {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling region must be reachable by keyboard */}
          <section className="crash-lines" aria-label={`Crash report lines of ${i.title}`} tabIndex={0}>
            <pre>{i.crash.lines.join("\n")}</pre>
          </section>
          <p className="muted">Only your team sees this; status pages never show it.</p>
        </div>
      )}
      <Q q={full}>
        {(d) => (
          <ol className="timeline" aria-label={`Timeline of ${i.title}`}>
            {(d.updates ?? []).map((u) => (
              <li key={`${u.at}-${u.status}-${u.message}`}>
                <div>
                  <strong>{STATUS_LABEL[u.status]}</strong>{" "}
                  <time className="muted" dateTime={u.at}>
                    {when(u.at)}
                  </time>
                </div>
                <p>{u.message}</p>
                <small className="muted">{u.author.kind === "system" ? "mc-platform" : u.author.name}</small>
              </li>
            ))}
          </ol>
        )}
      </Q>
      {/* The history is kept as it was: updates go to incidents still open. */}
      {canWrite && !i.ended_at && <UpdateForm incident={i} />}
    </>
  );
}

function UpdateForm({ incident: i }: { incident: Incident }) {
  const { team } = useCurrent();
  const team_id = team!.team_id;
  const qc = useQueryClient();
  const [status, setStatus] = useState<Status>(i.status);
  const [message, setMessage] = useState("");
  const intent = useIntent();
  const outcome = useOutcome(() => {
    setMessage("");
    void qc.invalidateQueries(trpc.incidents.pathFilter());
  });
  const add = useMutation(
    trpc.incidents.addUpdate.mutationOptions({
      ...intent.options({ teamId: team_id }),
      ...outcome(status === "resolved" ? "Incident resolved" : "Update posted"),
    }),
  );
  const errs = fieldErrors(add.error);
  return (
    <form
      className="update-form"
      aria-label={`Add an update to ${i.title}`}
      onSubmit={(e) => {
        e.preventDefault();
        intent.submit(add, { incident_id: i.incident_id, status, message });
      }}
    >
      <div className="row-form">
        <Field label="Status" error={errs.status}>
          {(id, d) => (
            <select id={id} aria-describedby={d} value={status} onChange={(e) => setStatus(e.target.value as Status)}>
              {STATUSES.map((s) => (
                <option key={s} value={s}>
                  {STATUS_LABEL[s]}
                </option>
              ))}
            </select>
          )}
        </Field>
      </div>
      <Field label="Update" error={errs.message}>
        {(id, d) => (
          <textarea
            id={id}
            aria-describedby={d}
            required
            maxLength={2000}
            value={message}
            onChange={(e) => setMessage(e.target.value)}
          />
        )}
      </Field>
      {add.error && !Object.keys(errs).length ? <ErrorState error={add.error} /> : null}
      <button type="submit" disabled={add.isPending} aria-busy={add.isPending || undefined}>
        {add.isPending
          ? "Posting…"
          : status === "resolved" && i.status !== "resolved"
            ? "Post and resolve"
            : "Post update"}
        <span className="sr-only"> to {i.title}</span>
      </button>
    </form>
  );
}

function IncidentForm({ onDone }: { onDone: () => void }) {
  const { team } = useCurrent();
  const team_id = team!.team_id;
  const qc = useQueryClient();
  const [f, setF] = useState({ target: "", title: "", status: "investigating" as Status, message: "" });
  const intent = useIntent();
  const outcome = useOutcome(() => {
    void qc.invalidateQueries(trpc.incidents.pathFilter());
    onDone();
  });
  const create = useMutation(
    trpc.incidents.create.mutationOptions({ ...intent.options({ teamId: team_id }), ...outcome("Incident posted") }),
  );
  const errs = fieldErrors(create.error);
  return (
    <form
      className="card"
      aria-label="Post an incident"
      onSubmit={(e) => {
        e.preventDefault();
        intent.submit(create, { ...targetOf(f.target), title: f.title, status: f.status, message: f.message });
      }}
    >
      <h2>Post an incident</h2>
      <div className="row-form">
        <TargetSelect
          teamId={team_id}
          value={f.target}
          error={errs.server_id ?? errs.network_name}
          onChange={(v) => setF({ ...f, target: v })}
        />
        <TextField
          label="Title"
          required
          maxLength={200}
          placeholder="Lag spikes on Survival"
          error={errs.title}
          value={f.title}
          onChange={(v) => setF({ ...f, title: v })}
        />
        <Field label="Status" error={errs.status}>
          {(id, d) => (
            <select
              id={id}
              aria-describedby={d}
              value={f.status}
              onChange={(e) => setF({ ...f, status: e.target.value as Status })}
            >
              {STATUSES.filter((s) => s !== "resolved").map((s) => (
                <option key={s} value={s}>
                  {STATUS_LABEL[s]}
                </option>
              ))}
            </select>
          )}
        </Field>
      </div>
      <Field label="Message" error={errs.message} hint="The first entry of the timeline, as players will read it">
        {(id, d) => (
          <textarea
            id={id}
            aria-describedby={d}
            required
            maxLength={2000}
            value={f.message}
            onChange={(e) => setF({ ...f, message: e.target.value })}
          />
        )}
      </Field>
      {create.error && !Object.keys(errs).length ? (
        <p className="field-error" role="alert">
          {errorMessage(create.error)}
        </p>
      ) : null}
      <div className="actions">
        <SubmitButton className="primary" pending={create.isPending} busy="Posting…">
          Post incident
        </SubmitButton>
        <button type="button" onClick={onDone}>
          Cancel
        </button>
      </div>
    </form>
  );
}
