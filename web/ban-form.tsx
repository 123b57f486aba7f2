import { useState } from "react";
import { fieldErrors } from "./api";
import { ErrorState, Field, SubmitButton, TextField } from "./ui";

/** The ban lengths the dashboard offers, in seconds (null: permanent). */
export const DURATIONS: [string, number | null][] = [
  ["Permanent", null],
  ["1 hour", 3600],
  ["1 day", 86_400],
  ["7 days", 7 * 86_400],
  ["30 days", 30 * 86_400],
];

/** When a ban of the chosen length ends: an ISO time, or null for a permanent one. */
export const expiresIn = (seconds: string) => {
  const secs = Number(seconds);
  return secs ? new Date(Date.now() + secs * 1000).toISOString() : null;
};

/** What the ban form submits: a server ban and a network ban alike (no uuid: found by name). */
export type NewBan = { uuid?: string; name: string; reason?: string; expires: string | null };

const EMPTY = { uuid: "", name: "", reason: "", duration: "0" };

/**
 * The ban form of a server and of a network: by name (any player the team has seen), or with a
 * UUID for someone never seen. It empties itself once `done` is called back on success.
 */
export function BanForm({
  label,
  button,
  pending,
  error,
  submit,
}: {
  label: string;
  button: string;
  pending: boolean;
  error: unknown;
  submit: (ban: NewBan, done: () => void) => void;
}) {
  const [form, setForm] = useState(EMPTY);
  const errs = fieldErrors(error);
  return (
    <form
      aria-label={label}
      onSubmit={(e) => {
        e.preventDefault();
        submit(
          {
            ...(form.uuid.trim() && { uuid: form.uuid.trim() }),
            name: form.name,
            reason: form.reason || undefined,
            expires: expiresIn(form.duration),
          },
          () => setForm(EMPTY),
        );
      }}
    >
      <h3>{label}</h3>
      <p className="muted">By name: any player the team has seen. Give the UUID only for someone never seen.</p>
      <div className="row-form">
        <TextField
          label="Player name"
          error={errs.name}
          required
          value={form.name}
          onChange={(v) => setForm({ ...form, name: v })}
        />
        <TextField
          label="Player UUID (optional)"
          error={errs.uuid}
          value={form.uuid}
          onChange={(v) => setForm({ ...form, uuid: v })}
        />
      </div>
      <div className="row-form">
        <TextField
          label="Reason"
          error={errs.reason}
          value={form.reason}
          onChange={(v) => setForm({ ...form, reason: v })}
        />
        <Field label="Duration">
          {(id) => (
            <select id={id} value={form.duration} onChange={(e) => setForm({ ...form, duration: e.target.value })}>
              {DURATIONS.map(([l, v]) => (
                <option key={l} value={String(v ?? 0)}>
                  {l}
                </option>
              ))}
            </select>
          )}
        </Field>
        <SubmitButton className="danger" pending={pending} busy="Banning…">
          {button}
        </SubmitButton>
      </div>
      {error && !Object.keys(errs).length ? <ErrorState error={error} /> : null}
    </form>
  );
}
