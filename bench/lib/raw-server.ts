/**
 * The raw baselines' common frame: the app's own services on the app's own database, served by
 * plain Bun.serve with hand-written routing. Each baseline supplies only its routes, so the
 * difference to the app is the framework, the tRPC caller and the bridge, not the work.
 */
import { loadConfig } from "../../src/config";
import { openDatabase } from "../../src/db/client";
import { envelope, toErrorBody } from "../../src/lib/errors";
import { createLogger } from "../../src/lib/log";
import { createServices } from "../../src/services";
import type { Services } from "../../src/trpc/context";
import type { Principal } from "../../src/auth/principal";

export const send = (body: unknown, status = 200) =>
  new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", "x-request-id": crypto.randomUUID() },
  });

/** The bearer credential's principal, as the app resolves it. */
export async function bearerPrincipal(services: Services, req: Request): Promise<Principal | null> {
  const auth = /^Bearer\s+(\S+)$/i.exec(req.headers.get("authorization") ?? "");
  return auth ? services.auth.authenticate(auth[1]!) : null;
}

export async function serveRaw(route: (req: Request, url: URL, services: Services) => Promise<Response | undefined>) {
  const config = loadConfig();
  const database = await openDatabase({ url: config.DATABASE_URL, dataDir: config.DATA_DIR });
  const services = await createServices(config, database, createLogger("silent"));
  const server = Bun.serve({
    port: config.PORT,
    hostname: "127.0.0.1",
    async fetch(req) {
      try {
        const url = new URL(req.url);
        return (await route(req, url, services)) ?? send({ error: { code: "not_found" } }, 404);
      } catch (err) {
        const { body, status } = toErrorBody(err);
        return send(envelope(body, ""), status);
      }
    },
  });
  process.once("SIGTERM", async () => {
    server.stop(true);
    await services.realtime.close();
    await database.close();
    process.exit(0);
  });
}
