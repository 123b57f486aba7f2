import { Counter, Gauge, Histogram, Registry } from "prom-client";

const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);

interface RequestSeries {
  count: Counter.Internal;
  latency: Histogram.Internal<string>;
}

/**
 * The service's Prometheus metrics (served at /metrics when METRICS_TOKEN is set). One registry
 * per instance of the app, not prom-client's global one, so several servers in one process (the
 * tests) keep their own counts. Built only when metrics are on: callers hold `Metrics | null`
 * and the off path is one null check.
 */
export class Metrics {
  readonly registry = new Registry();
  private readonly requests: Counter<"door" | "route" | "method" | "status">;
  private readonly latency: Histogram<"door" | "route" | "method">;
  /** Label lookups hash their values; a request's series is found once and kept. */
  private readonly series = new Map<string, RequestSeries>();
  private readonly logins: Counter<"status" | "error">;
  private readonly refusals: Counter<"limit">;
  private readonly sockets: Gauge;
  private readonly socketMessages: Counter<"direction">;
  private readonly pings: Counter<"result">;
  private readonly pingLag: Histogram;

  constructor() {
    const registers = [this.registry];
    this.requests = new Counter({
      name: "http_requests_total",
      help: "Requests answered, by door, route pattern, method and status",
      labelNames: ["door", "route", "method", "status"],
      registers,
    });
    this.latency = new Histogram({
      name: "http_request_duration_seconds",
      help: "Time from the request's arrival to its answer, by door, route pattern and method",
      labelNames: ["door", "route", "method"],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    this.logins = new Counter({
      name: "login_outcomes_total",
      help: "Launcher login requests that ended, by final status and denial code (none when authorized)",
      labelNames: ["status", "error"],
      registers,
    });
    this.refusals = new Counter({
      name: "rate_limit_refusals_total",
      help: "Requests refused with 429, by limit name",
      labelNames: ["limit"],
      registers,
    });
    this.sockets = new Gauge({
      name: "websocket_connections",
      help: "Analytics WebSocket connections open now",
      registers,
    });
    this.socketMessages = new Counter({
      name: "websocket_messages_total",
      help: "WebSocket messages: received from clients (in), sent to one socket (out), published to a server's subscribers (published)",
      labelNames: ["direction"],
      registers,
    });
    this.pings = new Counter({
      name: "pinger_results_total",
      help: "Server List Ping checks: up (answered), down (no answer), error (the check could not be stored)",
      labelNames: ["result"],
      registers,
    });
    this.pingLag = new Histogram({
      name: "pinger_lag_seconds",
      help: "How long after it was due a server's check was claimed",
      buckets: [0.1, 0.5, 1, 2, 5, 10, 30, 60, 300],
      registers,
    });
  }

  request(door: string, route: string, method: string, status: number, seconds: number) {
    const m = METHODS.has(method) ? method : "OTHER";
    const key = `${door} ${m} ${route} ${status}`;
    let s = this.series.get(key);
    if (!s) {
      s = {
        count: this.requests.labels(door, route, m, String(status)),
        latency: this.latency.labels(door, route, m),
      };
      this.series.set(key, s);
    }
    s.count.inc();
    s.latency.observe(seconds);
  }

  loginOutcome(status: string, error: string | null | undefined) {
    this.logins.labels(status, error ?? "").inc();
  }

  rateLimitRefused(limit: string) {
    this.refusals.labels(limit).inc();
  }

  socketOpened() {
    this.sockets.inc();
  }

  socketClosed() {
    this.sockets.dec();
  }

  socketMessage(direction: "in" | "out" | "published") {
    this.socketMessages.labels(direction).inc();
  }

  pingResult(result: "up" | "down" | "error") {
    this.pings.labels(result).inc();
  }

  pingLagged(seconds: number) {
    this.pingLag.observe(Math.max(0, seconds));
  }

  /** A gauge read at scrape time (pool use and the like): nothing is counted on the request path. */
  gauge(name: string, help: string, read: () => number) {
    new Gauge({
      name,
      help,
      registers: [this.registry],
      collect() {
        this.set(read());
      },
    });
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
