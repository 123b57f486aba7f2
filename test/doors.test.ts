import { beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { RunningServer } from "../src/app";
import { restRoutes } from "../src/trpc/rest";
import { appRouter } from "../src/trpc/router";
import { sharedServer, tempDir } from "./harness";
import { api } from "./helpers";

let server: RunningServer;
let doc: any;
beforeAll(async () => {
  server = await sharedServer();
  doc = (await api(server, "GET", "/openapi.json")).body;
});

describe("one router, two doors", () => {
  test("every procedure has an OpenAPI path and is in /openapi.json with its method", () => {
    const procedures = Object.keys(appRouter._def.procedures);
    const routes = restRoutes(appRouter);
    expect(routes.map((r) => r.procedurePath).sort()).toEqual(procedures.sort());
    for (const r of routes)
      expect(`${r.method} ${r.path}: ${Boolean(doc.paths[r.path]?.[r.method.toLowerCase()])}`).toBe(
        `${r.method} ${r.path}: true`,
      );
  });

  test("every procedure answers on its REST path and on /trpc (never 404 or 5xx)", async () => {
    for (const r of restRoutes(appRouter)) {
      const path = r.path.replace(/\{\w+\}/g, "00000000-0000-4000-8000-000000000000");
      const rest = await api(server, r.method, path, r.method === "GET" || r.method === "DELETE" ? {} : { body: {} });
      expect(`${r.method} ${r.path} -> ${rest.status}`).not.toMatch(/-> (404|5\d\d)$/);
      const isQuery = (appRouter._def.procedures as any)[r.procedurePath]._def.type === "query";
      const trpc = isQuery
        ? await api(server, "GET", `/trpc/${r.procedurePath}`)
        : await api(server, "POST", `/trpc/${r.procedurePath}`, { body: {} });
      expect(`${r.procedurePath} -> ${trpc.status}`).not.toMatch(/-> (404|405|5\d\d)$/);
    }
  });

  test("procedures answered without output re-validation still declare their output in /openapi.json", () => {
    // validate, poll and teams.get skip tRPC's output middleware (their services build the shape).
    const outputOf = (path: string, method: string) => {
      const schema = doc.paths[path][method].responses["200"].content["application/json"].schema;
      return schema.$ref ? doc.components.schemas[schema.$ref.split("/").pop()] : schema;
    };
    expect(Object.keys(outputOf("/client/ms-auth/session/validate", "post").properties).sort()).toEqual([
      "expires_at",
      "mc_username",
      "mc_uuid",
      "valid",
    ]);
    expect(outputOf("/client/ms-auth/poll", "post").properties.status.enum).toContain("authorized");
    expect(Object.keys(outputOf("/teams/{team_id}", "get").properties)).toContain("role");
    for (const p of ["msAuth.validate", "msAuth.poll", "teams.get"]) {
      const def = (appRouter._def.procedures as any)[p]._def;
      expect(`${p}: ${def.middlewares.some((m: { _type?: string }) => m._type === "output")}`).toBe(`${p}: false`);
      expect(def.outputs?.length ?? (def.output ? 1 : 0)).toBeGreaterThan(0);
    }
  });

  test("the document names the bearer scheme, the error envelope and the rate limit headers", () => {
    expect(doc.components.securitySchemes.bearerAuth).toMatchObject({ type: "http", scheme: "bearer" });
    expect(doc.components.schemas.Error.properties.error.required.sort()).toEqual(["code", "message", "request_id"]);
    const me = doc.paths["/auth/me"].get;
    expect(me.security).toEqual([{ bearerAuth: [] }]);
    expect(me.responses["401"].content["application/json"].schema).toEqual({ $ref: "#/components/schemas/Error" });
    expect(me.responses["429"].headers["Retry-After"]).toBeDefined();
    expect(doc.paths["/auth/login"].post.security).toEqual([]);
  });

  test("the document passes the Redocly linter with no errors", async () => {
    const dir = tempDir("openapi-");
    const file = join(dir, "openapi.json");
    writeFileSync(file, JSON.stringify(doc));
    const proc = Bun.spawn(
      ["node_modules/.bin/redocly", "lint", file, "--config", "redocly.yaml", "--format", "stylish"],
      {
        stdout: "pipe",
        stderr: "pipe",
        env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" },
      },
    );
    const [code, out, err] = await Promise.all([
      proc.exited,
      new Response(proc.stdout).text(),
      new Response(proc.stderr).text(),
    ]);
    expect(`${code}\n${out}\n${err}`).toStartWith("0\n");
  }, 60_000);

  test("the document passes Spectral's OWASP API Security ruleset with no errors", async () => {
    const { buildOpenApiDocument } = await import("../src/openapi");
    // As deployed: behind https (the ruleset rightly refuses a plain-http server URL).
    const file = join(tempDir("owasp-"), "openapi.json");
    writeFileSync(file, JSON.stringify(buildOpenApiDocument(appRouter, "https://api.mc-platform.example")));
    const proc = Bun.spawn(
      ["node_modules/.bin/spectral", "lint", file, "--ruleset", ".spectral.mjs", "-f", "json", "--quiet"],
      { stdout: "pipe", stderr: "pipe" },
    );
    const [out, err, code] = await Promise.all([
      new Response(proc.stdout).text(),
      new Response(proc.stderr).text(),
      proc.exited,
    ]);
    // Spectral exits 0 when nothing reaches error severity; a crash or a ruleset that failed to
    // load exits otherwise, and is a failure here, not an empty (passing) result list.
    expect(`exit ${code} ${err.trim()}`).toBe("exit 0 ");
    const results = JSON.parse(out) as { code: string; severity: number; path: string[] }[];
    expect(results.filter((r) => r.severity === 0).map((r) => `${r.code} at ${r.path.join(".")}`)).toEqual([]);
    // The OWASP rules really ran: their warnings are there (500 responses are not documented per operation).
    expect(results.some((r) => r.code === "owasp:api8:2023-define-error-responses-500")).toBe(true);
  }, 120_000);

  test("/docs serves an interactive reference from the installed package, no CDN", async () => {
    const page = await api(server, "GET", "/docs");
    expect(page.status).toBe(200);
    expect(page.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    const scripts = [...page.text.matchAll(/src="([^"]+)"/g)].map((m) => m[1]!);
    expect(scripts.every((s) => s.startsWith("/docs/"))).toBe(true);
    const bundle = await fetch(`${server.url}/docs/scalar.js`);
    expect(bundle.status).toBe(200);
    expect((await bundle.arrayBuffer()).byteLength).toBeGreaterThan(100_000);
  });
});
