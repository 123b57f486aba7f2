import { useState } from "react";
import { errorMessage, fieldErrors, publicClient, session } from "../api";
import { expectNewPage, PageHeading, TextField } from "../ui";

export function AuthPage({ ended }: { ended?: string }) {
  const [mode, setMode] = useState<"signin" | "signup">("signin");
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [fields, setFields] = useState<Record<string, string>>({});
  const [busy, setBusy] = useState(false);

  const submit = async (e: React.FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    setFields({});
    try {
      if (mode === "signup") await publicClient.auth.signup.mutate({ email, password });
      // Signed in, the form goes: focus moves to the heading of the page that replaces it.
      expectNewPage();
      await session.signIn(email, password);
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
    </div>
  );
}
