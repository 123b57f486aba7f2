/**
 * Dashboard benchmark: first-load weight (the bytes the service sends for the JS and CSS the page
 * loads, gzip and brotli, beside the uncompressed size), time to interactive on loopback
 * (Playwright driving Chromium; Navigation Timing plus the moment the sign-in form is rendered by
 * the app, after it asked whether this browser holds a session), and the delay from an agent heartbeat POST to its point
 * on the chart (in-page clock: fetch sent -> data-points changed -> next animation frame),
 * p50/p99 over 100 events. Baseline beside each: the same page's HTML alone, and the heartbeat
 * POST's own round trip.
 *
 *   bun bench/dashboard.ts
 *   BENCH_EVENTS=300 bun bench/dashboard.ts
 */
import { startTestServer, stopAll } from "../test/harness";
import { launchChromium, PASSWORD, signUpInBrowser } from "../test/dashboard-driver";

const EVENTS = Number(process.env.BENCH_EVENTS ?? 100);
const LOADS = Number(process.env.BENCH_LOADS ?? 10);
const TARGETS = { jsGzip: 250 * 1024, interactiveMs: 1000, p99UpdateMs: 250 };

const server = await startTestServer({ LOG_LEVEL: "error" });
const base = server.url;
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};
const kb = (n: number) => `${(n / 1024).toFixed(1)} KB`;

// 1. Weight of the first load: the bytes the service sends for each encoding a browser may ask for.
const served = async (path: string, encoding: string) => {
  const res = await fetch(base + path, { headers: { "accept-encoding": encoding }, decompress: false });
  return new Uint8Array(await res.arrayBuffer()).length;
};
const html = await (await fetch(`${base}/`)).text();
const weight = { js: { gzip: 0, br: 0, identity: 0 }, css: { gzip: 0, br: 0, identity: 0 } };
for (const [, path] of html.matchAll(/"(\/assets\/[^"]+\.(?:js|css))"/g)) {
  const kind = path!.endsWith(".js") ? weight.js : weight.css;
  for (const enc of ["gzip", "br", "identity"] as const) kind[enc] += await served(path!, enc);
}
const js = weight.js.gzip;
const css = weight.css.gzip;
const htmlGz = Bun.gzipSync(new TextEncoder().encode(html)).length;

// 2. Time to interactive, cold cache each time (a new context per load).
const browser = await launchChromium();
const interactive: number[] = [];
const domContentLoaded: number[] = [];
for (let i = 0; i < LOADS; i++) {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${base}/`);
  await page.getByRole("button", { name: "Sign in", exact: true }).waitFor();
  const t = await page.evaluate(() => {
    const nav = performance.getEntriesByType("navigation")[0] as PerformanceNavigationTiming;
    return { ready: performance.now(), dcl: nav.domContentLoadedEventEnd };
  });
  if (i > 0) {
    // The first load also bundles the dashboard on the server; later loads are what users get.
    interactive.push(t.ready);
    domContentLoaded.push(t.dcl);
  }
  await context.close();
}

// 3. Agent POST -> point on the chart.
const email = `bench-${Date.now()}@example.test`;
const post = (path: string, body: unknown, token?: string) =>
  fetch(base + path, {
    method: "POST",
    headers: { "content-type": "application/json", ...(token && { authorization: `Bearer ${token}` }) },
    body: JSON.stringify(body),
  }).then((r) => r.json());
await post("/auth/signup", { email, password: PASSWORD });
const { access_token } = await post("/auth/login", { email, password: PASSWORD });
const { team_id } = await post("/teams", { name: "Bench" }, access_token);
const srv = await post(
  "/server/servers",
  { team_id, name: "bench", host: "127.0.0.1", port: 25565, kind: "single" },
  access_token,
);
const context = await browser.newContext();
const page = await context.newPage();
await signUpInBrowser(page, base, email, true);
await page.goto(`${base}/#/servers/${srv.server_id}`);
await page.waitForSelector('[data-live="true"]');
await page.waitForSelector('figure.chart[data-chart="tps"] [data-points]');
const { delays, roundTrips } = await page.evaluate(
  async ({ token, events }) => {
    const el = document.querySelector('figure.chart[data-chart="tps"] [data-points]')!;
    const delays: number[] = [];
    const roundTrips: number[] = [];
    for (let i = 0; i < events; i++) {
      const before = el.getAttribute("data-points");
      const changed = new Promise<number>((resolve) => {
        const mo = new MutationObserver(() => {
          if (el.getAttribute("data-points") !== before) {
            mo.disconnect();
            requestAnimationFrame(() => resolve(performance.now()));
          }
        });
        mo.observe(el, { attributes: true });
      });
      const t0 = performance.now();
      await fetch("/agent/heartbeat", {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
        body: JSON.stringify({ tps: 19 + (i % 10) / 10, players_online: i % 5 }),
      });
      roundTrips.push(performance.now() - t0);
      delays.push((await changed) - t0);
    }
    return { delays, roundTrips };
  },
  { token: srv.agent_token, events: EVENTS },
);
await browser.close();
await stopAll();

const mark = (ok: boolean) => (ok ? "ok" : "OVER TARGET");
console.log("dashboard first load, as served (Content-Encoding by Accept-Encoding)");
console.log(`  JS   gzip ${kb(js)}   target < ${kb(TARGETS.jsGzip)}   ${mark(js < TARGETS.jsGzip)}`);
console.log(`       br   ${kb(weight.js.br)}   (baseline: uncompressed ${kb(weight.js.identity)})`);
console.log(`  CSS  gzip ${kb(css)}   br ${kb(weight.css.br)}   (uncompressed ${kb(weight.css.identity)})`);
console.log(`  HTML gzip ${kb(htmlGz)}   (baseline: the page alone)`);
console.log(`time to interactive on loopback, ${interactive.length} cold loads`);
console.log(
  `  sign-in form rendered  p50 ${pct(interactive, 50).toFixed(0)} ms  max ${Math.max(...interactive).toFixed(0)} ms   target < ${TARGETS.interactiveMs} ms   ${mark(pct(interactive, 50) < TARGETS.interactiveMs)}`,
);
console.log(
  `  DOMContentLoaded       p50 ${pct(domContentLoaded, 50).toFixed(0)} ms   (baseline: scripts parsed, app not yet rendered)`,
);
console.log(`agent heartbeat POST -> chart point on screen, ${EVENTS} events`);
console.log(
  `  p50 ${pct(delays, 50).toFixed(1)} ms  p99 ${pct(delays, 99).toFixed(1)} ms   target p99 < ${TARGETS.p99UpdateMs} ms   ${mark(pct(delays, 99) < TARGETS.p99UpdateMs)}`,
);
console.log(
  `  baseline: the POST's own round trip p50 ${pct(roundTrips, 50).toFixed(1)} ms  p99 ${pct(roundTrips, 99).toFixed(1)} ms`,
);
process.exit(0);
