/**
 * The ingest load: every agent token sends one heartbeat a second, spread evenly over the
 * second, for HEARTBEAT_SECONDS. Run as its own process so its CPU is not the app's. Prints
 * one JSON line: sent, errors, latency percentiles, and how far behind schedule it fell.
 *
 *   HEARTBEAT_URL=http://127.0.0.1:3000 HEARTBEAT_TOKENS=/tmp/tokens.json HEARTBEAT_SECONDS=60 bun bench/lib/heartbeats.ts
 */
import { readFileSync } from "node:fs";

const url = `${process.env.HEARTBEAT_URL}/agent/heartbeat`;
const tokens = JSON.parse(readFileSync(process.env.HEARTBEAT_TOKENS!, "utf8")) as string[];
const seconds = Number(process.env.HEARTBEAT_SECONDS ?? 60);
const total = tokens.length * seconds;
const latencies: number[] = [];
const errorSamples: string[] = [];
let errors = 0;
let sent = 0;
let maxLagMs = 0;
let inflight = 0;
let maxInflight = 0;
const pending = new Set<Promise<void>>();

function send(i: number) {
  const token = tokens[i % tokens.length]!;
  const body = JSON.stringify({
    tps: 18 + (i % 20) / 10,
    mspt: 20 + (i % 30),
    players_online: i % 50,
    memory_used_mb: 1024 + (i % 2048),
    memory_max_mb: 4096,
  });
  const t = performance.now();
  inflight++;
  maxInflight = Math.max(maxInflight, inflight);
  const p = fetch(url, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body,
  })
    .then(async (r) => {
      const text = await r.text();
      if (r.status !== 200) {
        errors++;
        if (errorSamples.length < 5) errorSamples.push(`${r.status} ${text.slice(0, 200)}`);
      }
    })
    .catch((err) => {
      errors++;
      if (errorSamples.length < 5) errorSamples.push(String(err));
    })
    .finally(() => {
      latencies.push(performance.now() - t);
      inflight--;
      pending.delete(p);
    });
  pending.add(p);
}

const start = performance.now();
while (sent < total) {
  const elapsed = performance.now() - start;
  const due = Math.min(total, Math.floor((elapsed * tokens.length) / 1000));
  // How late the oldest request sent now is against its slot in the schedule.
  if (due > sent) maxLagMs = Math.max(maxLagMs, elapsed - (sent * 1000) / tokens.length);
  while (sent < due) send(sent++);
  await Bun.sleep(2);
}
await Promise.all([...pending]);
const duration = (performance.now() - start) / 1000;
latencies.sort((a, b) => a - b);
const pct = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * q))] ?? NaN;
console.log(
  JSON.stringify({
    sent,
    errors,
    errorSamples,
    seconds: duration,
    rate: sent / duration,
    p50ms: pct(0.5),
    p99ms: pct(0.99),
    maxms: latencies.at(-1) ?? NaN,
    maxLagMs,
    maxInflight,
  }),
);
