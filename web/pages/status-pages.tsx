import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { errorMessage, forTeam, trpc } from "../api";
import { useCurrent } from "../current";
import { ConfirmButton, Empty, Field, PageHeading, Q, SubmitButton, TextField, useIntent, useOutcome } from "../ui";

type Show = { players: boolean; version: boolean; motd: boolean; latency: boolean };
type Theme = "auto" | "light" | "dark";

interface PageForm {
  slug: string;
  title: string;
  description: string;
  host_name: string;
  server_ids: string[];
  network_names: string[];
  show: Show;
  logo_url: string;
  accent_color: string;
  theme: Theme;
}

const EMPTY: PageForm = {
  slug: "",
  title: "",
  description: "",
  host_name: "",
  server_ids: [],
  network_names: [],
  show: { players: false, version: false, motd: false, latency: false },
  logo_url: "",
  accent_color: "#2f6fde",
  theme: "auto",
};

const SHOWN: [keyof Show, string][] = [
  ["players", "Players online"],
  ["version", "Version"],
  ["motd", "MOTD (with its colours)"],
  ["latency", "Latency"],
];

/** The fields as the API takes them: empty optional text is null. */
const body = (f: PageForm) => ({
  ...f,
  host_name: f.host_name.trim() || null,
  logo_url: f.logo_url.trim() || null,
});

/** The team's public status pages (docs/status-pages.md): list, create, change, publish, delete. */
export function StatusPagesPage() {
  const { team, canWrite } = useCurrent();
  const team_id = team!.team_id;
  const qc = useQueryClient();
  const pages = useQuery({ ...trpc.statusPages.list.queryOptions({ team_id }), refetchOnMount: "always" });
  const refresh = () => qc.invalidateQueries(trpc.statusPages.list.queryFilter());
  const outcome = useOutcome(refresh);
  const [editing, setEditing] = useState<string | "new" | null>(null);
  const publish = useMutation(trpc.statusPages.publish.mutationOptions(outcome("Page published")));
  const unpublish = useMutation(trpc.statusPages.unpublish.mutationOptions(outcome("Page unpublished")));
  const remove = useMutation(trpc.statusPages.delete.mutationOptions(outcome("Page deleted")));
  return (
    <>
      <div className="page-head">
        <PageHeading title="Status pages" />
        {canWrite && editing === null && (
          <button type="button" className="primary" onClick={() => setEditing("new")}>
            New status page
          </button>
        )}
      </div>
      <p className="muted">
        Public pages showing your servers' state, 90 days of uptime and incidents, with badges and a feed. Only what you
        tick is shown.
      </p>
      {editing === "new" && <PageEditor onDone={() => setEditing(null)} />}
      <Q q={pages}>
        {(d) =>
          d.pages.length === 0 ? (
            <Empty title="No status pages yet." />
          ) : (
            <table className="stack" aria-label="Status pages">
              <thead>
                <tr>
                  <th>Page</th>
                  <th>Address</th>
                  <th>Shows</th>
                  <th>State</th>
                  <th>Actions</th>
                </tr>
              </thead>
              <tbody>
                {d.pages.map((p) => (
                  <tr key={p.page_id} data-testid="status-page-row">
                    <td data-label="Page">
                      <strong>{p.title}</strong>
                      {p.description && <div className="muted">{p.description}</div>}
                    </td>
                    <td data-label="Address">
                      <a href={p.url} target="_blank" rel="noreferrer">
                        /status/{p.slug}
                      </a>
                      {p.host_name && <div className="muted">also at {p.host_name}</div>}
                    </td>
                    <td data-label="Shows">
                      {p.server_ids.length === 1 ? "1 server" : `${p.server_ids.length} servers`}
                      {p.network_names.length
                        ? `, ${p.network_names.length === 1 ? "network" : "networks"} ${p.network_names.join(", ")}`
                        : ""}
                      <div className="muted">
                        {SHOWN.filter(([k]) => p.show[k])
                          .map(([, l]) => l.split(" (")[0])
                          .join(", ") || "state and uptime only"}
                      </div>
                    </td>
                    <td data-label="State">
                      <span className={`badge ${p.published ? "badge-online" : "badge-unknown"}`}>
                        {p.published ? "published" : "draft"}
                      </span>
                    </td>
                    <td data-label="Actions">
                      {canWrite && (
                        <div className="actions">
                          <button
                            type="button"
                            aria-label={`Edit ${p.title}`}
                            onClick={() => setEditing(editing === p.page_id ? null : p.page_id)}
                          >
                            Edit
                          </button>
                          <button
                            type="button"
                            aria-label={`${p.published ? "Unpublish" : "Publish"} ${p.title}`}
                            disabled={publish.isPending || unpublish.isPending}
                            onClick={() => (p.published ? unpublish : publish).mutate({ team_id, page_id: p.page_id })}
                          >
                            {p.published ? "Unpublish" : "Publish"}
                          </button>
                          <ConfirmButton
                            label="Delete"
                            target={p.title}
                            question={`Delete the status page ${p.title}? Its address, badges and feed stop answering.`}
                            onConfirm={() => remove.mutate({ team_id, page_id: p.page_id })}
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
      {editing && editing !== "new" && pages.data && (
        <PageEditor
          key={editing}
          page={pages.data.pages.find((p) => p.page_id === editing)}
          onDone={() => setEditing(null)}
        />
      )}
    </>
  );
}

interface Page extends Omit<PageForm, "host_name" | "logo_url"> {
  page_id: string;
  host_name: string | null;
  logo_url: string | null;
}

function PageEditor({ page, onDone }: { page?: Page; onDone: () => void }) {
  const { team } = useCurrent();
  const team_id = team!.team_id;
  const qc = useQueryClient();
  const servers = useQuery(trpc.servers.list.queryOptions(undefined, forTeam(team_id)));
  const networks = useQuery(trpc.servers.networks.queryOptions(undefined, forTeam(team_id)));
  const [f, setF] = useState<PageForm>(() =>
    page
      ? {
          slug: page.slug,
          title: page.title,
          description: page.description,
          host_name: page.host_name ?? "",
          server_ids: page.server_ids,
          network_names: page.network_names,
          show: page.show,
          logo_url: page.logo_url ?? "",
          accent_color: page.accent_color,
          theme: page.theme,
        }
      : EMPTY,
  );
  const set = <K extends keyof PageForm>(k: K, v: PageForm[K]) => setF((x) => ({ ...x, [k]: v }));
  const toggle = (list: string[], v: string, on: boolean) => (on ? [...list, v] : list.filter((x) => x !== v));
  const done = () => {
    void qc.invalidateQueries(trpc.statusPages.list.queryFilter());
    onDone();
  };
  const outcome = useOutcome(done);
  const intent = useIntent();
  const create = useMutation(
    trpc.statusPages.create.mutationOptions({ ...intent.options(), ...outcome("Page created") }),
  );
  const update = useMutation(trpc.statusPages.update.mutationOptions(outcome("Page saved")));
  const pending = create.isPending || update.isPending;
  const error = create.error ?? update.error;
  return (
    <form
      className="card"
      aria-label={page ? `Edit status page ${page.title}` : "New status page"}
      onSubmit={(e) => {
        e.preventDefault();
        if (page) update.mutate({ team_id, page_id: page.page_id, ...body(f) });
        else intent.submit(create, { team_id, ...body(f), published: false });
      }}
    >
      <h2>{page ? `Edit ${page.title}` : "New status page"}</h2>
      {error && (
        <p className="field-error" role="alert">
          {errorMessage(error)}
        </p>
      )}
      <div className="row-form">
        <TextField label="Title" required maxLength={100} value={f.title} onChange={(v) => set("title", v)} />
        <TextField
          label="Slug"
          required
          maxLength={63}
          pattern="[a-z0-9](?:[a-z0-9\-]{0,61}[a-z0-9])?"
          hint="The address: /status/<slug>"
          value={f.slug}
          onChange={(v) => set("slug", v.toLowerCase())}
        />
        <TextField label="Description" maxLength={500} value={f.description} onChange={(v) => set("description", v)} />
        <TextField
          label="Own host name (optional)"
          placeholder="status.example.com"
          hint="Point it at this service; its / shows the page"
          value={f.host_name}
          onChange={(v) => set("host_name", v)}
        />
      </div>
      <fieldset>
        <legend>Servers</legend>
        <Q q={servers}>
          {(d) =>
            d.servers.length === 0 ? (
              <p className="muted">No servers yet.</p>
            ) : (
              d.servers.map((s) => (
                <label key={s.server_id} className="check">
                  <input
                    type="checkbox"
                    checked={f.server_ids.includes(s.server_id)}
                    onChange={(e) => set("server_ids", toggle(f.server_ids, s.server_id, e.target.checked))}
                  />{" "}
                  {s.name}
                </label>
              ))
            )
          }
        </Q>
      </fieldset>
      <Q q={networks}>
        {(d) =>
          d.networks.length > 0 && (
            <fieldset>
              <legend>Networks (every server of each)</legend>
              {d.networks.map((n) => (
                <label key={n.network_name} className="check">
                  <input
                    type="checkbox"
                    checked={f.network_names.includes(n.network_name)}
                    onChange={(e) => set("network_names", toggle(f.network_names, n.network_name, e.target.checked))}
                  />{" "}
                  {n.network_name}
                </label>
              ))}
            </fieldset>
          )
        }
      </Q>
      <fieldset>
        <legend>Shown for each server, besides its state, uptime and incidents</legend>
        {SHOWN.map(([k, label]) => (
          <label key={k} className="check">
            <input
              type="checkbox"
              checked={f.show[k]}
              onChange={(e) => set("show", { ...f.show, [k]: e.target.checked })}
            />{" "}
            {label}
          </label>
        ))}
      </fieldset>
      <div className="row-form">
        <TextField
          label="Logo URL (optional)"
          type="url"
          placeholder="https://example.com/logo.png"
          value={f.logo_url}
          onChange={(v) => set("logo_url", v)}
        />
        <TextField label="Accent colour" type="color" value={f.accent_color} onChange={(v) => set("accent_color", v)} />
        <Field label="Theme">
          {(id) => (
            <select id={id} value={f.theme} onChange={(e) => set("theme", e.target.value as Theme)}>
              <option value="auto">Follow the reader's system</option>
              <option value="light">Light</option>
              <option value="dark">Dark</option>
            </select>
          )}
        </Field>
      </div>
      <div className="actions">
        <SubmitButton className="primary" pending={pending} busy="Saving…">
          {page ? "Save" : "Create page"}
        </SubmitButton>
        <button type="button" onClick={onDone}>
          Cancel
        </button>
      </div>
    </form>
  );
}
