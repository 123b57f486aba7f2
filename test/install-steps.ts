/**
 * The steps of docs/production-install.md, shared by its test and bench/install.ts: a copy of the
 * repository as a clone has it, the page's own commands run in it, and the service started from
 * it as a production machine starts it. Nothing here imports bun:test.
 */
import { cpSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { freePort, runCommand } from "./shared";

export const ROOT = resolve(import.meta.dir, "..");
export const PAGE = "docs/production-install.md";

/** Left out when the repository is not a git checkout: what `.gitignore` keeps out of a clone. */
const NOT_IN_A_CLONE = new Set(["node_modules", ".git", ".data", "dist", "tmp"]);

/**
 * The repository's files as a clone would have them (tracked files and new ones git does not
 * ignore, so uncommitted work is what is tried), without node_modules or build output.
 */
export function copyRepository(dest: string): void {
  mkdirSync(dest, { recursive: true });
  const git = Bun.spawnSync(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], { cwd: ROOT });
  if (git.exitCode === 0) {
    for (const file of git.stdout.toString().split("\0").filter(Boolean)) {
      const from = join(ROOT, file);
      // A file deleted in the working tree is still in the index.
      if (!existsSync(from)) continue;
      mkdirSync(dirname(join(dest, file)), { recursive: true });
      cpSync(from, join(dest, file));
    }
    return;
  }
  cpSync(ROOT, dest, {
    recursive: true,
    filter: (src) => !NOT_IN_A_CLONE.has(src.split("/").pop()!) && !src.endsWith(".log"),
  });
}

/** The `sh` block that follows `<!-- production-install: NAME -->` on the page. */
export function pageBlock(name: string): string {
  const text = readFileSync(join(ROOT, PAGE), "utf8");
  const at = text.indexOf(`<!-- production-install: ${name} -->`);
  const block = /```sh\n([\s\S]*?)\n```/.exec(text.slice(at));
  if (at < 0 || !block) throw new Error(`${PAGE} has no sh block marked production-install: ${name}`);
  return block[1]!;
}

/** Bun's directory first on the PATH: the page's `bun` is the one running this. */
export const PATH = `${dirname(process.execPath)}:${process.env.PATH ?? ""}`;

/** Runs a script in bash, stopping at the first failing command; its output, whatever happens. */
export async function sh(script: string, cwd: string, env: Record<string, string> = {}) {
  const { code, out, err } = await runCommand(["bash", "-c", `set -euo pipefail\n${script}`], {
    cwd,
    env: { ...process.env, PATH, ...env },
  });
  return { code, output: out + err };
}

/** Disk usage of a directory in bytes, as `du` counts it (each hard-linked file once). */
export function diskUsage(path: string): number {
  const du = Bun.spawnSync(["du", "-sk", path]);
  return Number(du.stdout.toString().split("\t")[0]) * 1024;
}

/**
 * What production requires to start, the page's step 3 with a database of the caller's: no
 * Microsoft application here, so the development identity provider turned on explicitly.
 */
export const productionEnv = (databaseUrl: string, logLevel = "info") => ({
  NODE_ENV: "production",
  DATABASE_URL: databaseUrl,
  PUBLIC_URL: "https://mc.example.test",
  DEV_IDP_ENABLED: "true",
  LOG_LEVEL: logLevel,
});

export interface Started {
  url: string;
  pid: number;
  log: () => string;
  stop(): Promise<number>;
}

/**
 * `bun src/main.ts` in `dir` with only the given environment (and PATH), as a service manager
 * starts it; resolves once /health answers.
 */
export async function startService(dir: string, env: Record<string, string>): Promise<Started> {
  const port = freePort();
  const proc = Bun.spawn([process.execPath, "src/main.ts"], {
    cwd: dir,
    env: { PATH, HOME: process.env.HOME ?? dir, HOST: "127.0.0.1", PORT: String(port), ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  let output = "";
  const decoder = new TextDecoder();
  for (const stream of [proc.stdout, proc.stderr])
    void (async () => {
      for await (const chunk of stream) output += decoder.decode(chunk, { stream: true });
    })();
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if (proc.exitCode !== null) throw new Error(`the service exited with ${proc.exitCode}:\n${output}`);
    const up = await fetch(`${url}/health`).then(
      (r) => r.ok,
      () => false,
    );
    if (up) break;
    if (i > 600) throw new Error(`the service did not answer /health in 60 s:\n${output}`);
    await Bun.sleep(100);
  }
  return {
    url,
    pid: proc.pid,
    log: () => output,
    async stop() {
      proc.kill("SIGTERM");
      return proc.exited;
    },
  };
}
