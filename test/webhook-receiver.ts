import { afterAll } from "bun:test";
import { generateKeyPairSync } from "node:crypto";
import type { RunningServer } from "../src/app";
import type { Logger } from "../src/lib/log";
import { startTestServer, stopTestServer } from "./harness";

declare global {
  var __webhookTestKey: string | undefined;
}

/**
 * One signing key for every webhook test server of a run: on PostgreSQL they share one queue,
 * and any of them may deliver what another sealed.
 */
globalThis.__webhookTestKey ??= generateKeyPairSync("ed25519")
  .privateKey.export({ type: "pkcs8", format: "pem" })
  .toString();
export const SHARED_KEY: string = globalThis.__webhookTestKey;

/**
 * Settings for every webhook test server. On PostgreSQL all of them drain one queue, so any of
 * them may make any attempt: they share the timings (short retries, a short timeout) and the
 * disabling thresholds, and the tests hold no expectation one instance's settings would break.
 */
export const FAST_WEBHOOKS = {
  JWT_PRIVATE_KEY: SHARED_KEY,
  WEBHOOK_CONCURRENCY: "16",
  // Four attempts: the first and three retries 50 ms apart (up to 20% more).
  WEBHOOK_RETRY_SCHEDULE_SECONDS: "0.05,0.05,0.05",
  WEBHOOK_POLL_MS: "20",
  // The lease is twice the timeout plus 5 s: a delivery cut by a crash is due again 7 s later.
  WEBHOOK_TIMEOUT_MS: "1000",
  // Disabled once four attempts in a row have failed, however short the time.
  WEBHOOK_DISABLE_AFTER_SECONDS: "0",
  WEBHOOK_DISABLE_AFTER_FAILURES: "4",
};

/** A webhook receiver on loopback that records what it gets and answers as told. */
export interface Received {
  headers: Record<string, string>;
  body: string;
  at: number;
}

export interface Receiver {
  url: string;
  port: number;
  got: Received[];
  /** Statuses to answer, in order; 200 once they run out. A function may answer anything. */
  plan: (number | ((req: Request) => Response | Promise<Response>))[];
  /** Resolves when `n` requests have arrived (rejects after `ms`). */
  until(n: number, ms?: number): Promise<Received[]>;
  stop(): void;
}

export function startReceiver(path = "/hook"): Receiver {
  const r = { got: [] as Received[], plan: [] as Receiver["plan"] } as Receiver;
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const body = await req.text();
      r.got.push({ headers: Object.fromEntries(req.headers), body, at: Date.now() });
      const next = r.plan.shift();
      if (typeof next === "function") return next(req);
      return new Response(next && next !== 200 ? "nope" : "ok", { status: next ?? 200 });
    },
  });
  r.port = server.port!;
  r.url = `http://127.0.0.1:${server.port}${path}`;
  r.until = async (n, ms = 10_000) => {
    const deadline = Date.now() + ms;
    while (r.got.length < n) {
      if (Date.now() > deadline) throw new Error(`the receiver got ${r.got.length} of ${n} requests within ${ms} ms`);
      await Bun.sleep(10);
    }
    return r.got;
  };
  r.stop = () => server.stop(true);
  return r;
}

/** A `startReceiver` whose receivers are all stopped when the file's tests end. */
export function receiversForFile(): (path?: string) => Receiver {
  const all: Receiver[] = [];
  afterAll(() => {
    for (const r of all) r.stop();
  });
  return (path) => {
    const r = startReceiver(path);
    all.push(r);
    return r;
  };
}

/**
 * Runs `fn` with a delivering server of its own (FAST_WEBHOOKS and `env`), stopped after: on
 * PostgreSQL every running server drains the one queue, and a test with settings of its own
 * needs them to be the only ones at work.
 */
export async function withWebhookServer<T>(
  env: Record<string, string>,
  fn: (srv: RunningServer) => Promise<T>,
  log?: Logger,
) {
  const srv = await startTestServer({ ...FAST_WEBHOOKS, ...env }, log);
  try {
    return await fn(srv);
  } finally {
    await stopTestServer(srv);
  }
}
