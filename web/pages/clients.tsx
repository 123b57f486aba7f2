import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useRef, useState } from "react";
import { errorMessage, fieldErrors, publicClient, trpc } from "../api";
import { useCurrent } from "../current";
import {
  ConfirmButton,
  Empty,
  ErrorState,
  Field,
  go,
  PageHeading,
  Q,
  ShownOnce,
  SubmitButton,
  TextField,
  useIntent,
  useOutcome,
  useToast,
} from "../ui";

/** Secrets shown in this tab, kept in memory only so "Try sign-in" can use them. */
const secrets = new Map<string, string>();

export function ClientsPage() {
  const { team, canWrite } = useCurrent();
  const team_id = team!.team_id;
  const apps = useQuery(trpc.clients.list.queryOptions({ team_id }));
  const [creating, setCreating] = useState(false);
  return (
    <>
      <div className="page-head">
        <PageHeading title="Client apps" />
        {canWrite && !creating && (
          <button type="button" className="primary" onClick={() => setCreating(true)}>
            New client app
          </button>
        )}
      </div>
      {creating && <CreateClient onClose={() => setCreating(false)} />}
      <Q q={apps}>
        {(d) =>
          d.apps.length === 0 ? (
            <Empty
              title="No client apps yet."
              next={canWrite ? <p>Create one to let your launcher sign players in with Microsoft.</p> : null}
            />
          ) : (
            <ul className="cards">
              {d.apps.map((a) => (
                <li key={a.client_id} className="card">
                  <h2>
                    <a href={`#/clients/${a.client_id}`}>{a.title}</a>
                  </h2>
                  <p className="muted">{a.description}</p>
                  <p>
                    <code>{a.client_id}</code>{" "}
                    {a.modules.includes("ms_auth") ? (
                      <span className="badge badge-online">ms_auth</span>
                    ) : (
                      <span className="badge badge-unknown">no module</span>
                    )}
                  </p>
                </li>
              ))}
            </ul>
          )
        }
      </Q>
    </>
  );
}

function CreateClient({ onClose }: { onClose: () => void }) {
  const { team } = useCurrent();
  const qc = useQueryClient();
  const [form, setForm] = useState({ name: "", title: "", description: "", logo_url: "" });
  const [created, setCreated] = useState<{ id: string; secret: string } | null>(null);
  const intent = useIntent();
  const create = useMutation(
    trpc.clients.create.mutationOptions({
      ...intent.options(),
      onSuccess: (r) => {
        secrets.set(r.app.client_id, r.client_secret);
        setCreated({ id: r.app.client_id, secret: r.client_secret });
        void qc.invalidateQueries(trpc.clients.list.queryFilter());
      },
    }),
  );
  const errs = fieldErrors(create.error);
  if (created)
    return (
      <section className="card">
        <h2>Client app created</h2>
        <p>
          Client ID: <code data-testid="client-id">{created.id}</code>
        </p>
        <ShownOnce
          label="Client secret"
          value={created.secret}
          onDone={() => {
            onClose();
            go(`clients/${created.id}`);
          }}
        />
      </section>
    );
  const set = (k: keyof typeof form) => (e: React.ChangeEvent<HTMLInputElement | HTMLTextAreaElement>) =>
    setForm({ ...form, [k]: e.target.value });
  return (
    <form
      className="card"
      aria-label="New client app"
      onSubmit={(e) => {
        e.preventDefault();
        intent.submit(create, { team_id: team!.team_id, ...form, logo_url: form.logo_url || undefined });
      }}
    >
      <h2>New client app</h2>
      <Field label="Name" error={errs.name} hint="A short identifier, e.g. blocky-launcher">
        {(id, d) => <input id={id} aria-describedby={d} required value={form.name} onChange={set("name")} />}
      </Field>
      <Field label="Title" error={errs.title} hint="Shown to players on the consent page">
        {(id, d) => <input id={id} aria-describedby={d} required value={form.title} onChange={set("title")} />}
      </Field>
      <Field label="Description" error={errs.description}>
        {(id, d) => (
          <textarea id={id} aria-describedby={d} required value={form.description} onChange={set("description")} />
        )}
      </Field>
      <Field label="Logo URL (optional)" error={errs.logo_url}>
        {(id, d) => <input id={id} aria-describedby={d} type="url" value={form.logo_url} onChange={set("logo_url")} />}
      </Field>
      {create.error && !Object.keys(errs).length && <ErrorState error={create.error} />}
      <div className="row">
        <SubmitButton className="primary" pending={create.isPending}>
          Create
        </SubmitButton>
        <button type="button" onClick={onClose}>
          Cancel
        </button>
      </div>
    </form>
  );
}

export function ClientPage({ clientId }: { clientId: string }) {
  const app = useQuery(trpc.clients.get.queryOptions({ client_id: clientId }));
  return (
    <Q q={app}>
      {(a) => (
        <>
          <div className="page-head">
            <PageHeading title={a.title} />
            <a href="#/clients">All client apps</a>
          </div>
          <p>
            Client ID: <code>{a.client_id}</code>
          </p>
          <EditClient app={a} />
          <MsAuthModule clientId={a.client_id} />
          <TrySignIn clientId={a.client_id} enabled={a.modules.includes("ms_auth")} />
          <SecretAndDelete clientId={a.client_id} />
        </>
      )}
    </Q>
  );
}

function EditClient({
  app,
}: {
  app: { client_id: string; title: string; description: string; logo_url: string | null };
}) {
  const { canWrite } = useCurrent();
  const qc = useQueryClient();
  const toast = useToast();
  const [form, setForm] = useState({ title: app.title, description: app.description, logo_url: app.logo_url ?? "" });
  const update = useMutation(
    trpc.clients.update.mutationOptions({
      onSuccess: () => {
        void qc.invalidateQueries(trpc.clients.get.queryFilter());
        toast("Saved");
      },
    }),
  );
  const errs = fieldErrors(update.error);
  return (
    <form
      className="card"
      aria-label="Details"
      onSubmit={(e) => {
        e.preventDefault();
        update.mutate({ client_id: app.client_id, ...form, logo_url: form.logo_url || null });
      }}
    >
      <h2>Details</h2>
      <fieldset disabled={!canWrite}>
        <TextField
          label="Title"
          error={errs.title}
          value={form.title}
          onChange={(v) => setForm({ ...form, title: v })}
        />
        <Field label="Description" error={errs.description}>
          {(id, d) => (
            <textarea
              id={id}
              aria-describedby={d}
              value={form.description}
              onChange={(e) => setForm({ ...form, description: e.target.value })}
            />
          )}
        </Field>
        <TextField
          label="Logo URL"
          error={errs.logo_url}
          value={form.logo_url}
          onChange={(v) => setForm({ ...form, logo_url: v })}
        />
      </fieldset>
      {update.error && !Object.keys(errs).length && <ErrorState error={update.error} />}
      {canWrite && <button type="submit">Save</button>}
    </form>
  );
}

function MsAuthModule({ clientId }: { clientId: string }) {
  const { canWrite } = useCurrent();
  const qc = useQueryClient();
  const toast = useToast();
  const mod = useQuery({ ...trpc.clients.getMsAuth.queryOptions({ client_id: clientId }), retry: false });
  const [uri, setUri] = useState("");
  useEffect(() => {
    if (mod.data) setUri(mod.data.post_login_redirect_uri);
  }, [mod.data]);
  const refresh = () =>
    Promise.all([
      qc.invalidateQueries(trpc.clients.getMsAuth.queryFilter()),
      qc.invalidateQueries(trpc.clients.get.queryFilter()),
    ]);
  const outcome = useOutcome(refresh);
  const intent = useIntent();
  const enable = useMutation(
    trpc.clients.enableMsAuth.mutationOptions({
      ...intent.options(),
      onSuccess: () => {
        refresh();
        toast("Sign in with Microsoft enabled");
      },
    }),
  );
  const disable = useMutation(trpc.clients.disableMsAuth.mutationOptions(outcome("Module disabled")));
  const errs = fieldErrors(enable.error);
  const inline = errs.post_login_redirect_uri ?? (enable.error ? errorMessage(enable.error) : undefined);
  return (
    <section className="card" aria-labelledby="ms-h">
      <h2 id="ms-h">Sign in with Microsoft (ms_auth)</h2>
      <p className="muted">
        {mod.data ? "Enabled." : "Not enabled."} Players land on the redirect URI after they approve.
      </p>
      {canWrite ? (
        <form
          className="row-form"
          aria-label="ms_auth module"
          onSubmit={(e) => {
            e.preventDefault();
            intent.submit(enable, { client_id: clientId, post_login_redirect_uri: uri });
          }}
        >
          <TextField
            label="Post-login redirect URI"
            error={inline}
            hint="https://, or http:// on a loopback address"
            aria-invalid={Boolean(inline)}
            value={uri}
            onChange={(v) => setUri(v)}
          />
          <SubmitButton className="primary" pending={enable.isPending} busy="Saving…">
            {mod.data ? "Save module" : "Enable module"}
          </SubmitButton>
          {mod.data && (
            <ConfirmButton
              label="Disable"
              question="Disable Sign in with Microsoft for this app? Launchers can no longer start logins."
              onConfirm={() => disable.mutate({ client_id: clientId })}
            />
          )}
        </form>
      ) : (
        mod.data && (
          <p>
            Redirect URI: <code>{mod.data.post_login_redirect_uri}</code>
          </p>
        )
      )}
    </section>
  );
}

type Step = { status: string; at: string };

/** Runs a real login with the app's credentials: start, a popup for the player, poll, validate. */
function TrySignIn({ clientId, enabled }: { clientId: string; enabled: boolean }) {
  const { canWrite } = useCurrent();
  const [secret, setSecret] = useState(secrets.get(clientId) ?? "");
  const [steps, setSteps] = useState<Step[]>([]);
  const [result, setResult] = useState<{ uuid: string; name: string } | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [running, setRunning] = useState(false);
  const cancelled = useRef(false);
  useEffect(
    () => () => {
      cancelled.current = true;
    },
    [],
  );
  if (!canWrite) return null;

  const run = async () => {
    // Opened in the click itself, so no popup blocker stands in the way.
    const popup = window.open("about:blank", "mcp-try-sign-in", "popup,width=520,height=720");
    setRunning(true);
    setSteps([]);
    setResult(null);
    setError(null);
    const creds = { client_id: clientId, client_secret: secret };
    try {
      const started = await publicClient.msAuth.start.mutate(creds);
      if (popup) popup.location.href = started.auth_url;
      let last = "";
      while (!cancelled.current) {
        const p = await publicClient.msAuth.poll.mutate({ ...creds, auth_request_id: started.auth_request_id });
        if (p.status !== last) {
          last = p.status;
          setSteps((s) => [
            ...s,
            { status: p.status + ("error" in p ? ` (${p.error})` : ""), at: new Date().toLocaleTimeString() },
          ]);
        }
        if (p.status === "authorized") {
          popup?.close();
          const v = await publicClient.msAuth.validate.mutate({ ...creds, svc_session_token: p.svc_session_token });
          if (v.valid) setResult({ uuid: v.mc_uuid ?? "", name: v.mc_username ?? "" });
          break;
        }
        if (p.status === "denied" || p.status === "expired") {
          popup?.close();
          break;
        }
        await new Promise((r) => setTimeout(r, Math.min(2, started.interval) * 1000));
      }
    } catch (err) {
      popup?.close();
      setError(errorMessage(err));
    } finally {
      setRunning(false);
    }
  };

  return (
    <section className="card" aria-labelledby="try-h">
      <h2 id="try-h">Try sign-in</h2>
      {!enabled ? (
        <p className="muted">Enable the ms_auth module first.</p>
      ) : (
        <>
          <p className="muted">
            Runs a real login in a popup with this app's credentials, exactly as a launcher would.
          </p>
          <div className="row-form">
            <TextField
              label="Client secret"
              hint="Kept in this tab's memory only"
              type="password"
              autoComplete="off"
              value={secret}
              onChange={(v) => setSecret(v)}
            />
            <button type="button" className="primary" disabled={running || !secret} onClick={() => void run()}>
              Try sign-in
            </button>
          </div>
          {steps.length > 0 && (
            <ol className="steps" aria-label="Login status" aria-live="polite">
              {steps.map((s) => (
                <li key={s.status} data-status={s.status}>
                  <span className="muted">{s.at}</span> {s.status}
                </li>
              ))}
            </ol>
          )}
          {result && (
            <p className="ok" data-testid="signin-result">
              Signed in as <strong>{result.name}</strong> (<code>{result.uuid}</code>)
            </p>
          )}
          {error && (
            <p className="error" role="alert">
              {error}
            </p>
          )}
        </>
      )}
    </section>
  );
}

function SecretAndDelete({ clientId }: { clientId: string }) {
  const { canWrite } = useCurrent();
  const qc = useQueryClient();
  const toast = useToast();
  const [shown, setShown] = useState<string | null>(null);
  const onError = (e: unknown) => toast(errorMessage(e), "error");
  const rotate = useMutation(
    trpc.clients.rotateSecret.mutationOptions({
      onSuccess: (r) => {
        secrets.set(clientId, r.client_secret);
        setShown(r.client_secret);
      },
      onError,
    }),
  );
  const del = useMutation(
    trpc.clients.delete.mutationOptions({
      onSuccess: () => {
        void qc.invalidateQueries(trpc.clients.list.queryFilter());
        toast("Client app deleted");
        go("clients");
      },
      onError,
    }),
  );
  if (!canWrite) return null;
  return (
    <section className="card" aria-labelledby="danger-h">
      <h2 id="danger-h">Secret and deletion</h2>
      {shown && <ShownOnce label="New client secret" value={shown} onDone={() => setShown(null)} />}
      <div className="row">
        <ConfirmButton
          label="Rotate secret"
          question="Rotate the client secret? The current secret stops working at once."
          onConfirm={() => rotate.mutate({ client_id: clientId })}
        />
        <ConfirmButton
          label="Delete app"
          question="Delete this client app? Launchers using it stop working."
          onConfirm={() => del.mutate({ client_id: clientId })}
        />
      </div>
    </section>
  );
}
