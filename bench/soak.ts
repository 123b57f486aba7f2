/**
 * Sustained load: mixed traffic at a fixed rate for minutes (session/validate, poll, start,
 * dashboard reads, agent heartbeats and event batches, analytics sockets), per-endpoint
 * errors and latency, and the server's RSS after warm-up, every 10 s and at the end. Exits
 * non-zero on any error, socket fault, or RSS growth beyond the bound.
 *
 *   node_modules/.bin/bun bench/soak.ts          # 300 req/s (the target rate) for 180 s
 *   SOAK_SECONDS=600 SOAK_RATE=300 node_modules/.bin/bun bench/soak.ts
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres node_modules/.bin/bun bench/soak.ts
 */
import { report, runSoak } from "./lib/soak";
import { benchDatabase } from "./lib/targets";

// Bun's fetch holds back requests beyond 256 in flight in the client (BUN_CONFIG_MAX_HTTP_REQUESTS,
// read at process start): past it the driver would queue requests itself and stop being open
// loop. The driver runs as a process of its own with a cap well above what the run can reach.
if (!process.env.BUN_CONFIG_MAX_HTTP_REQUESTS) {
  const driver = Bun.spawn([process.execPath, ...process.argv.slice(1)], {
    env: { ...process.env, BUN_CONFIG_MAX_HTTP_REQUESTS: "16384" },
    stdio: ["inherit", "inherit", "inherit"],
  });
  process.exit(await driver.exited);
}

const seconds = Number(process.env.SOAK_SECONDS ?? 180);
const rate = Number(process.env.SOAK_RATE ?? 300);
const maxGrowth = Number(process.env.SOAK_MAX_RSS_GROWTH ?? 0.25);
const db = await benchDatabase();
console.log(`soak: ${rate} req/s for ${seconds} s after a 15 s warm-up, on ${db.url ? "PostgreSQL" : "PGlite"}`);
let passed = false;
try {
  const result = await runSoak({
    seconds,
    warmupSeconds: Number(process.env.SOAK_WARMUP_SECONDS ?? 15),
    rate,
    sockets: Number(process.env.SOAK_SOCKETS ?? 50),
    servers: 5,
    logins: 5,
    databaseUrl: db.url,
    log: (line) => console.log(line),
  });
  passed = report(result, maxGrowth);
} finally {
  await db.drop();
}
process.exit(passed ? 0 : 1);
