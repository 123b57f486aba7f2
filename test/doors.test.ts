import { beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import Ajv2020 from "ajv/dist/2020";
import addFormats from "ajv-formats";
import { calculateJwkThumbprint, importJWK } from "jose";
import { join } from "node:path";
import type { RunningServer } from "../src/app";
import { COMPONENT_NAMES, OPERATION_EXAMPLES } from "../src/http/openapi-reference";
import { restRoutes } from "../src/trpc/rest";
import { redocly, spectral, writeGeneratedDocument } from "../scripts/lint-openapi";
import { appRouter } from "../src/trpc/router";
import { ciRunsElsewhere, sharedServer, tempDir } from "./harness";
import { api, newUser, trpcClient } from "./helpers";

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
      // A public read of a named thing that does not exist is a 404 of its own, not the router's.
      const ownNotFound = rest.status === 404 && !String(rest.body?.error?.message).startsWith("No route for");
      expect(`${r.method} ${r.path} -> ${ownNotFound ? "its own 404" : rest.status}`).not.toMatch(/-> (404|5\d\d)$/);
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
    const variants = (schema: { oneOf?: { $ref: string }[] }) =>
      (schema.oneOf ?? []).map((v) => doc.components.schemas[v.$ref.split("/").pop() as string]);
    const validate = variants(outputOf("/client/ms-auth/session/validate", "post"));
    // skin and cape: only with `textures: true` (docs/identity.md).
    expect(validate.map((v) => Object.keys(v.properties).sort())).toContainEqual([
      "assertion",
      "cape",
      "expires_at",
      "mc_username",
      "mc_uuid",
      "skin",
      "valid",
    ]);
    const poll = variants(outputOf("/client/ms-auth/poll", "post"));
    expect(poll.flatMap((v) => v.properties.status.enum ?? [v.properties.status.const])).toContain("authorized");
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

  test("every operation has a description and examples that its own procedure's schemas accept", () => {
    const problems: string[] = [];
    for (const r of restRoutes(appRouter)) {
      const key = `${r.method} ${r.path}`;
      const op = doc.paths[r.path][r.method.toLowerCase()];
      if (!(op.description?.length > 20)) problems.push(`${key}: no description`);
      const ex = OPERATION_EXAMPLES[r.procedurePath];
      if (!ex) {
        problems.push(`${key}: no example`);
        continue;
      }
      const def = (appRouter._def.procedures as any)[r.procedurePath]._def;
      const inputs = def.inputs as { safeParse(v: unknown): { success: boolean; error?: unknown } }[];
      if (inputs.length === 0 && ex.request) problems.push(`${key}: an example request for a procedure without input`);
      for (const parser of inputs) {
        const parsed = parser.safeParse(ex.request ?? {});
        if (!parsed.success) problems.push(`${key}: example request refused: ${parsed.error}`);
      }
      for (const value of [ex.response, ...Object.values(ex.more ?? {}).map((m) => m.value)]) {
        const parsed = def.output.safeParse(value);
        if (!parsed.success) problems.push(`${key}: example answer refused: ${parsed.error}`);
      }
      const media = op.responses[String(r.status)].content["application/json"];
      if (media.example === undefined && media.examples === undefined)
        problems.push(`${key}: no answer example in the document`);
      const body = op.requestBody?.content?.["application/json"];
      if (body && body.example === undefined) problems.push(`${key}: no request example in the document`);
      for (const p of op.parameters ?? [])
        if (p.required && p.example === undefined) problems.push(`${key}: parameter ${p.name} has no example`);
    }
    expect(problems).toEqual([]);
  });

  test("creates answer 201 Created on REST and the document declares it; every other operation 200", async () => {
    const creates = restRoutes(appRouter)
      .filter((r) => r.status === 201)
      .map((r) => `${r.method} ${r.path}`);
    expect(creates.sort()).toEqual(
      [
        "POST /auth/signup",
        "POST /teams",
        "POST /teams/{team_id}/members",
        "POST /teams/{team_id}/opt-outs",
        "POST /teams/{team_id}/api-keys",
        "POST /client/apps",
        "POST /server/servers",
        "POST /server/bans",
        "POST /server/kicks",
        "POST /server/incidents",
        "POST /server/incidents/{incident_id}/updates",
        "POST /server/maintenance",
        "POST /server/ranks",
        "POST /server/announcements",
        "POST /server/networks/{network_name}/bans",
        "POST /server/networks/{network_name}/ranks",
        "POST /teams/{team_id}/webhooks",
        "POST /teams/{team_id}/alert-rules",
        "POST /teams/{team_id}/status-pages",
        "POST /players/{uuid}/notes",
      ].sort(),
    );
    for (const r of restRoutes(appRouter)) {
      const successes = Object.keys(doc.paths[r.path][r.method.toLowerCase()].responses).filter((s) => s < "300");
      expect(`${r.method} ${r.path} ${successes}`).toBe(`${r.method} ${r.path} ${r.status}`);
    }
    const user = await newUser(server, "created");
    const made = await api(server, "POST", "/teams", { token: user.token, body: { name: "Created" } });
    expect(made.status).toBe(201);
    // The typed door has no status of its own to give: the same create is an ordinary result there.
    const typed = await trpcClient(server, user.token).teams.create.mutate({ name: "Typed" });
    expect(typed.role).toBe("owner");
    // Not a create: signing in answers 200.
    expect(
      (await api(server, "POST", "/auth/login", { body: { email: user.email, password: user.password } })).status,
    ).toBe(200);
  });

  test("resources are named components, referenced from the operations that answer them", () => {
    for (const name of [...COMPONENT_NAMES, "Error", "PollResult", "SessionValidation"])
      expect(`${name}: ${Boolean(doc.components.schemas[name])}`).toBe(`${name}: true`);
    const answer = (method: string, path: string, status = "200") =>
      doc.paths[path][method].responses[status].content["application/json"].schema;
    expect(answer("get", "/server/servers/{server_id}")).toEqual({ $ref: "#/components/schemas/Server" });
    expect(answer("post", "/server/bans", "201")).toEqual({ $ref: "#/components/schemas/Ban" });
    expect(answer("post", "/teams", "201")).toEqual({ $ref: "#/components/schemas/Team" });
    expect(answer("post", "/client/apps", "201")).toEqual({ $ref: "#/components/schemas/CreatedClient" });
    expect(doc.components.schemas.CreatedClient.properties.app).toEqual({ $ref: "#/components/schemas/ClientApp" });
    expect(doc.components.schemas.ServerList ?? answer("get", "/server/servers").properties.servers.items).toEqual({
      $ref: "#/components/schemas/Server",
    });
  });

  test("poll and validate answers are discriminated: each status or validity names the fields it carries", () => {
    const s = doc.components.schemas;
    expect(doc.paths["/client/ms-auth/poll"].post.responses["200"].content["application/json"].schema).toEqual({
      $ref: "#/components/schemas/PollResult",
    });
    expect(s.PollResult.discriminator.propertyName).toBe("status");
    expect(Object.keys(s.PollResult.discriminator.mapping).sort()).toEqual(
      ["authenticated", "authorized", "denied", "expired", "pending"].sort(),
    );
    const required = (name: string) => [...s[name].required].sort();
    expect(required("PollAuthorized")).toEqual(["mc_username", "status", "svc_session_token"]);
    expect(required("PollPending")).toEqual(["expires_in", "status"]);
    expect(required("PollAuthenticated")).toEqual(["expires_in", "mc_username", "status"]);
    expect(required("PollDenied")).toEqual(["error", "status"]);
    expect(required("PollExpired")).toEqual(["error", "status"]);
    expect(s.SessionValidation.oneOf).toEqual([
      { $ref: "#/components/schemas/SessionValid" },
      { $ref: "#/components/schemas/SessionInvalid" },
    ]);
    expect(s.SessionValid.properties.valid.const).toBe(true);
    expect(s.SessionInvalid.properties.valid.const).toBe(false);
    expect(required("SessionValid")).toEqual(["expires_at", "mc_username", "mc_uuid", "valid"]);
    expect(Object.keys(s.SessionInvalid.properties)).toEqual(["valid"]);
  });

  test("each operation lists the error statuses it can answer, each with the envelope and an example", () => {
    const statuses = (method: string, path: string) =>
      Object.keys(doc.paths[path][method].responses).filter((s) => s >= "400" && s !== "default");
    expect(statuses("get", "/health")).toEqual(["413", "429", "503"]);
    // A POST with a credential also answers 409 (its Idempotency-Key in use) and 422 (reused).
    expect(statuses("post", "/client/ms-auth/poll")).toEqual(["400", "401", "404", "409", "413", "415", "422", "429"]);
    expect(statuses("post", "/client/ms-auth/session/validate")).toEqual([
      "400",
      "401",
      "409",
      "413",
      "415",
      "422",
      "429",
    ]);
    expect(statuses("post", "/auth/login")).not.toContain("422");
    expect(statuses("get", "/teams")).toEqual(["401", "413", "429"]);
    expect(statuses("post", "/client/apps")).toContain("403");
    const poll404 = doc.paths["/client/ms-auth/poll"].post.responses["404"].content["application/json"];
    expect(poll404.schema).toEqual({ $ref: "#/components/schemas/Error" });
    expect(poll404.example.error.code).toBe("not_found");
    expect(doc.paths["/client/ms-auth/poll"].post.responses["401"].content["application/json"].example.error.code).toBe(
      "invalid_client",
    );
    const poll409 = doc.paths["/client/ms-auth/poll"].post.responses["409"];
    expect(poll409.content["application/json"].example.error.code).toBe("idempotency_key_in_progress");
    expect(doc.paths["/teams"].post.responses["422"].content["application/json"].example.error.code).toBe(
      "idempotency_key_reused",
    );
  });

  test("every POST that takes a credential declares Idempotency-Key, and its success the Idempotent-Replayed header", () => {
    const ref = { $ref: "#/components/parameters/Idempotency-Key" };
    const access = new Map(restRoutes(appRouter).map((r) => [`${r.method.toLowerCase()} ${r.path}`, r.access]));
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        const declared = (op.parameters ?? []).some((p: any) => p.$ref === ref.$ref);
        const a = access.get(`${method} ${path}`);
        const expected = method === "post" && a !== undefined && a !== "public";
        expect(`${method} ${path}: ${declared}`).toBe(`${method} ${path}: ${expected}`);
        if (!declared) continue;
        const success = Object.entries<any>(op.responses).find(([s]) => s.startsWith("2"))![1];
        expect(success.headers["Idempotent-Replayed"]).toEqual({ $ref: "#/components/headers/Idempotent-Replayed" });
      }
    }
    expect(doc.components.parameters["Idempotency-Key"]).toMatchObject({ in: "header", required: false });
  });

  test.skipIf(ciRunsElsewhere("pglite"))(
    "the document passes the Redocly linter with no errors",
    async () => {
      // The live document, as a client downloads it.
      const file = join(tempDir("openapi-"), "openapi.json");
      writeFileSync(file, JSON.stringify(doc));
      const result = await redocly(file);
      expect(`${result.ok}\n${result.report}`).toStartWith("true\n");
      // Examples are checked against their schemas too: a wrong one is a warning there, so none may be left.
      expect(result.report).not.toContain("no-invalid-media-type-examples");
    },
    60_000,
  );

  test.skipIf(ciRunsElsewhere("pglite"))(
    "the document passes Spectral's OWASP API Security ruleset with no errors",
    async () => {
      // As deployed: behind https (the ruleset rightly refuses a plain-http server URL).
      const result = await spectral(await writeGeneratedDocument());
      expect(result.findings.filter((r) => r.severity === 0).map((r) => `${r.code} at ${r.path.join(".")}`)).toEqual(
        [],
      );
      expect(result.report).toEndWith("(OWASP API Security ruleset)");
      expect(result.ok).toBe(true);
      // The OWASP rules really ran: their warnings are there (500 responses are not documented per operation).
      expect(result.findings.some((r) => r.code === "owasp:api8:2023-define-error-responses-500")).toBe(true);
    },
    120_000,
  );

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

  test("/.well-known/jwks.json has an example its schema accepts, each kid the thumbprint of its key", async () => {
    const media = doc.paths["/.well-known/jwks.json"].get.responses["200"].content["application/jwk-set+json"];
    expect(media.example?.keys?.length).toBeGreaterThanOrEqual(1);
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    const validate = ajv.compile(media.schema);
    expect(validate(media.example) ? [] : validate.errors).toEqual([]);
    for (const k of media.example.keys) {
      expect(await calculateJwkThumbprint({ kty: k.kty, crv: k.crv, x: k.x })).toBe(k.kid);
      // A real Ed25519 public key: 32 bytes that import as one.
      expect(Buffer.from(k.x, "base64url").length).toBe(32);
      await importJWK(k, "EdDSA");
    }
  });

  test("every AsyncAPI message carries an example that its payload schema accepts", async () => {
    const asyncapi = (await api(server, "GET", "/asyncapi.json")).body;
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(ajv);
    const problems: string[] = [];
    for (const [name, m] of Object.entries<any>(asyncapi.components.messages)) {
      if (!m.examples?.length) problems.push(`${name}: no example`);
      const validate = ajv.compile(m.payload);
      for (const e of m.examples ?? [])
        if (!validate(e.payload)) problems.push(`${name}: ${JSON.stringify(validate.errors?.slice(0, 2))}`);
    }
    expect(problems).toEqual([]);
  });

  test("/docs/asyncapi renders the stream's document (every message, its example, a browser snippet), linked from /docs", async () => {
    const asyncapi = (await api(server, "GET", "/asyncapi.json")).body;
    const page = await api(server, "GET", "/docs/asyncapi");
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toContain("text/html");
    expect(page.headers.get("content-security-policy")).toContain("default-src 'self'");
    // Nothing loaded from anywhere: no script at all, styles inline.
    expect(page.text).not.toMatch(/<script|https?:\/\/[^"<\s]*\.(js|css)/);
    for (const [name, m] of Object.entries<any>(asyncapi.components.messages)) {
      expect(page.text).toContain(`id="msg-${name}"`);
      // The example as JSON, escaped for HTML.
      const sample = JSON.stringify(m.examples[0].payload, null, 2).split("\n")[1]!.trim().replaceAll('"', "&quot;");
      expect(page.text).toContain(sample);
    }
    expect(page.text).toContain("new WebSocket(");
    expect(page.text).toContain("/ws/server/");
    expect((await api(server, "GET", "/docs")).text).toContain('href="/docs/asyncapi"');
  });
});
