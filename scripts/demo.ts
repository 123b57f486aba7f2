/**
 * `npm run demo`: the service on the embedded default (PGlite in a temporary directory, the
 * development identity provider), with a living network in it. Everything goes in through the
 * service's public doors, as a team and its agents would send it: REST for the team's setup, the
 * agent protocol for what happens in game, real Server List Ping responders on loopback for the
 * pinger. Nothing is written to the database behind the service's back.
 *
 *   bun scripts/demo.ts                  # http://localhost:3000, Ctrl-C to stop
 *   PORT=3100 bun scripts/demo.ts
 *   DEMO_VERBOSE=1 bun scripts/demo.ts   # also print the agents' traffic and webhook deliveries
 *
 * `runDemo()` drives a service that is already running (the test and the screenshots use it).
 * docs/demo.md describes what the demo makes.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { offlineUuid } from "../src/identity/protocol";
import { type Responder, startStatusResponder } from "./demo-mc-server";
import {
  activity,
  makeCasuals,
  makeHistory,
  makePlayers,
  type Outage,
  type Player,
  type Random,
  NETWORK,
  random,
  playersAt,
  reading,
  readingTimes,
  SERVERS,
  type ServerSpec,
  type Session,
} from "./demo-world";
import { startWebhookReceiver } from "./webhook-receiver";

export const DEMO_EMAIL = "demo@mc-platform.test";
export const DEMO_PASSWORD = "blocky-demo-password";
export const DEMO_STATUS_SLUG = "blockworks";
export const DEMO_VIEWER_EMAIL = "alex@mc-platform.test";

const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;
/** Events per agent batch: under the 64 KiB body limit with room to spare (docs/agent-protocol.md). */
const BATCH = 300;
/** Backfilled readings in flight at once per agent. */
const IN_FLIGHT = 6;
/** The last hours in which every player online is a named one with a session (scripts/demo-world.ts, makeCasuals). */
const CASUAL_HOURS = 3;

export class DemoError extends Error {}

/** One call to the service; a refusal becomes an error with the envelope's message, never a stack of the service's. */
async function call<T = any>(
  base: string,
  method: string,
  path: string,
  opts: { token?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: T; headers: Headers }> {
  const res = await fetch(base + path, {
    method,
    headers: {
      ...(opts.body !== undefined && { "content-type": "application/json" }),
      ...(opts.token && { authorization: `Bearer ${opts.token}` }),
      ...opts.headers,
    },
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
  });
  const text = await res.text();
  const body = text ? JSON.parse(text) : null;
  if (!res.ok && res.status !== 304) {
    const e = body?.error;
    throw new DemoError(`${method} ${path}: ${res.status} ${e?.code ?? ""} ${e?.message ?? text}`.trim());
  }
  return { status: res.status, body, headers: res.headers };
}

/** A server's simulated agent: the plugin's side of docs/agent-protocol.md. */
class Agent {
  readonly online = new Map<string, string>();
  /** When each player online means to leave. */
  readonly leaving = new Map<string, number>();
  private seq = 0;
  private etag: string | undefined;
  /** Bans the dashboard issued that this agent has applied. */
  readonly applied = new Set<string>();
  running = true;

  constructor(
    private readonly base: string,
    readonly spec: ServerSpec,
    readonly serverId: string,
    readonly token: string,
    public responder: Responder,
    readonly rng: Random,
    private readonly say: (line: string) => void,
  ) {}

  private id() {
    return `${this.spec.key}-${(this.seq++).toString(36)}`;
  }

  async send(events: Record<string, unknown>[]) {
    for (let i = 0; i < events.length; i += BATCH) {
      const batch = events.slice(i, i + BATCH).map((e) => ({ event_id: this.id(), ...e }));
      await call(this.base, "POST", "/agent/events", { token: this.token, body: { events: batch } });
    }
  }

  get playersOnline() {
    return this.online.size;
  }

  heartbeat(at?: number, players = this.playersOnline) {
    const r = reading(this.rng, this.spec, players, at ?? Date.now());
    return call(this.base, "POST", "/agent/heartbeat", {
      token: this.token,
      body: { ...r, ...(at !== undefined && { at: new Date(at).toISOString() }) },
    });
  }

  /** What the next ping reports: the count and up to 12 names, as vanilla does. */
  showOnline() {
    this.responder.players = this.playersOnline;
    this.responder.sample = [...this.online].slice(0, 12).map(([id, name]) => ({ id, name }));
  }

  async join(p: Player, leaveAt: number) {
    if (!this.running || this.online.has(p.uuid)) return;
    this.online.set(p.uuid, p.name);
    this.leaving.set(p.uuid, leaveAt);
    this.showOnline();
    await this.send([{ type: "join", uuid: p.uuid, name: p.name }]);
    this.say(`${this.spec.name}: ${p.name} joined`);
  }

  async leave(uuid: string) {
    const name = this.online.get(uuid);
    if (!this.running || name === undefined) return;
    this.online.delete(uuid);
    this.leaving.delete(uuid);
    this.showOnline();
    await this.send([{ type: "leave", uuid, name }]);
    this.say(`${this.spec.name}: ${name} left`);
  }

  /** Polls the configuration as a plugin does, and kicks anyone the dashboard banned. */
  async pollConfig() {
    if (!this.running) return;
    const res = await call(this.base, "GET", "/agent/config", {
      token: this.token,
      headers: this.etag ? { "if-none-match": this.etag } : {},
    });
    if (res.status === 304) return;
    this.etag = res.headers.get("etag") ?? undefined;
    for (const ban of res.body.bans as { uuid: string; name: string }[]) {
      if (this.applied.has(ban.uuid)) continue;
      this.applied.add(ban.uuid);
      if (this.online.has(ban.uuid)) {
        await this.leave(ban.uuid);
        this.say(`${this.spec.name}: kicked ${ban.name} (banned from the dashboard)`);
      }
    }
  }

  /** The server process dies: the port stops answering and the agent with it. */
  async crash() {
    this.running = false;
    await this.responder.close();
    this.say(`${this.spec.name}: crashed`);
  }

  /** Back up: the plugin reports the players it had seen online as gone (at the crash), then heartbeats again. */
  async restart(crashedAt: number) {
    this.responder = await startStatusResponder({
      port: this.responder.port,
      motd: this.spec.motd,
      maxPlayers: this.spec.maxPlayers,
      version: "1.21.4",
    });
    this.running = true;
    const gone = [...this.online].map(([uuid, name]) => ({
      type: "leave",
      uuid,
      name,
      at: new Date(crashedAt).toISOString(),
    }));
    this.online.clear();
    this.leaving.clear();
    this.showOnline();
    if (gone.length > 0) await this.send(gone);
    await this.heartbeat();
    this.say(`${this.spec.name}: restarted`);
  }
}

/** Runs `work` over `items`, `n` at a time. */
async function pool<T>(items: T[], n: number, work: (item: T) => Promise<unknown>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, items.length) }, async () => {
      while (next < items.length) await work(items[next++]!);
    }),
  );
}

export interface DemoOptions {
  /** The running service, e.g. http://127.0.0.1:3000. */
  baseUrl: string;
  /** Days of history to backfill (30). */
  days?: number;
  seed?: number;
  /** Keep the network living after the backfill: joins, leaves, heartbeats, a crash now and then (true). */
  live?: boolean;
  /** With `live`: the anticheat ban a minute in and the BedWars crashes (true). */
  incidents?: boolean;
  /** Progress and, with `verbose`, every simulated happening. */
  print?: (line: string) => void;
  verbose?: boolean;
  /**
   * Names the demo's accounts and status page apart (`<tag>-demo@…`, `<tag>-blockworks`), for a
   * second demo on a service that already has one (tests sharing one PostgreSQL database).
   */
  tag?: string;
}

export interface Demo {
  /** The demo's published status page: /status/<slug>. */
  statusSlug: string;
  email: string;
  password: string;
  teamId: string;
  servers: { key: string; name: string; serverId: string; port: number }[];
  clientId: string;
  webhookUrl: string;
  /** The types of the webhook deliveries the demo's receiver got whose signature verified, in order. */
  webhookEvents(): string[];
  /** Crashes a server now (its port stops answering, its agent goes quiet); call what it returns to restart it. */
  crash(key: string): Promise<() => Promise<void>>;
  /** Stops the simulation, the status responders and the webhook receiver. */
  stop(): Promise<void>;
}

/**
 * Fills a running service with a team's month: accounts and a team, a client app with ms_auth,
 * a webhook endpoint with a receiver, four servers with status responders, ranks, announcements
 * and bans, and 30 days of sessions and readings sent by each server's agent. Resolves once
 * everything is in (what a dashboard page reads is there), then keeps the network living.
 */
export async function runDemo(opts: DemoOptions): Promise<Demo> {
  const base = opts.baseUrl.replace(/\/+$/, "");
  const days = opts.days ?? 30;
  const tagged = (name: string) => (opts.tag ? `${opts.tag}-${name}` : name);
  const ownerEmail = tagged(DEMO_EMAIL);
  const viewerEmail = tagged(DEMO_VIEWER_EMAIL);
  const statusSlug = tagged(DEMO_STATUS_SLUG);
  const rng = random(opts.seed ?? 20261125);
  const print = opts.print ?? (() => {});
  const say = opts.verbose ? print : () => {};
  const now = Date.now();
  const timers: ReturnType<typeof setInterval>[] = [];
  const responders: Responder[] = [];
  const hooks = startWebhookReceiver({ port: 0, print: say });

  try {
    // --- Accounts, team, members, API key -------------------------------------------------------
    await Promise.all(
      [ownerEmail, viewerEmail].map((email) =>
        call(base, "POST", "/auth/signup", { body: { email, password: DEMO_PASSWORD } }),
      ),
    );
    const { access_token: token } = (
      await call(base, "POST", "/auth/login", { body: { email: ownerEmail, password: DEMO_PASSWORD } })
    ).body;
    const teamId: string = (await call(base, "POST", "/teams", { token, body: { name: "Blockworks" } })).body.team_id;
    const team = `/teams/${teamId}`;
    // Membership is an invitation the viewer accepts, signed in as themself.
    const invitation = (
      await call(base, "POST", `${team}/members`, { token, body: { email: viewerEmail, role: "viewer" } })
    ).body;
    const { access_token: viewerToken } = (
      await call(base, "POST", "/auth/login", { body: { email: viewerEmail, password: DEMO_PASSWORD } })
    ).body;
    await call(base, "POST", `/invitations/${invitation.invitation_id}/accept`, { token: viewerToken });
    await call(base, "POST", `${team}/api-keys`, { token, body: { name: "deploy-bot", role: "admin" } });

    // --- A launcher's client app with sign-in enabled ---------------------------------------------
    const app = (
      await call(base, "POST", "/client/apps", {
        token,
        body: {
          team_id: teamId,
          name: "blockworks-launcher",
          title: "Blockworks Launcher",
          description: "Sign in with your Microsoft account to play on Blockworks.",
        },
      })
    ).body;
    const clientId: string = app.app.client_id;
    await call(base, "POST", `/client/apps/${clientId}/modules/ms-auth`, {
      token,
      body: { post_login_redirect_uri: "http://127.0.0.1:7777/callback" },
    });

    // --- A webhook endpoint, received on loopback ---------------------------------------------------
    const hook = (
      await call(base, "POST", `${team}/webhooks`, {
        token,
        body: { url: hooks.url, description: "ops alerts (demo receiver)" },
      })
    ).body;
    hooks.verifyWith(hook.secret);
    await call(base, "POST", `${team}/webhooks/${hook.endpoint.endpoint_id}/test`, { token });

    // --- Servers, each with a status responder and an agent -----------------------------------------
    const agents = new Map<string, Agent>();
    for (const spec of SERVERS) {
      const responder = await startStatusResponder({
        motd: spec.motd,
        maxPlayers: spec.maxPlayers,
        version: "1.21.4",
      });
      responders.push(responder);
      const s = (
        await call(base, "POST", "/server/servers", {
          token,
          body: {
            team_id: teamId,
            name: spec.name,
            host: "127.0.0.1",
            port: responder.port,
            kind: spec.kind,
            network_name: spec.network_name,
          },
        })
      ).body;
      const agent = new Agent(base, spec, s.server_id, s.agent_token, responder, rng, say);
      agents.set(spec.key, agent);
      // The plugin starts with its server: the pinger's first check finds the agent running.
      await agent.heartbeat();
    }
    const agent = (key: string) => agents.get(key)!;
    await community(base, token, agents);

    // --- Thirty days of history -----------------------------------------------------------------------
    const network = makePlayers(rng, 24);
    const standalone = makePlayers(random((opts.seed ?? 20261125) + 1), 10).filter(
      (p) => !network.some((n) => n.name === p.name),
    );
    const outageStart = now - 4 * DAY - ((now - 4 * DAY) % DAY) + 21 * HOUR + 10 * MIN;
    const outages: Outage[] = days > 4 ? [{ server: "bedwars", start: outageStart, end: outageStart + 25 * MIN }] : [];
    const regulars = makeHistory(rng, now, days, network, standalone, outages);
    const known = new Set([...network, ...standalone].map((p) => p.name));
    const fresh = (players: Player[]) => players.filter((p) => !known.has(p.name));
    const networkCasuals = fresh(makePlayers(random((opts.seed ?? 20261125) + 2), 120));
    const standaloneCasuals = fresh(makePlayers(random((opts.seed ?? 20261125) + 3), 40));
    const exactFrom = now - CASUAL_HOURS * HOUR;
    const casuals = makeCasuals(rng, now, CASUAL_HOURS, networkCasuals, standaloneCasuals, regulars);
    const sessions = [...regulars, ...casuals];
    const bans = pastBans(now, days);
    await Promise.all(
      [...agents.values()].map(async (a) => {
        await backfillEvents(a, sessions, bans);
        await pool(
          readingTimes(now, days).filter(
            (t) => !outages.some((o) => o.server === a.spec.key && t >= o.start && t < o.end),
          ),
          IN_FLIGHT,
          (t) => a.heartbeat(t, playersAt(rng, a.spec, { regulars, casuals }, t, exactFrom)),
        );
      }),
    );
    // The dashboard's ban: the agent applies it at its next poll.
    const xray = bans.find((b) => b.dashboard)!;
    await call(base, "POST", "/server/bans", {
      token,
      headers: { "x-server-id": agent("survival").serverId },
      body: { uuid: xray.player.uuid, name: xray.player.name, reason: xray.reason },
    });
    // A network ban (every server of the network applies it) and a moderator's note.
    const hacker = bans.find((b) => b.player.name === "HackerMan99")!;
    await call(base, "POST", `/server/networks/${encodeURIComponent(NETWORK)}/bans`, {
      token,
      headers: { "x-team-id": teamId },
      body: { uuid: hacker.player.uuid, name: hacker.player.name, reason: "Kill aura on every server" },
    });
    await call(base, "POST", `/players/${xray.player.uuid}/notes`, {
      token,
      headers: { "x-team-id": teamId },
      body: { text: "Admitted to using an X-ray pack; may appeal after 30 days." },
    });
    // A published status page: the network and the standalone server, players, version and MOTD shown.
    const standaloneIds = [...agents.values()].filter((a) => a.spec.kind === "single").map((a) => a.serverId);
    await call(base, "POST", `${team}/status-pages`, {
      token,
      body: {
        slug: statusSlug,
        title: "Blockworks",
        description: "Live status of the Blockworks network and its friends",
        server_ids: standaloneIds,
        network_names: [NETWORK],
        show: { players: true, version: true, motd: true, latency: true },
        accent_color: "#3f9b3a",
        published: true,
      },
    });
    await operations(base, token, teamId, now);
    for (const a of agents.values()) {
      await a.heartbeat();
      await a.pollConfig();
    }
    print(`${sessions.length} sessions and ${days} days of readings sent by ${agents.size} agents`);

    if (opts.live ?? true)
      live(
        agents,
        [...network, ...networkCasuals],
        [...standalone, ...standaloneCasuals],
        rng,
        timers,
        say,
        opts.incidents ?? true,
      );

    return {
      statusSlug,
      email: ownerEmail,
      password: DEMO_PASSWORD,
      teamId,
      clientId,
      webhookUrl: hooks.url,
      webhookEvents: () => hooks.deliveries.filter((d) => d.verified).map((d) => d.type ?? ""),
      async crash(key) {
        const a = agents.get(key);
        if (!a?.running) throw new DemoError(`${key} is not a running server of the demo`);
        const at = Date.now();
        await a.crash();
        return () => a.restart(at);
      },
      servers: [...agents.values()].map((a) => ({
        key: a.spec.key,
        name: a.spec.name,
        serverId: a.serverId,
        port: a.responder.port,
      })),
      async stop() {
        for (const t of timers) clearInterval(t);
        for (const a of agents.values()) a.running = false;
        await Promise.all([...agents.values()].map((a) => a.responder.close().catch(() => {})));
        hooks.stop();
      },
    };
  } catch (err) {
    for (const t of timers) clearInterval(t);
    await Promise.all(responders.map((r) => r.close().catch(() => {})));
    hooks.stop();
    throw err;
  }
}

const WINDOWS = ["1h", "24h", "7d", "30d"] as const;

/**
 * Every read a dashboard page makes, as the demo's owner, and which of them would show an empty
 * state: a server list without checked servers, a chart without players and TPS from the
 * window's start to now (and latency in the last hour), an uptime card without checks, a table
 * without rows, a webhook without a delivered event. Empty list: every page has data.
 */
export async function emptyReads(baseUrl: string, email = DEMO_EMAIL, password = DEMO_PASSWORD): Promise<string[]> {
  const base = baseUrl.replace(/\/+$/, "");
  const missing: string[] = [];
  const expect = (ok: boolean, what: string) => {
    if (!ok) missing.push(what);
  };
  const { access_token: token } = (await call(base, "POST", "/auth/login", { body: { email, password } })).body;
  const get = async (path: string, headers: Record<string, string> = {}) =>
    (await call(base, "GET", path, { token, headers })).body;
  const teams = (await get("/teams")).teams as { team_id: string }[];
  if (teams.length === 0) return ["teams"];
  const teamId = teams[0]!.team_id;
  const asTeam = { "x-team-id": teamId };

  const servers = (await get("/server/servers", asTeam)).servers as any[];
  expect(servers.length === SERVERS.length, `servers: ${servers.length} of ${SERVERS.length}`);
  for (const s of servers) {
    expect(s.status.online === true && s.status.latency_ms !== null, `${s.name}: a ping that found it up`);
    expect(s.status.players_online !== null, `${s.name}: players from the ping`);
    expect(s.agent !== null, `${s.name}: an agent heartbeat`);
  }
  const networks = (await get("/server/networks", asTeam)).networks as any[];
  expect(
    networks.some((n) => n.servers.length >= 3),
    "networks: a network of three servers",
  );

  for (const s of servers) {
    const asServer = { "x-server-id": s.server_id };
    for (const window of WINDOWS) {
      const m = await get(`/server/metrics?window=${window}&metrics=players,tps,latency`, asServer);
      const from = Date.parse(m.from);
      const span = Date.parse(m.to) - from;
      for (const series of ["players", "tps"] as const) {
        const points = (m.metrics[series] as { ts: string; avg: number | null }[]).filter((p) => p.avg !== null);
        expect(points.length > 0, `${s.name} ${window} chart: ${series}`);
        // From the start of the window: the first tenth of it (two buckets of the 1h chart) has data.
        expect(
          points.length > 0 && Date.parse(points[0]!.ts) - from <= span / 10,
          `${s.name} ${window} chart: ${series} from the window's start`,
        );
      }
      if (window === "1h")
        expect(
          (m.metrics.latency as { avg: number | null }[]).some((p) => p.avg !== null),
          `${s.name} 1h chart: latency`,
        );
      const u = await get(`/server/uptime-stats?window=${window}`, asServer);
      expect(u.samples > 0, `${s.name} uptime ${window}: checks`);
    }
    const players = await get("/server/players", asServer);
    expect(players.players_total > 0, `${s.name}: players`);
    expect(players.bans_total > 0, `${s.name}: bans`);
    expect((await get("/server/ranks", asServer)).ranks.length > 0, `${s.name}: ranks`);
    expect((await get("/server/announcements", asServer)).announcements.length > 0, `${s.name}: announcements`);
  }

  const apps = (await get(`/client/apps?team_id=${teamId}`)).apps as { client_id: string }[];
  expect(apps.length > 0, "client apps");
  if (apps[0])
    expect(
      (await get(`/client/apps/${apps[0].client_id}/modules/ms-auth`)).module_key === "ms_auth",
      "client app: ms_auth enabled",
    );
  expect((await get(`/teams/${teamId}/members`)).members.length > 1, "team members");
  expect((await get(`/teams/${teamId}/api-keys`)).api_keys.length > 0, "API keys");
  const hooks = (await get(`/teams/${teamId}/webhooks`)).endpoints as { endpoint_id: string }[];
  expect(hooks.length > 0, "webhook endpoints");
  if (hooks[0]) {
    const deliveries = (await get(`/teams/${teamId}/webhooks/${hooks[0].endpoint_id}/deliveries`)).deliveries as {
      status: string;
    }[];
    expect(
      deliveries.some((d) => d.status === "succeeded"),
      "webhook deliveries: one delivered",
    );
  }
  const incidents = (await get("/server/incidents?state=resolved", asTeam)).incidents as unknown[];
  expect(incidents.length > 0, "incidents: one resolved");
  expect((await get("/server/maintenance", asTeam)).windows.length > 0, "maintenance windows");
  expect((await get(`/teams/${teamId}/alert-rules`)).rules.length > 0, "alert rules");
  return missing;
}

/**
 * What the incidents and alert rules pages show: a network incident posted by hand and resolved
 * (earlier than any crash a test causes, so that one is the newest), maintenance planned for
 * tomorrow (never running while the demo is used for tests) and an alert rule on TPS.
 */
async function operations(base: string, token: string, teamId: string, now: number) {
  const asTeam = { "x-team-id": teamId };
  const incident = (
    await call(base, "POST", "/server/incidents", {
      token,
      headers: asTeam,
      body: {
        network_name: NETWORK,
        title: "Lag spikes on the network",
        status: "investigating",
        message: "Players report rubber-banding on every server; we are looking into it.",
        started_at: new Date(now - 3 * HOUR).toISOString(),
      },
    })
  ).body;
  for (const [status, message] of [
    ["identified", "A chunk pregeneration task on Survival was starving the proxy host of CPU."],
    ["resolved", "The task is paused until the nightly window; TPS is back to 20 everywhere."],
  ])
    await call(base, "POST", `/server/incidents/${incident.incident_id}/updates`, {
      token,
      headers: asTeam,
      body: { status, message },
    });
  const start = Math.ceil((now + DAY) / HOUR) * HOUR;
  await call(base, "POST", "/server/maintenance", {
    token,
    headers: asTeam,
    body: {
      network_name: NETWORK,
      title: "Upgrade to 1.21.5",
      message: "The network restarts on the new version; expect an hour of downtime.",
      starts_at: new Date(start).toISOString(),
      ends_at: new Date(start + HOUR).toISOString(),
    },
  });
  await call(base, "POST", `/teams/${teamId}/alert-rules`, {
    token,
    body: { name: "Low TPS", network_name: NETWORK, metric: "tps", op: "below", threshold: 15, duration_seconds: 120 },
  });
}

/** Ranks and announcements on every server, as a team sets them up on the dashboard. */
async function community(base: string, token: string, agents: Map<string, Agent>) {
  const ranks = [
    { name: "default", weight: 0, permissions: ["essentials.spawn", "essentials.msg"] },
    {
      name: "vip",
      display_name: "VIP",
      weight: 10,
      prefix: "&a[VIP] ",
      permissions: ["essentials.fly", "essentials.hat"],
      parents: ["default"],
    },
    {
      name: "mod",
      display_name: "Moderator",
      weight: 50,
      prefix: "&9[Mod] ",
      permissions: ["essentials.kick", "essentials.mute", "litebans.tempban"],
      parents: ["vip"],
    },
    {
      name: "admin",
      display_name: "Admin",
      weight: 100,
      prefix: "&c[Admin] ",
      permissions: ["*", "-essentials.god"],
      parents: ["mod"],
    },
  ];
  const announcements: Record<string, Record<string, unknown>[]> = {
    lobby: [
      { message: "&6Welcome to Blockworks! &fVote daily with /vote for rewards.", interval_seconds: 600 },
      { message: "&bNew BedWars maps this week!", schedule: "0 18 * * *" },
    ],
    survival: [
      { message: "&eServer restarts at 04:00 UTC.", schedule: "30 3 * * *" },
      { message: "&aClaim land with a golden shovel.", interval_seconds: 900 },
    ],
    bedwars: [{ message: "&dDouble coins this weekend!", schedule: "0 */2 * * 5,6,0" }],
    creative: [{ message: "&bPlot contest: theme 'Castles', ends Sunday.", interval_seconds: 1200 }],
  };
  for (const a of agents.values()) {
    const headers = { "x-server-id": a.serverId };
    for (const r of ranks) await call(base, "POST", "/server/ranks", { token, headers, body: r });
    for (const n of announcements[a.spec.key] ?? [])
      await call(base, "POST", "/server/announcements", { token, headers, body: n });
  }
}

interface PastBan {
  server: string;
  player: Player;
  reason: string;
  source: string;
  at: number;
  expires: number | null;
  /** Issued on the dashboard rather than in game. */
  dashboard?: boolean;
}

/** One ban per server: three made in game (reported by the agent), one from the dashboard. */
function pastBans(now: number, days: number): PastBan[] {
  const who = (name: string): Player => ({ name, uuid: offlineUuid(name), keen: 0, likes: "survival" });
  const ago = (d: number) => now - Math.min(d, days - 1) * DAY - 3 * HOUR;
  return [
    {
      server: "lobby",
      player: who("SpamBot3000"),
      reason: "Advertising",
      source: "Mod_Kai",
      at: ago(9),
      expires: null,
    },
    {
      server: "bedwars",
      player: who("HackerMan99"),
      reason: "Kill aura (anticheat)",
      source: "Anticheat",
      at: ago(2),
      expires: ago(2) + 14 * DAY,
    },
    {
      server: "creative",
      player: who("PlotGriefer"),
      reason: "Griefing other plots",
      source: "Builder_Lea",
      at: ago(5),
      expires: null,
    },
    {
      server: "survival",
      player: who("XrayAndy"),
      reason: "X-ray",
      source: "Dashboard",
      at: ago(1),
      expires: null,
      dashboard: true,
    },
  ];
}

/**
 * A server's history as its agent would have reported it: joins and leaves in order (sessions an
 * outage cut end when it began), each banned player's one visit before their ban, and the ban
 * itself (game bans only).
 */
async function backfillEvents(a: Agent, sessions: Session[], bans: PastBan[]) {
  const mine = sessions.filter((s) => s.server === a.spec.key);
  const timeline: { at: number; event: Record<string, unknown> }[] = [];
  for (const s of mine) {
    timeline.push({ at: s.start, event: { type: "join", uuid: s.player.uuid, name: s.player.name } });
    if (s.end !== null)
      timeline.push({ at: s.end, event: { type: "leave", uuid: s.player.uuid, name: s.player.name } });
  }
  for (const b of bans.filter((x) => x.server === a.spec.key)) {
    const joined = b.at - 40 * MIN;
    timeline.push({ at: joined, event: { type: "join", uuid: b.player.uuid, name: b.player.name } });
    timeline.push({ at: b.at, event: { type: "leave", uuid: b.player.uuid, name: b.player.name } });
    if (!b.dashboard)
      timeline.push({
        at: b.at + 1000,
        event: {
          type: "ban",
          uuid: b.player.uuid,
          name: b.player.name,
          reason: b.reason,
          source: b.source,
          expires: b.expires === null ? null : new Date(b.expires).toISOString(),
        },
      });
  }
  timeline.sort((x, y) => x.at - y.at);
  await a.send(timeline.map((t) => ({ ...t.event, at: new Date(t.at).toISOString() })));
  for (const s of mine) {
    if (s.end !== null) continue;
    a.online.set(s.player.uuid, s.player.name);
    a.leaving.set(s.player.uuid, s.planned);
  }
  a.showOnline();
}

/**
 * The network from now on: players come and go (more in the evening, a few minutes each so the
 * dashboard moves), agents heartbeat every 10 s and poll their configuration every 30 s, an
 * anticheat bans a BedWars player a minute in, and BedWars crashes for 45 s at 75 s and every
 * 20 minutes after.
 */
function live(
  agents: Map<string, Agent>,
  network: Player[],
  standalone: Player[],
  rng: Random,
  timers: ReturnType<typeof setInterval>[],
  say: (line: string) => void,
  incidents: boolean,
) {
  const safely = (what: string, work: () => Promise<unknown>) =>
    work().catch((err) => say(`demo: ${what} failed: ${err instanceof Error ? err.message : err}`));
  const every = (ms: number, what: string, work: () => Promise<unknown>) =>
    timers.push(setInterval(() => void safely(what, work), ms));
  const get = (key: string) => agents.get(key)!;

  every(10_000, "heartbeats", () =>
    Promise.all([...agents.values()].filter((a) => a.running).map((a) => a.heartbeat())),
  );
  every(30_000, "config polls", () => Promise.all([...agents.values()].map((a) => a.pollConfig())));
  // Each second: players whose time is up leave, and new ones arrive at the rate that keeps about
  // the curve's number online (visits of 4 to 20 minutes, so the dashboard moves).
  every(1_000, "joins and leaves", async () => {
    const now = Date.now();
    for (const a of agents.values()) {
      if (!a.running) continue;
      for (const [uuid, at] of a.leaving) if (at <= now) await a.leave(uuid);
      const expected = a.spec.visitors * 1.3 * activity(now);
      if (!rng.chance(expected / (12 * 60))) continue;
      const group = [...agents.values()].filter(
        (o) => (o.spec.network_name ?? o.spec.key) === (a.spec.network_name ?? a.spec.key),
      );
      const p = rng.pick(a.spec.kind === "single" ? standalone : network);
      // On a network a player is on one server at a time (the proxy moves them).
      if (!group.some((o) => o.online.has(p.uuid))) await a.join(p, now + rng.between(4, 20) * MIN);
    }
  });
  if (!incidents) return;
  timers.push(
    setTimeout(
      () =>
        void safely("an anticheat ban", async () => {
          const bw = get("bedwars");
          const [uuid, name] = [...bw.online][0] ?? [];
          if (!uuid || !bw.running) return;
          await bw.send([
            { type: "ban", uuid, name, reason: "Fly hacks (anticheat)", source: "Anticheat", expires: null },
          ]);
          await bw.leave(uuid);
          say(`BedWars: ${name} banned by the anticheat`);
        }),
      60_000,
    ) as unknown as ReturnType<typeof setInterval>,
  );
  const crash = () =>
    safely("a crash", async () => {
      const bw = get("bedwars");
      if (!bw.running) return;
      const at = Date.now();
      await bw.crash();
      await Bun.sleep(45_000);
      await bw.restart(at);
    });
  timers.push(setTimeout(() => void crash(), 75_000) as unknown as ReturnType<typeof setInterval>);
  every(20 * MIN, "a crash", crash);
}

async function main() {
  const started = performance.now();
  const port = Number(process.env.PORT ?? 3000);
  const dataDir = mkdtempSync(join(tmpdir(), "mc-platform-demo-"));
  const publicUrl = process.env.PUBLIC_URL ?? `http://localhost:${port}`;
  const verbose = Boolean(process.env.DEMO_VERBOSE);
  // The embedded default, with checks and flushes frequent enough for a demo to move.
  const service = Bun.spawn([process.execPath, join(import.meta.dir, "../src/main.ts")], {
    env: {
      ...process.env,
      PORT: String(port),
      PUBLIC_URL: publicUrl,
      DATA_DIR: dataDir,
      LOG_LEVEL: process.env.LOG_LEVEL ?? "warn",
      PING_INTERVAL_SECONDS: process.env.PING_INTERVAL_SECONDS ?? "10",
      METRICS_FLUSH_MS: process.env.METRICS_FLUSH_MS ?? "1000",
      WEBHOOK_AGENT_SILENCE_SECONDS: process.env.WEBHOOK_AGENT_SILENCE_SECONDS ?? "40",
      // The backfill is a few thousand requests from one address within seconds.
      RATE_LIMIT_GENERAL_PER_MIN: process.env.RATE_LIMIT_GENERAL_PER_MIN ?? "1000000",
    },
    stdin: "ignore",
    stdout: "inherit",
    stderr: "inherit",
  });
  let demo: Demo | undefined;
  let stopping = false;
  const stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    await demo?.stop().catch(() => {});
    service.kill("SIGTERM");
    await service.exited;
    rmSync(dataDir, { recursive: true, force: true });
    process.exit(code);
  };
  process.once("SIGINT", () => void stop(0));
  process.once("SIGTERM", () => void stop(0));
  // Ctrl-C reaches the service too, which may stop before this process hears it: only a failure is news.
  void service.exited.then((code) => {
    if (stopping) return;
    if (code !== 0) console.error(`The service exited (code ${code}); see its message above.`);
    void stop(code === 0 ? 0 : 1);
  });

  const base = `http://127.0.0.1:${port}`;
  console.log(`Starting the service on ${publicUrl} (data in ${dataDir}, removed on exit)...`);
  const deadline = Date.now() + 60_000;
  while (
    !(await fetch(`${base}/health`).then(
      (r) => r.ok,
      () => false,
    ))
  ) {
    if (stopping) return;
    if (Date.now() > deadline) {
      console.error("The service did not answer /health within 60 s.");
      return stop(1);
    }
    await Bun.sleep(50);
  }
  console.log("Filling in a team's month: servers, players, agents, webhooks...");
  try {
    demo = await runDemo({ baseUrl: base, print: (l) => console.log(l), verbose });
  } catch (err) {
    console.error(`The demo could not fill the service: ${err instanceof Error ? err.message : err}`);
    return stop(1);
  }
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  console.log(`
Ready in ${seconds} s. Open the dashboard:

  ${publicUrl}/

  Sign in as ${demo.email}
  password   ${demo.password}
  (a viewer: ${DEMO_VIEWER_EMAIL}, same password)

Public status page: ${publicUrl}/status/${demo.statusSlug}
API reference: ${publicUrl}/docs   Health: ${publicUrl}/health
The network keeps living (joins, leaves, a BedWars crash every 20 minutes). Ctrl-C to stop;
the demo's data is removed.`);
}

if (import.meta.main) await main();
