/**
 * Pinger throughput: servers checked per second by the platform's pinger (claim due rows,
 * Server List Ping, results written in shared batches of samples and statuses, summed in memory
 * for the metric buckets and flushed to them at the end of each round, inside the timing)
 * against many real status responders on loopback, next to a bare loop of minecraft-server-util
 * status() calls at the same concurrency, in one run. Targets: >= 0.9x the bare loop and
 * >= 1,000 servers/s.
 *
 *   bun bench/pinger.ts                      # PGlite in a temp dir
 *   DATABASE_URL=postgres://... bun bench/pinger.ts
 *   BENCH_RESPONDERS=200 BENCH_ROUNDS=5 PING_CONCURRENCY=32 bun bench/pinger.ts
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { status } from "minecraft-server-util";
import { startServer } from "../src/app";
import { loadConfig } from "../src/config";
import { servers, teams } from "../src/db/schema";
import { createLogger } from "../src/lib/log";
import { sha256 } from "../src/lib/secrets";
import { rowsOf } from "../src/monitoring/sql";
import { benchDatabase } from "./lib/targets";

const count = Number(process.env.BENCH_RESPONDERS ?? 200);
const rounds = Number(process.env.BENCH_ROUNDS ?? 5);
const concurrency = Number(process.env.PING_CONCURRENCY ?? 32);
const timeoutMs = 5000;

// The responders run in a process of their own, so they do not share an event loop with the pinger.
const host = Bun.spawn(
  [
    process.execPath,
    "-e",
    `import { startStatusResponder } from "${join(import.meta.dir, "../scripts/demo-mc-server.ts")}";
     const rs = await Promise.all(Array.from({ length: ${count} }, (_, i) => startStatusResponder({ players: i % 50, maxPlayers: 100 })));
     console.log(JSON.stringify(rs.map((r) => r.port)));`,
  ],
  { stdout: "pipe", stderr: "inherit" },
);
const reader = host.stdout.getReader();
let line = "";
while (!line.includes("\n")) {
  const { value, done } = await reader.read();
  if (done) throw new Error("responder host exited");
  line += new TextDecoder().decode(value);
}
const ports: number[] = JSON.parse(line);

/** N workers over the targets: the same shape of concurrency the pinger uses. */
async function bareRound(): Promise<number> {
  let next = 0;
  let ok = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < ports.length) {
        const port = ports[next++]!;
        const r = await status("127.0.0.1", port, { timeout: timeoutMs, enableSRV: false }).then(
          () => true,
          () => false,
        );
        if (r) ok++;
      }
    }),
  );
  return ok;
}

const dataDir = mkdtempSync(join(tmpdir(), "mcp-bench-pinger-"));
const db = await benchDatabase();
const config = loadConfig({
  DATA_DIR: dataDir,
  DATABASE_URL: db.url,
  PORT: "0",
  HOST: "127.0.0.1",
  LOG_LEVEL: "silent",
  PINGER_ENABLED: "false",
  // The responders listen on loopback.
  OUTBOUND_ALLOW_PRIVATE: "true",
  PING_CONCURRENCY: String(concurrency),
  PING_TIMEOUT_MS: String(timeoutMs),
});
const app = await startServer(config, createLogger("silent"));
const d = app.services.database.db;
const [team] = await d.insert(teams).values({ name: "bench" }).returning();
await d.insert(servers).values(
  ports.map((port, i) => ({
    teamId: team!.id,
    name: `r${i}`,
    host: "127.0.0.1",
    port,
    kind: "single" as const,
    agentTokenHash: sha256(`bench-${i}`),
    agentTokenPrefix: "x",
  })),
);

async function pingerRound(): Promise<number> {
  await d.execute(sql`update servers set next_check_at = now()`);
  return app.services.monitoring.pingDue();
}

async function measure(name: string, round: () => Promise<number>) {
  await round(); // warm-up
  const rates: number[] = [];
  let checked = 0;
  for (let i = 0; i < rounds; i++) {
    const t = performance.now();
    checked = await round();
    rates.push((ports.length / (performance.now() - t)) * 1000);
  }
  rates.sort((a, b) => a - b);
  return { name, median: rates[Math.floor(rates.length / 2)]!, best: rates[rates.length - 1]!, checked };
}

const bare = await measure("bare status() loop", bareRound);
const pinger = await measure("pinger (claim + ping + store)", pingerRound);
const [{ up, samples, bucketed }] = rowsOf<{ up: number; samples: number; bucketed: number }>(
  await d.execute(
    sql`select (select count(*) from server_status where online)::int as up, (select count(*) from server_samples)::int as samples,
               (select coalesce(sum(up_n + down_n), 0) from server_metrics_minute)::int as bucketed`,
  ),
) as [{ up: number; samples: number; bucketed: number }];

await app.stop();
host.kill();
await host.exited;
rmSync(dataDir, { recursive: true, force: true });
await db.drop();

console.log(
  `database: ${process.env.DATABASE_URL ? "postgres" : "pglite"}; ${ports.length} responders on loopback, concurrency ${concurrency}, ${rounds} rounds each (median, best)`,
);
console.log(`\n${"case".padEnd(34)}${"servers/s".padEnd(12)}${"best".padEnd(10)}${"checked".padEnd(10)}ratio to bare`);
for (const r of [bare, pinger]) {
  const ratio = r === bare ? "" : (r.median / bare.median).toFixed(2);
  console.log(
    `${r.name.padEnd(34)}${r.median.toFixed(0).padEnd(12)}${r.best.toFixed(0).padEnd(10)}${String(r.checked).padEnd(10)}${ratio}`,
  );
}
const ratio = pinger.median / bare.median;
console.log(
  `\ntarget: >= 0.9x the bare loop and >= 1,000 servers/s: ${ratio.toFixed(2)}x, ${pinger.median.toFixed(0)}/s ` +
    `(${ratio >= 0.9 && pinger.median >= 1000 ? "met" : "NOT met"})`,
);
console.log(
  `servers up after the last pinger round: ${up} of ${ports.length}; samples stored: ${samples}, ` +
    `counted in the minute buckets: ${bucketed}${bucketed === samples ? "" : " (MISMATCH)"}`,
);
