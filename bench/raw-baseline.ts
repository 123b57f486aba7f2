/**
 * The raw baseline for bench/rest.ts: plain Bun.serve doing the same work as the REST door for
 * the benchmarked routes (same bearer parsing, same services, same database, same JSON), with no
 * framework, no tRPC and no bridge. The ratio app/raw is what the door itself costs. (The login
 * routes' baseline does the work without the app's services: bench/raw-login-baseline.ts.)
 */
import { bearerPrincipal, send, serveRaw } from "./lib/raw-server";

await serveRaw(async (req, url, services) => {
  if (url.pathname === "/health") return send(await services.health.check());
  const m = /^\/teams\/([0-9a-f-]{36})$/.exec(url.pathname);
  if (m && req.method === "GET") {
    const principal = await bearerPrincipal(services, req);
    if (!principal) return send({ error: { code: "unauthenticated" } }, 401);
    return send(await services.teams.get(principal, m[1]!));
  }
  return undefined;
});
