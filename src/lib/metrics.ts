import { Counter, Gauge, Histogram, type Metric, Registry } from "prom-client";

const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** One door/route/method/status: plain numbers, turned into samples only when scraped. */
interface RequestSeries {
  door: string;
  route: string;
  method: string;
  status: string;
  count: number;
  sum: number;
  /** Observations per bucket (not cumulative); the last slot is past the largest bound. */
  buckets: Float64Array;
}

type Sample = { value: number; labels: Record<string, string>; metricName?: string };

/**
 * The service's Prometheus metrics (served at /metrics when METRICS_TOKEN is set). One registry
 * per instance of the app, not prom-client's global one, so several servers in one process (the
 * tests) keep their own counts. Built only when metrics are on: callers hold `Metrics | null`
 * and the off path is one null check.
 */
export class Metrics {
  readonly registry = new Registry();
  /**
   * Requests are counted here, not in prom-client metrics: a labelled prom-client observation
   * hashes its labels on every call (about 0.6 us for a counter and a histogram), this is a map
   * lookup and three additions. The scrape reads them out (`requestMetrics`).
   */
  private readonly series = new Map<string, RequestSeries>();
  private readonly logins: Counter<"status" | "error">;
  private readonly refusals: Counter<"limit">;
  private readonly sockets: Gauge;
  private readonly socketMessages: Counter<"direction">;
  private readonly pings: Counter<"result">;
  private readonly pingLag: Histogram;
  private readonly webhookBudget: Counter<"kind">;

  constructor() {
    const registers = [this.registry];
    for (const m of this.requestMetrics()) this.registry.registerMetric(m);
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
    this.webhookBudget = new Counter({
      name: "webhook_budget_exceeded_total",
      help: "Webhook events not queued because their team's per-minute budget was spent (kind=events), and the deliveries they would have made (kind=deliveries)",
      labelNames: ["kind"],
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
    const key = `${status} ${m} ${route}`;
    let s = this.series.get(key);
    if (!s) {
      s = {
        door,
        route,
        method: m,
        status: String(status),
        count: 0,
        sum: 0,
        buckets: new Float64Array(LATENCY_BUCKETS.length + 1),
      };
      this.series.set(key, s);
    }
    s.count++;
    s.sum += seconds;
    let i = 0;
    while (i < LATENCY_BUCKETS.length && seconds > LATENCY_BUCKETS[i]!) i++;
    s.buckets[i]!++;
  }

  /**
   * `http_requests_total` (by status too) and `http_request_duration_seconds` (by door, route
   * and method: the statuses of one route are added together), as prom-client metric objects.
   */
  private requestMetrics(): Metric[] {
    const series = this.series;
    const counter = {
      name: "http_requests_total",
      help: "Requests answered, by door, route pattern, method and status",
      type: "counter",
      aggregator: "sum",
      get: async () => ({
        name: counter.name,
        help: counter.help,
        type: counter.type,
        aggregator: counter.aggregator,
        values: [...series.values()].map(
          (s): Sample => ({
            value: s.count,
            labels: { door: s.door, route: s.route, method: s.method, status: s.status },
          }),
        ),
      }),
    };
    const histogram = {
      name: "http_request_duration_seconds",
      help: "Time from the request's arrival to its answer, by door, route pattern and method",
      type: "histogram",
      aggregator: "sum",
      get: async () => {
        const merged = new Map<
          string,
          { labels: Record<string, string>; count: number; sum: number; buckets: number[] }
        >();
        for (const s of series.values()) {
          const key = `${s.door} ${s.method} ${s.route}`;
          let m = merged.get(key);
          if (!m) {
            m = { labels: { door: s.door, route: s.route, method: s.method }, count: 0, sum: 0, buckets: [] };
            m.buckets = new Array(LATENCY_BUCKETS.length + 1).fill(0);
            merged.set(key, m);
          }
          m.count += s.count;
          m.sum += s.sum;
          for (let i = 0; i < s.buckets.length; i++) m.buckets[i]! += s.buckets[i]!;
        }
        const values: Sample[] = [];
        for (const m of merged.values()) {
          let cumulative = 0;
          LATENCY_BUCKETS.forEach((le, i) => {
            cumulative += m.buckets[i]!;
            values.push({
              metricName: `${histogram.name}_bucket`,
              labels: { le: String(le), ...m.labels },
              value: cumulative,
            });
          });
          values.push({ metricName: `${histogram.name}_bucket`, labels: { le: "+Inf", ...m.labels }, value: m.count });
          values.push({ metricName: `${histogram.name}_sum`, labels: m.labels, value: m.sum });
          values.push({ metricName: `${histogram.name}_count`, labels: m.labels, value: m.count });
        }
        return {
          name: histogram.name,
          help: histogram.help,
          type: histogram.type,
          aggregator: histogram.aggregator,
          values,
        };
      },
    };
    return [counter, histogram] as unknown as Metric[];
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

  webhookBudgetExceeded(events: number, deliveries: number) {
    this.webhookBudget.labels("events").inc(events);
    this.webhookBudget.labels("deliveries").inc(deliveries);
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
