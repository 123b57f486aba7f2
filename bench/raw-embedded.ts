/**
 * Baseline for bench/embedded.ts: plain Bun.serve over the same PGlite directory, answering
 * session/validate with ONE joined query written by hand (client secret, ms_auth module and
 * live session together) and nothing else: no framework, no tRPC, no rate limit, no services.
 * The app's ratio to it is what the whole stack costs on the embedded database.
 */
import { loadConfig } from "../src/config";
import { openDatabase } from "../src/db/client";
import { safeEqual, sha256 } from "../src/lib/secrets";

const config = loadConfig();
const database = await openDatabase({ dataDir: config.DATA_DIR });
const client = database.db.$client;
const VALIDATE = `
  select a.secret_hash, s.mc_uuid, s.mc_username, s.expires_at, s.revoked_at, s.client_id as session_client
    from client_apps a
    join client_modules m on m.client_id = a.id and m.module_key = 'ms_auth'
    left join sessions s on s.token_hash = $2
   where a.id = $1`;

const json = (body: unknown, status = 200) =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });

const server = Bun.serve({
  port: config.PORT,
  hostname: "127.0.0.1",
  async fetch(req) {
    const url = new URL(req.url);
    if (url.pathname === "/health") return json({ status: "ok" });
    if (req.method === "POST" && url.pathname === "/client/ms-auth/session/validate") {
      const input = (await req.json()) as { client_id: string; client_secret: string; svc_session_token: string };
      const { rows } = await client.query<Record<string, unknown>>(VALIDATE, [
        input.client_id,
        sha256(input.svc_session_token),
      ]);
      const row = rows[0];
      if (!row || !safeEqual(sha256(input.client_secret), String(row.secret_hash)))
        return json({ error: { code: "invalid_client" } }, 401);
      const live =
        row.mc_uuid &&
        row.session_client === input.client_id &&
        !row.revoked_at &&
        Date.parse(String(row.expires_at)) > Date.now();
      return json(live ? { valid: true, mc_uuid: row.mc_uuid, mc_username: row.mc_username } : { valid: false });
    }
    return json({ error: { code: "not_found" } }, 404);
  },
});
process.once("SIGTERM", async () => {
  server.stop(true);
  await database.close();
  process.exit(0);
});
