import { useState } from "react";
import { errorMessage, fieldErrors, publicClient, type SecondFactorChallenge, session } from "../api";
import { expectNewPage, PageHeading, TextField } from "../ui";

/** The WebAuthn helper is loaded only when a passkey is used: it stays out of the first load. */
export const webauthn = () => import("@simplewebauthn/browser");

/** After the password, for an account with a second factor: a code, a passkey or a recovery code. */
function SecondFactorForm({ challenge, onCancel }: { challenge: SecondFactorChallenge; onCancel: () => void }) {
  const hasTotp = challenge.methods.includes("totp");
  const hasPasskey = challenge.methods.includes("passkey");
  const [mode, setMode] = useState<"totp" | "recovery">(hasTotp ? "totp" : "recovery");
  const [value, setValue] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const run = async (input: Parameters<typeof session.secondFactor>[0]) => {
    setBusy(true);
    setError(null);
    try {
      await session.secondFactor(input);
    } catch (err) {
      setError(errorMessage(err));
    } finally {
      setBusy(false);
    }
  };
  const passkey = async () => {
    setError(null);
    try {
      const { startAuthentication } = await webauthn();
      const assertion = await startAuthentication({ optionsJSON: challenge.passkey_options as never });
      await run({ challenge_token: challenge.challenge_token, passkey: assertion });
    } catch (err) {
      setError(
        err instanceof Error && err.name === "NotAllowedError" ? "The passkey was not used." : errorMessage(err),
      );
    }
  };
  return (
    <form
      className="card"
      aria-label="Second factor"
      onSubmit={(e) => {
        e.preventDefault();
        void run(
          mode === "totp"
            ? { challenge_token: challenge.challenge_token, code: value.replace(/\s/g, "") }
            : { challenge_token: challenge.challenge_token, recovery_code: value },
        );
      }}
    >
      <h2>Two-factor sign-in</h2>
      {hasPasskey && (
        <>
          <p className="muted">Use the passkey or security key you added to this account.</p>
          <button type="button" className="primary" onClick={() => void passkey()} disabled={busy}>
            Use a passkey
          </button>
        </>
      )}
      {mode === "totp" ? (
        <TextField
          label="Code from your authenticator app"
          inputMode="numeric"
          autoComplete="one-time-code"
          pattern="[0-9 ]{6,7}"
          required
          value={value}
          onChange={setValue}
        />
      ) : (
        <TextField
          label="Recovery code"
          hint="Each recovery code works once."
          autoComplete="off"
          required
          value={value}
          onChange={setValue}
        />
      )}
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      <button className={hasPasskey ? undefined : "primary"} type="submit" disabled={busy}>
        Verify
      </button>
      {hasTotp && (
        <button
          type="button"
          className="link"
          onClick={() => {
            setMode(mode === "totp" ? "recovery" : "totp");
            setValue("");
          }}
        >
          {mode === "totp" ? "Use a recovery code instead" : "Use a code from the app instead"}
        </button>
      )}
      <button type="button" className="link" onClick={onCancel}>
        Back to sign-in
      </button>
    </form>
  );
}

export function AuthPage({ ended }: { ended?: string }) {
  const [mode, setMode] = useState<"signin" | "signup">("signin");
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [fields, setFields] = useState<Record<string, string>>({});
  const [busy, setBusy] = useState(false);
  const [challenge, setChallenge] = useState<SecondFactorChallenge | null>(null);

  const submit = async (e: React.FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    setFields({});
    try {
      if (mode === "signup") await publicClient.auth.signup.mutate({ email, password });
      // Signed in, the form goes: focus moves to the heading of the page that replaces it.
      expectNewPage();
      setChallenge(await session.signIn(email, password));
    } catch (err) {
      expectNewPage(false);
      setError(errorMessage(err));
      setFields(fieldErrors(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <div className="auth">
      <PageHeading title={mode === "signin" ? "Sign in" : "Create an account"}>mc-platform</PageHeading>
      <p className="muted">Teams, launcher sign-in and game servers.</p>
      {ended && (
        <p className="notice" role="alert">
          {ended}
        </p>
      )}
      {challenge ? (
        <SecondFactorForm
          challenge={challenge}
          onCancel={() => {
            setChallenge(null);
            setPassword("");
          }}
        />
      ) : (
        <form onSubmit={submit} className="card" aria-label={mode === "signin" ? "Sign in" : "Create account"}>
          <h2>{mode === "signin" ? "Sign in" : "Create an account"}</h2>
          <TextField
            label="Email"
            error={fields.email}
            type="email"
            autoComplete="email"
            required
            value={email}
            onChange={(v) => setEmail(v)}
          />
          <TextField
            label="Password"
            error={fields.password}
            hint={mode === "signup" ? "At least 8 characters" : undefined}
            type="password"
            autoComplete={mode === "signin" ? "current-password" : "new-password"}
            required
            value={password}
            onChange={(v) => setPassword(v)}
          />
          {error && (
            <p className="error" role="alert">
              {error}
            </p>
          )}
          <button className="primary" type="submit" disabled={busy}>
            {mode === "signin" ? "Sign in" : "Create account"}
          </button>
          <button type="button" className="link" onClick={() => setMode(mode === "signin" ? "signup" : "signin")}>
            {mode === "signin" ? "No account yet? Create one" : "Have an account? Sign in"}
          </button>
        </form>
      )}
    </div>
  );
}
