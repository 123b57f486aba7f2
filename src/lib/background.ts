import type { Logger } from "./log";

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
