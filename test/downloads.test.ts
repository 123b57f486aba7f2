import { afterAll, describe, expect, test } from "bun:test";
import { Elysia } from "elysia";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { RunningServer } from "../src/app";
import { startServer } from "../src/app";
import { loadConfig } from "../src/config";
import { downloadsPlugin } from "../src/downloads/plugin";
import { edgePlugin } from "../src/http/edge";
import { createLogger } from "../src/lib/log";
import { freePort, sharedServer, tempDir, testEnv } from "./harness";
import { api, expectError } from "./helpers";
import { runCommand } from "./shared";

const ROOT = resolve(import.meta.dir, "..");
const work = tempDir("mcp-downloads-");
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** The files of a gzip npm tarball, by name. */
async function unpack(bytes: Uint8Array): Promise<Map<string, Uint8Array>> {
  const files = await new Bun.Archive(bytes).files();
  return new Map(await Promise.all([...files].map(async ([name, f]) => [name, await f.bytes()] as const)));
}

const text = (b: Uint8Array | undefined) => new TextDecoder().decode(b);

async function download(server: RunningServer, file: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${server.url}/downloads/${file}`, { headers });
  return { res, body: new Uint8Array(await res.arrayBuffer()) };
}

describe("GET /downloads", () => {
  test("the agent tarball is an npm package: package/ entries, a Node bin that is in it, no dependencies to install", async () => {
    const server = await sharedServer();
    const { res, body } = await download(server, "mc-platform-agent.tgz");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/gzip");
    expect(res.headers.get("cache-control")).toBe("public, no-cache");
    expect(res.headers.get("content-disposition")).toBe('attachment; filename="mc-platform-agent.tgz"');
    expect(res.headers.get("x-request-id")).toBeTruthy();
    expect([body[0], body[1]]).toEqual([0x1f, 0x8b]);

    const files = await unpack(body);
    expect([...files.keys()].sort()).toEqual(
      ["package/LICENSE", "package/README.md", "package/dist/mc-platform-agent.mjs", "package/package.json"].sort(),
    );
    const manifest = JSON.parse(text(files.get("package/package.json")));
    expect(manifest).toMatchObject({ name: "@mc-platform/agent", license: "MIT", engines: { node: ">=18" } });
    expect(manifest.dependencies).toBeUndefined();
    const bin = text(files.get(`package/${manifest.bin["mc-platform-agent"]}`));
    expect(bin.startsWith("#!/usr/bin/env node\n")).toBe(true);
    // Nothing left for a runtime to resolve but Node's own modules.
    const imports = [...bin.matchAll(/^import .* from "([^"]+)";$/gm)].map((m) => m[1]!);
    expect(imports.length).toBeGreaterThan(0);
    expect(imports.filter((m) => !m.startsWith("node:"))).toEqual([]);
    expect(bin).not.toMatch(/\bBun\.|from "bun"|\/\/ @bun/);
    expect(text(files.get("package/LICENSE"))).toStartWith("MIT License");

    // The single-file download is the same bundle.
    const mjs = await download(server, "mc-platform-agent.mjs");
    expect(mjs.res.status).toBe(200);
    expect(mjs.res.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(text(mjs.body)).toBe(bin);
  });

  test("ETag and If-None-Match: the same tag again is a 304 with no body, weak or in a list; another tag gets the file", async () => {
    const server = await sharedServer();
    const first = await download(server, "mc-platform-agent.mjs");
    const etag = first.res.headers.get("etag")!;
    expect(etag).toMatch(/^"[\w-]{32}"$/);
    for (const header of [etag, `W/${etag}`, `"other", ${etag}`, "*"]) {
      const again = await download(server, "mc-platform-agent.mjs", { "if-none-match": header });
      expect(`${header} -> ${again.res.status}`).toBe(`${header} -> 304`);
      expect(again.body.length).toBe(0);
      expect(again.res.headers.get("etag")).toBe(etag);
    }
    const stale = await download(server, "mc-platform-agent.mjs", { "if-none-match": '"not-the-current-one"' });
    expect(stale.res.status).toBe(200);
    expect(stale.body).toEqual(first.body);
    // Each file has its own tag.
    const tgz = await download(server, "mc-platform-agent.tgz");
    expect(tgz.res.headers.get("etag")).not.toBe(etag);
  });

  test("an unknown file is a 404 in the error envelope naming what there is; nothing outside the list is reachable", async () => {
    const server = await sharedServer();
    const err = expectError(await api(server, "GET", "/downloads/mc-platform-server.tgz"), 404, "not_found");
    expect(err.details.available.sort()).toEqual(
      ["mc-platform-agent.mjs", "mc-platform-agent.tgz", "mc-platform-client.tgz"].sort(),
    );
    for (const path of ["/downloads/", "/downloads", "/downloads/..%2Fpackage.json", "/downloads/a/b"])
      expectError(await api(server, "GET", path), 404, "not_found");
  });

  test("the SDK tarball holds the built module, one declaration file, README and LICENSE, and declares its dependencies", async () => {
    const server = await sharedServer();
    const { res, body } = await download(server, "mc-platform-client.tgz");
    expect(res.status).toBe(200);
    const files = await unpack(body);
    expect([...files.keys()].sort()).toEqual(
      [
        "package/LICENSE",
        "package/README.md",
        "package/dist/index.d.ts",
        "package/dist/index.js",
        "package/package.json",
      ].sort(),
    );
    const manifest = JSON.parse(text(files.get("package/package.json")));
    expect(manifest).toMatchObject({ name: "@mc-platform/client", license: "MIT", types: "./dist/index.d.ts" });
    expect(Object.keys(manifest.dependencies).sort()).toEqual([
      "@trpc/client",
      "@trpc/server",
      "jose",
      "openapi-fetch",
    ]);
    expect(text(files.get("package/dist/index.d.ts"))).toContain("export declare function createTrpcClient");
  });

  test("what is served is what `npm pack` would publish: the same files for both packages", async () => {
    const server = await sharedServer();
    for (const [pkg, file] of [
      ["agent", "mc-platform-agent.tgz"],
      ["client", "mc-platform-client.tgz"],
    ] as const) {
      // npm runs the package's prepack (its build) first, which prints before the JSON.
      const { code, out, err } = await runCommand(["npm", "pack", "--dry-run", "--json", "--loglevel=error"], {
        cwd: join(ROOT, "packages", pkg),
      });
      // npm writes the prepack banner to stderr: only a failure's is of interest.
      expect(`${code}${code ? ` ${err}` : ""}`).toBe("0");
      const packed = JSON.parse(out.slice(out.search(/^\[/m)));
      const published = packed[0].files.map((f: { path: string }) => `package/${f.path}`).sort();
      const served = [...(await unpack((await download(server, file)).body)).keys()].sort();
      expect(`${pkg}: ${served.join(" ")}`).toBe(`${pkg}: ${published.join(" ")}`);
    }
  });
});

describe("where the files come from", () => {
  test("nothing is built at startup; the first request builds the package once and later ones are served from memory", async () => {
    const lines: string[] = [];
    const log = createLogger("info", {}, { write: (_level, line) => lines.push(line) });
    const port = String(freePort());
    const server = await startServer(
      loadConfig(testEnv({ DATA_DIR: join(work, "data"), PORT: port, PUBLIC_URL: `http://127.0.0.1:${port}` })),
      log,
    );
    try {
      const builds = () => lines.filter((l) => l.includes('"download built"')).map((l) => JSON.parse(l));
      const built = () => builds().map((b) => b.package);
      await Bun.sleep(100);
      expect(built()).toEqual([]);
      const asked = Date.now();
      const [a, b] = await Promise.all([
        download(server, "mc-platform-agent.tgz"),
        download(server, "mc-platform-agent.mjs"),
      ]);
      expect([a.res.status, b.res.status]).toEqual([200, 200]);
      expect(built()).toEqual(["agent"]);
      // The build began after the request was made, not when the server started.
      const [build] = builds();
      expect(Date.parse(build.ts) - build.duration_ms).toBeGreaterThanOrEqual(asked - 2);
      expect((await download(server, "mc-platform-agent.tgz")).body).toEqual(a.body);
      expect(built()).toEqual(["agent"]);
    } finally {
      await server.stop();
    }
  });

  test("a production install serves its build's files from the directory as they are, without building", async () => {
    const dir = join(work, "dist-downloads");
    mkdirSync(dir, { recursive: true });
    const files = {
      "mc-platform-agent.tgz": "agent tarball bytes",
      "mc-platform-agent.mjs": "#!/usr/bin/env node\n",
      "mc-platform-client.tgz": "client tarball bytes",
    };
    for (const [name, body] of Object.entries(files)) writeFileSync(join(dir, name), body);
    const lines: string[] = [];
    const app = downloadsPlugin({ dir, log: createLogger("info", {}, { write: (_l, line) => lines.push(line) }) });
    for (const [name, body] of Object.entries(files)) {
      const res = await app.handle(new Request(`http://localhost/downloads/${name}`));
      expect(`${name} ${res.status} ${await res.text()}`).toBe(`${name} 200 ${body}`);
    }
    expect(lines.filter((l) => l.includes("download built"))).toEqual([]);
  });

  test("where a package cannot be built, the answer is a 503 in the envelope, and the build is not tried again on every request", async () => {
    const server = await sharedServer();
    const { services } = server;
    let builds = 0;
    const lines: string[] = [];
    const app = new Elysia()
      .use(edgePlugin({ edge: services.edge, log: services.log, inflight: { count: 0 }, maxBodyBytes: 1024 }))
      .use(
        downloadsPlugin({
          dir: join(work, "no-such-dir"),
          log: createLogger("info", {}, { write: (_l, line) => lines.push(line) }),
          build: async () => {
            builds++;
            throw new Error("dts-bundle-generator is not installed");
          },
        }),
      )
      .listen({ port: 0, hostname: "127.0.0.1" });
    try {
      const url = `http://127.0.0.1:${app.server!.port}`;
      for (let i = 0; i < 3; i++) {
        const res = await fetch(`${url}/downloads/mc-platform-client.tgz`);
        const text = await res.text();
        expect(`${res.status} ${text}`).toStartWith('503 {"error":{"code":"unavailable"');
        expect(text).toContain("npm run build");
        expect(text).not.toContain("dts-bundle-generator");
      }
      expect(builds).toBe(1);
      // The cause is in the log for the operator.
      expect(
        lines.filter((l) => l.includes("download build failed") && l.includes("dts-bundle-generator")),
      ).toHaveLength(1);
    } finally {
      app.stop(true);
    }
  });
});
