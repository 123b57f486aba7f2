import { Elysia } from "elysia";
import type { Config } from "./config";
import { dashboardSessionRoutes } from "./auth/browser";
import { dashboardPlugin } from "./dashboard/plugin";
import { openDatabase } from "./db/client";
import { DOWNLOADS_DIR } from "./downloads/catalog";
import { downloadsPlugin } from "./downloads/plugin";
import { devIdentityProvider } from "./identity/dev-provider/plugin";
import { docsRoutes } from "./http/docs";
import { edgePlugin, type Inflight } from "./http/edge";
import { createLogger, type Logger } from "./lib/log";
import { explainListenError } from "./lib/startup";
import { playerAppsRoutes } from "./account/browser";
import { loginBrowserRoutes } from "./ms-auth/browser";
import { oidcRoutes } from "./oidc/browser";
import { buildOpenApiDocument } from "./openapi";
import { buildAsyncApiDocument } from "./realtime/asyncapi";
import { analyticsSocket } from "./realtime/socket";
import { createServices } from "./services";
import type { Services } from "./trpc/context";
import { trpcDoor } from "./trpc/door";
import { restDoor } from "./trpc/rest";
import { wellKnownRoutes } from "./http/well-known";
import { metricsRoutes } from "./http/metrics";
import { appRouter } from "./trpc/router";
import { statusFastRoutes, statusPagesPlugin } from "./status-pages/plugin";

/**
 * Composes the HTTP surface. The edge comes first, so every module mounted after it (the
 * doors, the browser pages, the documents, the socket) passes the one request pipeline.
 */
export function createApp(services: Services, inflight: Inflight = { count: 0 }) {
  const { log, config, edge } = services;
  // What the status pages' fast routes hand on when they cannot answer from memory: the app.
  const self = { fetch: (_request: Request): Response | Promise<Response> => new Response(null, { status: 503 }) };
  const app = new Elysia({
    aot: true,
    // The public status pages' cached answers, ahead of the router (src/status-pages/plugin.ts).
    serve: { routes: statusFastRoutes(services, () => self) as never },
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
    .use(edgePlugin({ edge, log, inflight, maxBodyBytes: config.MAX_BODY_BYTES, metrics: services.metrics }))
    .use(metricsRoutes(services.metrics, config.METRICS_TOKEN))
    .use(
      docsRoutes({
        openapi: () => buildOpenApiDocument(appRouter, config.PUBLIC_URL),
        asyncapi: () => buildAsyncApiDocument(config.PUBLIC_URL),
      }),
    )
    .use(trpcDoor(appRouter, services))
    .use(restDoor(appRouter, services))
    .use(loginBrowserRoutes(services))
    .use(playerAppsRoutes(services))
    .use(oidcRoutes(services))
    .use(dashboardSessionRoutes(services))
    .use(wellKnownRoutes(services))
    .use(statusPagesPlugin(services))
    .use(analyticsSocket(services))
    // A production install serves what its build step made; elsewhere each package is built on
    // its first request, so a stale dist/ never hides a change to packages/.
    .use(downloadsPlugin({ dir: config.NODE_ENV === "production" ? DOWNLOADS_DIR : null, log }))
    // Tests build it on first request, so only the suites that open the dashboard pay for it.
    .use(dashboardPlugin({ prebuild: config.NODE_ENV !== "test" }));
  if (services.devIdp) app.use(devIdentityProvider(services.devIdp));
  self.fetch = (request) => app.fetch(request);
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
    pool: { max: config.DATABASE_POOL_MAX, idleTimeoutSeconds: config.DATABASE_IDLE_TIMEOUT_SECONDS },
    initInChild: config.NODE_ENV !== "test",
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
  const { metrics } = services;
  services.realtime.attach((topic, message) => {
    metrics?.socketMessage("published");
    void server.publish(topic, message);
  });
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
