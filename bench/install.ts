/**
 * The production install (docs/production-install.md) beside the development install (what
 * `npm start` installs), each in a fresh copy of the repository: size on disk, then idle RSS of
 * the service started from it with NODE_ENV=production on a fresh PostgreSQL database (the
 * same settings for both, the development identity provider turned on explicitly).
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres bun bench/install.ts
 *   (ROUNDS=3 starts of each, alternating; IDLE_SECONDS=5 after /health before reading RSS)
 */
import { mkdtempSync, readFileSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { copyRepository, diskUsage, pageBlock, productionEnv, sh, startService } from "../test/install-steps";
import { freshDatabase } from "../test/shared";

const ADMIN = process.env.DATABASE_URL || "postgres://postgres@127.0.0.1:5432/postgres";
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const IDLE_MS = Number(process.env.IDLE_SECONDS ?? 5) * 1000;

const mb = (bytes: number) => `${Math.round(bytes / 1e6).toLocaleString("en")} MB`;
const rssMiB = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) / 1024;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

interface Install {
  name: string;
  dir: string;
  seconds: number;
  modules: number;
  total: number;
  rss: number[];
}

async function install(name: string, script: string): Promise<Install> {
  const dir = join(work, name);
  copyRepository(dir);
  const started = performance.now();
  const done = await sh(script, dir);
  if (done.code !== 0) throw new Error(`${name} install failed:\n${done.output}`);
  const seconds = (performance.now() - started) / 1000;
  return { name, dir, seconds, modules: diskUsage(join(dir, "node_modules")), total: diskUsage(dir), rss: [] };
}

async function idleRss(dir: string): Promise<number> {
  const db = await freshDatabase(ADMIN, "mcp_bench_install");
  try {
    const service = await startService(dir, productionEnv(db.url, "warn"));
    await Bun.sleep(IDLE_MS);
    const rss = rssMiB(service.pid);
    await service.stop();
    return rss;
  } finally {
    await db.drop();
  }
}

const work = mkdtempSync(join(tmpdir(), "mcp-bench-install-"));
try {
  // The quickstart's install (package.json "start"), then the page's.
  const dev = await install("development", "bun install --frozen-lockfile");
  const prod = await install("production", pageBlock("build"));
  for (let round = 0; round < ROUNDS; round++) for (const i of [dev, prod]) i.rss.push(await idleRss(i.dir));

  const bun = diskUsage(dirname(dirname(realpathSync(process.execPath))));
  console.log(`Bun ${Bun.version}, ${ROUNDS} starts of each (median RSS, ${IDLE_MS / 1000} s idle after /health)\n`);
  console.log("| install | node_modules | whole directory | install time | idle RSS |");
  console.log("| --- | --- | --- | --- | --- |");
  for (const i of [dev, prod]) {
    const rss = `${median(i.rss).toFixed(0)} MiB (${i.rss.map((r) => r.toFixed(0)).join(", ")})`;
    console.log(`| ${i.name} | ${mb(i.modules)} | ${mb(i.total)} | ${i.seconds.toFixed(1)} s | ${rss} |`);
  }
  console.log(`\nproduction / development node_modules: ${(prod.modules / dev.modules).toFixed(3)}`);
  console.log(`Bun itself (installed by npm, outside the directory): ${mb(bun)}`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
