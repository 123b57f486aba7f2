/**
 * The raw baseline: plain Bun.serve doing the same work as the REST door for the benchmarked
 * routes (same bearer parsing, same input schemas, same rate limiter, same services, same
 * database, same JSON), with no framework,
 * no tRPC and no bridge. The ratio app/raw is what the door itself costs.
 */
import { loadConfig } from "../src/config";
import { openDatabase } from "../src/db/client";
import { toErrorBody, envelope } from "../src/lib/errors";
import { createLogger } from "../src/lib/log";
import { createServices } from "../src/services";
import { ZPollInput, ZSessionInput } from "../src/login/schemas";

const config = loadConfig();
const database = await openDatabase({ url: config.DATABASE_URL, dataDir: config.DATA_DIR });
const services = await createServices(config, database, createLogger("silent"));

const send = (body: unknown, status = 200) =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", "x-request-id": crypto.randomUUID() } });

const server = Bun.serve({
  port: config.PORT,
  hostname: "127.0.0.1",
  async fetch(req) {
    try {
      const url = new URL(req.url);
      if (url.pathname === "/health") return send(await services.health.check());
      const m = /^\/teams\/([0-9a-f-]{36})$/.exec(url.pathname);
      if (m && req.method === "GET") {
        const auth = /^Bearer\s+(\S+)$/i.exec(req.headers.get("authorization") ?? "");
        const principal = auth ? await services.accounts.authenticate(auth[1]!) : null;
        if (!principal) return send({ error: { code: "unauthenticated" } }, 401);
        return send(await services.teams.get(principal, m[1]!));
      }
      if (req.method === "POST" && url.pathname === "/client/ms-auth/session/validate") {
        const input = ZSessionInput.parse(await req.json());
        await services.limiter.enforce(services.limits.validate, input.client_id, {});
        return send(await services.login.validate(input.client_id, input.client_secret, input.svc_session_token));
      }
      if (req.method === "POST" && url.pathname === "/client/ms-auth/poll") {
        const input = ZPollInput.parse(await req.json());
        await services.limiter.enforce(services.limits.poll, input.client_id, {});
        return send(await services.login.poll(input.client_id, input.client_secret, input.auth_request_id));
      }
      return send({ error: { code: "not_found" } }, 404);
    } catch (err) {
      const { body, status } = toErrorBody(err);
      return send(envelope(body, ""), status);
    }
  },
});
process.once("SIGTERM", async () => {
  server.stop(true);
  await database.close();
  process.exit(0);
});
