import { existsSync, readFileSync, statSync } from "node:fs";
import { resolve } from "node:path";

/**
 * Every setting has an environment variable and a key in the JSON config file; the variable wins.
 * Every bad value is reported at once, each naming where it came from and what is expected.
 */
export interface AgentConfig {
  url: string;
  token: string;
  rconHost: string;
  rconPort: number;
  rconPassword: string;
  /** The Minecraft server's directory (logs/latest.log, banned-players.json); null when the server is elsewhere. */
  serverDir: string | null;
  stateDir: string;
  heartbeatSeconds: number;
  configPollSeconds: number;
  logPollMs: number;
  queueMaxBytes: number;
  serverPid: number | null;
  backoffMinMs: number;
  backoffMaxMs: number;
  requestTimeoutMs: number;
  /** Where a UUID is asked for by name, for players a proxy's log names (online mode); null: never asked. */
  profileUrl: string | null;
  logLevel: "debug" | "info" | "warn" | "error" | "silent";
  /** Text a restart script writes to the server's log before it stops the server: a planned stop, like "Stopping the server". */
  restartLine: string | null;
}

interface Field {
  env: string;
  key: string;
  required?: boolean;
  fallback?: string;
}

const FIELDS = {
  url: { env: "MCP_AGENT_URL", key: "url", required: true },
  token: { env: "MCP_AGENT_TOKEN", key: "token", required: true },
  rconHost: { env: "MCP_AGENT_RCON_HOST", key: "rcon_host", fallback: "127.0.0.1" },
  rconPort: { env: "MCP_AGENT_RCON_PORT", key: "rcon_port", fallback: "25575" },
  rconPassword: { env: "MCP_AGENT_RCON_PASSWORD", key: "rcon_password", required: true },
  serverDir: { env: "MCP_AGENT_SERVER_DIR", key: "server_dir" },
  stateDir: { env: "MCP_AGENT_STATE_DIR", key: "state_dir" },
  heartbeatSeconds: { env: "MCP_AGENT_HEARTBEAT_SECONDS", key: "heartbeat_seconds", fallback: "15" },
  configPollSeconds: { env: "MCP_AGENT_CONFIG_POLL_SECONDS", key: "config_poll_seconds", fallback: "30" },
  logPollMs: { env: "MCP_AGENT_LOG_POLL_MS", key: "log_poll_ms", fallback: "1000" },
  queueMaxBytes: { env: "MCP_AGENT_QUEUE_MAX_BYTES", key: "queue_max_bytes", fallback: String(64 * 1024 * 1024) },
  serverPid: { env: "MCP_AGENT_SERVER_PID", key: "server_pid" },
  backoffMinMs: { env: "MCP_AGENT_BACKOFF_MIN_MS", key: "backoff_min_ms", fallback: "1000" },
  backoffMaxMs: { env: "MCP_AGENT_BACKOFF_MAX_MS", key: "backoff_max_ms", fallback: "60000" },
  requestTimeoutMs: { env: "MCP_AGENT_REQUEST_TIMEOUT_MS", key: "request_timeout_ms", fallback: "10000" },
  profileUrl: {
    env: "MCP_AGENT_PROFILE_URL",
    key: "profile_url",
    fallback: "https://api.mojang.com/users/profiles/minecraft/",
  },
  logLevel: { env: "MCP_AGENT_LOG_LEVEL", key: "log_level", fallback: "info" },
  restartLine: { env: "MCP_AGENT_RESTART_LINE", key: "restart_line" },
} satisfies Record<keyof AgentConfig, Field>;

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
  }
}

const TOKEN = /^mcp_agent_[A-Za-z0-9_-]{43}$/;

/** Reads the config file (if any) and the environment; throws ConfigError listing every problem. */
export function loadConfig(env: Record<string, string | undefined>, configPath?: string): AgentConfig {
  const problems: string[] = [];
  let file: Record<string, unknown> = {};
  const path = configPath ?? env.MCP_AGENT_CONFIG;
  if (path) {
    try {
      const parsed = JSON.parse(readFileSync(path, "utf8"));
      if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) throw new Error("not a JSON object");
      file = parsed;
      const known = new Set<string>(Object.values(FIELDS).map((f) => f.key));
      for (const k of Object.keys(file)) if (!known.has(k)) problems.push(`${path}: unknown key "${k}"`);
    } catch (e) {
      problems.push(`config file ${path}: ${e instanceof Error ? e.message : String(e)}`);
    }
  }

  const raw = (name: keyof typeof FIELDS): { value: string | undefined; where: string } => {
    const f: Field = FIELDS[name];
    const fromEnv = env[f.env];
    if (fromEnv !== undefined && fromEnv !== "") return { value: fromEnv, where: f.env };
    const fromFile = file[f.key];
    const where = path ? `${f.env} (or "${f.key}" in ${path})` : f.env;
    if (fromFile !== undefined && fromFile !== null) return { value: String(fromFile), where };
    if (f.required) problems.push(`${where} is required`);
    return { value: f.fallback, where };
  };
  const int = (name: keyof typeof FIELDS, min: number, max: number): number => {
    const { value, where } = raw(name);
    const n = Number(value);
    if (value === undefined || !/^\d+$/.test(value) || n < min || n > max) {
      problems.push(`${where} must be an integer from ${min} to ${max}, got "${value}"`);
      return min;
    }
    return n;
  };

  const url = raw("url");
  if (url.value !== undefined) {
    try {
      const u = new URL(url.value);
      if (u.protocol !== "http:" && u.protocol !== "https:") throw new Error();
    } catch {
      problems.push(`${url.where} must be an http(s) URL such as https://platform.example.com, got "${url.value}"`);
    }
  }
  const profile = raw("profileUrl");
  let profileUrl: string | null = null;
  if (profile.value && profile.value !== "off") {
    try {
      const u = new URL(profile.value);
      if (u.protocol !== "http:" && u.protocol !== "https:") throw new Error();
      profileUrl = profile.value;
    } catch {
      problems.push(
        `${profile.where} must be an http(s) URL the player's name is appended to, or "off", got "${profile.value}"`,
      );
    }
  }
  const token = raw("token");
  if (token.value !== undefined && !TOKEN.test(token.value))
    problems.push(
      `${token.where} must be an agent token (mcp_agent_ followed by 43 characters), as shown once when the server was registered`,
    );
  const password = raw("rconPassword");
  if (password.value !== undefined && password.value.length < 2)
    problems.push(`${password.where} must be the server's rcon.password (at least 2 characters)`);
  const host = raw("rconHost");
  if (!host.value || host.value.length < 2) problems.push(`${host.where} must be a host name or address`);

  const dir = raw("serverDir");
  let serverDir: string | null = null;
  if (dir.value) {
    serverDir = resolve(dir.value);
    if (!existsSync(serverDir) || !statSync(serverDir).isDirectory())
      problems.push(`${dir.where} must be the Minecraft server's directory; "${serverDir}" is not a directory`);
  }
  const state = raw("stateDir");
  const stateDir = resolve(state.value ?? (serverDir ? `${serverDir}/.mc-platform-agent` : ".mc-platform-agent"));

  const pidRaw = raw("serverPid");
  let serverPid: number | null = null;
  if (pidRaw.value !== undefined) serverPid = int("serverPid", 1, 4_194_304);

  const level = raw("logLevel");
  const levels = ["debug", "info", "warn", "error", "silent"] as const;
  if (!levels.includes(level.value as never))
    problems.push(`${level.where} must be one of ${levels.join(", ")}, got "${level.value}"`);

  const restartLine = raw("restartLine");
  const config: AgentConfig = {
    url: (url.value ?? "").replace(/\/+$/, ""),
    token: token.value ?? "",
    rconHost: host.value ?? "",
    rconPort: int("rconPort", 1, 65535),
    rconPassword: password.value ?? "",
    serverDir,
    stateDir,
    heartbeatSeconds: int("heartbeatSeconds", 1, 60),
    configPollSeconds: int("configPollSeconds", 1, 3600),
    logPollMs: int("logPollMs", 50, 60_000),
    queueMaxBytes: int("queueMaxBytes", 4096, 1024 ** 4),
    serverPid,
    backoffMinMs: int("backoffMinMs", 10, 600_000),
    backoffMaxMs: int("backoffMaxMs", 10, 3_600_000),
    requestTimeoutMs: int("requestTimeoutMs", 100, 600_000),
    profileUrl,
    logLevel: level.value as AgentConfig["logLevel"],
    restartLine: restartLine.value ? restartLine.value.slice(0, 300) : null,
  };
  if (config.backoffMaxMs < config.backoffMinMs)
    problems.push(`${FIELDS.backoffMaxMs.env} must be at least ${FIELDS.backoffMinMs.env}`);
  if (problems.length) throw new ConfigError(problems);
  return config;
}
