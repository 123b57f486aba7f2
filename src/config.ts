import { z } from "zod";

const bool = z
  .enum(["true", "false", "1", "0", "yes", "no"])
  .transform((v) => v === "true" || v === "1" || v === "yes");

const ConfigSchema = z
  .object({
    NODE_ENV: z.enum(["development", "test", "production"]).default("development"),
    PORT: z.coerce.number().int().min(0).max(65535).default(3000),
    HOST: z.string().min(1).default("0.0.0.0"),
    PUBLIC_URL: z.url().optional(),
    DATABASE_URL: z
      .string()
      .regex(/^postgres(ql)?:\/\//, "must be a postgres:// or postgresql:// URL")
      .optional(),
    /** How long to keep retrying an unreachable DATABASE_URL at startup before exiting. */
    DATABASE_CONNECT_TIMEOUT_SECONDS: z.coerce.number().int().min(0).max(3600).default(30),
    DATA_DIR: z.string().min(1).default(".data"),
    /** PostgreSQL: the most connections one instance opens (every instance counts against max_connections). */
    DATABASE_POOL_MAX: z.coerce.number().int().min(2).max(100).default(10),
    /** PostgreSQL: an idle pooled connection is closed after this many seconds. */
    DATABASE_IDLE_TIMEOUT_SECONDS: z.coerce.number().int().min(1).max(3600).default(60),
    LOG_LEVEL: z.enum(["debug", "info", "warn", "error", "silent"]).default("info"),
    /** PEM (PKCS#8) Ed25519 private key for access tokens; generated into DATA_DIR when unset. */
    JWT_PRIVATE_KEY: z.string().includes("PRIVATE KEY").optional(),
    ACCESS_TOKEN_TTL_SECONDS: z.coerce.number().int().min(30).max(86_400).default(900),
    REFRESH_TOKEN_TTL_SECONDS: z.coerce
      .number()
      .int()
      .min(300)
      .default(30 * 86_400),
    /** argon2id cost; lower it only for tests. */
    PASSWORD_MEMORY_KIB: z.coerce.number().int().min(1024).max(1_048_576).default(65_536),
    PASSWORD_TIME_COST: z.coerce.number().int().min(1).max(10).default(2),
    MAX_BODY_BYTES: z.coerce
      .number()
      .int()
      .min(1024)
      .max(10 * 1024 * 1024)
      .default(64 * 1024),
    SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).default(10_000),
    /**
     * How many reverse proxies in front of the service append to X-Forwarded-For: the client
     * is the entry that many hops from the right. `true` means one, `false` (default) none.
     */
    TRUST_PROXY: z
      .string()
      .default("false")
      .transform((v) => (v === "true" ? 1 : v === "false" ? 0 : Number(v)))
      .pipe(
        z.number({ error: "must be true, false, or the number of trusted proxy hops (0-10)" }).int().min(0).max(10),
      ),
    /** The most calls one tRPC batch may carry (each counts against the general limit). */
    TRPC_MAX_BATCH: z.coerce.number().int().min(1).max(100).default(10),
    /**
     * Several processes on one machine listening on one port (SO_REUSEPORT), the kernel spreading
     * connections among them. Off, a second process on a taken port is refused instead of
     * silently taking half the traffic.
     */
    PORT_SHARING: bool.default(false),

    // --- Identity chain (Microsoft -> Xbox Live -> XSTS -> Minecraft services) ---
    MS_CLIENT_ID: z.string().min(1).optional(),
    MS_CLIENT_SECRET: z.string().min(1).optional(),
    /**
     * When the Azure client secret expires (the "Expires" date Azure shows beside it, e.g.
     * 2027-05-01): the ms_auth diagnostics warn 30 days ahead. Microsoft offers no way to read it
     * with the secret itself.
     */
    MS_CLIENT_SECRET_EXPIRES_AT: z
      .union([z.iso.datetime({ offset: true }), z.iso.date()], {
        error: "must be a date like 2027-05-01 or an ISO 8601 date-time",
      })
      .transform((v) => new Date(v))
      .optional(),
    MS_AUTHORIZE_URL: z.url().default("https://login.microsoftonline.com/consumers/oauth2/v2.0/authorize"),
    MS_TOKEN_URL: z.url().default("https://login.microsoftonline.com/consumers/oauth2/v2.0/token"),
    XBL_AUTH_URL: z.url().default("https://user.auth.xboxlive.com/user/authenticate"),
    XSTS_AUTH_URL: z.url().default("https://xsts.auth.xboxlive.com/xsts/authorize"),
    MC_LOGIN_URL: z.url().default("https://api.minecraftservices.com/authentication/login_with_xbox"),
    MC_PROFILE_URL: z.url().default("https://api.minecraftservices.com/minecraft/profile"),
    /**
     * The development identity provider. Unset: on when no Microsoft app is configured and
     * NODE_ENV is not production. In production it must be enabled explicitly.
     */
    DEV_IDP_ENABLED: bool.optional(),
    /** Use a development identity provider running elsewhere (e.g. standalone) instead of the built-in one. */
    DEV_IDP_URL: z.url().optional(),
    /**
     * With the built-in provider, the chain calls it in this process (its handler, no socket).
     * Off: the chain's calls go out to PUBLIC_URL/dev-idp over HTTP, as to a real provider
     * (through a load balancer, to any instance).
     */
    DEV_IDP_CHAIN_IN_PROCESS: bool.default(true),
    IDENTITY_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(10_000),
    IDENTITY_RETRIES: z.coerce.number().int().min(0).max(5).default(2),

    // --- Login requests and sessions (ms_auth) ---
    LOGIN_REQUEST_TTL_SECONDS: z.coerce.number().int().min(1).max(3600).default(600),
    SESSION_TTL_SECONDS: z.coerce
      .number()
      .int()
      .min(60)
      .default(30 * 86_400),
    LOGIN_SWEEP_SECONDS: z.coerce.number().int().min(1).default(30),
    /** Wrong device-flow user codes per client address within DEVICE_CODE_FAILURE_WINDOW_SECONDS; over it, that address is refused. */
    DEVICE_CODE_FAILURES_PER_ADDRESS: z.coerce.number().int().min(1, "must be at least 1").default(10),
    /** Wrong device-flow user codes from everyone within the window; over it, every code entry is refused until it ends. */
    DEVICE_CODE_FAILURES_GLOBAL: z.coerce.number().int().min(1, "must be at least 1").default(1000),
    DEVICE_CODE_FAILURE_WINDOW_SECONDS: z.coerce
      .number()
      .int()
      .min(60, "must be between 60 and 86400 seconds")
      .max(86_400, "must be between 60 and 86400 seconds")
      .default(600),
    /** Lifetime of a signed session assertion (poll/validate with `assertion: true`); also how long a revoked session's assertions stay verifiable. */
    SESSION_ASSERTION_TTL_SECONDS: z.coerce
      .number()
      .int("must be a whole number of seconds")
      .min(1, "must be between 1 and 3600 seconds")
      .max(3600, "must be between 1 and 3600 seconds")
      .default(300),
    /** A new assertion signing key is made (and published ahead of use) when the newest is this old. */
    SESSION_ASSERTION_KEY_ROTATION_HOURS: z.coerce
      .number()
      .int("must be a whole number of hours")
      .min(1, "must be between 1 and 8760 hours")
      .max(8760, "must be between 1 and 8760 hours")
      .default(720),

    // --- Rate limits (requests per minute) ---
    RATE_LIMIT_START_PER_MIN: z.coerce.number().int().min(1).default(120),
    RATE_LIMIT_POLL_PER_MIN: z.coerce.number().int().min(1).default(300),
    RATE_LIMIT_VALIDATE_PER_MIN: z.coerce.number().int().min(1).default(300),
    /** POST /client/apps, and separately the ms_auth module endpoint, per user or API key. */
    RATE_LIMIT_CLIENT_WRITE_PER_MIN: z.coerce.number().int().min(1).default(20),
    /** Failed sign-ins per email (known or not) within LOGIN_FAILURE_WINDOW_SECONDS; over it, that email is refused. */
    LOGIN_FAILURES_PER_ACCOUNT: z.coerce.number().int().min(1, "must be at least 1").max(10_000).default(10),
    /** Failed sign-ins per client address within the window, whatever the email. */
    LOGIN_FAILURES_PER_ADDRESS: z.coerce.number().int().min(1, "must be at least 1").default(100),
    LOGIN_FAILURE_WINDOW_SECONDS: z.coerce
      .number()
      .int()
      .min(60, "must be between 60 and 86400 seconds")
      .max(86_400, "must be between 60 and 86400 seconds")
      .default(900),
    /** How long the password step's "second factor required" challenge stays good. */
    TWO_FACTOR_CHALLENGE_TTL_SECONDS: z.coerce
      .number()
      .int()
      .min(30, "must be between 30 and 3600 seconds")
      .max(3600, "must be between 30 and 3600 seconds")
      .default(300),
    /** The name authenticator apps show beside a TOTP entry, and the passkey's relying party name. */
    TWO_FACTOR_ISSUER: z.string().min(1).max(64).default("mc-platform"),
    /** Sign-up attempts per client address per hour (each attempt counts, taken or not). */
    SIGNUPS_PER_ADDRESS_PER_HOUR: z.coerce.number().int().min(1, "must be at least 1").default(10),
    /** Sign-up attempts per hour from every address together: the ceiling a spread-out flood meets. */
    SIGNUPS_PER_HOUR: z.coerce.number().int().min(1, "must be at least 1").default(1000),
    /** Team invitations one person may send per hour (each attempt by an admin counts); over it 429. */
    INVITATIONS_PER_HOUR: z.coerce.number().int().min(1, "must be at least 1").default(50),
    /** How long a team invitation can be accepted. */
    INVITATION_TTL_HOURS: z.coerce
      .number()
      .int("must be a whole number of hours")
      .min(1, "must be between 1 and 8760 hours")
      .max(8760, "must be between 1 and 8760 hours")
      .default(168),
    /** Password hashes and checks (argon2id) running at once on this instance. */
    PASSWORD_HASH_CONCURRENCY: z.coerce.number().int().min(2, "must be at least 2").max(64).default(2),
    /** Of those, the most sign-ups may hold: the rest stay free for sign-ins. */
    PASSWORD_HASH_SIGNUP_SLOTS: z.coerce.number().int().min(1, "must be at least 1").max(63).default(1),
    /** Sign-ins waiting for a hashing slot; past it a sign-in answers 429 with Retry-After. */
    PASSWORD_HASH_QUEUE: z.coerce.number().int().min(0).max(10_000).default(64),
    /** Sign-ups waiting for a hashing slot; past it a sign-up answers 429 with Retry-After. */
    PASSWORD_HASH_SIGNUP_QUEUE: z.coerce.number().int().min(0).max(10_000).default(8),
    /** Wrong client credentials per client id and caller address, so they cannot spend the client's own budget. */
    RATE_LIMIT_CLIENT_AUTH_FAILURES_PER_MIN: z.coerce.number().int().min(1).default(20),
    /**
     * PostgreSQL: how often each instance adds its counted hits to the shared counters (one
     * statement for all keys). Hits are judged in memory between flushes, so instances together
     * may overshoot a limit by what the others admit in one interval. 0: every hit is one
     * atomic statement (exact across instances, one database round trip per limited request).
     */
    RATE_LIMIT_FLUSH_MS: z.coerce
      .number()
      .int("must be a whole number of milliseconds")
      .min(0, "must be between 0 and 1000 milliseconds")
      .max(1000, "must be between 0 and 1000 milliseconds")
      .default(100),
    /**
     * Redis for the rate-limit counters (the launchers' limits, client credential failures, failed
     * sign-ins): every instance on the same Redis counts together, exactly, one round trip a hit,
     * instead of the database (RATE_LIMIT_FLUSH_MS does not apply). While Redis is unreachable,
     * each instance counts on its own in memory and logs it.
     */
    REDIS_URL: z
      .string()
      .regex(/^(redis|rediss|valkey|valkeys):\/\//, "must be a redis://, rediss://, valkey:// or valkeys:// URL")
      .optional(),
    /** Every request, per client address, per instance: a flood guard under the limits above. */
    RATE_LIMIT_GENERAL_PER_MIN: z.coerce.number().int().min(1).default(3000),
    /** Browser origins allowed to call the API (comma-separated, or *); none by default. */
    CORS_ORIGINS: z
      .string()
      .default("")
      .transform((v) =>
        v
          .split(",")
          .map((o) => o.trim().replace(/\/+$/, ""))
          .filter(Boolean),
      )
      .pipe(z.array(z.union([z.literal("*"), z.url({ protocol: /^https?$/ })]))),

    /**
     * Turns on GET /metrics (Prometheus text format), answered only to `authorization: Bearer
     * <token>`. Unset: no metrics are kept and /metrics is 404.
     */
    METRICS_TOKEN: z.string().min(16, "must be at least 16 characters").max(256).optional(),

    // --- Server monitoring ---
    PING_INTERVAL_SECONDS: z.coerce.number().int().min(1).max(3600).default(30),
    PING_TIMEOUT_MS: z.coerce.number().int().min(100).max(30_000).default(5000),
    PING_CONCURRENCY: z.coerce.number().int().min(1).max(1000).default(32),
    /**
     * How long one claim holds a server for the instance that made it: the instance checks it
     * every interval from memory, with no statement, until the lease ends and the server is due
     * for anyone again. A crashed instance's servers wait at most this long; a stopped one's are
     * handed back at once. Never shorter than PING_INTERVAL_SECONDS.
     */
    PING_LEASE_SECONDS: z.coerce.number().int().min(1).max(86_400).default(120),
    /**
     * How stale a server's `checked_at` and `latency_ms` may grow while its checks find nothing
     * else new: a check rewrites the status row when up/down, players, version, MOTD or the error
     * changed, and otherwise only once this long has passed since the row was last written.
     */
    PING_STATUS_REFRESH_SECONDS: z.coerce.number().int().min(0).max(3600).default(60),
    PINGER_ENABLED: bool.default(true),
    /**
     * Outbound connections (pings, webhooks) to loopback, RFC 1918, IPv6 ULA, link-local and
     * CGNAT addresses. Unset: allowed outside production (a first run on a laptop pings
     * `localhost:25565`), refused in production, where a user-registered address could reach
     * the service's own network. Cloud metadata addresses are refused whatever this says.
     */
    OUTBOUND_ALLOW_PRIVATE: bool.optional(),
    // --- Webhooks ---
    /**
     * Webhook targets on loopback, RFC 1918, ULA, link-local and CGNAT addresses. Unset: the same
     * as OUTBOUND_ALLOW_PRIVATE. Cloud metadata addresses are refused whatever this says.
     */
    WEBHOOK_ALLOW_PRIVATE: bool.optional(),
    /** Delivery workers on this instance (HTTP requests in flight at once). */
    WEBHOOK_CONCURRENCY: z.coerce.number().int().min(0).max(1000).default(16),
    /** How often an idle instance looks for due deliveries (new events on this instance start at once). */
    WEBHOOK_POLL_MS: z.coerce.number().int().min(10).max(60_000).default(1000),
    /** One attempt's whole time (connect, send, read the capped response). */
    WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(10_000),
    /**
     * Seconds before each retry after a failed attempt (timeout, network error, 5xx, 429), each
     * with up to 20% jitter; when the list runs out the delivery has failed. The default spans
     * about 27 hours (the Standard Webhooks schedule).
     */
    WEBHOOK_RETRY_SCHEDULE_SECONDS: z
      .string()
      .default("5,300,1800,7200,18000,36000,36000")
      .transform((v) => v.split(",").map((x) => Number(x.trim())))
      .pipe(
        z
          .array(
            z
              .number()
              .min(0)
              .max(7 * 86_400),
          )
          .min(0)
          .max(20),
      ),
    /**
     * An endpoint whose every attempt has failed for this long (and at least
     * WEBHOOK_DISABLE_AFTER_FAILURES attempts) is disabled; the team sees it on the endpoint and
     * gets an `endpoint.disabled` event on its other endpoints.
     */
    WEBHOOK_DISABLE_AFTER_SECONDS: z.coerce
      .number()
      .min(0)
      .default(3 * 86_400),
    WEBHOOK_DISABLE_AFTER_FAILURES: z.coerce.number().int().min(1).default(10),
    /**
     * Requests one endpoint may have in flight at once, over every instance: an endpoint that
     * never answers holds at most this many of the delivery workers while the rest serve others.
     */
    WEBHOOK_ENDPOINT_CONCURRENCY: z.coerce.number().int().min(1).max(1000).default(4),
    /**
     * Failed attempts in a row that open an endpoint's circuit: it is paused (nothing is sent,
     * its deliveries wait) and the team's other endpoints get `endpoint.paused`.
     */
    WEBHOOK_CIRCUIT_FAILURES: z.coerce.number().int().min(1).max(10_000).default(5),
    /** How long a paused endpoint waits before one delivery probes it; 0: until a person resumes it. */
    WEBHOOK_CIRCUIT_PAUSE_SECONDS: z.coerce
      .number()
      .min(0)
      .max(7 * 86_400)
      .default(600),
    /**
     * A team's budget of events, and of deliveries (an event times the endpoints that take it),
     * per minute, refilled continuously. Past it events are not queued; they are counted on the
     * team's webhook list and in the metrics, and logged.
     */
    WEBHOOK_TEAM_EVENTS_PER_MIN: z.coerce.number().int().min(1).max(10_000_000).default(1000),
    WEBHOOK_TEAM_DELIVERIES_PER_MIN: z.coerce.number().int().min(1).max(10_000_000).default(3000),
    /** Consecutive failed pings before `server.down` (one lost ping is not an outage). */
    WEBHOOK_DOWN_AFTER_FAILURES: z.coerce.number().int().min(1).max(100).default(3),
    /** An agent silent this long is `agent.offline` (its heartbeat comes every 15-30 s). */
    WEBHOOK_AGENT_SILENCE_SECONDS: z.coerce.number().int().min(5).max(86_400).default(120),
    // --- Realtime analytics stream ---
    WS_AUTH_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(5000),
    WS_EXPIRY_NOTICE_SECONDS: z.coerce.number().int().min(1).max(3600).default(60),
    WS_REVALIDATE_SECONDS: z.coerce.number().int().min(1).max(3600).default(30),
    WS_BACKPRESSURE_BYTES: z.coerce
      .number()
      .int()
      .min(1024)
      .max(64 * 1024 * 1024)
      .default(1024 * 1024),
    /** Messages one analytics socket may send per minute; past it the socket is closed (4029). */
    /** Analytics sockets open at once per credential (an account, or an API key), per instance. */
    WS_MAX_SOCKETS_PER_CREDENTIAL: z.coerce.number().int().min(1).max(100_000).default(32),
    /** Analytics sockets open at once per client address (authenticated or not yet), per instance. */
    WS_MAX_SOCKETS_PER_ADDRESS: z.coerce.number().int().min(1).max(100_000).default(256),
    WS_MESSAGES_PER_MIN: z.coerce.number().int().min(1).max(10_000).default(120),
    WS_IDLE_TIMEOUT_SECONDS: z.coerce.number().int().min(5).max(960).default(60),
    ACTOR_IDLE_SECONDS: z.coerce.number().int().min(1).max(86_400).default(60),
    /**
     * Expensive reads (the player summary; retention in a zone with another clock than the team's)
     * running at once per credential (an account, or an API key), each kind per instance; one more
     * answers 429 with Retry-After.
     */
    EXPENSIVE_READS_PER_CREDENTIAL: z.coerce.number().int().min(1).max(1000).default(2),
    /** PGlite: how often its maintenance runs (src/db/pglite-maintenance.ts: autovacuum's work, which PGlite lacks). */
    PGLITE_MAINTENANCE_SECONDS: z.coerce.number().int().min(5).max(86_400).default(10),
    /** One-hour metric buckets (and closed player sessions) are kept this long. */
    SAMPLE_RETENTION_DAYS: z.coerce.number().int().min(1).max(3650).default(90),
    /**
     * The longest any team keeps per-player data: a player not seen for this long is forgotten
     * (docs/privacy.md), and a team's own retention settings may not exceed it.
     */
    PLAYER_DATA_MAX_RETENTION_DAYS: z.coerce.number().int().min(1).max(3650).default(365),
    /** Audit log entries are kept this long (docs/audit.md); the hourly retention job removes older ones. */
    AUDIT_RETENTION_DAYS: z.coerce.number().int().min(1).max(3650).default(365),
    /**
     * A player counts as online this long after the last news of them (an agent heartbeat, a ping
     * that listed them); past it their session is closed at that last news.
     */
    PLAYER_SESSION_TIMEOUT_SECONDS: z.coerce
      .number()
      .int()
      .min(60, "must be between 60 and 86400 seconds (longer than the agent's heartbeat interval)")
      .max(86_400, "must be between 60 and 86400 seconds (longer than the agent's heartbeat interval)")
      .default(300),
    /**
     * How often each instance closes the sessions silent past PLAYER_SESSION_TIMEOUT_SECONDS (all
     * of the database's); unset: half the timeout, at most a minute.
     */
    PLAYER_SESSION_SWEEP_SECONDS: z.coerce.number().int().min(1, "must be at least 1 second").optional(),
    /**
     * A join on a server of a network this soon after the player's leave from another (or the
     * same) server of it continues their network session: a proxy's transfer (docs/networks.md).
     */
    NETWORK_HOP_GAP_SECONDS: z.coerce.number().int().min(0).max(3600).default(30),
    /** One-minute metric buckets and raw ping samples; the 24h reads need at least a day of them. */
    METRICS_MINUTE_RETENTION_HOURS: z.coerce
      .number({ error: "must be a whole number of hours" })
      .int("must be a whole number of hours")
      .min(25, "must be at least 25 hours: the 24h windows read the one-minute tier")
      .max(24 * 30, "must be at most 720 hours (30 days)")
      .default(48),
    /**
     * How often each instance adds the heartbeats and pings it has summed in memory to the metric
     * buckets (one statement for all servers). A crash loses at most this much of the buckets'
     * figures (the latest status is written at once); a graceful stop flushes.
     */
    METRICS_FLUSH_MS: z.coerce
      .number()
      .int("must be a whole number of milliseconds")
      .min(100, "must be between 100 and 60000 milliseconds")
      .max(60_000, "must be between 100 and 60000 milliseconds")
      .default(5000),
  })
  .transform((c) => ({
    ...c,
    PUBLIC_URL: (c.PUBLIC_URL ?? `http://localhost:${c.PORT}`).replace(/\/+$/, ""),
    DEV_IDP_ENABLED: c.DEV_IDP_ENABLED ?? (!c.MS_CLIENT_ID && c.NODE_ENV !== "production"),
    OUTBOUND_ALLOW_PRIVATE: c.OUTBOUND_ALLOW_PRIVATE ?? c.NODE_ENV !== "production",
    WEBHOOK_ALLOW_PRIVATE: c.WEBHOOK_ALLOW_PRIVATE ?? c.OUTBOUND_ALLOW_PRIVATE ?? c.NODE_ENV !== "production",
    PLAYER_SESSION_SWEEP_SECONDS: c.PLAYER_SESSION_SWEEP_SECONDS ?? Math.min(60, c.PLAYER_SESSION_TIMEOUT_SECONDS / 2),
  }))
  .superRefine((c, ctx) => {
    if (c.PORT_SHARING && !c.DATABASE_URL) {
      ctx.addIssue({
        code: "custom",
        path: ["PORT_SHARING"],
        message:
          "needs DATABASE_URL: processes sharing a port must share one PostgreSQL database (a PGlite DATA_DIR serves one process)",
      });
    }
    if (c.PASSWORD_HASH_SIGNUP_SLOTS >= c.PASSWORD_HASH_CONCURRENCY) {
      ctx.addIssue({
        code: "custom",
        path: ["PASSWORD_HASH_SIGNUP_SLOTS"],
        message: "must be less than PASSWORD_HASH_CONCURRENCY (the rest are kept for sign-ins)",
      });
    }
    if (!c.DEV_IDP_ENABLED && !c.MS_CLIENT_ID) {
      ctx.addIssue({
        code: "custom",
        path: ["MS_CLIENT_ID"],
        message:
          "required when the development identity provider is off (set MS_CLIENT_ID and MS_CLIENT_SECRET, or DEV_IDP_ENABLED=true outside production)",
      });
    }
  });

export type Config = z.infer<typeof ConfigSchema>;

/** Every variable the service reads: docs/configuration.md describes each (test/docs.test.ts checks). */
export const CONFIG_VARIABLES: readonly string[] = Object.keys(ConfigSchema.in.shape);

export class ConfigError extends Error {}

/** Parses an environment once. Every problem is reported, each naming its variable. */
export function parseConfig(env: Record<string, string | undefined>): Config {
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ""));
  const result = ConfigSchema.safeParse(cleaned);
  if (!result.success) {
    const lines = result.error.issues.map((i) => `  ${i.path.join(".") || "(config)"}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join("\n")}`);
  }
  return result.data;
}

/** The process's configuration: the only place that reads process.env. */
export function loadConfig(overrides: Record<string, string | undefined> = {}): Config {
  return parseConfig({ ...process.env, ...overrides });
}
