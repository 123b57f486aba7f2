import { beforeAll, describe, expect, test } from "bun:test";
import parsePrometheusTextFormat, { type MetricFamily } from "parse-prometheus-text-format";
import type { RunningServer } from "../src/app";
import { parseConfig } from "../src/config";
import { devIdp, freePort, startTestServer, usingPostgres } from "./harness";
import { api, expectError, trpcClient } from "./helpers";
import { decide, fullLogin, newClient, signIn, start } from "./ms-auth-helpers";
import { newServer } from "./servers-fixture";
import { WsClient } from "./ws-helpers";

const TOKEN = "metrics-token-0123456789abcdef";

async function scrapeText(srv: RunningServer): Promise<string> {
  const res = await fetch(`${srv.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toStartWith("text/plain; version=0.0.4");
  return res.text();
}

const scrape = async (srv: RunningServer) => parsePrometheusTextFormat(await scrapeText(srv));

/**
 * Observations in one labelled histogram series: its `+Inf` bucket. The parser folds every
 * labelled series of a histogram family into one bucket map, so it is handed that family with
 * only the series asked for.
 */
function histogramCount(text: string, name: string, labels: Record<string, string>): number | undefined {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  const lines = text
    .split("\n")
    .filter(
      (l) =>
        l === `# TYPE ${name} histogram` || (l.startsWith(`${name}_bucket{`) && wanted.every((w) => l.includes(w))),
    );
  const [family] = parsePrometheusTextFormat(`${lines.join("\n")}\n`);
  const inf = family?.metrics[0]?.buckets?.["+Inf"];
  return inf === undefined ? undefined : Number(inf);
}

/**
 * A request is counted just after its answer is sent, so the last one a test made may land a
 * moment after the client saw it: reads until `ready` holds (or 2 s pass) and returns the text.
 */
async function settled(read: () => Promise<string>, ready: (f: MetricFamily[]) => boolean): Promise<string> {
  const until = Date.now() + 2000;
  let text = await read();
  while (!ready(parsePrometheusTextFormat(text)) && Date.now() < until) {
    await Bun.sleep(10);
    text = await read();
  }
  return text;
}

/** The value of one series: the family's sample whose labels include `labels`. */
function value(families: MetricFamily[], name: string, labels: Record<string, string> = {}): number | undefined {
  const family = families.find((f) => f.name === name);
  const sample = family?.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
  if (!sample) return undefined;
  return Number(sample.value ?? sample.count);
}

describe("/metrics with METRICS_TOKEN set", () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await startTestServer({
      DEV_IDP_URL: (await devIdp()).url,
      METRICS_TOKEN: TOKEN,
      RATE_LIMIT_POLL_PER_MIN: "3",
    });
  });

  test("401 in the error envelope without the token or with a wrong one", async () => {
    const none = await api(server, "GET", "/metrics");
    expectError(none, 401, "unauthenticated");
    expect(none.headers.get("www-authenticate")).toBe('Bearer realm="metrics"');
    expectError(await api(server, "GET", "/metrics", { token: `${TOKEN}x` }), 401, "unauthenticated");
    expectError(await api(server, "GET", "/metrics", { headers: { authorization: TOKEN } }), 401, "unauthenticated");
  });

  test("after real traffic the scrape, parsed as Prometheus text, counts what was caused per door and route pattern", async () => {
    for (let i = 0; i < 3; i++) expect((await api(server, "GET", "/health")).status).toBe(200);
    // A REST route with a path parameter: counted under its pattern, never the raw id.
    const c = await newClient(server);
    const got = await api(server, "GET", `/client/apps/${c.clientId}`, { token: c.owner.token });
    expect(got.status).toBe(200);
    const missing = await api(server, "GET", `/client/apps/${crypto.randomUUID()}`, { token: c.owner.token });
    expect(missing.status).toBe(404);
    // The typed door, named by procedure.
    const { token } = await fullLogin(server, c);
    const v = await trpcClient(server).msAuth.validate.mutate({
      client_id: c.clientId,
      client_secret: c.secret,
      svc_session_token: token,
    });
    expect(v.valid).toBe(true);
    expect((await api(server, "GET", "/no/such/route/123")).status).toBe(404);

    // A denied login, and a second client over its poll limit (3 a minute): one refusal.
    const denied = await start(server, c);
    expect((await decide(server, await signIn(server, denied.auth_url), "deny")).status).toBe(303);
    const d = await newClient(server);
    const pending = await start(server, d);
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) {
      statuses.push(
        (
          await api(server, "POST", "/client/ms-auth/poll", {
            body: { client_id: d.clientId, client_secret: d.secret, auth_request_id: pending.auth_request_id },
          })
        ).status,
      );
    }
    expect(statuses).toEqual([200, 200, 200, 429]);

    // A socket that authenticates and pings: one open connection, messages both ways.
    const srv = await newServer(server, { port: freePort() });
    const ws = await WsClient.connect(server, srv.serverId);
    ws.send({ type: "auth", token: srv.owner.token });
    await ws.until("snapshot");
    ws.send({ type: "ping" });
    await ws.until("pong");
    // The pinger: the new server is due at once, and nothing listens on its port. On PostgreSQL the
    // run's database also holds other files' servers, which may be due too: count what was pinged.
    const pinged = await server.services.monitoring.pingDue();
    expect(pinged).toBeGreaterThanOrEqual(1);

    const upgrade = { door: "ws", route: "/ws/server/:server_id/analytics" };
    const text = await settled(
      () => scrapeText(server),
      (f) => value(f, "http_requests_total", upgrade) === 1,
    );
    const m = parsePrometheusTextFormat(text);
    const req = (labels: Record<string, string>) => value(m, "http_requests_total", labels);
    expect(req({ door: "rest", route: "/health", method: "GET", status: "200" })).toBe(3);
    const latency = { door: "rest", route: "/health", method: "GET" };
    expect(histogramCount(text, "http_request_duration_seconds", latency)).toBe(3);
    expect(req({ door: "rest", route: "/client/apps/:client_id", method: "GET", status: "200" })).toBe(1);
    expect(req({ door: "rest", route: "/client/apps/:client_id", method: "GET", status: "404" })).toBe(1);
    expect(req({ door: "trpc", route: "/trpc/msAuth.validate", method: "POST", status: "200" })).toBe(1);
    expect(req({ door: "browser", route: "/client/ms-auth/callback", method: "GET", status: "200" })).toBe(2);
    expect(req({ door: "browser", route: "/client/ms-auth/authorize", method: "POST", status: "303" })).toBe(2);
    expect(req({ door: "rest", route: "/client/ms-auth/poll", method: "POST", status: "429" })).toBe(1);
    expect(req({ door: "edge", route: "(unmatched)", method: "GET", status: "404" })).toBe(1);
    expect(req({ door: "ws", route: "/ws/server/:server_id/analytics", method: "GET" })).toBe(1);
    // No raw path anywhere: ids never become label values.
    const routes = m.find((f) => f.name === "http_requests_total")!.metrics.map((s) => s.labels!.route!);
    for (const r of routes) expect(r).not.toMatch(/[0-9a-f]{8}-[0-9a-f]{4}|\/no\/such/);

    expect(value(m, "login_outcomes_total", { status: "authorized", error: "" })).toBe(1);
    expect(value(m, "login_outcomes_total", { status: "denied", error: "consent_denied" })).toBe(1);
    expect(value(m, "rate_limit_refusals_total", { limit: "poll" })).toBe(1);
    expect(value(m, "websocket_connections")).toBe(1);
    expect(value(m, "websocket_messages_total", { direction: "in" })).toBe(2);
    expect(value(m, "websocket_messages_total", { direction: "out" })).toBe(3);
    const results = (r: string) => value(m, "pinger_results_total", { result: r }) ?? 0;
    expect(results("down")).toBeGreaterThanOrEqual(1);
    expect(results("up") + results("down") + results("error")).toBe(pinged);
    expect(histogramCount(text, "pinger_lag_seconds", {})).toBe(pinged);
    expect(value(m, "db_pool_max_connections")).toBe(usingPostgres() ? 3 : 1);
    const types = Object.fromEntries(m.map((f) => [f.name, f.type]));
    expect(types).toMatchObject({
      http_requests_total: "COUNTER",
      http_request_duration_seconds: "HISTOGRAM",
      websocket_connections: "GAUGE",
    });

    ws.close();
    await ws.closed;
    const deadline = Date.now() + 2000;
    while (value(await scrape(server), "websocket_connections") !== 0 && Date.now() < deadline) await Bun.sleep(20);
    expect(value(await scrape(server), "websocket_connections")).toBe(0);
  });
});

test("without METRICS_TOKEN /metrics does not exist (404) and nothing is counted", async () => {
  const srv = await startTestServer();
  expectError(await api(srv, "GET", "/metrics"), 404, "not_found");
  expectError(await api(srv, "GET", "/metrics", { token: TOKEN }), 404, "not_found");
  expect(srv.services.metrics).toBeNull();
});

test("a METRICS_TOKEN shorter than 16 characters stops startup naming it", () => {
  expect(() => parseConfig({ METRICS_TOKEN: "short" })).toThrow(/METRICS_TOKEN: must be at least 16 characters/);
  expect(parseConfig({ METRICS_TOKEN: TOKEN }).METRICS_TOKEN).toBe(TOKEN);
});

test("a refusal by the general limit, answered before routing, is counted under the edge and the limit's name", async () => {
  const srv = await startTestServer({ METRICS_TOKEN: TOKEN, RATE_LIMIT_GENERAL_PER_MIN: "3" });
  const statuses: number[] = [];
  for (let i = 0; i < 4; i++) statuses.push((await api(srv, "GET", "/health")).status);
  expect(statuses).toEqual([200, 200, 200, 429]);
  // The scrape itself is over the limit too: read what it would serve from the registry's text.
  const text = await settled(
    () => srv.services.metrics!.text(),
    (f) => value(f, "http_requests_total", { status: "429" }) === 1,
  );
  const m = parsePrometheusTextFormat(text);
  expect(value(m, "http_requests_total", { door: "rest", route: "/health", status: "200" })).toBe(3);
  expect(value(m, "http_requests_total", { door: "edge", route: "(unmatched)", status: "429" })).toBe(1);
  expect(value(m, "rate_limit_refusals_total", { limit: "general" })).toBe(1);
});
