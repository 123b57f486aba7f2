import {
  createContext,
  type InputHTMLAttributes,
  type ReactNode,
  useCallback,
  useContext,
  useEffect,
  useId,
  useRef,
  useState,
} from "react";
import { type CallContext, errorCode, errorMessage, isUnreachable } from "./api";

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

/*
 * A new page says so: its heading names the document, and after a move inside the app (a link,
 * a redirect after a save, signing in or out) takes the focus, so a screen reader reads the new
 * page and Tab starts from it. The first load leaves focus where the browser put it.
 */
let pageChanged = false;
// A page is its first two segments (`servers/<id>`); a third is a tab of it, not a new page.
const pageOf = () => readRoute().slice(0, 2).join("/");
let lastPage = pageOf();
addEventListener("hashchange", () => {
  const page = pageOf();
  if (page !== lastPage) pageChanged = true;
  lastPage = page;
});
/** The next page heading to appear takes the focus (for changes that are not a new address). */
export const expectNewPage = (expected = true) => {
  pageChanged = expected;
};

export function PageHeading({ title, children }: { title: string; children?: ReactNode }) {
  const ref = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = `${title} · mc-platform`;
    if (pageChanged) {
      pageChanged = false;
      ref.current?.focus();
    }
  }, [title]);
  return (
    <h1 ref={ref} tabIndex={-1}>
      {children ?? title}
    </h1>
  );
}

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

/** 128 random bits in hex (crypto.randomUUID needs a secure context; a dashboard on plain http has none). */
function newIntentKey(): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("");
}

interface Submittable<V> {
  mutate(vars: V, opts: { onSuccess(): void; onError(e: unknown): void; onSettled(): void }): void;
}

/**
 * One create or submit as the person means it. Its Idempotency-Key is made when the form first
 * renders and goes with every attempt of this submit, so a retry after a lost answer gets the
 * first answer back instead of making a second resource; a success (or the service saying the
 * key went with other input) starts a new intent. `submit` ignores a call while one runs: the
 * second click of a double click arrives before React has rendered the button disabled.
 */
export function useIntent() {
  const [key, setKey] = useState(newIntentKey);
  const running = useRef(false);
  const renew = () => setKey(newIntentKey());
  return {
    /** Mutation options that send this intent's key, with the call's selectors. */
    options: (context: CallContext = {}) => ({ trpc: { context: { ...context, idempotencyKey: key } } }),
    submit<V>(mutation: Submittable<V>, vars: V, then?: () => void) {
      if (running.current) return;
      running.current = true;
      mutation.mutate(vars, {
        onSuccess: () => {
          renew();
          then?.();
        },
        onError: (e) => {
          if (errorCode(e) === "idempotency_key_reused") renew();
        },
        onSettled: () => {
          running.current = false;
        },
      });
    },
  };
}

/** A form's submit button: disabled while its request runs, saying so. */
export function SubmitButton({
  pending,
  children,
  busy = "Creating…",
  className,
}: {
  pending: boolean;
  children: ReactNode;
  busy?: string;
  className?: string;
}) {
  return (
    <button type="submit" className={className} disabled={pending} aria-busy={pending || undefined}>
      {pending ? busy : children}
    </button>
  );
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

/**
 * When the row holding `button` goes (its removal succeeded), focus would fall to the page's body
 * and a keyboard or screen reader user would start again from the top. It goes instead to the same
 * action on the row that took its place (or the row before), else to the heading of the section.
 */
function keepFocusNear(button: HTMLButtonElement | null) {
  const section = button?.closest("section");
  if (!button || !section) return;
  const same = () =>
    [...section.querySelectorAll<HTMLButtonElement>("button[data-action]")].filter(
      (b) => b.dataset.action === button.dataset.action,
    );
  const index = same().indexOf(button);
  const watch = new MutationObserver(() => {
    if (button.isConnected) return;
    watch.disconnect();
    if (document.activeElement && document.activeElement !== document.body) return;
    const left = same();
    const next = left[index] ?? left[index - 1] ?? section.querySelector<HTMLElement>("h2, h3");
    if (next instanceof HTMLHeadingElement && !next.hasAttribute("tabindex")) next.tabIndex = -1;
    next?.focus();
  });
  watch.observe(section, { childList: true, subtree: true });
}

/*
 * A button that asks before it acts (deletes, revocations, rotations). `target` names what it acts
 * on ("Unban" + "Steve"), for a screen reader's list of buttons, where a row's other cells are not read.
 */
export function ConfirmButton({
  label,
  target,
  question,
  onConfirm,
  danger = true,
  confirmLabel,
  name,
}: {
  label: string;
  target?: string;
  question: string;
  onConfirm: () => void;
  danger?: boolean;
  confirmLabel?: string;
  /** The button's accessible name when the visible label alone is ambiguous in a list ("Revoke" of which?). */
  name?: string;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  const trigger = useRef<HTMLButtonElement>(null);
  return (
    <>
      <button
        ref={trigger}
        type="button"
        className={danger ? "danger" : ""}
        data-action={label}
        aria-label={name ?? (target ? `${label} ${target}` : undefined)}
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
              keepFocusNear(trigger.current);
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
  // Unique even when two forms on a page ask for the same thing (renaming and creating a team).
  const id = `f-${label.toLowerCase().replace(/\W+/g, "-")}${useId()}`;
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
