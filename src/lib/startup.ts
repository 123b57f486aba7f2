/**
 * Why the process cannot start, said in one log line: a message an operator acts on and the
 * fields that locate the problem. main.ts prints these without a stack trace and exits non-zero.
 */
export class StartupError extends Error {
  constructor(
    message: string,
    readonly fields: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = "StartupError";
  }
}

/** Bun's listen error for a taken port, restated; anything else passes through unchanged. */
export function explainListenError(err: unknown, port: number, host: string): unknown {
  if ((err as { code?: unknown } | null)?.code !== "EADDRINUSE") return err;
  return new StartupError(
    `port ${port} is already in use; stop the other process or choose another PORT (PORT_SHARING=true lets several processes on one PostgreSQL share it)`,
    { port, host },
  );
}
