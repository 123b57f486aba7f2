import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import type { inferOutput } from "@trpc/tanstack-react-query";
import { useCallback, useEffect, useState } from "react";
import { errorMessage, fieldErrors, forServer, trpc } from "../api";
import { Charts } from "../chart";
import { DownNote, reasonText } from "../down";
import { nextRuns } from "../cron";
import { useCurrent } from "../current";
import { type LiveEvent, type LiveState, liveLabel, liveOnline, useLive } from "../live";
import { appendPoint, loadSeries, type Series, type Window } from "../series";
import {
  Badge,
  ConfirmButton,
  ErrorState,
  TextField,
  fmt,
  go,
  Loading,
  PageHeading,
  Q,
  ShownOnce,
  SubmitButton,
  useIntent,
  useToast,
  useOutcome,
} from "../ui";
import { RankForm, RanksTable } from "../ranks";
import { Tabs } from "../tabs";
import { KickButton, ServerBans, ServerPlayers } from "./server-players";
import { sessionAgentTokens } from "./servers";
import { AnalyticsPanel } from "./analytics";

const WINDOWS: Window[] = ["1h", "24h", "7d", "30d"];

/** The server page's tabs, in order; the first is the page's own address (`#/servers/<id>`). */
export const SERVER_TABS = [
  ["overview", "Overview"],
  ["players", "Players"],
  ["moderation", "Moderation"],
  ["settings", "Settings"],
] as const;
type TabId = (typeof SERVER_TABS)[number][0];

/**
 * A server: its name, status and address above four tabs. The tab is in the address
 * (`#/servers/<id>/players`), so a reload or a shared link opens it and the back button returns
 * to the one before. Each section is a component of its own, placed in a tab here.
 */
export function ServerPage({ serverId, tab }: { serverId: string; tab?: string }) {
  const server = useQuery(trpc.servers.get.queryOptions({ server_id: serverId }));
  const qc = useQueryClient();
  const [series, setSeries] = useState<Series | null>(null);
  const [window, setWindow] = useState<Window>("1h");
  const history = useQuery({ queryKey: ["series", serverId, window], queryFn: () => loadSeries(serverId, window) });
  useEffect(() => {
    if (history.data) setSeries(history.data);
  }, [history.data]);

  const onEvent = useCallback(
    (e: LiveEvent) => {
      const t = Date.parse(e.ts) / 1000;
      const num = (v: unknown) => (typeof v === "number" ? v : null);
      if (e.type === "heartbeat")
        setSeries(
          (s) =>
            s &&
            appendPoint(s, {
              t,
              tps: num(e.data.tps),
              mspt: num(e.data.mspt),
              memory: num(e.data.memory_used_mb),
              memory_max: num(e.data.memory_max_mb),
              players: num(e.data.players_online),
            }),
        );
      else if (e.type === "status") {
        setSeries(
          (s) => s && appendPoint(s, { t, latency: num(e.data.latency_ms), players: num(e.data.players_online) }),
        );
        // A flip brings the record again: it has the reason and the time the server went down.
        if (e.data.changed === true) void qc.invalidateQueries(trpc.servers.get.queryFilter({ server_id: serverId }));
      } else if (e.type === "ban_added" || e.type === "ban_lifted" || e.type.startsWith("player_"))
        void qc.invalidateQueries(trpc.servers.players.queryFilter());
      else if (e.type === "ranks_changed") void qc.invalidateQueries(trpc.servers.ranks.queryFilter());
      else if (e.type === "announcements_changed") void qc.invalidateQueries(trpc.servers.announcements.queryFilter());
    },
    [qc, serverId],
  );
  const live = useLive(serverId, onEvent);
  const selected: TabId = SERVER_TABS.some(([id]) => id === tab) ? (tab as TabId) : "overview";

  return (
    <Q q={server}>
      {(s) => (
        <>
          <div className="page-head">
            <PageHeading title={s.name}>
              {s.name} <Badge online={liveOnline(live, s.status.online)} />
            </PageHeading>
            <a href="#/servers">All servers</a>
          </div>
          <p className="muted" data-live={live.connected}>
            {s.host}:{s.port} · {s.kind}
            {s.network_name ? ` (${s.network_name})` : ""} · {liveLabel(live)}
          </p>
          {liveOnline(live, s.status.online) === false && <DownNote status={s.status} detail />}
          <Tabs
            label="Server sections"
            selected={selected}
            onSelect={(id) => go(id === "overview" ? `servers/${serverId}` : `servers/${serverId}/${id}`)}
            tabs={SERVER_TABS.map(([id, label]) => ({
              id,
              label,
              // Each tab is a list of section components: a new section is placed by adding it here.
              panel: {
                overview: () => (
                  <>
                    <LiveStatus server={s} live={live} />
                    <History series={series} error={history.error} window={window} onWindow={setWindow} />
                    <Uptime serverId={serverId} window={window} />
                  </>
                ),
                players: () => (
                  <>
                    <ServerPlayers serverId={serverId} />
                    <AnalyticsPanel teamId={s.team_id} serverId={serverId} />
                  </>
                ),
                moderation: () => (
                  <>
                    <OnlineNow serverId={serverId} />
                    <ServerBans serverId={serverId} />
                    <Ranks serverId={serverId} />
                    <Announcements serverId={serverId} />
                  </>
                ),
                settings: () => (
                  <>
                    <EditServer server={s} />
                    <Agent serverId={serverId} prefix={s.agent_token_prefix} />
                    <DeleteServer server={s} />
                  </>
                ),
              }[id],
            }))}
          />
        </>
      )}
    </Q>
  );
}

type ServerRecord = inferOutput<typeof trpc.servers.get>;

function LiveStatus({ server: s, live }: { server: ServerRecord; live: LiveState }) {
  return (
    <>
      <section className={live.lost ? "stats stale" : "stats"} aria-label="Live status">
        <Stat label="Latency" value={fmt(live.latency_ms ?? s.status.latency_ms, 0, " ms")} />
        <Stat
          label="Players"
          value={`${live.players_online ?? s.status.players_online ?? "—"} / ${live.players_max ?? s.status.players_max ?? "—"}`}
        />
        <Stat label="TPS" testId="tps" value={fmt(live.tps ?? s.agent?.tps, 1)} />
        <Stat label="MSPT" value={fmt(live.mspt ?? s.agent?.mspt, 1, " ms")} />
        <Stat
          label="Memory"
          value={`${fmt(live.memory_used_mb ?? s.agent?.memory_used_mb, 0)} / ${fmt(live.memory_max_mb ?? s.agent?.memory_max_mb, 0, " MB")}`}
        />
        <Stat label="Version" value={live.version ?? s.status.version ?? "—"} />
      </section>
      {live.players.length > 0 && <p>Online now: {live.players.map((p) => p.name).join(", ")}</p>}
    </>
  );
}

function History({
  series,
  error,
  window,
  onWindow,
}: {
  series: Series | null;
  error: unknown;
  window: Window;
  onWindow: (w: Window) => void;
}) {
  return (
    <section className="card" aria-labelledby="chart-h">
      <div className="page-head">
        <h2 id="chart-h">History</h2>
        <fieldset className="tabs" aria-label="Window">
          {WINDOWS.map((w) => (
            <button key={w} type="button" aria-pressed={w === window} onClick={() => onWindow(w)}>
              {w}
            </button>
          ))}
        </fieldset>
      </div>
      {error ? (
        <ErrorState error={error} />
      ) : series ? (
        <Charts series={series} window={window} />
      ) : (
        <Loading what="Loading history" />
      )}
    </section>
  );
}

function Stat({ label, value, testId }: { label: string; value: string; testId?: string }) {
  return (
    <div className="stat">
      <span className="muted">{label}</span>
      <strong data-testid={testId}>{value}</strong>
    </div>
  );
}

function Uptime({ serverId, window }: { serverId: string; window: Window }) {
  const stats = useQuery(trpc.servers.uptimeStats.queryOptions({ window }, forServer(serverId)));
  return (
    <section className="card" aria-labelledby="uptime-h">
      <h2 id="uptime-h">Uptime ({window})</h2>
      <Q q={stats}>
        {(u) => {
          // Down periods as the pinger recorded them, whole: an outage of minutes leaves no
          // all-down bucket in the hourly views, so they are not read off the buckets.
          const incidents = u.incidents;
          return (
            <>
              <p>
                <strong>{u.uptime === null ? "no checks yet" : `${(u.uptime * 100).toFixed(2)} %`}</strong>{" "}
                <span className="muted">
                  over {u.samples} check{u.samples === 1 ? "" : "s"} · latency avg {fmt(u.latency_ms.avg, 0, " ms")},
                  p95 {fmt(u.latency_ms.p95, 0, " ms")}
                </span>
              </p>
              {incidents.length === 0 ? (
                <p className="muted">No incidents in this window.</p>
              ) : (
                <ul aria-label="Incidents">
                  {incidents.map((i) => (
                    <li key={i.started_at} data-reason={i.reason ?? ""}>
                      {i.ended_at === null
                        ? `Down since ${new Date(i.started_at).toLocaleString()} (${duration(i.duration_seconds)} so far)`
                        : `Down from ${new Date(i.started_at).toLocaleString()} to ${new Date(i.ended_at).toLocaleString()} (${duration(i.duration_seconds)})`}
                      : {reasonText(i.reason)}
                    </li>
                  ))}
                </ul>
              )}
            </>
          );
        }}
      </Q>
    </section>
  );
}

/** "45 s", "12 min", "3 h 5 min", "2 d 4 h": an incident's length at a glance. */
function duration(seconds: number): string {
  if (seconds < 60) return `${seconds} s`;
  const m = Math.round(seconds / 60);
  if (m < 60) return `${m} min`;
  const h = Math.floor(m / 60);
  if (h < 24) return m % 60 ? `${h} h ${m % 60} min` : `${h} h`;
  const d = Math.floor(h / 24);
  return h % 24 ? `${d} d ${h % 24} h` : `${d} d`;
}

function OnlineNow({ serverId }: { serverId: string }) {
  const { canModerate } = useCurrent();
  const players = useQuery(trpc.servers.players.queryOptions({}, forServer(serverId)));
  return (
    <section className="card" aria-labelledby="online-h">
      <h2 id="online-h">Online now</h2>
      <Q q={players}>
        {(d) => {
          const online = d.players.filter((p) => p.online);
          return online.length === 0 ? (
            <p className="muted">Nobody is online.</p>
          ) : (
            <ul className="plain" aria-label="Players online">
              {online.map((p) => (
                <li key={p.uuid} className="row">
                  <span title={p.uuid}>{p.name}</span>
                  {canModerate && <KickButton serverId={serverId} player={p} />}
                </li>
              ))}
            </ul>
          );
        }}
      </Q>
    </section>
  );
}

function Ranks({ serverId }: { serverId: string }) {
  const { canWrite } = useCurrent();
  const qc = useQueryClient();
  const toast = useToast();
  const ranks = useQuery(trpc.servers.ranks.queryOptions(undefined, forServer(serverId)));
  const refresh = () => qc.invalidateQueries(trpc.servers.ranks.queryFilter());
  const outcome = useOutcome(refresh);
  const intent = useIntent();
  const create = useMutation(
    trpc.servers.createRank.mutationOptions({
      ...intent.options({ serverId }),
      onSuccess: () => {
        refresh();
        toast("Rank created");
      },
    }),
  );
  const del = useMutation(
    trpc.servers.deleteRank.mutationOptions({
      ...forServer(serverId),
      ...outcome("Rank deleted"),
    }),
  );
  return (
    <section className="card" aria-labelledby="ranks-h">
      <h2 id="ranks-h">Ranks</h2>
      <Q q={ranks}>
        {(d) =>
          d.ranks.length === 0 ? (
            <p className="muted">No ranks. Ranks are pushed to the server's permission plugin by the agent.</p>
          ) : (
            <RanksTable
              ranks={d.ranks}
              label="Ranks"
              what="rank"
              canWrite={canWrite}
              onDelete={(name) => del.mutate({ name })}
            />
          )
        }
      </Q>
      {canWrite && (
        <RankForm
          label="Add a rank"
          pending={create.isPending}
          error={create.error}
          submit={(rank, done) => intent.submit(create, rank, done)}
        />
      )}
    </section>
  );
}

function Announcements({ serverId }: { serverId: string }) {
  const { canModerate } = useCurrent();
  const qc = useQueryClient();
  const toast = useToast();
  const list = useQuery(trpc.servers.announcements.queryOptions(undefined, forServer(serverId)));
  const refresh = () => qc.invalidateQueries(trpc.servers.announcements.queryFilter());
  const outcome = useOutcome(refresh);
  const [form, setForm] = useState({ message: "", schedule: "0 * * * *" });
  const intent = useIntent();
  const create = useMutation(
    trpc.servers.createAnnouncement.mutationOptions({
      ...intent.options({ serverId }),
      onSuccess: () => {
        refresh();
        toast("Announcement added");
        setForm({ ...form, message: "" });
      },
    }),
  );
  const pause = useMutation(
    trpc.servers.updateAnnouncement.mutationOptions({ ...forServer(serverId), ...outcome("Announcement updated") }),
  );
  const del = useMutation(
    trpc.servers.deleteAnnouncement.mutationOptions({
      ...forServer(serverId),
      ...outcome("Announcement deleted"),
    }),
  );
  const errs = fieldErrors(create.error);
  const preview = nextRuns(form.schedule);
  return (
    <section className="card" aria-labelledby="ann-h">
      <h2 id="ann-h">Announcements</h2>
      <Q q={list}>
        {(d) =>
          d.announcements.length === 0 ? (
            <p className="muted">No announcements. Add one to broadcast a message on a schedule.</p>
          ) : (
            <ul className="plain">
              {d.announcements.map((a) => (
                <li key={a.announcement_id} className="row">
                  <span>
                    {a.message}{" "}
                    <span className="muted">
                      {a.schedule ? `cron ${a.schedule}` : a.interval_seconds ? `every ${a.interval_seconds} s` : ""}
                      {a.active ? "" : " (paused)"}
                    </span>
                  </span>
                  {canModerate && (
                    <span className="row">
                      <button
                        type="button"
                        aria-label={`${a.active ? "Pause" : "Resume"} announcement ${a.message}`}
                        onClick={() => pause.mutate({ announcement_id: a.announcement_id, active: !a.active })}
                      >
                        {a.active ? "Pause" : "Resume"}
                      </button>
                      <ConfirmButton
                        label="Delete"
                        target={`announcement ${a.message}`}
                        question={`Delete the announcement "${a.message}"?`}
                        onConfirm={() => del.mutate({ announcement_id: a.announcement_id })}
                      />
                    </span>
                  )}
                </li>
              ))}
            </ul>
          )
        }
      </Q>
      {canModerate && (
        <form
          aria-label="Add an announcement"
          onSubmit={(e) => {
            e.preventDefault();
            intent.submit(create, { message: form.message, schedule: form.schedule });
          }}
        >
          <div className="row-form">
            <TextField
              label="Message"
              error={errs.message}
              required
              value={form.message}
              onChange={(v) => setForm({ ...form, message: v })}
            />
            <TextField
              label="Schedule (cron, UTC)"
              error={errs.schedule}
              value={form.schedule}
              onChange={(v) => setForm({ ...form, schedule: v })}
            />
            <SubmitButton pending={create.isPending} busy="Adding…">
              Add announcement
            </SubmitButton>
          </div>
          <p className="muted" aria-live="polite">
            {preview
              ? `Next: ${preview.map((d) => d.toISOString().slice(0, 16).replace("T", " ")).join(", ")} UTC`
              : "Not a five-field cron expression (minute hour day month weekday)."}
          </p>
          {create.error && !Object.keys(errs).length && <ErrorState error={create.error} />}
        </form>
      )}
    </section>
  );
}

/** The agent's commands for this service and this server: the token is in them while the page holds it. */
function agentCommands(origin: string, token: string | null) {
  // Placeholders a shell takes as words (`<x>` would be a redirection): left unchanged, the agent
  // itself says which setting is wrong.
  const env = [
    `MCP_AGENT_URL=${origin}`,
    `MCP_AGENT_TOKEN=${token ?? "your-agent-token"}`,
    "MCP_AGENT_RCON_PASSWORD=your-rcon-password",
    "MCP_AGENT_SERVER_DIR=/path/to/server",
  ];
  // One variable a line: on a phone a long line wrapped in the middle of a name.
  const run = `${env.join(" \\\n")} \\\nnpx --yes ${origin}/downloads/mc-platform-agent.tgz`;
  const service = [
    "[Unit]",
    "Description=mc-platform agent",
    "After=network-online.target",
    "Wants=network-online.target",
    "",
    "[Service]",
    "# The user the Minecraft server runs as: it reads the logs and keeps its state beside them.",
    "User=minecraft",
    "EnvironmentFile=/etc/mc-platform-agent.env",
    "ExecStart=/usr/bin/env node /usr/local/lib/mc-platform-agent.mjs",
    "Restart=always",
    "RestartSec=5",
    "",
    "[Install]",
    "WantedBy=multi-user.target",
  ];
  const systemd = [
    `sudo curl -fsSLo /usr/local/lib/mc-platform-agent.mjs ${origin}/downloads/mc-platform-agent.mjs`,
    "sudo install -m 600 /dev/null /etc/mc-platform-agent.env",
    "sudo tee /etc/mc-platform-agent.env >/dev/null <<'EOF'",
    ...env,
    "EOF",
    "sudo tee /etc/systemd/system/mc-platform-agent.service >/dev/null <<'EOF'",
    ...service,
    "EOF",
    "sudo systemctl daemon-reload && sudo systemctl enable --now mc-platform-agent",
  ].join("\n");
  return { run, systemd };
}

function CopyBlock({ label, text, testId }: { label: string; text: string; testId: string }) {
  const toast = useToast();
  const copy = () => {
    const failed = () => toast("Copy failed: select the text and copy it", "error");
    // The clipboard API exists only on https and localhost pages.
    if (!navigator.clipboard) return failed();
    navigator.clipboard.writeText(text).then(() => toast("Copied"), failed);
  };
  return (
    <>
      <pre className="cmd" data-testid={testId}>
        {text}
      </pre>
      <button type="button" onClick={copy}>
        Copy {label.toLowerCase()}
      </button>
    </>
  );
}

function Agent({ serverId, prefix }: { serverId: string; prefix: string }) {
  const { canWrite } = useCurrent();
  const toast = useToast();
  const [shown, setShown] = useState<string | null>(() => {
    const t = sessionAgentTokens.get(serverId) ?? null;
    sessionAgentTokens.delete(serverId);
    return t;
  });
  const rotate = useMutation(
    trpc.servers.rotateAgentToken.mutationOptions({
      onSuccess: (r) => setShown(r.agent_token),
      onError: (e) => toast(errorMessage(e), "error"),
    }),
  );
  const { run, systemd } = agentCommands(location.origin, shown);
  return (
    <section className="card" aria-labelledby="agent-h">
      <h2 id="agent-h">Agent</h2>
      <p className="muted">
        The agent runs beside the Minecraft server and pushes heartbeats, joins, leaves and bans. It needs Node.js 18 or
        later, and RCON on (<code>enable-rcon=true</code> in <code>server.properties</code>). Current token:{" "}
        <code>{prefix}…</code>
      </p>
      {shown && <ShownOnce label="Agent token" value={shown} onDone={() => setShown(null)} />}
      <p>
        Run it next to the server, with <code>your-rcon-password</code> replaced by <code>rcon.password</code> from{" "}
        <code>server.properties</code> and <code>/path/to/server</code> by the server's folder (the one holding{" "}
        <code>logs/</code>):
      </p>
      <CopyBlock label="Command" text={run} testId="agent-command" />
      <p className="muted">
        {shown
          ? "The command holds this server's token: keep it private. "
          : "The token was shown once, when the server was added. Lost it? Rotate it below and the new one appears in the commands (the running agent stops until it has it). "}
        Add <code>--check</code> to test the settings, the service, RCON and the log, then exit. Without npm: download{" "}
        <a href="/downloads/mc-platform-agent.mjs">mc-platform-agent.mjs</a> and run{" "}
        <code>node mc-platform-agent.mjs</code> with the same variables.
      </p>
      <details>
        <summary>Keep it running with systemd</summary>
        <CopyBlock label="Setup" text={systemd} testId="agent-systemd" />
      </details>
      {canWrite && (
        <ConfirmButton
          label="Rotate agent token"
          question="Rotate the agent token? The running agent stops working until it gets the new one."
          onConfirm={() => rotate.mutate({ server_id: serverId })}
        />
      )}
    </section>
  );
}

function EditServer({
  server,
}: {
  server: { server_id: string; name: string; host: string; port: number; network_name: string | null };
}) {
  const { canWrite } = useCurrent();
  const qc = useQueryClient();
  const toast = useToast();
  const [form, setForm] = useState({
    name: server.name,
    host: server.host,
    port: String(server.port),
    network: server.network_name ?? "",
  });
  const update = useMutation(
    trpc.servers.update.mutationOptions({
      onSuccess: () => {
        qc.invalidateQueries(trpc.servers.get.queryFilter());
        toast("Saved");
      },
    }),
  );
  if (!canWrite) return null;
  const errs = fieldErrors(update.error);
  return (
    <section className="card" aria-labelledby="edit-h">
      <h2 id="edit-h">Server settings</h2>
      <form
        className="row-form"
        aria-label="Server settings"
        onSubmit={(e) => {
          e.preventDefault();
          // A network name puts the server in that network; an empty one makes it a single server.
          update.mutate({
            server_id: server.server_id,
            name: form.name,
            host: form.host,
            port: Number(form.port),
            kind: form.network ? "network" : "single",
            network_name: form.network || null,
          });
        }}
      >
        <TextField label="Name" error={errs.name} value={form.name} onChange={(v) => setForm({ ...form, name: v })} />
        <TextField label="Host" error={errs.host} value={form.host} onChange={(v) => setForm({ ...form, host: v })} />
        <TextField
          label="Port"
          error={errs.port}
          type="number"
          value={form.port}
          onChange={(v) => setForm({ ...form, port: v })}
        />
        <TextField
          label="Network (empty: single server)"
          error={errs.network_name}
          value={form.network}
          onChange={(v) => setForm({ ...form, network: v })}
        />
        <button type="submit">Save</button>
      </form>
      {update.error && !Object.keys(errs).length && <ErrorState error={update.error} />}
    </section>
  );
}

function DeleteServer({ server }: { server: { server_id: string; name: string } }) {
  const { canWrite } = useCurrent();
  const qc = useQueryClient();
  const toast = useToast();
  const del = useMutation(
    trpc.servers.delete.mutationOptions({
      onSuccess: () => {
        void qc.invalidateQueries(trpc.servers.list.queryFilter());
        toast("Server deleted");
        go("servers");
      },
      onError: (e) => toast(errorMessage(e), "error"),
    }),
  );
  if (!canWrite) return null;
  return (
    <section className="card" aria-labelledby="delete-h">
      <h2 id="delete-h">Delete this server</h2>
      <p className="muted">Its history, players and bans are removed with it, and its agent is no longer accepted.</p>
      <ConfirmButton
        label="Delete server"
        question={`Delete ${server.name}? Its history, players and bans are removed.`}
        onConfirm={() => del.mutate({ server_id: server.server_id })}
      />
    </section>
  );
}
