import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { TEAM_EVENT_TYPES, type TeamEventType } from "../../src/lib/events";
import { errorMessage, trpc } from "../api";
import { useCurrent } from "../current";
import {
  ConfirmButton,
  Empty,
  Field,
  fmt,
  Q,
  ShownOnce,
  SubmitButton,
  TextField,
  useIntent,
  useOutcome,
  useToast,
} from "../ui";

/** The event types a team can pick: the service's list, less the test event (sent on request, not subscribed to). */
type EventType = Exclude<TeamEventType, "webhook.test">;
const EVENT_TYPES = TEAM_EVENT_TYPES.filter((t): t is EventType => t !== "webhook.test");
type Kind = "standard" | "discord" | "slack";

/** The team's webhook endpoints: list, create (secret shown once), test, deliveries, redeliver. */
export function Webhooks() {
  const { team, canWrite } = useCurrent();
  const team_id = team!.team_id;
  const qc = useQueryClient();
  const toast = useToast();
  const endpoints = useQuery(trpc.webhooks.list.queryOptions({ team_id }));
  const refresh = () => qc.invalidateQueries(trpc.webhooks.list.queryFilter());
  const outcome = useOutcome(refresh);
  const [shown, setShown] = useState<string | null>(null);
  const [open, setOpen] = useState<string | null>(null);
  const [url, setUrl] = useState("");
  const [kind, setKind] = useState<Kind>("standard");
  const [description, setDescription] = useState("");
  const [types, setTypes] = useState<EventType[]>([]);
  const intent = useIntent();
  const create = useMutation(
    trpc.webhooks.create.mutationOptions({
      ...intent.options(),
      onSuccess: (r) => {
        setShown(r.secret);
        setUrl("");
        setDescription("");
        setTypes([]);
        void refresh();
      },
    }),
  );
  const test = useMutation(
    trpc.webhooks.test.mutationOptions({
      onSuccess: (d) => {
        setOpen(d.endpoint_id);
        void qc.invalidateQueries(trpc.webhooks.deliveries.queryFilter());
        toast("Test event queued");
      },
      onError: (e) => toast(errorMessage(e), "error"),
    }),
  );
  const update = useMutation(trpc.webhooks.update.mutationOptions(outcome("Endpoint updated")));
  const resume = useMutation(trpc.webhooks.resume.mutationOptions(outcome("Endpoint resumed")));
  const remove = useMutation(trpc.webhooks.delete.mutationOptions(outcome("Endpoint deleted")));
  return (
    <section className="card" aria-labelledby="hooks-h">
      <h2 id="hooks-h">Webhooks</h2>
      <p className="muted">
        Server outages, bans, agent silence and sign-ins, sent to your endpoint (signed, Standard Webhooks), Discord or
        Slack.
      </p>
      {shown && <ShownOnce label="Signing secret" value={shown} onDone={() => setShown(null)} />}
      <Q q={endpoints}>
        {(d) => (
          <>
            <Budget usage={d.usage} />
            {d.endpoints.length === 0 ? (
              <Empty title="No webhook endpoints yet." />
            ) : (
              <table className="stack" aria-label="Webhook endpoints">
                <thead>
                  <tr>
                    <th>URL</th>
                    <th>Kind</th>
                    <th>Events</th>
                    <th>State</th>
                    <th>Actions</th>
                  </tr>
                </thead>
                <tbody>
                  {d.endpoints.map((e) => (
                    <tr key={e.endpoint_id}>
                      <td data-label="URL">
                        <code data-testid="hook-url">{e.url}</code>
                        {e.url_masked && (
                          <div className="muted">
                            Masked: the URL is a credential for many receivers; admins see it whole.
                          </div>
                        )}
                        {e.description && <div className="muted">{e.description}</div>}
                      </td>
                      <td data-label="Kind">{e.kind}</td>
                      <td data-label="Events">{e.event_types.length ? e.event_types.join(", ") : "all"}</td>
                      <td data-label="State" data-testid="hook-state">
                        {e.enabled && e.paused_at ? (
                          <>
                            <span className="badge badge-offline">paused: failing</span>
                            <div className="muted">
                              {e.paused_until
                                ? `One delivery tries again at ${new Date(e.paused_until).toLocaleString()}; the rest wait.`
                                : "Deliveries wait until it is resumed."}
                            </div>
                          </>
                        ) : e.enabled ? (
                          <span className="badge badge-online">enabled</span>
                        ) : (
                          <span className="badge badge-offline">
                            {e.disabled_reason === "failing" ? "disabled: failing" : "disabled"}
                          </span>
                        )}
                        {e.consecutive_failures > 0 && (
                          <div className="muted">{e.consecutive_failures} failed in a row</div>
                        )}
                      </td>
                      <td data-label="Actions">
                        <div className="actions">
                          <button
                            type="button"
                            aria-label={`${open === e.endpoint_id ? "Hide deliveries" : "Deliveries"} of ${e.url}`}
                            onClick={() => setOpen(open === e.endpoint_id ? null : e.endpoint_id)}
                          >
                            {open === e.endpoint_id ? "Hide deliveries" : "Deliveries"}
                          </button>
                          {canWrite && (
                            <>
                              {e.enabled && e.paused_at && (
                                <button
                                  type="button"
                                  aria-label={`Resume endpoint ${e.url}`}
                                  disabled={resume.isPending}
                                  onClick={() => resume.mutate({ team_id, endpoint_id: e.endpoint_id })}
                                >
                                  Resume
                                </button>
                              )}
                              <button
                                type="button"
                                aria-label={`Send test to ${e.url}`}
                                disabled={!e.enabled || Boolean(e.paused_at) || test.isPending}
                                onClick={() => test.mutate({ team_id, endpoint_id: e.endpoint_id })}
                              >
                                Send test
                              </button>
                              <button
                                type="button"
                                aria-label={`${e.enabled ? "Disable" : "Enable"} endpoint ${e.url}`}
                                onClick={() =>
                                  update.mutate({ team_id, endpoint_id: e.endpoint_id, enabled: !e.enabled })
                                }
                              >
                                {e.enabled ? "Disable" : "Enable"}
                              </button>
                              <ConfirmButton
                                label="Delete"
                                target={`endpoint ${e.url}`}
                                question={`Delete the endpoint ${e.url} and its delivery log?`}
                                onConfirm={() => remove.mutate({ team_id, endpoint_id: e.endpoint_id })}
                              />
                            </>
                          )}
                        </div>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </>
        )}
      </Q>
      {open && <Deliveries team_id={team_id} endpoint_id={open} />}
      {canWrite && (
        <form
          aria-label="Add a webhook endpoint"
          onSubmit={(e) => {
            e.preventDefault();
            intent.submit(create, { team_id, url, kind, description, event_types: types });
          }}
        >
          <h3>Add an endpoint</h3>
          <div className="row-form">
            <TextField
              label="Endpoint URL"
              error={create.error ? errorMessage(create.error) : undefined}
              type="url"
              required
              placeholder="https://hooks.example.com/mc"
              value={url}
              onChange={setUrl}
            />
            <Field label="Format">
              {(id) => (
                <select id={id} value={kind} onChange={(e) => setKind(e.target.value as Kind)}>
                  <option value="standard">Signed JSON (Standard Webhooks)</option>
                  <option value="discord">Discord</option>
                  <option value="slack">Slack</option>
                </select>
              )}
            </Field>
            <TextField label="Description" value={description} onChange={setDescription} maxLength={500} />
          </div>
          <fieldset>
            <legend>Events (none ticked: all)</legend>
            {EVENT_TYPES.map((t) => (
              <label key={t} className="check">
                <input
                  type="checkbox"
                  checked={types.includes(t)}
                  onChange={(e) => setTypes(e.target.checked ? [...types, t] : types.filter((x) => x !== t))}
                />{" "}
                {t}
              </label>
            ))}
          </fieldset>
          <SubmitButton className="primary" pending={create.isPending} busy="Adding…">
            Add endpoint
          </SubmitButton>
        </form>
      )}
    </section>
  );
}

type Usage = {
  events_per_minute: number;
  deliveries_per_minute: number;
  dropped_events: number;
  dropped_deliveries: number;
  last_dropped_at: string | null;
};

/** The team's budget, and what did not fit in it: those events were not sent. */
function Budget({ usage }: { usage: Usage }) {
  return (
    <p className="muted" data-testid="hook-budget">
      Budget: {usage.events_per_minute} events and {usage.deliveries_per_minute} deliveries a minute.{" "}
      {usage.dropped_events > 0 ? (
        <strong role="status">
          {usage.dropped_events} events ({usage.dropped_deliveries} deliveries) were over it and not sent, the last at{" "}
          {new Date(usage.last_dropped_at!).toLocaleString()}.
        </strong>
      ) : (
        "Nothing has been over it."
      )}
    </p>
  );
}

function Deliveries({ team_id, endpoint_id }: { team_id: string; endpoint_id: string }) {
  const { canWrite } = useCurrent();
  const qc = useQueryClient();
  const toast = useToast();
  // Polled while open: deliveries change on their own as attempts are made.
  const list = useQuery(
    trpc.webhooks.deliveries.queryOptions({ team_id, endpoint_id, limit: 20 }, { refetchInterval: 2000 }),
  );
  const redeliver = useMutation(
    trpc.webhooks.redeliver.mutationOptions({
      onSuccess: () => {
        void qc.invalidateQueries(trpc.webhooks.deliveries.queryFilter());
        toast("Queued again");
      },
      onError: (e) => toast(errorMessage(e), "error"),
    }),
  );
  return (
    <section aria-label="Recent deliveries">
      <h3>Recent deliveries</h3>
      <Q q={list}>
        {(d) =>
          d.deliveries.length === 0 ? (
            <Empty title="Nothing sent yet. Send a test event." />
          ) : (
            <table className="stack" aria-label="Deliveries">
              <thead>
                <tr>
                  <th>Event</th>
                  <th>Status</th>
                  <th>Attempts</th>
                  <th>Response</th>
                  <th>Latency</th>
                  <th>Time</th>
                  {canWrite && <th>Actions</th>}
                </tr>
              </thead>
              <tbody>
                {d.deliveries.map((x) => (
                  <tr key={x.delivery_id} data-testid="delivery">
                    <td data-label="Event">
                      <code>{x.event_type}</code>
                    </td>
                    <td data-label="Status">
                      <span
                        className={`badge ${x.status === "succeeded" ? "badge-online" : x.status === "failed" ? "badge-offline" : "badge-unknown"}`}
                        data-status={x.status}
                      >
                        {x.status}
                      </span>
                    </td>
                    <td data-label="Attempts">{x.attempts}</td>
                    <td data-label="Response" title={x.last_error ?? undefined}>
                      {x.last_status_code ?? x.last_error ?? "—"}
                    </td>
                    <td data-label="Latency">{fmt(x.last_latency_ms, 0, " ms")}</td>
                    <td data-label="Time">{new Date(x.created_at).toLocaleString()}</td>
                    {canWrite && (
                      <td data-label="Actions">
                        <button
                          type="button"
                          aria-label={`Redeliver ${x.event_type} of ${new Date(x.created_at).toLocaleString()}`}
                          onClick={() => redeliver.mutate({ team_id, endpoint_id, delivery_id: x.delivery_id })}
                        >
                          Redeliver
                        </button>
                      </td>
                    )}
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Q>
    </section>
  );
}
