/**
 * `npm run demo`'s promise: every dashboard page has data within 15 s of the command. Measures,
 * per run, the seconds from spawning `bun scripts/demo.ts` to
 * - "ready": the demo printed its sign-in (everything sent), and
 * - "populated": the first moment every read a dashboard page makes is non-empty
 *   (`emptyReads()` in scripts/demo.ts: servers checked, charts from each window's start, uptime,
 *   players, bans, ranks, announcements, client app, members, keys, a delivered webhook),
 *   checked every 250 ms once ready,
 * beside the baseline measured in the same run, alternating: `bun src/main.ts` on a fresh data
 * directory until /health answers (a first `npm start`, which the demo starts with too). The
 * `npx bun install` step of both npm scripts is left out of both.
 *
 *   bun bench/demo.ts                 # 3 runs of each
 *   BENCH_RUNS=5 bun bench/demo.ts
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { emptyReads } from "../scripts/demo";
import { freePort } from "../test/shared";

const runs = Number(process.env.BENCH_RUNS ?? 3);
const root = join(import.meta.dir, "..");
const seconds = (from: number) => (performance.now() - from) / 1000;

async function healthy(base: string, proc: { exitCode: number | null }, ms = 120_000) {
  const deadline = Date.now() + ms;
  while (
    !(await fetch(`${base}/health`).then(
      (r) => r.ok,
      () => false,
    ))
  ) {
    if (proc.exitCode !== null) throw new Error(`exited with ${proc.exitCode}`);
    if (Date.now() > deadline) throw new Error("no /health");
    await Bun.sleep(20);
  }
}

/** A first start of the service: fresh data directory to /health. */
async function baseline(): Promise<number> {
  const port = freePort();
  const dir = mkdtempSync(join(tmpdir(), "mcp-bench-start-"));
  const started = performance.now();
  const proc = Bun.spawn([process.execPath, "src/main.ts"], {
    cwd: root,
    env: { ...process.env, PORT: String(port), DATA_DIR: dir, LOG_LEVEL: "warn" },
    stdout: "ignore",
    stderr: "inherit",
  });
  try {
    await healthy(`http://127.0.0.1:${port}`, proc);
    return seconds(started);
  } finally {
    proc.kill("SIGTERM");
    await proc.exited;
    rmSync(dir, { recursive: true, force: true });
  }
}

async function demo(): Promise<{ ready: number; populated: number; missingAtReady: number }> {
  const port = freePort();
  const base = `http://127.0.0.1:${port}`;
  const started = performance.now();
  const proc = Bun.spawn([process.execPath, "scripts/demo.ts"], {
    cwd: root,
    env: { ...process.env, PORT: String(port) },
    stdout: "pipe",
    stderr: "inherit",
  });
  let output = "";
  const reading = (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of proc.stdout) output += decoder.decode(chunk, { stream: true });
  })();
  try {
    while (!output.includes("Ready in")) {
      if (proc.exitCode !== null) throw new Error(`the demo exited with ${proc.exitCode}:\n${output}`);
      if (seconds(started) > 120) throw new Error(`the demo was not ready within 120 s:\n${output}`);
      await Bun.sleep(20);
    }
    const ready = seconds(started);
    let missing = await emptyReads(base);
    const missingAtReady = missing.length;
    while (missing.length > 0) {
      if (seconds(started) > 120) throw new Error(`still empty after 120 s: ${missing.join("; ")}`);
      await Bun.sleep(250);
      missing = await emptyReads(base);
    }
    return { ready, populated: seconds(started), missingAtReady };
  } finally {
    proc.kill("SIGINT");
    await proc.exited;
    await reading;
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const rows: { baseline: number; ready: number; populated: number; missingAtReady: number }[] = [];
for (let i = 0; i < runs; i++) {
  const b = await baseline();
  const d = await demo();
  rows.push({ baseline: b, ...d });
  console.log(
    `run ${i + 1}: first start to /health ${b.toFixed(1)} s | demo ready ${d.ready.toFixed(1)} s, every page populated ${d.populated.toFixed(1)} s (${d.missingAtReady} reads still empty at ready)`,
  );
}
console.log(
  `median of ${runs}: first start ${median(rows.map((r) => r.baseline)).toFixed(1)} s (baseline) | demo ready ${median(rows.map((r) => r.ready)).toFixed(1)} s | populated ${median(rows.map((r) => r.populated)).toFixed(1)} s (target 15 s)`,
);
