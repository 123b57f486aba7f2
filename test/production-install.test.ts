import { afterAll, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { tempDir, usingPostgres } from "./harness";
import { copyRepository, pageBlock, productionEnv, sh, startService } from "./install-steps";
import { freshDatabase } from "./shared";

/**
 * docs/production-install.md as an operator follows it: its build-and-prune commands, run in a
 * copy of the repository, then the service started from that copy with NODE_ENV=production on a
 * fresh PostgreSQL database. Run where the suite runs on PostgreSQL.
 */

const work = tempDir("mcp-prod-install-");
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** Development packages the service must run without. */
const DEV_ONLY = [
  "typescript",
  "typescript5",
  "@scalar/api-reference",
  "playwright-core",
  "@biomejs/biome",
  "drizzle-kit",
];

test.skipIf(!usingPostgres())(
  "the page's commands leave only production dependencies and dist/, and the service runs from them with NODE_ENV=production on PostgreSQL: health, downloads, the reference viewer, the dashboard",
  async () => {
    const dir = join(work, "mc-platform");
    copyRepository(dir);
    const installed = await sh(pageBlock("build"), dir);
    expect(`${installed.code} ${installed.code === 0 ? "" : installed.output}`).toBe("0 ");

    const modules = join(dir, "node_modules");
    expect(DEV_ONLY.filter((p) => existsSync(join(modules, p)))).toEqual([]);
    for (const p of ["elysia", "@sinclair/typebox", "@electric-sql/pglite", "postgres", "react-dom"])
      expect(`${p} ${existsSync(join(modules, p))}`).toBe(`${p} true`);
    expect(readdirSync(join(dir, "dist/downloads")).sort()).toEqual([
      "mc-platform-agent.mjs",
      "mc-platform-agent.tgz",
      "mc-platform-client.tgz",
    ]);

    const db = await freshDatabase(process.env.MCP_ADMIN_DATABASE_URL!, "mcp_prod_install");
    try {
      const service = await startService(dir, productionEnv(db.url));
      try {
        const health = await (await fetch(`${service.url}/health`)).json();
        expect(health).toMatchObject({ status: "ok", database: "ok" });
        expect(service.log()).toContain('"database":"postgres"');

        // The build's files, byte for byte, and nothing built at run time.
        for (const file of readdirSync(join(dir, "dist/downloads"))) {
          const res = await fetch(`${service.url}/downloads/${file}`);
          expect(`${file} ${res.status}`).toBe(`${file} 200`);
          expect(new Uint8Array(await res.arrayBuffer())).toEqual(
            new Uint8Array(readFileSync(join(dir, "dist/downloads", file))),
          );
        }
        expect(service.log()).not.toContain("download built");

        const viewer = await fetch(`${service.url}/docs/scalar.js`);
        expect(viewer.status).toBe(200);
        expect((await viewer.arrayBuffer()).byteLength).toBe(readFileSync(join(dir, "dist/docs/scalar.js")).length);

        const page = await (await fetch(`${service.url}/`)).text();
        const script = /src="(\/assets\/[^"]+\.js)"/.exec(page)?.[1];
        expect(script).toBeTruthy();
        expect((await fetch(`${service.url}${script}`)).status).toBe(200);
      } finally {
        expect(await service.stop()).toBe(0);
      }
    } finally {
      await db.drop();
    }
  },
  240_000,
);
