export type LogLevel = "debug" | "info" | "warn" | "error" | "silent";
const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

/** Keys whose values never reach a log line, wherever they appear. */
const REDACT =
  /pass(word)?|secret|token|authorization|cookie|api[_-]?key|code_verifier|hash|e-?mail|^param(eter)?s$|^args$/i;

/**
 * Values that are secrets by their shape, whatever key (or message) carries them: the
 * project's prefixed secrets (src/lib/secrets.ts), argon2 hashes, JWTs, bearer credentials,
 * and email addresses. A field name cannot catch a secret quoted inside an error message.
 */
const SECRET_SHAPES =
  /\bmcp_[a-z]+_[A-Za-z0-9_-]{6,}|\$argon2(?:id|i|d)\$[^\s"'`,)]*|\beyJ[A-Za-z0-9_-]*\.eyJ[A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]*)?|\bBearer\s+[^\s"',]+|[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}/gi;

export function scrub(text: string): string {
  return text.replace(SECRET_SHAPES, "[redacted]");
}

/**
 * Drivers put the statement's values in what they throw: drizzle's "Failed query: ...\nparams:
 * ..." message, postgres.js and PGlite `parameters`/`params`, and the `detail` of a constraint
 * violation ("Key (email)=(...) already exists"). The SQL text stays (its values are
 * placeholders); the values go.
 */
function errorMessage(message: string): string {
  const at = message.indexOf("\nparams:");
  return scrub(at === -1 ? message : message.slice(0, at));
}

const SAFE_ERROR_FIELDS = ["code", "severity", "constraint", "constraint_name", "table", "table_name", "column"];

function serializeError(err: Error, depth: number): Record<string, unknown> {
  const message = errorMessage(err.message);
  const out: Record<string, unknown> = { name: err.name, message };
  const fields = err as unknown as Record<string, unknown>;
  for (const key of SAFE_ERROR_FIELDS) if (typeof fields[key] === "string") out[key] = fields[key];
  if (typeof fields.detail === "string") out.detail = scrub(fields.detail.replace(/=\(.*\)/s, "=([redacted])"));
  if (typeof err.stack === "string") {
    // The stack's first lines repeat the message, parameters included.
    const frames = err.stack.indexOf("\n    at ");
    out.stack = `${err.name}: ${message}${frames === -1 ? "" : scrub(err.stack.slice(frames))}`;
  }
  if (err.cause !== undefined) out.cause = redact(err.cause, depth + 1);
  return out;
}

function redact(value: unknown, depth = 0): unknown {
  if (typeof value === "string") return scrub(value);
  if (value === null || typeof value !== "object") return value;
  // Deeper than this is not worth a log line, and must not escape redaction either.
  if (depth > 4) return "[truncated]";
  if (value instanceof Error) return serializeError(value, depth);
  if (Array.isArray(value)) return value.map((v) => redact(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = REDACT.test(k) ? "[redacted]" : redact(v, depth + 1);
  return out;
}

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
  enabled(level: Exclude<LogLevel, "silent">): boolean;
}

/** Where lines go: by default stdout, and stderr for errors. */
export interface LogSink {
  write(level: Exclude<LogLevel, "silent">, line: string): void;
}

const STDIO: LogSink = {
  write: (level, line) => (level === "error" ? process.stderr : process.stdout).write(line),
};

/** Structured JSON lines, one per call. */
export function createLogger(level: LogLevel, base: Record<string, unknown> = {}, sink: LogSink = STDIO): Logger {
  const min = ORDER[level];
  const write = (lvl: Exclude<LogLevel, "silent">, msg: string, fields?: Record<string, unknown>) => {
    if (ORDER[lvl] < min) return;
    const line = JSON.stringify({
      ts: new Date().toISOString(),
      level: lvl,
      msg: scrub(msg),
      ...base,
      ...(redact(fields) as object),
    });
    sink.write(lvl, `${line}\n`);
  };
  return {
    debug: (m, f) => write("debug", m, f),
    info: (m, f) => write("info", m, f),
    warn: (m, f) => write("warn", m, f),
    error: (m, f) => write("error", m, f),
    child: (f) => createLogger(level, { ...base, ...(redact(f) as object) }, sink),
    enabled: (l) => ORDER[l] >= min,
  };
}
