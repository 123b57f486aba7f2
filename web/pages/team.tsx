import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { errorMessage, forTeam, trpc } from "../api";
import { SCOPES, type Scope, SERVER_SCOPES } from "../../src/auth/scopes";
import { useCurrent } from "../current";
import {
  ConfirmButton,
  Empty,
  Field,
  PageHeading,
  Q,
  ShownOnce,
  SubmitButton,
  TextField,
  useIntent,
  useOutcome,
  useToast,
} from "../ui";
import { TwoFactorRequirement, TwoFactorSection } from "./two-factor";
import { Webhooks } from "./webhooks";
import { TeamTimeZone } from "./analytics";
import { PrivacySettings } from "./privacy";

type GrantableRole = "admin" | "moderator" | "viewer";

/** The roles a member or key can be given, weakest first; ownership moves only by transfer. */
function RoleOptions() {
  return (
    <>
      <option value="viewer">viewer</option>
      <option value="moderator">moderator (bans, kicks, announcements)</option>
      <option value="admin">admin</option>
    </>
  );
}

export function TeamSwitcher() {
  const { team, teams, selectTeam } = useCurrent();
  if (!teams.length) return null;
  return (
    <label className="switcher">
      <span className="sr-only">Team</span>
      <select value={team?.team_id} onChange={(e) => selectTeam(e.target.value)}>
        {teams.map((t) => (
          <option key={t.team_id} value={t.team_id}>
            {t.name} ({t.locked ? "locked" : t.role})
          </option>
        ))}
      </select>
    </label>
  );
}

function CreateTeam() {
  const qc = useQueryClient();
  const toast = useToast();
  const { selectTeam } = useCurrent();
  const [name, setName] = useState("");
  const intent = useIntent();
  const create = useMutation(
    trpc.teams.create.mutationOptions({
      ...intent.options(),
      onSuccess: async (t) => {
        await qc.invalidateQueries(trpc.auth.me.queryFilter());
        selectTeam(t.team_id);
        setName("");
        toast(`Team ${t.name} created`);
      },
    }),
  );
  return (
    <form
      className="card"
      aria-label="Create a team"
      onSubmit={(e) => {
        e.preventDefault();
        intent.submit(create, { name });
      }}
    >
      <h2>Create a team</h2>
      <Field label="Team name" error={create.error ? errorMessage(create.error) : undefined}>
        {(id, d) => (
          <input id={id} aria-describedby={d} required value={name} onChange={(e) => setName(e.target.value)} />
        )}
      </Field>
      <SubmitButton className="primary" pending={create.isPending}>
        Create team
      </SubmitButton>
    </form>
  );
}

export function TeamPage() {
  const { team, canWrite } = useCurrent();
  if (!team)
    return (
      <>
        <PageHeading title="Welcome" />
        <Empty title="You are not in a team yet. Create one to add servers and client apps, or accept an invitation." />
        <CreateTeam />
      </>
    );
  return (
    <>
      <PageHeading title={`Team ${team.name}`} />
      <p className="muted">Your role: {team.role}</p>
      <Rename />
      <TeamTimeZone teamId={team.team_id} canWrite={canWrite} />
      <TwoFactorRequirement />
      <Members />
      <ApiKeys />
      <Webhooks />
      <PrivacySettings />
      <CreateTeam />
    </>
  );
}

function Rename() {
  const { team, canWrite } = useCurrent();
  const qc = useQueryClient();
  const toast = useToast();
  const [name, setName] = useState(team!.name);
  const rename = useMutation(
    trpc.teams.update.mutationOptions({
      onSuccess: () => {
        void qc.invalidateQueries(trpc.auth.me.queryFilter());
        toast("Team renamed");
      },
    }),
  );
  if (!canWrite) return null;
  return (
    <form
      className="card row-form"
      aria-label="Rename the team"
      onSubmit={(e) => {
        e.preventDefault();
        rename.mutate({ team_id: team!.team_id, name });
      }}
    >
      <Field label="Team name" error={rename.error ? errorMessage(rename.error) : undefined}>
        {(id, d) => <input id={id} aria-describedby={d} value={name} onChange={(e) => setName(e.target.value)} />}
      </Field>
      <button type="submit">Rename</button>
    </form>
  );
}

function Members() {
  const { team, canWrite } = useCurrent();
  const team_id = team!.team_id;
  const qc = useQueryClient();
  const toast = useToast();
  const members = useQuery(trpc.teams.members.queryOptions({ team_id }));
  const refresh = () => qc.invalidateQueries(trpc.teams.members.queryFilter());
  const outcome = useOutcome(refresh);
  const refreshInvitations = () => qc.invalidateQueries(trpc.teams.invitations.queryFilter());
  const invite = useIntent();
  const add = useMutation(
    trpc.teams.invite.mutationOptions({
      ...invite.options(),
      onSuccess: (i) => {
        void refreshInvitations();
        toast(`Invitation sent to ${i.email}`);
      },
    }),
  );
  const setRole = useMutation(trpc.teams.updateMember.mutationOptions(outcome("Role changed")));
  const remove = useMutation(trpc.teams.removeMember.mutationOptions(outcome("Member removed")));
  const transferred = useOutcome(() => Promise.all([refresh(), qc.invalidateQueries(trpc.auth.me.queryFilter())]));
  const transfer = useMutation(trpc.teams.transfer.mutationOptions(transferred("Ownership transferred")));
  const [email, setEmail] = useState("");
  const [role, setNewRole] = useState<GrantableRole>("viewer");
  return (
    <section className="card" aria-labelledby="members-h">
      <h2 id="members-h">Members</h2>
      <Q q={members}>
        {(d) => (
          <table className="stack" aria-label="Members">
            <thead>
              <tr>
                <th>Email</th>
                <th>Role</th>
                {canWrite && <th>Actions</th>}
              </tr>
            </thead>
            <tbody>
              {d.members.map((m) => (
                <tr key={m.user_id}>
                  <td data-label="Email">{m.email}</td>
                  <td data-label="Role">
                    {canWrite && m.role !== "owner" ? (
                      <select
                        aria-label={`Role of ${m.email}`}
                        value={m.role}
                        onChange={(e) =>
                          setRole.mutate({ team_id, user_id: m.user_id, role: e.target.value as GrantableRole })
                        }
                      >
                        <RoleOptions />
                      </select>
                    ) : (
                      m.role
                    )}
                  </td>
                  {canWrite && (
                    <td data-label="Actions">
                      <div className="actions">
                        {m.role !== "owner" && (
                          <ConfirmButton
                            label="Remove"
                            target={m.email}
                            question={`Remove ${m.email} from the team?`}
                            onConfirm={() => remove.mutate({ team_id, user_id: m.user_id })}
                          />
                        )}
                        {team!.role === "owner" && m.role !== "owner" && (
                          <ConfirmButton
                            label="Make owner"
                            target={m.email}
                            question={`Transfer ownership to ${m.email}? You become an admin.`}
                            onConfirm={() => transfer.mutate({ team_id, user_id: m.user_id })}
                          />
                        )}
                      </div>
                    </td>
                  )}
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Q>
      {canWrite && <TeamInvitations />}
      {canWrite && (
        <form
          className="row-form"
          aria-label="Invite a member"
          onSubmit={(e) => {
            e.preventDefault();
            invite.submit(add, { team_id, email, role }, () => setEmail(""));
          }}
        >
          <TextField
            label="Invite by email"
            error={add.error ? errorMessage(add.error) : undefined}
            type="email"
            required
            value={email}
            onChange={(v) => setEmail(v)}
          />
          <Field label="Role">
            {(id) => (
              <select id={id} value={role} onChange={(e) => setNewRole(e.target.value as GrantableRole)}>
                <RoleOptions />
              </select>
            )}
          </Field>
          <SubmitButton pending={add.isPending} busy="Inviting…">
            Invite
          </SubmitButton>
        </form>
      )}
    </section>
  );
}

/** The one list of scopes (src/auth/scopes.ts): what the form offers is what the service checks. */
const SCOPE_LIST = Object.entries(SCOPES) as [Scope, string][];

const when = (iso: string | null) => (iso ? new Date(iso).toLocaleString() : "never");

/** The team's invitations not yet answered: they become members only when they accept. */
function TeamInvitations() {
  const { team } = useCurrent();
  const team_id = team!.team_id;
  const qc = useQueryClient();
  const invitations = useQuery(trpc.teams.invitations.queryOptions({ team_id }));
  const outcome = useOutcome(() => qc.invalidateQueries(trpc.teams.invitations.queryFilter()));
  const revoke = useMutation(trpc.teams.revokeInvitation.mutationOptions(outcome("Invitation revoked")));
  return (
    <Q q={invitations}>
      {(d) =>
        d.invitations.length === 0 ? null : (
          <table className="stack" aria-label="Pending invitations">
            <caption>Invited, not yet accepted</caption>
            <thead>
              <tr>
                <th>Email</th>
                <th>Role</th>
                <th>Expires</th>
                <th>Actions</th>
              </tr>
            </thead>
            <tbody>
              {d.invitations.map((i) => (
                <tr key={i.invitation_id} data-invitation={i.email}>
                  <td data-label="Email">{i.email}</td>
                  <td data-label="Role">{i.role}</td>
                  <td data-label="Expires">
                    {i.status === "expired" ? "expired" : new Date(i.expires_at).toLocaleString()}
                  </td>
                  <td data-label="Actions">
                    <ConfirmButton
                      label={`Revoke invitation for ${i.email}`}
                      question={`Revoke the invitation for ${i.email}? They can no longer accept it.`}
                      confirmLabel="Revoke"
                      onConfirm={() => revoke.mutate({ team_id, invitation_id: i.invitation_id })}
                    />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )
      }
    </Q>
  );
}

/**
 * The signed-in person's own invitations, above every page: a team joins their list only when
 * they accept here.
 */
export function MyInvitations() {
  const qc = useQueryClient();
  const toast = useToast();
  const { selectTeam } = useCurrent();
  const invitations = useQuery(trpc.invitations.list.queryOptions());
  const refresh = () => qc.invalidateQueries(trpc.invitations.list.queryFilter());
  const accept = useMutation(
    trpc.invitations.accept.mutationOptions({
      onSuccess: async (t) => {
        await Promise.all([refresh(), qc.invalidateQueries(trpc.auth.me.queryFilter())]);
        selectTeam(t.team_id);
        toast(`You joined ${t.name}`);
      },
      onError: (e) => {
        void refresh();
        toast(errorMessage(e), "error");
      },
    }),
  );
  const declined = useOutcome(refresh);
  const decline = useMutation(trpc.invitations.decline.mutationOptions(declined("Invitation declined")));
  const list = invitations.data?.invitations ?? [];
  if (list.length === 0) return null;
  return (
    <section className="card" aria-labelledby="invitations-h">
      <h2 id="invitations-h">Invitations</h2>
      <ul className="invitations">
        {list.map((i) => (
          <li key={i.invitation_id} data-invitation={i.team_name}>
            <span>
              <strong>{i.team_name}</strong> as {i.role}
              {i.invited_by && <span className="muted"> (invited by {i.invited_by})</span>}
            </span>
            <span className="actions">
              <button
                type="button"
                className="primary"
                aria-label={`Accept invitation to ${i.team_name}`}
                disabled={accept.isPending}
                onClick={() => accept.mutate({ invitation_id: i.invitation_id })}
              >
                Accept
              </button>
              <button
                type="button"
                aria-label={`Decline invitation to ${i.team_name}`}
                disabled={decline.isPending}
                onClick={() => decline.mutate({ invitation_id: i.invitation_id })}
              >
                Decline
              </button>
            </span>
          </li>
        ))}
      </ul>
    </section>
  );
}

function ApiKeys() {
  const { team, canWrite } = useCurrent();
  const team_id = team!.team_id;
  const qc = useQueryClient();
  const keys = useQuery(trpc.teams.listApiKeys.queryOptions({ team_id }, { enabled: canWrite }));
  const servers = useQuery({
    ...trpc.servers.list.queryOptions(undefined, forTeam(team_id)),
    enabled: canWrite,
  });
  const refresh = () => qc.invalidateQueries(trpc.teams.listApiKeys.queryFilter());
  const outcome = useOutcome(refresh);
  const [shown, setShown] = useState<string | null>(null);
  const [name, setName] = useState("");
  const [access, setAccess] = useState<GrantableRole | "scopes">("viewer");
  const [scopes, setScopes] = useState<Scope[]>([]);
  const [serverIds, setServerIds] = useState<string[]>([]);
  const [expires, setExpires] = useState("");
  const intent = useIntent();
  const create = useMutation(
    trpc.teams.createApiKey.mutationOptions({
      ...intent.options(),
      onSuccess: (k) => {
        setShown(k.key);
        setName("");
        setScopes([]);
        setServerIds([]);
        setExpires("");
        void refresh();
      },
    }),
  );
  const revoke = useMutation(trpc.teams.revokeApiKey.mutationOptions(outcome("Key revoked")));
  if (!canWrite) return null;
  const serverName = (id: string) => servers.data?.servers.find((x) => x.server_id === id)?.name ?? id.slice(0, 8);
  const offered = serverIds.length ? SCOPE_LIST.filter(([s]) => SERVER_SCOPES.includes(s)) : SCOPE_LIST;
  return (
    <section className="card" aria-labelledby="keys-h">
      <h2 id="keys-h">API keys</h2>
      {shown && <ShownOnce label="New API key" value={shown} onDone={() => setShown(null)} />}
      <Q q={keys}>
        {(d) =>
          d.api_keys.filter((k) => !k.revoked_at).length === 0 ? (
            <Empty title="No API keys. Create one for scripts and automation." />
          ) : (
            <table className="stack" aria-label="API keys">
              <thead>
                <tr>
                  <th>Name</th>
                  <th>Access</th>
                  <th>Servers</th>
                  <th>Expires</th>
                  <th>Last used</th>
                  <th>Prefix</th>
                  <th>Actions</th>
                </tr>
              </thead>
              <tbody>
                {d.api_keys
                  .filter((k) => !k.revoked_at)
                  .map((k) => (
                    <tr key={k.key_id}>
                      <td data-label="Name">{k.name}</td>
                      <td data-label="Access">{k.role ?? k.scopes?.join(", ")}</td>
                      <td data-label="Servers">{k.server_ids ? k.server_ids.map(serverName).join(", ") : "all"}</td>
                      <td data-label="Expires">{k.expires_at ? when(k.expires_at) : "never"}</td>
                      <td data-label="Last used">{when(k.last_used_at)}</td>
                      <td data-label="Prefix">
                        <code>{k.prefix}…</code>
                      </td>
                      <td data-label="Actions">
                        <ConfirmButton
                          label="Revoke"
                          target={`API key ${k.name}`}
                          question={`Revoke the key ${k.name}? Scripts using it stop working.`}
                          onConfirm={() => revoke.mutate({ team_id, key_id: k.key_id })}
                        />
                      </td>
                    </tr>
                  ))}
              </tbody>
            </table>
          )
        }
      </Q>
      <form
        aria-label="Create an API key"
        onSubmit={(e) => {
          e.preventDefault();
          const usable = scopes.filter((s) => !serverIds.length || SERVER_SCOPES.includes(s));
          intent.submit(create, {
            team_id,
            name,
            ...(access === "scopes" ? { scopes: usable } : { role: access }),
            ...(serverIds.length ? { server_ids: serverIds } : {}),
            ...(expires ? { expires_at: new Date(`${expires}T23:59:59`).toISOString() } : {}),
          });
        }}
      >
        <div className="row-form">
          <Field label="Key name" error={create.error ? errorMessage(create.error) : undefined}>
            {(id, d) => (
              <input id={id} aria-describedby={d} required value={name} onChange={(e) => setName(e.target.value)} />
            )}
          </Field>
          <Field label="Key access">
            {(id) => (
              <select id={id} value={access} onChange={(e) => setAccess(e.target.value as GrantableRole | "scopes")}>
                <RoleOptions />
                <option value="scopes">chosen scopes only</option>
              </select>
            )}
          </Field>
          <Field label="Expires (optional)">
            {(id) => (
              <input
                id={id}
                type="date"
                value={expires}
                min={new Date(Date.now() + 86_400_000).toISOString().slice(0, 10)}
                onChange={(e) => setExpires(e.target.value)}
              />
            )}
          </Field>
        </div>
        {access === "scopes" && (
          <fieldset>
            <legend>Scopes</legend>
            {offered.map(([s, what]) => (
              <label key={s} className="check" title={what}>
                <input
                  type="checkbox"
                  checked={scopes.includes(s)}
                  onChange={(e) => setScopes(e.target.checked ? [...scopes, s] : scopes.filter((x) => x !== s))}
                />{" "}
                {s}
              </label>
            ))}
          </fieldset>
        )}
        {(servers.data?.servers.length ?? 0) > 0 && (
          <fieldset>
            <legend>Servers (none ticked: all; ticked: those only, server routes only)</legend>
            {servers.data!.servers.map((x) => (
              <label key={x.server_id} className="check">
                <input
                  type="checkbox"
                  checked={serverIds.includes(x.server_id)}
                  onChange={(e) =>
                    setServerIds(
                      e.target.checked ? [...serverIds, x.server_id] : serverIds.filter((y) => y !== x.server_id),
                    )
                  }
                />{" "}
                {x.name}
              </label>
            ))}
          </fieldset>
        )}
        <SubmitButton pending={create.isPending}>Create key</SubmitButton>
      </form>
    </section>
  );
}

/** "Firefox on Linux" from a user agent, or the agent itself when it is none of the common ones. */
export function deviceName(ua: string | null): string {
  if (!ua) return "Unknown device";
  const browser = /Edg\//.test(ua)
    ? "Edge"
    : /Firefox\//.test(ua)
      ? "Firefox"
      : /Chrome\//.test(ua)
        ? "Chrome"
        : /Safari\//.test(ua)
          ? "Safari"
          : null;
  const os = /iPhone|iPad/.test(ua)
    ? "iOS"
    : /Android/.test(ua)
      ? "Android"
      : /Windows/.test(ua)
        ? "Windows"
        : /Mac OS X|Macintosh/.test(ua)
          ? "macOS"
          : /Linux/.test(ua)
            ? "Linux"
            : null;
  if (browser && os) return `${browser} on ${os}`;
  return browser ?? os ?? ua.slice(0, 60);
}

function Devices() {
  const qc = useQueryClient();
  const sessions = useQuery(trpc.auth.sessions.queryOptions());
  const outcome = useOutcome(() => qc.invalidateQueries(trpc.auth.sessions.queryFilter()));
  const revoke = useMutation(trpc.auth.revokeSession.mutationOptions(outcome("Device signed out")));
  const others = useMutation(
    trpc.auth.revokeOtherSessions.mutationOptions(outcome("Every other device is signed out")),
  );
  return (
    <section className="card" aria-labelledby="devices-h">
      <h2 id="devices-h">Signed-in devices</h2>
      <Q q={sessions}>
        {(d) => (
          <>
            <table className="stack" aria-label="Signed-in devices">
              <thead>
                <tr>
                  <th>Device</th>
                  <th>Address</th>
                  <th>Signed in</th>
                  <th>Last used</th>
                  <th>Actions</th>
                </tr>
              </thead>
              <tbody>
                {d.sessions.map((x) => {
                  const device = deviceName(x.user_agent);
                  return (
                    <tr key={x.session_id}>
                      <td data-label="Device" title={x.user_agent ?? undefined}>
                        {device}
                        {x.current && <span className="muted"> (this device)</span>}
                      </td>
                      <td data-label="Address">{x.address ?? "unknown"}</td>
                      <td data-label="Signed in">{when(x.created_at)}</td>
                      <td data-label="Last used">{when(x.last_used_at)}</td>
                      <td data-label="Actions">
                        {x.current ? (
                          <span className="muted">Sign out at the top of the page</span>
                        ) : (
                          <ConfirmButton
                            label="Revoke"
                            name={`Revoke ${device}${x.address ? ` at ${x.address}` : ""}`}
                            question={`Sign out ${device}? It must sign in again to use the dashboard.`}
                            onConfirm={() => revoke.mutate({ session_id: x.session_id })}
                          />
                        )}
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
            {d.sessions.some((x) => !x.current) && (
              <ConfirmButton
                label="Sign out all other devices"
                question="Sign out every device but this one?"
                onConfirm={() => others.mutate()}
              />
            )}
          </>
        )}
      </Q>
    </section>
  );
}

function ChangePassword() {
  const qc = useQueryClient();
  const toast = useToast();
  const [current, setCurrent] = useState("");
  const [next, setNext] = useState("");
  const change = useMutation(
    trpc.auth.changePassword.mutationOptions({
      onSuccess: (r) => {
        setCurrent("");
        setNext("");
        void qc.invalidateQueries(trpc.auth.sessions.queryFilter());
        toast(r.revoked ? `Password changed; ${r.revoked} other device(s) signed out` : "Password changed");
      },
    }),
  );
  return (
    <form
      className="card"
      aria-label="Change your password"
      onSubmit={(e) => {
        e.preventDefault();
        change.mutate({ current_password: current, new_password: next });
      }}
    >
      <h2>Change your password</h2>
      <p className="muted">Every other device is signed out.</p>
      <div className="row-form">
        <TextField
          label="Current password"
          type="password"
          autoComplete="current-password"
          required
          value={current}
          onChange={setCurrent}
          error={change.error ? errorMessage(change.error) : undefined}
        />
        <TextField
          label="New password"
          type="password"
          autoComplete="new-password"
          required
          minLength={8}
          value={next}
          onChange={setNext}
        />
        <button type="submit" disabled={change.isPending}>
          Change password
        </button>
      </div>
    </form>
  );
}

export function AccountPage() {
  const { email, teams } = useCurrent();
  return (
    <>
      <PageHeading title="Account" />
      <section className="card">
        <p>
          Signed in as <strong>{email}</strong>
        </p>
        <p className="muted">
          Member of {teams.length} team{teams.length === 1 ? "" : "s"}.
        </p>
      </section>
      <TwoFactorSection />
      <Devices />
      <ChangePassword />
    </>
  );
}
