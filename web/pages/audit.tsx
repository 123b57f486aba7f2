import { useInfiniteQuery, useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { AUDIT_ACTION_NAMES, type AuditAction } from "../../src/audit/actions";
import { trpc } from "../api";
import { useCurrent } from "../current";
import { Empty, ErrorState, Field, Loading, TextField } from "../ui";

type ActorKind = "user" | "api_key" | "agent" | "system";
interface Filters {
  actor: string;
  action: AuditAction | "";
  target: string;
  since: string;
  until: string;
}
const NONE: Filters = { actor: "", action: "", target: "", since: "", until: "" };

/**
 * A time typed as `YYYY-MM-DD HH:MM` in the browser's zone, as the instant the API wants; null when
 * it does not read as one. (Text, not `datetime-local`: two native pickers would be two buttons
 * with the same name.)
 */
function instant(local: string): string | null {
  const m = /^(\d{4}-\d{2}-\d{2})(?:[ T](\d{1,2}:\d{2}))?$/.exec(local.trim());
  if (!m) return null;
  const d = new Date(`${m[1]}T${(m[2] ?? "00:00").padStart(5, "0")}`);
  return Number.isNaN(d.getTime()) ? null : d.toISOString();
}
const short = (v: unknown) => {
  const s = v === null || v === undefined ? "—" : typeof v === "string" ? v : JSON.stringify(v);
  return s.length > 80 ? `${s.slice(0, 79)}…` : s;
};

/** The team's audit log: who changed what, when and from where, with the API's filters. Admins and owners. */
export function AuditPage() {
  const { team } = useCurrent();
  const team_id = team!.team_id;
  const [draft, setDraft] = useState<Filters>(NONE);
  const [applied, setApplied] = useState<Filters>(NONE);
  const [bad, setBad] = useState<{ since?: string; until?: string }>({});
  const members = useQuery(trpc.teams.members.queryOptions({ team_id }));
  // The actor filter holds "kind:" (every actor of a kind) or "id:<uuid>".
  const [kind, id] = applied.actor.split(":") as [string, string | undefined];
  const input = {
    team_id,
    limit: 25,
    ...(kind === "kind" && id ? { actor_kind: id as ActorKind } : {}),
    ...(kind === "id" && id ? { actor_id: id } : {}),
    ...(applied.action ? { action: applied.action } : {}),
    ...(applied.target.trim() ? { target_id: applied.target.trim() } : {}),
    ...(applied.since ? { since: instant(applied.since)! } : {}),
    ...(applied.until ? { until: instant(applied.until)! } : {}),
  };
  const log = useInfiniteQuery(
    trpc.audit.list.infiniteQueryOptions(input, { getNextPageParam: (page) => page.next_cursor ?? undefined }),
  );
  const set = (k: keyof Filters) => (v: string) => setDraft((d) => ({ ...d, [k]: v }));
  const entries = log.data?.pages.flatMap((p) => p.entries) ?? [];
  return (
    <>
      <div className="page-head">
        <h1>Audit log</h1>
      </div>
      <section className="card" aria-labelledby="audit-filter-h">
        <h2 id="audit-filter-h" className="sr-only">
          Filters
        </h2>
        <p className="muted">
          Every change made in this team, by the dashboard, the API, an agent or the platform. Entries cannot be changed
          or deleted.
        </p>
        <form
          className="row-form"
          aria-label="Audit filters"
          onSubmit={(e) => {
            e.preventDefault();
            const wrong = "Write it as YYYY-MM-DD HH:MM (your time)";
            const errors = {
              ...(draft.since.trim() && !instant(draft.since) ? { since: wrong } : {}),
              ...(draft.until.trim() && !instant(draft.until) ? { until: wrong } : {}),
            };
            setBad(errors);
            if (!errors.since && !errors.until) setApplied(draft);
          }}
        >
          <Field label="Actor">
            {(fid) => (
              <select id={fid} value={draft.actor} onChange={(e) => set("actor")(e.target.value)}>
                <option value="">Anyone</option>
                {members.data?.members.map((m) => (
                  <option key={m.user_id} value={`id:${m.user_id}`}>
                    {m.email}
                  </option>
                ))}
                <option value="kind:api_key">Any API key</option>
                <option value="kind:agent">Any server agent</option>
                <option value="kind:system">The platform (pinger)</option>
              </select>
            )}
          </Field>
          <Field label="Action">
            {(fid) => (
              <select id={fid} value={draft.action} onChange={(e) => set("action")(e.target.value)}>
                <option value="">Any action</option>
                {AUDIT_ACTION_NAMES.map((a) => (
                  <option key={a} value={a}>
                    {a}
                  </option>
                ))}
              </select>
            )}
          </Field>
          <TextField
            label="Target"
            hint="A server id, a player UUID, a rank name…"
            value={draft.target}
            onChange={set("target")}
          />
          <TextField
            label="From"
            placeholder="YYYY-MM-DD HH:MM"
            error={bad.since}
            value={draft.since}
            onChange={set("since")}
          />
          <TextField
            label="Until"
            placeholder="YYYY-MM-DD HH:MM"
            error={bad.until}
            value={draft.until}
            onChange={set("until")}
          />
          <button type="submit" className="primary">
            Filter
          </button>
          <button
            type="button"
            onClick={() => {
              setDraft(NONE);
              setApplied(NONE);
              setBad({});
            }}
          >
            Clear
          </button>
        </form>
      </section>
      <section className="card" aria-labelledby="audit-h">
        <h2 id="audit-h">Entries</h2>
        {log.error ? (
          <ErrorState error={log.error} />
        ) : log.isPending ? (
          <Loading />
        ) : entries.length === 0 ? (
          <Empty title="No entries match." />
        ) : (
          <table className="stack" aria-label="Audit entries">
            <thead>
              <tr>
                <th>When</th>
                <th>Actor</th>
                <th>Action</th>
                <th>Target</th>
                <th>Changes</th>
                <th>From</th>
              </tr>
            </thead>
            <tbody>
              {entries.map((e) => (
                <tr key={e.entry_id} data-testid="audit-entry" data-action={e.action}>
                  <td data-label="When">
                    <time dateTime={e.at}>{new Date(e.at).toLocaleString()}</time>
                  </td>
                  <td data-label="Actor">
                    {e.actor.name}
                    {e.actor.kind !== "user" && <div className="muted">{e.actor.kind.replace("_", " ")}</div>}
                  </td>
                  <td data-label="Action">
                    <code className="action">{e.action}</code>
                  </td>
                  <td data-label="Target">
                    {e.target.name ?? e.target.id}
                    <div className="muted">{e.target.type}</div>
                  </td>
                  <td data-label="Changes">
                    {Object.keys(e.changes).length === 0 ? (
                      <span className="muted">—</span>
                    ) : (
                      <ul className="audit-changes">
                        {Object.entries(e.changes).map(([field, c]) => (
                          <li key={field}>
                            <strong>{field}</strong>: {short(c.before)} → {short(c.after)}
                          </li>
                        ))}
                      </ul>
                    )}
                  </td>
                  <td data-label="From">
                    {e.ip ?? "—"}
                    {e.user_agent && (
                      <div className="muted" title={e.user_agent}>
                        {short(e.user_agent).slice(0, 40)}
                      </div>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        {log.hasNextPage && (
          <button type="button" disabled={log.isFetchingNextPage} onClick={() => void log.fetchNextPage()}>
            {log.isFetchingNextPage ? "Loading…" : "Older entries"}
          </button>
        )}
      </section>
    </>
  );
}
