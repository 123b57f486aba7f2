import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { client, errorMessage, trpc } from "../api";
import { type Team, useCurrent } from "../current";
import { ConfirmButton, PageHeading, Q, TextField, useToast } from "../ui";
import { webauthn } from "./auth";

const date = (iso: string | null) => (iso ? new Date(iso).toLocaleDateString() : "never");

/** Recovery codes, shown once: the service keeps only their hashes. */
function RecoveryCodes({ codes, onDone }: { codes: string[]; onDone: () => void }) {
  const toast = useToast();
  return (
    <section className="once" aria-label="Recovery codes">
      <p className="warn">
        <strong>Recovery codes</strong>: save them somewhere safe now. Each signs in once when you cannot use your app
        or passkey. They will not be shown again.
      </p>
      <ol className="codes" data-testid="recovery-codes">
        {codes.map((c) => (
          <li key={c}>
            <code>{c}</code>
          </li>
        ))}
      </ol>
      <div className="row">
        <button
          type="button"
          onClick={() =>
            navigator.clipboard?.writeText(codes.join("\n")).then(
              () => toast("Copied"),
              () => toast("Copy failed: select the codes and copy them", "error"),
            )
          }
        >
          Copy
        </button>
        <button type="button" onClick={onDone}>
          I saved them
        </button>
      </div>
    </section>
  );
}

type Setup = { secret: string; otpauth_url: string; qr_svg: string };

/** The account's second factors: an authenticator app, passkeys, recovery codes. */
export function TwoFactorSection() {
  const qc = useQueryClient();
  const toast = useToast();
  const status = useQuery(trpc.twoFactor.status.queryOptions());
  const [password, setPassword] = useState("");
  const [codes, setCodes] = useState<string[] | null>(null);
  const [setup, setSetup] = useState<Setup | null>(null);
  const [code, setCode] = useState("");
  const [keyName, setKeyName] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const refresh = () =>
    Promise.all([
      qc.invalidateQueries(trpc.twoFactor.status.queryFilter()),
      qc.invalidateQueries(trpc.auth.me.queryFilter()),
    ]);
  /** Runs one change; its error is shown in the section. */
  const act = async (fn: () => Promise<unknown>) => {
    setBusy(true);
    setError(null);
    try {
      await fn();
    } catch (err) {
      setError(
        err instanceof Error && err.name === "NotAllowedError" ? "The passkey was not created." : errorMessage(err),
      );
    } finally {
      setBusy(false);
    }
  };
  const needPassword = () => {
    if (!password) throw new Error("Enter your current password first: it is needed to change your sign-in.");
    return password;
  };

  const startTotp = () =>
    act(async () => setSetup(await client.twoFactor.startTotp.mutate({ password: needPassword() })));
  const confirmTotp = () =>
    act(async () => {
      const r = await client.twoFactor.confirmTotp.mutate({ code: code.replace(/\s/g, "") });
      setSetup(null);
      setCode("");
      if (r.recovery_codes.length) setCodes(r.recovery_codes);
      toast("Authenticator app turned on");
      await refresh();
    });
  const removeTotp = () =>
    act(async () => {
      await client.twoFactor.removeTotp.mutate({ password: needPassword() });
      toast("Authenticator app removed");
      await refresh();
    });
  const addPasskey = () =>
    act(async () => {
      const name = keyName.trim() || "Passkey";
      const { options } = await client.twoFactor.passkeyOptions.mutate({ password: needPassword() });
      const { startRegistration } = await webauthn();
      const response = await startRegistration({ optionsJSON: options as never });
      const r = await client.twoFactor.addPasskey.mutate({ name, response: response as never });
      setKeyName("");
      if (r.recovery_codes.length) setCodes(r.recovery_codes);
      toast(`Passkey ${r.passkey.name} added`);
      await refresh();
    });
  const removePasskey = (passkey_id: string, name: string) =>
    act(async () => {
      await client.twoFactor.removePasskey.mutate({ passkey_id, password: needPassword() });
      toast(`Passkey ${name} removed`);
      await refresh();
    });
  const newCodes = () =>
    act(async () => {
      setCodes((await client.twoFactor.regenerateRecoveryCodes.mutate({ password: needPassword() })).recovery_codes);
      await refresh();
    });

  return (
    <section className="card" aria-labelledby="tfa-h">
      <h2 id="tfa-h">Two-factor sign-in</h2>
      <Q q={status}>
        {(s) => (
          <>
            <p className={s.enabled ? undefined : "muted"} data-testid="two-factor-state">
              {s.enabled
                ? "On: after your password, sign-in asks for a code from your app or a passkey."
                : "Off: your password alone signs you in. Add an authenticator app or a passkey."}
            </p>
            {codes && <RecoveryCodes codes={codes} onDone={() => setCodes(null)} />}
            <TextField
              label="Your password, to change sign-in factors"
              hint="Needed to add or remove a factor."
              type="password"
              autoComplete="current-password"
              value={password}
              onChange={setPassword}
            />

            <h3>Authenticator app</h3>
            {s.totp.enabled ? (
              <div className="row">
                <span>Set up on {date(s.totp.confirmed_at)}.</span>
                <ConfirmButton
                  label="Remove app"
                  question="Remove the authenticator app? Its codes stop working."
                  onConfirm={() => void removeTotp()}
                />
              </div>
            ) : setup ? (
              <form
                aria-label="Turn on the authenticator app"
                onSubmit={(e) => {
                  e.preventDefault();
                  void confirmTotp();
                }}
              >
                <p>Scan this code with your authenticator app, or type the key into it.</p>
                <img
                  className="qr"
                  src={`data:image/svg+xml;utf8,${encodeURIComponent(setup.qr_svg)}`}
                  alt="QR code for your authenticator app"
                  width={180}
                  height={180}
                />
                <p>
                  Key: <code data-testid="totp-secret">{setup.secret}</code>
                </p>
                <div className="row-form">
                  <TextField
                    label="Code from the app"
                    inputMode="numeric"
                    autoComplete="one-time-code"
                    required
                    value={code}
                    onChange={setCode}
                  />
                  <button type="submit" className="primary" disabled={busy}>
                    Turn on
                  </button>
                </div>
              </form>
            ) : (
              <button type="button" onClick={() => void startTotp()} disabled={busy}>
                Set up an authenticator app
              </button>
            )}

            <h3>Passkeys</h3>
            {s.passkeys.length > 0 && (
              <table className="stack" aria-label="Passkeys">
                <thead>
                  <tr>
                    <th>Name</th>
                    <th>Added</th>
                    <th>Last used</th>
                    <th>Actions</th>
                  </tr>
                </thead>
                <tbody>
                  {s.passkeys.map((p) => (
                    <tr key={p.passkey_id}>
                      <td data-label="Name">{p.name}</td>
                      <td data-label="Added">{date(p.created_at)}</td>
                      <td data-label="Last used">{date(p.last_used_at)}</td>
                      <td data-label="Actions">
                        <ConfirmButton
                          label="Remove"
                          question={`Remove the passkey ${p.name}?`}
                          onConfirm={() => void removePasskey(p.passkey_id, p.name)}
                        />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
            <form
              className="row-form"
              aria-label="Add a passkey"
              onSubmit={(e) => {
                e.preventDefault();
                void addPasskey();
              }}
            >
              <TextField label="Passkey name" placeholder="e.g. Laptop" value={keyName} onChange={setKeyName} />
              <button type="submit" disabled={busy}>
                Add a passkey
              </button>
            </form>

            {s.enabled && (
              <>
                <h3>Recovery codes</h3>
                <div className="row">
                  <span>{s.recovery_codes_left} unused.</span>
                  <button type="button" onClick={() => void newCodes()} disabled={busy}>
                    Make new recovery codes
                  </button>
                </div>
              </>
            )}
            {error && (
              <p className="error" role="alert">
                {error}
              </p>
            )}
          </>
        )}
      </Q>
    </section>
  );
}

/** What a member sees of a team that requires a second factor they do not have. */
export function LockedTeam({ team }: { team: Team }) {
  return (
    <>
      <PageHeading title={`Team ${team.name} (locked)`}>Team {team.name}</PageHeading>
      <section className="card locked" aria-labelledby="locked-h" data-testid="team-locked">
        <h2 id="locked-h">This team is locked</h2>
        <p>
          {team.name} requires two-factor sign-in of its members. Add an authenticator app or a passkey to your account
          to open it.
        </p>
        <a className="button primary" href="#/account">
          Set up two-factor sign-in
        </a>
      </section>
    </>
  );
}

/** The team setting: owners and admins require a second factor of every member. */
export function TwoFactorRequirement() {
  const { team, canWrite, twoFactor } = useCurrent();
  const qc = useQueryClient();
  const toast = useToast();
  const [error, setError] = useState<string | null>(null);
  if (!team || !canWrite) return null;
  const required = Boolean(team.require_two_factor);
  const toggle = async () => {
    setError(null);
    try {
      await client.teams.setTwoFactorRequirement.mutate({ team_id: team.team_id, required: !required });
      await qc.invalidateQueries(trpc.auth.me.queryFilter());
      toast(required ? "Two-factor sign-in no longer required" : "Two-factor sign-in required");
    } catch (err) {
      setError(errorMessage(err));
    }
  };
  return (
    <section className="card" aria-labelledby="req-h">
      <h2 id="req-h">Two-factor requirement</h2>
      <p>
        {required
          ? "Every member needs two-factor sign-in: members without it see the team locked until they add it."
          : "Members may sign in with a password alone."}{" "}
        API keys are not affected.
      </p>
      {!required && !twoFactor ? (
        <p className="muted">
          To require it, first <a href="#/account">add two-factor sign-in to your own account</a>.
        </p>
      ) : (
        <button type="button" onClick={() => void toggle()}>
          {required ? "Stop requiring two-factor sign-in" : "Require two-factor sign-in"}
        </button>
      )}
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
    </section>
  );
}
