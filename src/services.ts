import { AccessTokens, loadSigningPem } from "./accounts/jwt";
import { Keyring } from "./lib/keyring";
import { AccountsService } from "./accounts/service";
import type { Config } from "./config";
import type { Database } from "./db/client";
import { HealthService } from "./health/service";
import type { Logger } from "./lib/log";
import { TeamsService } from "./teams/service";
import { ClientsService } from "./clients/service";
import { LoginService } from "./login/service";
import { Clock } from "./lib/clock";
import postgres from "postgres";
import { InProcessBus, PgBus, type Bus } from "./realtime/bus";
import { Realtime } from "./realtime/service";
import { Edge } from "./edge";
import { DbRateLimitStore, MemoryRateLimitStore, RateLimiter, type RateLimitPolicy } from "./lib/rate-limit";
import { AgentService } from "./agent/service";
import { MonitoringService } from "./monitoring/service";
import { AnnouncementsService } from "./servers/announcements";
import { PlayersService } from "./servers/players";
import { RanksService } from "./servers/ranks";
import { ServersService } from "./servers/service";

/** Everything a procedure can reach, built once per process. */
export interface Services {
  config: Config;
  log: Logger;
  database: Database;
  tokens: AccessTokens;
  accounts: AccountsService;
  teams: TeamsService;
  health: HealthService;
  clock: Clock;
  keyring: Keyring;
  limiter: RateLimiter;
  limits: { start: RateLimitPolicy; poll: RateLimitPolicy; validate: RateLimitPolicy; clientWrite: RateLimitPolicy };
  clients: ClientsService;
  login: LoginService;
  servers: ServersService;
  players: PlayersService;
  ranks: RanksService;
  announcements: AnnouncementsService;
  /** The pinger and sample statistics; `pingDue()` / `checkNow(id)` run checks on demand. */
  monitoring: MonitoringService;
  agent: AgentService;
  realtime: Realtime;
  edge: Edge;
  /** Periodic work started with the listener and stopped before the database closes. */
  background: BackgroundTask[];
}

export interface BackgroundTask {
  name: string;
  start(): void;
  stop(): Promise<void>;
}

/** Runs `fn` every `seconds`, never overlapping itself; errors are logged, not fatal. */
export function every(name: string, seconds: number, log: Logger, fn: () => Promise<unknown>): BackgroundTask {
  let timer: ReturnType<typeof setInterval> | undefined;
  let running: Promise<unknown> | undefined;
  return {
    name,
    start() {
      timer = setInterval(() => {
        if (running) return;
        running = fn()
          .catch((err) => log.error(`${name} failed`, { err }))
          .finally(() => (running = undefined));
      }, seconds * 1000);
    },
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}

export async function createServices(config: Config, database: Database, log: Logger): Promise<Services> {
  const pem = await loadSigningPem({ pem: config.JWT_PRIVATE_KEY, dataDir: config.DATA_DIR });
  const tokens = await AccessTokens.fromPem(pem, config.ACCESS_TOKEN_TTL_SECONDS);
  const keyring = Keyring.fromSecret(pem);
  const db = database.db;
  const clock = new Clock();
  // Counters must be shared when instances share a database; PGlite means one instance.
  const limiter = new RateLimiter(
    database.kind === "postgres" ? new DbRateLimitStore(db) : new MemoryRateLimitStore(),
    () => clock.now(),
  );
  const clients = new ClientsService(db);
  // Several instances share events through PostgreSQL; PGlite means one instance.
  const bus: Bus = config.DATABASE_URL
    ? await PgBus.connect(config.DATABASE_URL, log, (url) => postgres(url, { max: 1, onnotice: () => {} }))
    : new InProcessBus(log);
  const realtime = new Realtime(db, bus, log, config.ACTOR_IDLE_SECONDS * 1000);
  const edge = new Edge(config, () => clock.now());
  const login = new LoginService(db, clients, keyring, clock, config, log);
  const ranks = new RanksService(db, realtime);
  const monitoring = new MonitoringService(db, config, log.child({ component: "pinger" }));
  monitoring.onSample((serverId, r, changed) =>
    realtime.publish(serverId, "status", {
      online: r.online,
      latency_ms: r.latencyMs,
      players_online: r.playersOnline,
      players_max: r.playersMax,
      version: r.version,
      motd: r.motd,
      changed,
    }),
  );
  return {
    config,
    log,
    database,
    tokens,
    accounts: new AccountsService(db, tokens, config),
    teams: new TeamsService(db),
    health: new HealthService(() => database.ping()),
    clock,
    keyring,
    limiter,
    limits: {
      start: { name: "start", limit: config.RATE_LIMIT_START_PER_MIN, windowSeconds: 60 },
      poll: { name: "poll", limit: config.RATE_LIMIT_POLL_PER_MIN, windowSeconds: 60 },
      validate: { name: "validate", limit: config.RATE_LIMIT_VALIDATE_PER_MIN, windowSeconds: 60 },
      clientWrite: { name: "client-write", limit: config.RATE_LIMIT_CLIENT_WRITE_PER_MIN, windowSeconds: 60 },
    },
    clients,
    login,
    servers: new ServersService(db, { allowPrivate: config.OUTBOUND_ALLOW_PRIVATE }),
    players: new PlayersService(db, realtime),
    ranks,
    announcements: new AnnouncementsService(db, realtime),
    monitoring,
    agent: new AgentService(db, ranks, realtime),
    realtime,
    edge,
    background: [
      every("general-rate-limit-prune", 60, log, () => edge.prune()),
      every("server-actor-sweep", Math.min(30, config.ACTOR_IDLE_SECONDS), log, async () => realtime.actors.sweep()),
      every("login-expiry-sweep", config.LOGIN_SWEEP_SECONDS, log, () => login.sweep()),
      every("rate-limit-prune", 60, log, () => limiter.prune()),
      ...(config.PINGER_ENABLED ? [monitoring] : []),
    ],
  };
}
