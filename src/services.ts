import { AccessTokens, loadSigningPem } from "./auth/jwt";
import { type BackgroundTask, every } from "./lib/background";
import type { Services } from "./trpc/context";
import { IdempotencyStore } from "./idempotency/store";
import { Keyring } from "./lib/keyring";
import { createDevProvider, DbGrantStore, inProcessTransport, MemoryGrantStore } from "./identity/dev-provider";
import { AuditService } from "./audit/service";
import { AuthService } from "./auth/service";
import { LoginSessions } from "./auth/sessions";
import { PasswordGate } from "./auth/password-gate";
import { LoginThrottle } from "./auth/throttle";
import { TwoFactorService } from "./auth/two-factor";
import type { Config } from "./config";
import type { Database } from "./db/client";
import { HealthService } from "./health/service";
import type { Logger } from "./lib/log";
import { Metrics } from "./lib/metrics";
import { TeamsService } from "./teams/service";
import { InvitationsService } from "./teams/invitations";
import { ClientsService } from "./clients/service";
import { PlayerAppsService } from "./account/service";
import { MsAuthDiagnostics } from "./ms-auth/diagnostics";
import { MsAuthSessionSource } from "./ms-auth/player-sessions";
import { LoginLinks } from "./ms-auth/links";
import { KEY_REFRESH_SECONDS, SessionAssertions } from "./ms-auth/assertions";
import { DeviceCodes } from "./ms-auth/device";
import { MsAuthService } from "./ms-auth/service";
import { PgliteMaintenance } from "./db/pglite-maintenance";
import { OidcKeys } from "./oidc/keys";
import { OidcGrantSource } from "./oidc/player-grants";
import { OidcService } from "./oidc/service";
import { SignInFlow } from "./ms-auth/sign-in";
import { LoginRequestStore } from "./ms-auth/store";
import { Clock } from "./lib/clock";
import { InProcessBus, PgBus, type Bus } from "./realtime/bus";
import { Realtime } from "./realtime/service";
import { WATCH_ANNOUNCE_MS } from "./realtime/watchers";
import { Edge } from "./http/edge";
import { MemoryRateLimitStore, RateLimiter } from "./lib/rate-limit";
import { BatchedRateLimitStore, DbRateLimitStore } from "./db/rate-limit-store";
import { FallbackRateLimitStore, ReconnectingRedis, RedisRateLimitStore } from "./lib/redis-rate-limit";
import { AgentService } from "./agent/service";
import { MetricBuffer } from "./monitoring/buffer";
import { MinuteCloser } from "./monitoring/history";
import { MonitoringService } from "./monitoring/service";
import { PlayerHistoryService } from "./player-history/service";
import { AnalyticsService } from "./analytics/service";
import { CohortZones } from "./analytics/zones";
import { InFlightLimit } from "./lib/in-flight";
import { AnnouncementsService } from "./servers/announcements";
import { PlayersService } from "./servers/players";
import { PlayerDirectoryService } from "./player-directory/service";
import { RanksService } from "./servers/ranks";
import { NetworksService } from "./networks/service";
import { IncidentsService } from "./incidents/service";
import { isUnderMaintenance, MaintenanceService } from "./maintenance/service";
import { ServersService } from "./servers/service";
import { ServerAlerts, withBanEvents } from "./webhooks/alerts";
import { WebhooksService } from "./webhooks/service";
import { PrivacyService } from "./privacy/service";
import { type HoldDuring, PerformanceAlerts } from "./alerts/evaluate";
import { AlertRulesService } from "./alerts/service";
import { DeliveryWorker } from "./webhooks/worker";
import { PublishedPages } from "./status-pages/published";
import { StatusPagesService } from "./status-pages/service";

/** The batched counters' flush, with a last one on shutdown so no counted hit is lost. */
function flushTask(store: BatchedRateLimitStore, ms: number, log: Logger): BackgroundTask {
  const task = every("rate-limit-flush", ms / 1000, log, () => store.flush());
  return {
    name: task.name,
    start: () => task.start(),
    async stop() {
      await task.stop();
      await store.flush().catch((err) => log.error("rate-limit-flush failed", { err }));
    },
  };
}

/** Connects to REDIS_URL; an unreachable Redis is logged, not fatal (the counters fall back per instance). */
async function connectRedis(url: string, log: Logger) {
  const redis = new ReconnectingRedis(url);
  if (!(await redis.connect()))
    log.error("REDIS_URL is not reachable at startup; rate limits count per instance until it is");
  return redis;
}

/** Runs `close` when the background tasks stop (the last thing on shutdown). */
function closeOnStop(name: string, close: () => void): BackgroundTask {
  return {
    name,
    start() {},
    async stop() {
      close();
    },
  };
}

export async function createServices(config: Config, database: Database, log: Logger): Promise<Services> {
  const pem = await loadSigningPem({ pem: config.JWT_PRIVATE_KEY, dataDir: config.DATA_DIR });
  const tokens = await AccessTokens.fromPem(pem, config.ACCESS_TOKEN_TTL_SECONDS);
  const keyring = Keyring.fromSecret(pem);
  const db = database.db;
  const clock = new Clock();
  const metrics = config.METRICS_TOKEN ? new Metrics() : null;
  if (metrics) {
    // postgres.js publishes its pool's size but not how many connections are open or busy.
    const max = database.kind === "postgres" ? config.DATABASE_POOL_MAX : 1;
    metrics.gauge("db_pool_max_connections", `Connections this instance may open (${database.kind})`, () => max);
  }
  // With Redis, every counter is there: exact across instances at one round trip a hit.
  const redis = config.REDIS_URL ? await connectRedis(config.REDIS_URL, log) : null;
  const redisStore = redis
    ? new FallbackRateLimitStore(new RedisRateLimitStore(redis), log.child({ component: "rate-limit" }))
    : null;
  // Counters must be shared when instances share a database; PGlite means one instance.
  const exact = new RateLimiter(
    redisStore ?? (database.kind === "postgres" ? new DbRateLimitStore(db) : new MemoryRateLimitStore()),
    () => clock.now(),
    metrics,
  );
  // The launchers' budgets are hit on every call: counted in memory, flushed in batches.
  const batched =
    !redisStore && database.kind === "postgres" && config.RATE_LIMIT_FLUSH_MS > 0
      ? new BatchedRateLimitStore(db)
      : null;
  const limiter = batched ? new RateLimiter(batched, () => clock.now(), metrics) : exact;
  // Several instances share events through PostgreSQL; PGlite means one instance.
  const bus: Bus = config.DATABASE_URL
    ? await PgBus.connect(
        config.DATABASE_URL,
        log,
        await import("postgres").then(
          ({ default: postgres }) =>
            (url: string) =>
              postgres(url, { max: 1, onnotice: () => {} }),
        ),
      )
    : new InProcessBus(log);
  // The embedded database has one process, this one: it knows what it wrote without reading it.
  const ownsDatabase = database.kind === "pglite";
  const webhooks = new WebhooksService(
    db,
    keyring,
    config,
    log.child({ component: "webhooks" }),
    metrics,
    ownsDatabase,
  );
  const webhookWorker = new DeliveryWorker(db, keyring, config, log.child({ component: "webhooks" }), webhooks);
  webhooks.onQueued(() => webhookWorker.kick());
  const alerts = new ServerAlerts(db, webhooks, {
    downAfterFailures: config.WEBHOOK_DOWN_AFTER_FAILURES,
    agentSilenceSeconds: config.WEBHOOK_AGENT_SILENCE_SECONDS,
  });
  // A performance alert's notices are held while a maintenance window of its server (or the
  // server's network) runs, as server.down and incident.opened are.
  const holdDuring: HoldDuring = (serverId, at) => isUnderMaintenance(db, serverId, at);
  const performanceAlerts = new PerformanceAlerts(db, webhooks, log.child({ component: "alerts" }), holdDuring);
  const clients = new ClientsService(db, bus, undefined, webhooks);
  const realtime = new Realtime(db, bus, log, config.ACTOR_IDLE_SECONDS * 1000);
  metrics?.gauge(
    "realtime_server_actors",
    "Servers with a live view (an actor kept for analytics sockets) on this instance",
    () => realtime.actors.stats().actors,
  );
  // Bans reach the live view and, as player.banned / player.unbanned, the team's webhooks.
  const serverEvents = withBanEvents(realtime, webhooks);
  // Failed sign-ins are few and guard passwords: counted exactly, one statement a failure.
  const loginThrottle = new LoginThrottle(exact, bus, {
    account: {
      name: "login-failures-account",
      limit: config.LOGIN_FAILURES_PER_ACCOUNT,
      windowSeconds: config.LOGIN_FAILURE_WINDOW_SECONDS,
    },
    address: {
      name: "login-failures-address",
      limit: config.LOGIN_FAILURES_PER_ADDRESS,
      windowSeconds: config.LOGIN_FAILURE_WINDOW_SECONDS,
    },
  });
  // Sign-ins keep a share of the hashing slots, so a sign-up flood cannot queue them behind it.
  const passwords = new PasswordGate({
    slots: config.PASSWORD_HASH_CONCURRENCY,
    signupSlots: config.PASSWORD_HASH_SIGNUP_SLOTS,
    signinQueue: config.PASSWORD_HASH_QUEUE,
    signupQueue: config.PASSWORD_HASH_SIGNUP_QUEUE,
  });
  const edge = new Edge(config, () => clock.now(), metrics);
  const loginRequests = new LoginRequestStore(db, clock, metrics, webhooks, undefined, ownsDatabase);
  const idempotency = new IdempotencyStore(db, keyring, clock);
  // The development provider served by this process (no DEV_IDP_URL): the browser reaches it at
  // /dev-idp, and the chain calls its handler directly rather than through a loopback socket
  // (unless DEV_IDP_CHAIN_IN_PROCESS=false). Its single-use marks are shared through PostgreSQL
  // by every instance; an embedded database has one process, so they stay in its memory there
  // (a code's mark lives 5 minutes: room for 600 sign-ins a second).
  const devIdp =
    config.DEV_IDP_ENABLED && !config.DEV_IDP_URL
      ? createDevProvider({
          basePath: "/dev-idp",
          keyring,
          store: ownsDatabase ? new MemoryGrantStore(180_000) : new DbGrantStore(db),
        })
      : undefined;
  const links = new LoginLinks(
    keyring,
    config,
    devIdp && config.DEV_IDP_CHAIN_IN_PROCESS ? inProcessTransport(devIdp, `${config.PUBLIC_URL}/dev-idp`) : undefined,
  );
  const assertions = new SessionAssertions(
    db,
    keyring,
    clock,
    {
      issuer: config.PUBLIC_URL,
      ttlSeconds: config.SESSION_ASSERTION_TTL_SECONDS,
      rotationHours: config.SESSION_ASSERTION_KEY_ROTATION_HOURS,
    },
    bus,
  );
  const deviceCodes = new DeviceCodes(db, clock, config.PUBLIC_URL, exact, bus, {
    perAddress: {
      name: "device-code-failures-address",
      limit: config.DEVICE_CODE_FAILURES_PER_ADDRESS,
      windowSeconds: config.DEVICE_CODE_FAILURE_WINDOW_SECONDS,
    },
    global: {
      name: "device-code-failures",
      limit: config.DEVICE_CODE_FAILURES_GLOBAL,
      windowSeconds: config.DEVICE_CODE_FAILURE_WINDOW_SECONDS,
    },
  });
  const msAuth = new MsAuthService(db, loginRequests, links, clock, config, bus, assertions, undefined, webhooks);
  msAuth.device = deviceCodes;
  const ranks = new RanksService(db, realtime);
  const networks = new NetworksService(db, serverEvents);
  const historyLog = log.child({ component: "history" });
  // Heartbeats and pings are summed in memory and reach the buckets in one statement a flush.
  const metricBuffer = new MetricBuffer(
    db,
    historyLog,
    new MinuteCloser(db, realtime, historyLog, (id) => realtime.watchers.watched(id)),
    { minuteRetentionMs: config.METRICS_MINUTE_RETENTION_HOURS * 3600_000, clock },
  );
  const monitoring = new MonitoringService(
    db,
    config,
    log.child({ component: "pinger" }),
    clock,
    metricBuffer,
    metrics,
  );
  const playerHistory = new PlayerHistoryService(
    db,
    config.PLAYER_SESSION_TIMEOUT_SECONDS,
    realtime,
    new InFlightLimit(config.EXPENSIVE_READS_PER_CREDENTIAL),
    config.NETWORK_HOP_GAP_SECONDS,
  );
  monitoring.consume((samples) => playerHistory.fromSamples(samples));
  monitoring.consume((samples) => alerts.fromSamples(samples));
  monitoring.consume((samples) => performanceAlerts.fromSamples(samples));
  // A flip goes out always; any other result only where some instance has a live view of the server.
  monitoring.onSample((serverId, r, changed) => {
    const data = {
      online: r.online,
      latency_ms: r.latencyMs,
      players_online: r.playersOnline,
      players_max: r.playersMax,
      version: r.version,
      motd: r.motd,
      down_reason: r.reason,
      changed,
    };
    if (changed) realtime.publish(serverId, "status", data);
    else realtime.publishIfWatched(serverId, "status", data);
  });
  const auth = new AuthService(db, tokens, new LoginSessions(db, bus), loginThrottle, config, {
    limiter: exact,
    perAddress: { name: "signup-address", limit: config.SIGNUPS_PER_ADDRESS_PER_HOUR, windowSeconds: 3600 },
    overall: { name: "signup", limit: config.SIGNUPS_PER_HOUR, windowSeconds: 3600 },
    gate: passwords,
  });
  // Wrong second factors and wrong passwords for a factor change count in the sign-in throttle.
  const twoFactor = new TwoFactorService(db, keyring, loginThrottle, config, (u, p, a) =>
    auth.confirmPassword(u, p, a),
  );
  auth.twoFactor = twoFactor;
  const publishedPages = new PublishedPages(db, log.child({ component: "status-pages" }), config.PUBLIC_URL);
  const statusPages = new StatusPagesService(db, { publicUrl: config.PUBLIC_URL });
  const pgliteMaintenance = new PgliteMaintenance(db, log.child({ component: "pglite-maintenance" }));
  const oidc = new OidcService(
    db,
    loginRequests,
    links,
    new OidcKeys(db, keyring),
    clock,
    config,
    log.child({ component: "oidc" }),
    bus,
  );
  // A deleted team's pages are gone with it: no cached version of them is served after.
  const cohortZones = new CohortZones(db, log.child({ component: "analytics" }));
  const teams = new TeamsService(
    db,
    async (teamId) => {
      publishedPages.teamDeleted(teamId);
      await clients.teamDeleted(teamId);
    },
    () => void cohortZones.catchUp(),
  );
  statusPages.onChange((page) => publishedPages.changed(page));
  return {
    config,
    log,
    database,
    tokens,
    auth,
    twoFactor,
    passwords,
    teams,
    // Invitations are few and each one reaches a person: counted exactly, like sign-ups.
    invitations: new InvitationsService(db, teams, clock, {
      limiter: exact,
      perInviter: { name: "invitations", limit: config.INVITATIONS_PER_HOUR, windowSeconds: 3600 },
      ttlHours: config.INVITATION_TTL_HOURS,
    }),
    health: new HealthService(database),
    clock,
    keyring,
    limiter,
    limits: {
      start: { name: "start", limit: config.RATE_LIMIT_START_PER_MIN, windowSeconds: 60 },
      poll: { name: "poll", limit: config.RATE_LIMIT_POLL_PER_MIN, windowSeconds: 60 },
      validate: { name: "validate", limit: config.RATE_LIMIT_VALIDATE_PER_MIN, windowSeconds: 60 },
      clientAuthFailure: {
        name: "client-auth-failure",
        limit: config.RATE_LIMIT_CLIENT_AUTH_FAILURES_PER_MIN,
        windowSeconds: 60,
      },
      // Spec section 8: each endpoint has its own 20 per minute per token.
      clientCreate: { name: "client-create", limit: config.RATE_LIMIT_CLIENT_WRITE_PER_MIN, windowSeconds: 60 },
      msAuthModule: { name: "ms-auth-module", limit: config.RATE_LIMIT_CLIENT_WRITE_PER_MIN, windowSeconds: 60 },
    },
    clients,
    msAuth,
    msAuthDiagnostics: new MsAuthDiagnostics(db, config, links.identity, clock),
    loginLinks: links,
    // One source per kind of hold an app can have on a player; an OpenID Provider's grants join here.
    playerApps: new PlayerAppsService([
      new MsAuthSessionSource(db, msAuth, clock),
      new OidcGrantSource(db, clock, webhooks),
    ]),
    deviceCodes,
    assertions,
    oidc,
    devIdp,
    signIn: new SignInFlow(loginRequests, clients, links, clock, config, log),
    loginRequests,
    servers: new ServersService(db, { allowPrivate: config.OUTBOUND_ALLOW_PRIVATE }),
    players: new PlayersService(db, serverEvents),
    ranks,
    networks,
    incidents: new IncidentsService(db, webhooks),
    maintenance: new MaintenanceService(db),
    announcements: new AnnouncementsService(db, realtime),
    monitoring,
    agent: new AgentService(
      db,
      ranks,
      serverEvents,
      clock,
      metricBuffer,
      {
        backfillDays: config.SAMPLE_RETENTION_DAYS,
        hopGapSeconds: config.NETWORK_HOP_GAP_SECONDS,
      },
      networks,
      webhooks,
      performanceAlerts,
    ),
    playerHistory,
    playerDirectory: new PlayerDirectoryService(db),
    // Retention in a zone with another clock than the team's is counted, not read from kept rows:
    // at most EXPENSIVE_READS_PER_CREDENTIAL of those at once per caller, as player summaries.
    analytics: new AnalyticsService(db, clock, { expensive: new InFlightLimit(config.EXPENSIVE_READS_PER_CREDENTIAL) }),
    realtime,
    webhooks,
    audit: new AuditService(db),
    alertRules: new AlertRulesService(db, performanceAlerts),
    performanceAlerts,
    privacy: new PrivacyService(
      db,
      keyring,
      idempotency,
      { maxRetentionDays: config.PLAYER_DATA_MAX_RETENTION_DAYS, sessionCeilingDays: config.SAMPLE_RETENTION_DAYS },
      () => webhooks.emitted(),
    ),
    webhookWorker,
    alerts,
    statusPages,
    publishedPages,
    edge,
    idempotency,
    metrics,
    cohortZones,
    background: [
      cohortZones,
      every("general-rate-limit-prune", 60, log, () => edge.prune()),
      every("realtime-watch-announce", WATCH_ANNOUNCE_MS / 1000, log, () => realtime.watchers.announce()),
      every("server-actor-sweep", Math.min(30, config.ACTOR_IDLE_SECONDS), log, async () => realtime.actors.sweep()),
      every("idempotency-key-sweep", 3600, log, () => idempotency.sweep()),
      every("login-expiry-sweep", config.LOGIN_SWEEP_SECONDS, log, async () => {
        await loginRequests.sweep();
        await deviceCodes.sweep();
      }),
      every("assertion-keys", KEY_REFRESH_SECONDS, log, () => assertions.maintain()),
      // Counters live as long as the longest window: the failed sign-in one can be hours, the
      // sign-up and invitation ones are an hour.
      every("rate-limit-prune", 60, log, async () => {
        const window = Math.max(3600, config.LOGIN_FAILURE_WINDOW_SECONDS);
        await exact.prune(Math.max(window, config.DEVICE_CODE_FAILURE_WINDOW_SECONDS));
        if (limiter !== exact) await limiter.prune(window);
      }),
      ...(batched ? [flushTask(batched, config.RATE_LIMIT_FLUSH_MS, log)] : []),
      ...(redis ? [closeOnStop("redis", () => redis.close())] : []),
      ...(database.kind === "pglite"
        ? [every("pglite-maintenance", config.PGLITE_MAINTENANCE_SECONDS, log, () => pgliteMaintenance.run())]
        : []),
      every("player-session-sweep", config.PLAYER_SESSION_SWEEP_SECONDS, log, () => playerHistory.sweep()),
      ...(config.PINGER_ENABLED ? [monitoring] : []),
      // Stopped after the HTTP server has drained, so the last heartbeats are in its final flush.
      metricBuffer.task(config.METRICS_FLUSH_MS),
      every("agent-silence-sweep", Math.max(1, Math.min(15, config.WEBHOOK_AGENT_SILENCE_SECONDS / 4)), log, () =>
        alerts.sweepAgents(),
      ),
      every("held-alerts-sweep", 15, log, () => alerts.releaseHeld()),
      // Events emitted by requests that just finished are queued before the database closes.
      { name: "webhook-queue", start() {}, stop: () => webhooks.flush() },
      webhookWorker,
    ],
  };
}
