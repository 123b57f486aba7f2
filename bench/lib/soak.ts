/**
 * Sustained mixed traffic against the app as a child process, at a fixed request rate: the
 * launcher backend's calls (session/validate, poll, start), dashboard reads, agent pushes, and
 * analytics sockets receiving what the agents push. Shared by bench/soak.ts (minutes, full
 * rate) and test/soak.test.ts (seconds, modest rate).
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { call, launcherClient, loginFlow } from "./login-flow";
import { startTarget } from "./targets";

export interface SoakOptions {
  /** Measured duration, after the warm-up. */
  seconds: number;
  warmupSeconds: number;
  /** Requests per second, all endpoints together, sent on schedule whatever the answers' pace. */
  rate: number;
  sockets: number;
  servers: number;
  logins: number;
  /** `postgres://...` for PostgreSQL; empty for PGlite in a directory of the run's own. */
  databaseUrl: string;
  /** Extra environment for the app. */
  env?: Record<string, string>;
  sampleEverySeconds?: number;
  /** Progress lines (RSS samples); silent when absent. */
  log?: (line: string) => void;
}

export interface EndpointFigures {
  name: string;
  requests: number;
  errors: number;
  p50ms: number;
  p99ms: number;
  maxms: number;
}

/** The same figures over a class of endpoints (the launcher's, the dashboard's, the agent's) and over all. */
export interface ClassFigures {
  name: string;
  requests: number;
  errors: number;
  p50ms: number;
  p99ms: number;
}

/**
 * How well the driver kept its schedule: what it sent per second over the measured phase, how
 * late each request left against its due time, and the driver's own CPU. A driver that falls
 * behind measures itself, not the app: `report` says so.
 */
export interface DriverFigures {
  achievedRate: number;
  lagP50ms: number;
  lagP99ms: number;
  lagMaxms: number;
  /** CPU time of the driver process over wall time, 1.0 = one core. */
  cpu: number;
}

export interface SoakResult {
  database: "pglite" | "postgres";
  seconds: number;
  rate: number;
  endpoints: EndpointFigures[];
  classes: ClassFigures[];
  driver: DriverFigures;
  requests: number;
  errors: number;
  /** Error samples (endpoint, status or exception), the first few only. */
  errorSamples: string[];
  maxInFlight: number;
  sockets: { received: number[]; expected: number[]; missing: number; unexpectedCloses: number };
  rss: { startKiB: number; endKiB: number; samples: { at: number; kib: number }[] };
}

const rssKiB = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]);

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] ?? NaN;

interface Stat {
  lat: number[];
  errors: number;
}

/** A player uuid the soak owns: server index and player index in the last group. */
const playerUuid = (server: number, player: number) =>
  `5eed0000-0000-4000-8000-${((server << 20) + player).toString(16).padStart(12, "0")}`;

const PLAYERS_PER_SERVER = 64;
type Kind = "launcher" | "dashboard" | "agent";
const KINDS: Record<Kind, string> = {
  launcher: "launcher (validate, poll, start)",
  dashboard: "dashboard reads",
  agent: "agent pushes",
};
const EVENTS_PER_BATCH = 4;

export async function runSoak(opts: SoakOptions): Promise<SoakResult> {
  const log = opts.log ?? (() => {});
  const dataDir = mkdtempSync(join(tmpdir(), "mcp-soak-"));
  const app = await startTarget("src/main.ts", {
    DATA_DIR: dataDir,
    HOST: "127.0.0.1",
    LOG_LEVEL: "warn",
    DATABASE_URL: opts.databaseUrl,
    // The limiter still counts every request; the limits are raised so the load is not refused.
    RATE_LIMIT_START_PER_MIN: "100000000",
    RATE_LIMIT_POLL_PER_MIN: "100000000",
    RATE_LIMIT_VALIDATE_PER_MIN: "100000000",
    RATE_LIMIT_CLIENT_WRITE_PER_MIN: "100000000",
    PASSWORD_MEMORY_KIB: "4096",
    PASSWORD_TIME_COST: "1",
    // Its servers are registered on loopback.
    OUTBOUND_ALLOW_PRIVATE: "true",
    ...opts.env,
  });
  const sockets: WebSocket[] = [];
  try {
    // --- fixtures ---
    const base = app.url;
    const { accessToken, teamId, creds } = await launcherClient(base, `soak-${crypto.randomUUID()}@example.test`);
    const { key } = (await (
      await call(base, "POST", `/teams/${teamId}/api-keys`, { name: "soak dashboard", role: "viewer" }, accessToken)
    ).json()) as { key: string };
    const servers: { id: string; agent: string }[] = [];
    for (let i = 0; i < opts.servers; i++) {
      const s = (await (
        await call(
          base,
          "POST",
          "/server/servers",
          { team_id: teamId, name: `soak ${i}`, host: "127.0.0.1", port: 9, kind: "single" },
          accessToken,
        )
      ).json()) as {
        server_id: string;
        agent_token: string;
      };
      servers.push({ id: s.server_id, agent: s.agent_token });
    }
    const logins: { token: string; requestId: string }[] = [];
    for (let i = 0; i < opts.logins; i++) logins.push(await loginFlow(base, creds, `Soak_${i}`));

    // --- sockets: one dashboard key, spread over the servers ---
    const received: number[] = Array(opts.sockets).fill(0);
    const socketServer: number[] = [];
    let unexpectedCloses = 0;
    let closing = false;
    for (let i = 0; i < opts.sockets; i++) {
      const server = i % servers.length;
      socketServer.push(server);
      const ws = new WebSocket(`${base.replace("http", "ws")}/ws/server/${servers[server]!.id}/analytics`, {
        headers: { authorization: `Bearer ${key}` },
      } as never);
      await new Promise<void>((resolve, reject) => {
        ws.addEventListener("message", (ev) => {
          const m = JSON.parse(String(ev.data)) as { type: string };
          if (m.type === "snapshot") resolve();
          // Only what the agents push is counted, so it can be compared to what was pushed.
          else if (m.type === "heartbeat" || m.type === "player_join" || m.type === "player_leave") received[i]!++;
        });
        ws.addEventListener("error", () => reject(new Error("socket error while opening")), { once: true });
        ws.addEventListener("close", () => void (closing || unexpectedCloses++));
      });
      sockets.push(ws);
    }

    // --- the mix ---
    const online = servers.map(() => new Set<number>());
    const pushed = servers.map(() => 0);
    // One agent per server sends its batches in order, as the protocol asks.
    const agentQueue = servers.map(() => Promise.resolve() as Promise<unknown>);
    let eventSeq = 0;
    const runId = crypto.randomUUID().slice(0, 8);
    const pick = <T>(xs: T[]) => xs[Math.floor(Math.random() * xs.length)]!;
    const json = (body: unknown) => ({
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    const dashboard = (extra: Record<string, string>) => ({ headers: { authorization: `Bearer ${key}`, ...extra } });

    /**
     * `sent` restarts the clock when the request actually leaves later than it was dealt (an
     * agent's batch waits for the previous one): its latency is the app's, not the queue's.
     */
    type Op = { name: string; kind: Kind; weight: number; send(sent: () => void): Promise<boolean> };
    /** The body of a 2xx answer; anything else throws with the status and the body. */
    const body = async <T = unknown>(r: Response): Promise<T> => {
      if (!r.ok) throw new Error(`HTTP ${r.status} ${(await r.text()).slice(0, 200)}`);
      return (await r.json()) as T;
    };
    const ok = (r: Response) => body(r).then(() => true);
    const ops: Op[] = [
      {
        name: "POST /client/ms-auth/session/validate",
        kind: "launcher",
        weight: 20,
        send: async () => {
          const r = await fetch(
            `${base}/client/ms-auth/session/validate`,
            json({ ...creds, svc_session_token: pick(logins).token }),
          );
          return (await body<{ valid: boolean }>(r)).valid === true;
        },
      },
      {
        name: "POST /client/ms-auth/poll",
        kind: "launcher",
        weight: 15,
        send: async () => {
          const r = await fetch(
            `${base}/client/ms-auth/poll`,
            json({ ...creds, auth_request_id: pick(logins).requestId }),
          );
          return (await body<{ status: string }>(r)).status === "authorized";
        },
      },
      {
        name: "POST /client/ms-auth/start",
        kind: "launcher",
        weight: 5,
        send: () => fetch(`${base}/client/ms-auth/start`, json(creds)).then(ok),
      },
      {
        name: "GET /server/servers",
        kind: "dashboard",
        weight: 10,
        send: () => fetch(`${base}/server/servers`, dashboard({ "x-team-id": teamId })).then(ok),
      },
      {
        name: "GET /server/uptime-stats",
        kind: "dashboard",
        weight: 10,
        send: () =>
          fetch(`${base}/server/uptime-stats?window=1h`, dashboard({ "x-server-id": pick(servers).id })).then(ok),
      },
      {
        name: "GET /server/players",
        kind: "dashboard",
        weight: 10,
        send: () => fetch(`${base}/server/players`, dashboard({ "x-server-id": pick(servers).id })).then(ok),
      },
      {
        name: "POST /agent/heartbeat",
        kind: "agent",
        weight: 15,
        send: async () => {
          const s = Math.floor(Math.random() * servers.length);
          const r = await fetch(`${base}/agent/heartbeat`, {
            ...json({
              tps: 19.5 + Math.random() / 2,
              mspt: 20 + Math.random() * 10,
              players_online: online[s]!.size,
              memory_used_mb: 2048,
              memory_max_mb: 4096,
            }),
            headers: { "content-type": "application/json", authorization: `Bearer ${servers[s]!.agent}` },
          });
          await body(r);
          pushed[s]!++;
          return true;
        },
      },
      {
        name: "POST /agent/events",
        kind: "agent",
        weight: 15,
        send: (sent) => {
          const s = Math.floor(Math.random() * servers.length);
          const batch = async () => {
            sent();
            // Distinct players in a batch, each joining if offline and leaving if online.
            const chosen = new Set<number>();
            while (chosen.size < EVENTS_PER_BATCH) chosen.add(Math.floor(Math.random() * PLAYERS_PER_SERVER));
            const moves = [...chosen].map((p) => ({ p, join: !online[s]!.has(p) }));
            const events = moves.map(({ p, join }) => ({
              event_id: `${runId}-${eventSeq++}`,
              type: join ? "join" : "leave",
              uuid: playerUuid(s, p),
              name: `Soaker_${p}`,
            }));
            const r = await fetch(`${base}/agent/events`, {
              ...json({ events }),
              headers: { "content-type": "application/json", authorization: `Bearer ${servers[s]!.agent}` },
            });
            const { accepted } = await body<{ accepted: number }>(r);
            for (const { p, join } of moves) join ? online[s]!.add(p) : online[s]!.delete(p);
            pushed[s]! += accepted;
            return accepted === events.length;
          };
          const result = agentQueue[s]!.then(batch);
          agentQueue[s] = result.catch(() => {});
          return result;
        },
      },
    ];
    // A shuffled deck with each endpoint's weight, dealt in a cycle: exact proportions.
    const deck = ops.flatMap((op) => Array<Op>(op.weight).fill(op)).sort(() => Math.random() - 0.5);

    const stats = new Map(ops.map((op) => [op.name, { lat: [], errors: 0 } as Stat]));
    /** How late each request of the measured phase left against its due time. */
    const lag: number[] = [];
    let firstFire = Number.NaN;
    let lastFire = Number.NaN;
    const errorSamples: string[] = [];
    let inFlight = 0;
    let maxInFlight = 0;
    const pending = new Set<Promise<void>>();

    const fire = (op: Op, due: number) => {
      let t = performance.now();
      lag.push(t - due);
      if (Number.isNaN(firstFire)) firstFire = t;
      lastFire = t;
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      const p = op
        .send(() => {
          t = performance.now();
        })
        .then((good) => {
          if (!good) throw new Error("a 2xx with the wrong answer");
        })
        .catch((err) => {
          stats.get(op.name)!.errors++;
          if (errorSamples.length < 10)
            errorSamples.push(`${op.name}: ${err instanceof Error ? err.message : String(err)}`);
        })
        .finally(() => {
          stats.get(op.name)!.lat.push(performance.now() - t);
          inFlight--;
          pending.delete(p);
        });
      pending.add(p);
    };

    let dealt = 0;
    /** Sends on schedule for `seconds`; calls `every` each `sampleEvery` seconds. */
    const drive = async (seconds: number, sampleEvery: number, every: (elapsed: number) => void) => {
      const interval = 1000 / opts.rate;
      const total = Math.round(seconds * opts.rate);
      const t0 = performance.now();
      let nextSample = t0 + sampleEvery * 1000;
      // Request n is due at t0 + n * interval; a late wake-up sends what fell due at once.
      for (let n = 0; n < total; ) {
        const now = performance.now();
        while (n < total && t0 + n * interval <= now) {
          fire(deck[dealt++ % deck.length]!, t0 + n * interval);
          n++;
        }
        if (now >= nextSample && nextSample < t0 + seconds * 1000) {
          every(Math.round((now - t0) / 1000));
          nextSample += sampleEvery * 1000;
        }
        if (n < total) await Bun.sleep(Math.max(1, t0 + n * interval - now));
      }
      await Promise.all(pending);
    };

    const sampleEvery = opts.sampleEverySeconds ?? 10;
    await drive(opts.warmupSeconds, Number.POSITIVE_INFINITY, () => {});
    for (const s of stats.values()) {
      s.lat.length = 0;
      s.errors = 0;
    }
    errorSamples.length = 0;
    maxInFlight = 0;
    lag.length = 0;
    firstFire = Number.NaN;
    const cpu0 = process.cpuUsage();
    const wall0 = performance.now();
    const startKiB = rssKiB(app.pid);
    const samples = [{ at: 0, kib: startKiB }];
    log(`RSS after warm-up: ${(startKiB / 1024).toFixed(1)} MiB`);
    await drive(opts.seconds, sampleEvery, (at) => {
      const kib = rssKiB(app.pid);
      samples.push({ at, kib });
      log(`  ${String(at).padStart(4)} s  RSS ${(kib / 1024).toFixed(1)} MiB`);
    });
    const wall = (performance.now() - wall0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const sentInTime = lag.length;
    const endKiB = rssKiB(app.pid);
    samples.push({ at: opts.seconds, kib: endKiB });

    // Events are delivered after their request answers: give the last ones a moment to land.
    const expected = socketServer.map((s) => pushed[s]!);
    for (
      const until = performance.now() + 5000;
      performance.now() < until && received.some((n, i) => n < expected[i]!);
    )
      await Bun.sleep(50);
    const missing = received.reduce((sum, n, i) => sum + Math.max(0, expected[i]! - n), 0);

    lag.sort((a, b) => a - b);
    const driver: DriverFigures = {
      // Intervals between the first and the last send: on schedule, exactly the rate asked for.
      achievedRate: (sentInTime - 1) / ((lastFire - firstFire) / 1000),
      lagP50ms: quantile(lag, 0.5),
      lagP99ms: quantile(lag, 0.99),
      lagMaxms: lag.at(-1) ?? NaN,
      cpu: (cpu.user + cpu.system) / 1e6 / wall,
    };
    const endpoints = ops.map(({ name }) => {
      const s = stats.get(name)!;
      const sorted = s.lat.sort((a, b) => a - b);
      return {
        name,
        requests: sorted.length,
        errors: s.errors,
        p50ms: quantile(sorted, 0.5),
        p99ms: quantile(sorted, 0.99),
        maxms: sorted.at(-1) ?? NaN,
      };
    });
    const classes: ClassFigures[] = [
      ...(Object.keys(KINDS) as Kind[]).map((k) => ({ name: KINDS[k], ops: ops.filter((op) => op.kind === k) })),
      { name: "all requests", ops },
    ].map(({ name, ops: members }) => {
      const sorted = members.flatMap((op) => stats.get(op.name)!.lat).sort((a, b) => a - b);
      return {
        name,
        requests: sorted.length,
        errors: members.reduce((n, op) => n + stats.get(op.name)!.errors, 0),
        p50ms: quantile(sorted, 0.5),
        p99ms: quantile(sorted, 0.99),
      };
    });
    closing = true;
    return {
      database: opts.databaseUrl ? "postgres" : "pglite",
      seconds: opts.seconds,
      rate: opts.rate,
      endpoints,
      classes,
      driver,
      requests: endpoints.reduce((n, e) => n + e.requests, 0),
      errors: endpoints.reduce((n, e) => n + e.errors, 0),
      errorSamples,
      maxInFlight,
      sockets: { received: [...received], expected, missing, unexpectedCloses },
      rss: { startKiB, endKiB, samples },
    };
  } finally {
    for (const ws of sockets) ws.close();
    await app.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** A driver sending later than this (p99) is measuring the machine's load, not the app. */
const DRIVER_LAG_LIMIT_MS = 5;
const SOAK_P99_TARGET_MS = 50;

/** RSS growth over the post-warm-up value, as a fraction. */
export const rssGrowth = (r: SoakResult) => (r.rss.endKiB - r.rss.startKiB) / r.rss.startKiB;

/** Prints the figures and the verdict; returns whether the run passed. */
export function report(r: SoakResult, maxGrowth: number): boolean {
  const pad = (s: string | number, n: number) => String(s).padEnd(n);
  const ms = (v: number) => (Number.isFinite(v) ? v.toFixed(1) : "-");
  console.log(
    `\ndatabase: ${r.database}; ${r.rate} req/s for ${r.seconds} s; ${r.requests} requests; most in flight at once: ${r.maxInFlight}`,
  );
  console.log(
    `${pad("endpoint", 40)}${pad("requests", 10)}${pad("errors", 8)}${pad("p50 ms", 9)}${pad("p99 ms", 9)}max ms`,
  );
  for (const e of r.endpoints)
    console.log(
      `${pad(e.name, 40)}${pad(e.requests, 10)}${pad(e.errors, 8)}${pad(ms(e.p50ms), 9)}${pad(ms(e.p99ms), 9)}${ms(e.maxms)}`,
    );
  console.log(`\n${pad("class", 40)}${pad("requests", 10)}${pad("errors", 8)}${pad("p50 ms", 9)}p99 ms`);
  for (const c of r.classes)
    console.log(`${pad(c.name, 40)}${pad(c.requests, 10)}${pad(c.errors, 8)}${pad(ms(c.p50ms), 9)}${ms(c.p99ms)}`);
  const d = r.driver;
  console.log(
    `\ndriver: ${d.achievedRate.toFixed(1)} req/s achieved of ${r.rate} asked; sent late against the schedule by ` +
      `p50 ${ms(d.lagP50ms)} / p99 ${ms(d.lagP99ms)} / max ${ms(d.lagMaxms)} ms; driver CPU ${(d.cpu * 100).toFixed(0)}% of a core`,
  );
  // Latencies are timed from each request's actual send: they hold only while the driver sends on time.
  if (d.lagP99ms > DRIVER_LAG_LIMIT_MS || d.achievedRate < r.rate * 0.98)
    console.log(
      `WARNING: the driver fell behind its schedule (p99 lag over ${DRIVER_LAG_LIMIT_MS} ms or under 98% of the rate): the machine is too loaded for these latencies to describe the app`,
    );
  // Past Bun's client cap, requests wait inside the driver: its latencies include that wait.
  const fetchCap = Number(process.env.BUN_CONFIG_MAX_HTTP_REQUESTS ?? 256);
  if (r.maxInFlight >= fetchCap)
    console.log(
      `WARNING: ${r.maxInFlight} requests in flight at once reached the driver's fetch cap (${fetchCap}, BUN_CONFIG_MAX_HTTP_REQUESTS): latencies include waiting in the driver`,
    );
  const worst = Math.max(...r.classes.map((c) => c.p99ms));
  console.log(
    `target: p99 under ${SOAK_P99_TARGET_MS} ms for every class at 300 req/s on PGlite; here ${r.rate} req/s on ${r.database}, worst class p99 ${ms(worst)} ms: ` +
      (r.rate >= 300 && worst < SOAK_P99_TARGET_MS ? "met" : "not met"),
  );
  for (const line of r.errorSamples) console.log(`  error: ${line}`);
  const { received, expected } = r.sockets;
  console.log(
    `sockets: ${received.length}; agent pushes received per socket ${Math.min(...received)}..${Math.max(...received)} ` +
      `(expected ${Math.min(...expected)}..${Math.max(...expected)}); missing ${r.sockets.missing}; unexpected closes ${r.sockets.unexpectedCloses}`,
  );
  console.log(`RSS samples (MiB): ${r.rss.samples.map((s) => `${s.at}s ${(s.kib / 1024).toFixed(1)}`).join(", ")}`);
  const growth = rssGrowth(r);
  const socketFaults = r.sockets.missing + r.sockets.unexpectedCloses;
  const passed = r.errors === 0 && socketFaults === 0 && growth <= maxGrowth;
  console.log(
    `\n${passed ? "PASS" : "FAIL"}: ${r.errors} errors in ${r.requests} requests, ${socketFaults} socket faults; ` +
      `RSS ${(r.rss.startKiB / 1024).toFixed(1)} MiB after warm-up -> ${(r.rss.endKiB / 1024).toFixed(1)} MiB at the end ` +
      `(${growth >= 0 ? "+" : ""}${(growth * 100).toFixed(1)}%, bound +${(maxGrowth * 100).toFixed(0)}%)`,
  );
  return passed;
}
