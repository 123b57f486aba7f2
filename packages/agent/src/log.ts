/** One JSON object a line on stdout, so journald, Pterodactyl's console and log shippers all read it. */
export type Level = "debug" | "info" | "warn" | "error";
const ORDER: Record<Level | "silent", number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 99 };

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

export function createLogger(
  level: Level | "silent" = "info",
  write: (line: string) => unknown = (line) => process.stdout.write(line),
) {
  const min = ORDER[level];
  const emit =
    (lvl: Level) =>
    (msg: string, fields: Record<string, unknown> = {}) => {
      if (ORDER[lvl] < min) return;
      write(`${JSON.stringify({ time: new Date().toISOString(), level: lvl, msg, ...fields })}\n`);
    };
  return { debug: emit("debug"), info: emit("info"), warn: emit("warn"), error: emit("error") } satisfies Logger;
}

export const errorText = (e: unknown) => (e instanceof Error ? e.message : String(e));
