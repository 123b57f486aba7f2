import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { createRequire } from "node:module";
import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import { Elysia } from "elysia";
import type { Config } from "./config";
import { openDatabase } from "./db/client";
import { adoptRequestInfo, errorResponse, logAccess, requestInfo, responseHeaders, type Inflight } from "./http";
import { AppError } from "./lib/errors";
import { createLogger, type Logger } from "./lib/log";
import { explainListenError } from "./lib/startup";
import { buildOpenApiDocument } from "./openapi";
import { createServices, type Services } from "./services";
import { readLimited } from "./lib/body";
import { clientAddress, makeContext, mountRest } from "./trpc/rest";
import { appRouter } from "./trpc/router";
import { mountLoginBrowserRoutes } from "./login/browser";
import { createDevProvider } from "./identity/dev-provider";
import { mountAnalyticsSocket } from "./realtime/socket";
import { buildAsyncApiDocument } from "./realtime/asyncapi";

const require = createRequire(import.meta.url);
// The package exports no path to its browser bundle; it sits beside the main entry.
const SCALAR_JS = readFileSync(join(dirname(require.resolve("@scalar/api-reference")), "browser/standalone.js"));

const DOCS_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'none'",
].join("; ");

const DOCS_HTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>API reference</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body><div id="app"></div><script src="/docs/scalar.js"></script><script src="/docs/init.js"></script></body></html>`;
const DOCS_INIT = `Scalar.createApiReference('#app', { url: '/openapi.json', withDefaultFonts: false, hideClientButton: true });`;

function staticResponse(request: Request, body: BodyInit, type: string, extra: Record<string, string> = {}) {
  return new Response(body, {
    headers: responseHeaders(request, { "content-type": type, "x-content-type-options": "nosniff", ...extra }),
  });
}

/**
 * tRPC's fetch adapter reads whole bodies without a limit: refuse a declared length over
 * ours, and buffer an undeclared (chunked) one through the bounded reader first.
 */
async function boundedTrpcRequest(request: Request, maxBytes: number): Promise<Request> {
  const declared = request.headers.get("content-length");
  if (declared !== null) {
    if (Number(declared) > maxBytes)
      throw new AppError("payload_too_large", `The body is larger than ${maxBytes} bytes.`);
    return request;
  }
  if (!request.body) return request;
  const body = await readLimited(request.body, maxBytes);
  const bounded = new Request(request.url, {
    method: request.method,
    headers: request.headers,
    body: body as Uint8Array<ArrayBuffer>,
  });
  adoptRequestInfo(request, bounded);
  return bounded;
}

/** A plain route behind the edge (CORS, general rate limit), answering 429 in the envelope. */
export function admitted(services: Services, handler: (request: Request) => Response | Promise<Response>) {
  return async ({
    request,
    server,
  }: {
    request: Request;
    server: { requestIP(r: Request): { address: string } | null } | null;
  }) => {
    try {
      await services.edge.admit(request, clientAddress(server, request));
    } catch (err) {
      const res = errorResponse(err, request, services.log);
      logAccess(services.log, request, res.status);
      return res;
    }
    return handler(request);
  };
}

/** Composes the HTTP surface: REST door, tRPC door, OpenAPI document, docs. */
export function createApp(services: Services, inflight: Inflight = { count: 0 }) {
  const { log, config } = services;
  const openapiJson = JSON.stringify(buildOpenApiDocument(appRouter, config.PUBLIC_URL));
  const asyncapiJson = JSON.stringify(buildAsyncApiDocument(config.PUBLIC_URL));

  const app = new Elysia({
    aot: true,
    // Bun's WebSocket settings: slow consumers are closed at the backpressure limit instead of
    // buffering without bound; idle sockets are pinged and closed if they stop answering.
    websocket: {
      backpressureLimit: config.WS_BACKPRESSURE_BYTES,
      closeOnBackpressureLimit: true,
      idleTimeout: config.WS_IDLE_TIMEOUT_SECONDS,
      sendPings: true,
      maxPayloadLength: 16 * 1024,
      perMessageDeflate: false,
    },
  })
    .onError(async ({ code, error, request, server }) => {
      // Unknown paths count toward the general limit too (a scan is traffic like any other).
      const over = await services.edge.admit(request, clientAddress(server, request)).then(
        () => undefined,
        (e: unknown) => e,
      );
      const err =
        over ??
        (code === "NOT_FOUND"
          ? new AppError("not_found", `No route for ${request.method} ${new URL(request.url).pathname}.`)
          : code === "PARSE"
            ? new AppError("invalid_json", "The body could not be parsed.")
            : error);
      const res = errorResponse(err, request, log);
      logAccess(log, request, res.status);
      return res;
    })
    .options("/*", ({ request }) => services.edge.preflight(request))
    .get(
      "/openapi.json",
      admitted(services, (request) => staticResponse(request, openapiJson, "application/json")),
    )
    .get(
      "/docs",
      admitted(services, (request) =>
        staticResponse(request, DOCS_HTML, "text/html; charset=utf-8", {
          "content-security-policy": DOCS_CSP,
          "x-frame-options": "DENY",
          "referrer-policy": "no-referrer",
        }),
      ),
    )
    .get(
      "/docs/scalar.js",
      admitted(services, (request) =>
        staticResponse(request, SCALAR_JS, "text/javascript; charset=utf-8", {
          "cache-control": "public, max-age=86400",
        }),
      ),
    )
    .get(
      "/docs/init.js",
      admitted(services, (request) => staticResponse(request, DOCS_INIT, "text/javascript; charset=utf-8")),
    )
    .all(
      "/trpc/*",
      async ({ request: original, server }) => {
        let request = original;
        const info = requestInfo(request);
        try {
          await services.edge.admit(request, clientAddress(server, original));
          request = await boundedTrpcRequest(request, config.MAX_BODY_BYTES);
        } catch (err) {
          const res = errorResponse(err, request, log);
          logAccess(log, request, res.status);
          return res;
        }
        const ctx = makeContext(services, request, clientAddress(server, original));
        inflight.count++;
        const res = await fetchRequestHandler({
          endpoint: "/trpc",
          req: request,
          router: appRouter,
          createContext: () => ctx,
          onError: ({ error }) => {
            if (error.code === "INTERNAL_SERVER_ERROR")
              log.error("unhandled error", { request_id: info.id, err: error.cause ?? error });
          },
          responseMeta: ({ errors }) => {
            const headers = new Headers(Object.entries(ctx.resHeaders));
            for (const e of errors) {
              const h = (e instanceof AppError ? e : e.cause instanceof AppError ? e.cause : undefined)?.headers;
              if (h) for (const [k, v] of Object.entries(h)) headers.set(k, v);
            }
            return { headers };
          },
        }).finally(() => inflight.count--);
        res.headers.set("x-request-id", info.id);
        logAccess(log, request, res.status);
        return res;
      },
      { parse: "none" },
    );

  mountRest(app as unknown as Elysia, appRouter, services, inflight);
  mountLoginBrowserRoutes(app as unknown as Elysia, services);
  mountAnalyticsSocket(app as unknown as Elysia, services);
  app.get(
    "/asyncapi.json",
    admitted(services, (request) => staticResponse(request, asyncapiJson, "application/json")),
  );
  if (config.DEV_IDP_ENABLED && !config.DEV_IDP_URL) {
    const provider = createDevProvider({ basePath: "/dev-idp" });
    app.all("/dev-idp/*", ({ request }) => provider.fetch(request), { parse: "none" });
  }
  return app;
}

export interface RunningServer {
  url: string;
  port: number;
  services: Services;
  /** Graceful: stop accepting, finish in-flight requests, close the database. */
  stop(): Promise<void>;
}

/** Opens the database (migrating it), builds the services and listens. Used by main and tests. */
export async function startServer(
  config: Config,
  log: Logger = createLogger(config.LOG_LEVEL),
): Promise<RunningServer> {
  const database = await openDatabase({
    url: config.DATABASE_URL,
    dataDir: config.DATA_DIR,
    connect: { timeoutSeconds: config.DATABASE_CONNECT_TIMEOUT_SECONDS, log },
  });
  const services = await createServices(config, database, log);
  const inflight: Inflight = { count: 0 };
  const app = createApp(services, inflight);
  // Bun's own cap answers with a bare 413; ours (declared length, then a bounded stream
  // read) answers in the envelope, so Bun's is set out of the way.
  try {
    // Elysia turns reusePort on by default: a second process would then share the port unseen.
    app.listen({
      port: config.PORT,
      hostname: config.HOST,
      maxRequestBodySize: Number.MAX_SAFE_INTEGER,
      reusePort: config.PORT_SHARING,
    });
  } catch (err) {
    await services.realtime.close();
    await database.close();
    throw explainListenError(err, config.PORT, config.HOST);
  }
  const server = app.server!;
  const port = server.port!;
  services.realtime.attach((topic, message) => void server.publish(topic, message));
  for (const task of services.background) task.start();
  let stopping: Promise<void> | undefined;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    services,
    stop() {
      stopping ??= (async () => {
        // Stop accepting, then let running handlers finish (Bun's stop resolves once sockets
        // close, which a client that gave up does before its handler is done).
        const deadline = Date.now() + config.SHUTDOWN_GRACE_MS;
        await Promise.race([server.stop(false), Bun.sleep(config.SHUTDOWN_GRACE_MS)]);
        while (inflight.count > 0 && Date.now() < deadline) await Bun.sleep(10);
        server.stop(true);
        await Promise.all(services.background.map((t) => t.stop()));
        await services.realtime.close();
        await database.close();
      })();
      return stopping;
    },
  };
}
