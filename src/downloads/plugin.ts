import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Elysia } from "elysia";
import { notModified, staticResponse } from "../http/responses";
import { AppError } from "../lib/errors";
import type { Logger } from "../lib/log";
import { buildPackage, DOWNLOADS, type DownloadName, isDownload, type PackageName } from "./catalog";

const RETRY_BUILD_MS = 60_000;

interface Served {
  body: Uint8Array<ArrayBuffer>;
  etag: string;
}

/**
 * GET /downloads/{file}: the agent and the SDK, so `npx <PUBLIC_URL>/downloads/mc-platform-agent.tgz`
 * and `npm i <PUBLIC_URL>/downloads/mc-platform-client.tgz` work before any registry release.
 * Files come from `dir` (a production build's dist/downloads) when it holds them, otherwise a
 * package is built on the first request for one of its files, never at startup (the idle
 * instance does not pay for it), and kept in memory. The URLs carry no version, so answers
 * are revalidated every time: an ETag, and a 304 to a client that holds the current bytes.
 */
export function downloadsPlugin(opts: {
  dir: string | null;
  log: Logger;
  /** How a package is built when `dir` does not hold its files (tests give a failing one). */
  build?: typeof buildPackage;
}) {
  const { log, build = buildPackage } = opts;
  const loaded = new Map<PackageName, Promise<Map<DownloadName, Served>>>();

  const prebuilt = (pkg: PackageName): Map<DownloadName, Uint8Array> | null => {
    const names = (Object.keys(DOWNLOADS) as DownloadName[]).filter((n) => DOWNLOADS[n].from === pkg);
    if (!opts.dir || !names.every((n) => existsSync(join(opts.dir!, n)))) return null;
    return new Map(names.map((n) => [n, readFileSync(join(opts.dir!, n))]));
  };

  const load = (pkg: PackageName) => {
    let files = loaded.get(pkg);
    if (!files) {
      files = (async () => {
        const started = performance.now();
        let raw = prebuilt(pkg);
        if (!raw) {
          raw = await build(pkg);
          log.info("download built", { package: pkg, duration_ms: Math.round(performance.now() - started) });
        }
        const served = new Map<DownloadName, Served>();
        for (const [name, body] of raw) {
          const etag = `"${createHash("sha256").update(body).digest("base64url").slice(0, 32)}"`;
          served.set(name, { body: new Uint8Array(body), etag });
        }
        return served;
      })();
      loaded.set(pkg, files);
      // A failed build is tried again a minute later: not on every request, which would start a
      // build process each time where it cannot succeed (no build tools, no dist/).
      files.catch((err) => {
        log.error("download build failed", { package: pkg, err });
        setTimeout(() => loaded.delete(pkg), RETRY_BUILD_MS).unref();
      });
    }
    return files;
  };

  return new Elysia({ name: "downloads" }).get("/downloads/:file", async ({ params, request }) => {
    const name = params.file;
    if (!isDownload(name)) {
      throw new AppError("not_found", "No such download.", { details: { available: Object.keys(DOWNLOADS) } });
    }
    let files: Map<DownloadName, Served>;
    try {
      files = await load(DOWNLOADS[name].from);
    } catch {
      throw new AppError(
        "unavailable",
        "This download is not built on this instance; its operator builds it with `npm run build` (docs/production-install.md).",
      );
    }
    const file = files.get(name)!;
    const headers = { etag: file.etag, "cache-control": "public, no-cache" };
    if (notModified(request, file.etag)) return new Response(null, { status: 304, headers });
    return staticResponse(file.body, DOWNLOADS[name].type, {
      ...headers,
      "content-disposition": `attachment; filename="${name}"`,
    });
  });
}
