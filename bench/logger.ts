/**
 * The access line (one per request, src/http.ts logAccess) through the project's logger and
 * through pino with redaction paths, both writing into a discarding sink so only formatting
 * and redaction are measured. Prints both side by side; docs/architecture.md ("Logging") keeps
 * the figures and the decision.
 *
 *   bun bench/logger.ts [lines]
 */
import pino from "pino";
import { createLogger } from "../src/lib/log";

const lines = Number(process.argv[2] ?? 200_000);
const rounds = 5;

const ours = createLogger("info", {}, { write: () => {} });
const theirs = pino(
  {
    level: "info",
    base: undefined,
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: {
      paths: ["password", "*.password", "token", "*.token", "authorization", "*.authorization", "cookie", "*.cookie"],
      censor: "[redacted]",
    },
  },
  { write: () => {} },
);

const fields = (i: number) => ({
  request_id: `0192b5e8-7c1e-7000-8000-${String(i).padStart(12, "0")}`,
  method: "GET",
  path: "/teams/5f0e6a4c-1b2d-4e5f-8a9b-0c1d2e3f4a5b",
  status: 200,
  duration_ms: 1.23,
});

function measure(log: (i: number) => void): number {
  const start = performance.now();
  for (let i = 0; i < lines; i++) log(i);
  return lines / ((performance.now() - start) / 1000);
}

const results: Record<string, number[]> = { "src/lib/log.ts": [], "pino 10.4.0 + redact": [] };
for (let r = 0; r < rounds; r++) {
  // Alternated so both see the same machine load.
  results["src/lib/log.ts"]!.push(measure((i) => ours.info("request", fields(i))));
  results["pino 10.4.0 + redact"]!.push(measure((i) => theirs.info(fields(i), "request")));
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(`access lines, ${lines} per round, median of ${rounds} rounds`);
for (const [name, xs] of Object.entries(results)) {
  console.log(`${name.padEnd(24)} ${Math.round(median(xs)).toLocaleString("en").padStart(12)} lines/s`);
}
const ratio = median(results["pino 10.4.0 + redact"]!) / median(results["src/lib/log.ts"]!);
console.log(`pino / current: ${ratio.toFixed(2)}x`);
