import { useState } from "react";
import { fieldErrors } from "./api";
import { ConfirmButton, ErrorState, Field, SubmitButton, TextField } from "./ui";

/** A rank as both the server's and the network's rank lists answer it. */
export type RankRow = {
  name: string;
  display_name?: string | null;
  weight: number;
  prefix: string | null;
  permissions: string[];
};

/** What the rank form submits: the fields of a server rank and of a network rank alike. */
export type NewRank = { name: string; prefix: string | null; weight: number; permissions: string[] };

/** The ranks table of a server or a network, with a Delete per row for those who may write. */
export function RanksTable({
  ranks,
  label,
  what,
  canWrite,
  onDelete,
}: {
  ranks: readonly RankRow[];
  label: string;
  /** How the confirmation names a rank: "rank" or "network rank". */
  what: string;
  canWrite: boolean;
  onDelete: (name: string) => void;
}) {
  return (
    <table className="stack" aria-label={label}>
      <thead>
        <tr>
          <th>Name</th>
          <th>Weight</th>
          <th>Prefix</th>
          <th>Permissions</th>
          {canWrite && <th>Actions</th>}
        </tr>
      </thead>
      <tbody>
        {ranks.map((r) => (
          <tr key={r.name}>
            <td data-label="Name">{r.display_name ?? r.name}</td>
            <td data-label="Weight">{r.weight}</td>
            <td data-label="Prefix">{r.prefix ?? ""}</td>
            <td data-label="Permissions">{r.permissions.join(", ")}</td>
            {canWrite && (
              <td data-label="Actions">
                <ConfirmButton
                  label="Delete"
                  target={`rank ${r.name}`}
                  question={`Delete the ${what} ${r.name}?`}
                  onConfirm={() => onDelete(r.name)}
                />
              </td>
            )}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

const EMPTY = { name: "", prefix: "", weight: "0", permissions: "" };

/**
 * The form that adds a rank. `submit` sends it; the form empties itself once `done` is called
 * back (on the mutation's success), so a failed create keeps what was typed.
 */
export function RankForm({
  label,
  pending,
  error,
  submit,
}: {
  label: string;
  pending: boolean;
  error: unknown;
  submit: (rank: NewRank, done: () => void) => void;
}) {
  const [form, setForm] = useState(EMPTY);
  const errs = fieldErrors(error);
  return (
    <form
      className="row-form"
      aria-label={label}
      onSubmit={(e) => {
        e.preventDefault();
        submit(
          {
            name: form.name,
            prefix: form.prefix || null,
            weight: Number(form.weight),
            permissions: form.permissions
              .split(",")
              .map((p) => p.trim())
              .filter(Boolean),
          },
          () => setForm(EMPTY),
        );
      }}
    >
      <TextField
        label="Rank name"
        error={errs.name}
        required
        value={form.name}
        onChange={(v) => setForm({ ...form, name: v })}
      />
      <TextField
        label="Weight"
        error={errs.weight}
        type="number"
        value={form.weight}
        onChange={(v) => setForm({ ...form, weight: v })}
      />
      <TextField
        label="Prefix"
        error={errs.prefix}
        value={form.prefix}
        onChange={(v) => setForm({ ...form, prefix: v })}
      />
      <Field
        label="Permissions (comma separated)"
        error={Object.entries(errs).find(([k]) => k.startsWith("permissions"))?.[1]}
      >
        {(id, d) => (
          <input
            id={id}
            aria-describedby={d}
            value={form.permissions}
            onChange={(e) => setForm({ ...form, permissions: e.target.value })}
          />
        )}
      </Field>
      <SubmitButton pending={pending} busy="Adding…">
        Add rank
      </SubmitButton>
      {error && !Object.keys(errs).length ? <ErrorState error={error} /> : null}
    </form>
  );
}
