/**
 * The raw baseline for bench/rest.ts and bench/login.ts: plain Bun.serve doing the same work
 * as the REST door for the benchmarked routes (same bearer parsing, same input schemas, same
 * rate limiter, same services, same database, same JSON), with no framework, no tRPC and no
 * bridge. The ratio app/raw is what the door itself costs.
 */
import { ZPollInput, ZSessionInput } from "../src/ms-auth/schemas";
import { bearerPrincipal, send, serveRaw } from "./lib/raw-server";

await serveRaw(async (req, url, services) => {
  if (url.pathname === "/health") return send(await services.health.check());
  const m = /^\/teams\/([0-9a-f-]{36})$/.exec(url.pathname);
  if (m && req.method === "GET") {
    const principal = await bearerPrincipal(services, req);
    if (!principal) return send({ error: { code: "unauthenticated" } }, 401);
    return send(await services.teams.get(principal, m[1]!));
  }
  if (req.method === "POST" && url.pathname === "/client/ms-auth/session/validate") {
    const input = ZSessionInput.parse(await req.json());
    const client = await services.clients.verify(input.client_id, input.client_secret);
    await services.limiter.enforce(services.limits.validate, client.app.id, {});
    return send(await services.msAuth.validate(client, input.svc_session_token));
  }
  if (req.method === "POST" && url.pathname === "/client/ms-auth/poll") {
    const input = ZPollInput.parse(await req.json());
    const client = await services.clients.verify(input.client_id, input.client_secret);
    await services.limiter.enforce(services.limits.poll, client.app.id, {});
    return send(await services.msAuth.poll(client, input.auth_request_id));
  }
  return undefined;
});
