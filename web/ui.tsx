import {
  createContext,
  type InputHTMLAttributes,
  type ReactNode,
  useCallback,
  useContext,
  useEffect,
  useRef,
  useState,
} from "react";
import { errorMessage, isUnreachable } from "./api";

/* Routing by hash: a reload never asks the server for a path the API owns. */
const readRoute = () => location.hash.replace(/^#\/?/, "").split("/").filter(Boolean);

export function useRoute(): string[] {
  const [parts, setParts] = useState(readRoute);
  useEffect(() => {
    const on = () => setParts(readRoute());
    addEventListener("hashchange", on);
    return () => removeEventListener("hashchange", on);
  }, []);
  return parts;
}
export const go = (path: string) => {
  location.hash = `#/${path}`;
};

/* Toasts */
type Toast = { id: number; text: string; kind: "ok" | "error" };
const ToastCtx = createContext<(text: string, kind?: Toast["kind"]) => void>(() => {});
export const useToast = () => useContext(ToastCtx);
let toastSeq = 0;

export function Toasts({ children }: { children: ReactNode }) {
  const [toasts, setToasts] = useState<Toast[]>([]);
  const push = useCallback((text: string, kind: Toast["kind"] = "ok") => {
    const id = ++toastSeq;
    setToasts((t) => [...t, { id, text, kind }]);
    setTimeout(() => setToasts((t) => t.filter((x) => x.id !== id)), 4000);
  }, []);
  return (
    <ToastCtx.Provider value={push}>
      {children}
      <div className="toasts" role="status" aria-live="polite">
        {toasts.map((t) => (
          <div key={t.id} className={`toast toast-${t.kind}`}>
            {t.text}
          </div>
        ))}
      </div>
    </ToastCtx.Provider>
  );
}

/** Mutation callbacks: after success refresh what changed and say so; on failure toast the message. */
export function useOutcome(after?: () => unknown) {
  const toast = useToast();
  return (done: string) => ({
    onSuccess: () => {
      void after?.();
      toast(done);
    },
    onError: (e: unknown) => toast(errorMessage(e), "error"),
  });
}

/* States */
export function Loading({ what = "Loading" }: { what?: string }) {
  return (
    <p className="state" aria-busy="true">
      {what}…
    </p>
  );
}
export function ErrorState({ error }: { error: unknown }) {
  return (
    <p className="state error" role="alert">
      {errorMessage(error)}
    </p>
  );
}
export function Empty({ title, next }: { title: string; next?: ReactNode }) {
  return (
    <div className="state empty">
      <p>{title}</p>
      {next}
    </div>
  );
}

/** Renders loading / error / data for a query result. */
export function Q<T>({
  q,
  children,
}: {
  q: { isPending: boolean; error: unknown; data: T | undefined };
  children: (data: T) => ReactNode;
}) {
  // During an outage a failed re-read keeps the last data on screen (the banner says why).
  if (q.error && !(q.data !== undefined && isUnreachable(q.error))) return <ErrorState error={q.error} />;
  if (q.isPending || q.data === undefined) return <Loading />;
  return <>{children(q.data)}</>;
}

/* A button that asks before it acts (deletes, revocations, rotations). */
export function ConfirmButton({
  label,
  question,
  onConfirm,
  danger = true,
  confirmLabel,
  name,
}: {
  label: string;
  question: string;
  onConfirm: () => void;
  danger?: boolean;
  confirmLabel?: string;
  /** The button's accessible name when the visible label alone is ambiguous in a list ("Revoke" of which?). */
  name?: string;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  return (
    <>
      <button
        type="button"
        className={danger ? "danger" : ""}
        aria-label={name}
        onClick={() => dialog.current?.showModal()}
      >
        {label}
      </button>
      <dialog ref={dialog} aria-label={question}>
        <p>{question}</p>
        <div className="row">
          <button type="button" onClick={() => dialog.current?.close()}>
            Cancel
          </button>
          <button
            type="button"
            className={danger ? "danger" : "primary"}
            onClick={() => {
              dialog.current?.close();
              onConfirm();
            }}
          >
            {confirmLabel ?? label}
          </button>
        </div>
      </dialog>
    </>
  );
}

/** A secret shown once: a copy button and the warning that it will not be shown again. */
export function ShownOnce({ label, value, onDone }: { label: string; value: string; onDone: () => void }) {
  const toast = useToast();
  return (
    <section className="once" aria-label={label}>
      <p className="warn">
        <strong>{label}</strong>: copy it now. It will not be shown again.
      </p>
      <div className="row">
        <code className="secret" data-testid="secret">
          {value}
        </code>
        <button
          type="button"
          onClick={() =>
            navigator.clipboard?.writeText(value).then(
              () => toast("Copied"),
              () => toast("Copy failed: select the text and copy it", "error"),
            )
          }
        >
          Copy
        </button>
        <button type="button" onClick={onDone}>
          I saved it
        </button>
      </div>
    </section>
  );
}

export function Field({
  label,
  error,
  children,
  hint,
}: {
  label: string;
  error?: string;
  hint?: string;
  children: (id: string, describedBy?: string) => ReactNode;
}) {
  const id = `f-${label.toLowerCase().replace(/\W+/g, "-")}`;
  const describedBy = error ? `${id}-err` : hint ? `${id}-hint` : undefined;
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      {children(id, describedBy)}
      {hint && !error && (
        <small id={`${id}-hint`} className="muted">
          {hint}
        </small>
      )}
      {error && (
        <small id={`${id}-err`} className="field-error" role="alert">
          {error}
        </small>
      )}
    </div>
  );
}

/** A labelled text input: the field, its hint or error, and the value as a string. */
export function TextField({
  label,
  error,
  hint,
  onChange,
  ...input
}: {
  label: string;
  error?: string;
  hint?: string;
  value: string;
  onChange: (value: string) => void;
} & Omit<InputHTMLAttributes<HTMLInputElement>, "id" | "value" | "onChange">) {
  return (
    <Field label={label} error={error} hint={hint}>
      {(id, d) => <input id={id} aria-describedby={d} onChange={(e) => onChange(e.target.value)} {...input} />}
    </Field>
  );
}

export function Badge({ online }: { online: boolean | null }) {
  const text = online === null ? "unknown" : online ? "online" : "offline";
  return (
    <span className={`badge badge-${text}`} data-status={text}>
      {text}
    </span>
  );
}

export const fmt = (v: number | null | undefined, digits = 0, unit = "") =>
  v === null || v === undefined ? "—" : `${v.toFixed(digits)}${unit}`;
