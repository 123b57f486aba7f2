/**
 * Bench-only: a full collection on SIGUSR2, then the process's memory figures written to
 * `$TMPDIR/mcp-gc-<pid>.json`, so a bench can sample a target without the garbage its setup
 * left (authentications, queries). Imported by bench targets only (bench/lib/app-gc.ts,
 * bench/raw-pubsub.ts); nothing under src/ reaches it.
 */
import { writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

process.on("SIGUSR2", () => {
  Bun.gc(true);
  const { rss, heapUsed } = process.memoryUsage();
  writeFileSync(join(tmpdir(), `mcp-gc-${process.pid}.json`), JSON.stringify({ rss, heapUsed }));
});
