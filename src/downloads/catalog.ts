import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";

/**
 * The programs the service hands out at /downloads: the agent as an npm tarball and as one ES
 * module, and the SDK as an npm tarball. Each is built by its package's own build script (the
 * one `npm pack` and `npm publish` run as prepack) and packed from the package's `files`, so what
 * is served is what would be published.
 */

const ROOT = resolve(import.meta.dir, "../..");

/** Where `npm run build` (scripts/build.ts) leaves the files for a production install to serve. */
export const DOWNLOADS_DIR = join(ROOT, "dist/downloads");

export type PackageName = "agent" | "client";

export const DOWNLOADS = {
  "mc-platform-agent.tgz": { from: "agent", type: "application/gzip" },
  "mc-platform-agent.mjs": { from: "agent", type: "text/javascript; charset=utf-8" },
  "mc-platform-client.tgz": { from: "client", type: "application/gzip" },
} as const satisfies Record<string, { from: PackageName; type: string }>;

export type DownloadName = keyof typeof DOWNLOADS;

export const isDownload = (name: string): name is DownloadName => Object.hasOwn(DOWNLOADS, name);

interface Manifest {
  files: string[];
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" }).filter((f) => statSync(join(dir, f)).isFile());
}

/**
 * An npm package tarball as `npm pack` makes it: gzip, every entry under `package/`, holding
 * package.json and what its `files` lists (dist/ entries taken from `dist`, the build's output).
 * npm always adds README and LICENSE; they are listed in `files` here anyway.
 */
function npmTarball(pkgDir: string, dist: string): Promise<Uint8Array> {
  const manifest = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8")) as Manifest;
  const entries: Record<string, Uint8Array> = { "package/package.json": readFileSync(join(pkgDir, "package.json")) };
  for (const pattern of manifest.files) {
    const built = pattern === "dist" || pattern.startsWith("dist/");
    const path = built ? join(dist, pattern.slice("dist".length)) : join(pkgDir, pattern);
    const found = statSync(path, { throwIfNoEntry: false });
    if (!found) throw new Error(`${pattern} (in ${relative(ROOT, pkgDir)}/package.json files) was not built`);
    for (const file of found.isDirectory() ? filesUnder(path).map((f) => join(path, f)) : [path]) {
      const inPackage = built ? join("dist", relative(dist, file)) : relative(pkgDir, file);
      entries[`package/${inPackage}`] = readFileSync(file);
    }
  }
  return new Bun.Archive(entries, { compress: "gzip", level: 9 }).bytes();
}

/**
 * Builds one package's downloads. The build runs in a child process: bundling and generating
 * declarations load compilers whose memory a long-running service would keep.
 */
export async function buildPackage(name: PackageName): Promise<Map<DownloadName, Uint8Array>> {
  const pkgDir = join(ROOT, "packages", name);
  const work = mkdtempSync(join(tmpdir(), `mcp-${name}-build-`));
  try {
    const child = Bun.spawn([process.execPath, join(pkgDir, "scripts/build.ts"), work], {
      cwd: pkgDir,
      stdout: "pipe",
      stderr: "pipe",
    });
    const [out, err, code] = await Promise.all([
      new Response(child.stdout).text(),
      new Response(child.stderr).text(),
      child.exited,
    ]);
    if (code !== 0) throw new Error(`building packages/${name} failed (exit ${code}): ${(err || out).slice(-2000)}`);
    const built = new Map<DownloadName, Uint8Array>();
    if (name === "agent") {
      built.set("mc-platform-agent.tgz", await npmTarball(pkgDir, work));
      built.set("mc-platform-agent.mjs", readFileSync(join(work, "mc-platform-agent.mjs")));
    } else {
      built.set("mc-platform-client.tgz", await npmTarball(pkgDir, work));
    }
    return built;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** Every download, for the build step of a production install. */
export async function buildAll(): Promise<Map<DownloadName, Uint8Array>> {
  const all = new Map<DownloadName, Uint8Array>();
  for (const name of ["agent", "client"] as const) for (const [k, v] of await buildPackage(name)) all.set(k, v);
  return all;
}
