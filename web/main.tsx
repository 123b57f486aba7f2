import { QueryClientProvider, useQuery } from "@tanstack/react-query";
import { useEffect, useState, useSyncExternalStore } from "react";
import { createRoot } from "react-dom/client";
import { queryClient, session, trpc } from "./api";
import { connection } from "./connection";
import { type Current, CurrentCtx } from "./current";
import { AlertRulesPage } from "./pages/alerts";
import { AuditPage } from "./pages/audit";
import { AuthPage } from "./pages/auth";
import { ClientPage, ClientsPage } from "./pages/clients";
import { IncidentsPage } from "./pages/incidents";
import { PlayerPage, PlayersPage } from "./pages/players";
import { ServerPage } from "./pages/server";
import { NetworkPage } from "./pages/network";
import { NetworksPage, ServersPage } from "./pages/servers";
import { StatusPagesPage } from "./pages/status-pages";
import { AccountPage, MyInvitations, TeamPage, TeamSwitcher } from "./pages/team";
import { LockedTeam } from "./pages/two-factor";
import "./styles.css";
import { ErrorState, expectNewPage, Loading, Toasts, useRoute } from "./ui";

const TEAM_KEY = "mcp.team";

/** A route part as it was encoded; a malformed escape is taken as written. */
function decodeRoutePart(part: string) {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}
const THEME_KEY = "mcp.theme";

function ThemeToggle() {
  const [theme, setTheme] = useState(() => localStorage.getItem(THEME_KEY) ?? "auto");
  useEffect(() => {
    if (theme === "auto") delete document.documentElement.dataset.theme;
    else document.documentElement.dataset.theme = theme;
    localStorage.setItem(THEME_KEY, theme);
  }, [theme]);
  return (
    <label className="theme">
      <span className="sr-only">Theme</span>
      <select value={theme} onChange={(e) => setTheme(e.target.value)}>
        <option value="auto">System theme</option>
        <option value="light">Light</option>
        <option value="dark">Dark</option>
      </select>
    </label>
  );
}

function Shell() {
  const me = useQuery(trpc.auth.me.queryOptions());
  const route = useRoute();
  const [teamId, setTeamId] = useState(() => localStorage.getItem(TEAM_KEY));
  if (me.isPending) return <Loading what="Loading your account" />;
  // A 401 has already ended the session (the App shows the sign-in form); anything else is said.
  // A failed re-read during an outage keeps what is known on screen.
  if (!me.data)
    return (
      <main id="main">
        <ErrorState error={me.error} />
        <button type="button" onClick={() => void me.refetch()}>
          Try again
        </button>
      </main>
    );
  const teams = me.data.teams;
  const team = teams.find((t) => t.team_id === teamId) ?? teams[0] ?? null;
  const current: Current = {
    team,
    teams,
    email: me.data.email,
    twoFactor: me.data.two_factor,
    canWrite: team !== null && (team.role === "admin" || team.role === "owner") && !team.locked,
    canModerate: team !== null && team.role !== "viewer" && !team.locked,
    selectTeam(id) {
      localStorage.setItem(TEAM_KEY, id);
      setTeamId(id);
    },
  };
  const [page = "servers", id, tab] = route;
  // The audit log is for the team's admins and owners (the service answers 403 below that).
  const canAudit = team !== null && (team.role === "admin" || team.role === "owner");
  const nav = [
    ["servers", "Servers"],
    ["networks", "Networks"],
    ["players", "Players"],
    ["clients", "Client apps"],
    ["incidents", "Incidents"],
    ["alerts", "Alerts"],
    ["status-pages", "Status pages"],
    ["team", "Team"],
    ...(canAudit ? [["audit", "Audit"]] : []),
    ["account", "Account"],
  ];
  let body: React.ReactNode;
  if (!team && page !== "account") body = <TeamPage />;
  else if (team?.locked && page !== "account") body = <LockedTeam team={team} />;
  else if (page === "servers" && id) body = <ServerPage key={id} serverId={id} tab={tab} />;
  else if (page === "servers") body = <ServersPage />;
  else if (page === "networks" && id) body = <NetworkPage key={id} name={decodeRoutePart(id)} />;
  else if (page === "networks") body = <NetworksPage />;
  else if (page === "players" && id) body = <PlayerPage key={id} uuid={id} />;
  else if (page === "players") body = <PlayersPage key={team!.team_id} />;
  else if (page === "clients" && id) body = <ClientPage key={id} clientId={id} />;
  else if (page === "clients") body = <ClientsPage />;
  else if (page === "incidents") body = <IncidentsPage key={team!.team_id} />;
  else if (page === "alerts") body = <AlertRulesPage key={team!.team_id} />;
  else if (page === "status-pages") body = <StatusPagesPage key={team!.team_id} />;
  else if (page === "team") body = <TeamPage />;
  else if (page === "audit" && canAudit) body = <AuditPage key={team!.team_id} />;
  else body = <AccountPage />;
  return (
    <CurrentCtx.Provider value={current}>
      {/* A button, not a link: a #fragment would be read as a route. */}
      <button type="button" className="skip" onClick={() => document.getElementById("main")?.focus()}>
        Skip to content
      </button>
      <header className="top">
        <a className="brand" href="#/servers">
          mc-platform
        </a>
        <nav aria-label="Main">
          {nav.map(([p, label]) => (
            <a key={p} href={`#/${p}`} aria-current={page === p ? "page" : undefined}>
              {label}
            </a>
          ))}
        </nav>
        <div className="top-right">
          <TeamSwitcher />
          <ThemeToggle />
          <button
            type="button"
            onClick={() => {
              expectNewPage();
              void session.logout();
            }}
          >
            Sign out
          </button>
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        <MyInvitations />
        {body}
      </main>
    </CurrentCtx.Provider>
  );
}

/** Shown while the service cannot be reached; the page reconnects by itself. */
function Reconnecting() {
  const reachable = useSyncExternalStore(connection.subscribe, connection.reachable);
  return (
    <div className="connection" role="status">
      {!reachable && (
        <p className="reconnecting" data-testid="reconnecting">
          Connection to the service lost. Reconnecting…
        </p>
      )}
    </div>
  );
}

function App() {
  // Whether this browser holds a sign-in is only known by asking (the cookie is out of script's reach).
  const [state, setState] = useState<{ signedIn: boolean; ended?: string; checking: boolean }>({
    signedIn: false,
    checking: true,
  });
  useEffect(() => {
    const off = session.subscribe((s) => setState({ ...s, checking: false }));
    void session.restore().then((ok) => !ok && setState((s) => ({ ...s, signedIn: false, checking: false })));
    return () => void off();
  }, []);
  // The address stays as it is through sign-in, so a deep link opens once signed in.
  let body: React.ReactNode;
  if (state.checking) body = <Loading what="Restoring your session" />;
  else if (!state.signedIn)
    body = (
      <main id="main">
        <AuthPage ended={state.ended} />
      </main>
    );
  else body = <Shell />;
  return (
    <>
      <Reconnecting />
      {body}
    </>
  );
}

createRoot(document.getElementById("root")!).render(
  <QueryClientProvider client={queryClient}>
    <Toasts>
      <App />
    </Toasts>
  </QueryClientProvider>,
);
