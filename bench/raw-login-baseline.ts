/**
 * The raw baseline for bench/login.ts: plain Bun.serve doing validate's and poll's work directly,
 * with none of the app's services, framework, rate limiter or caches. Each request parses its
 * JSON body, then runs ONE joined, prepared statement that reads the client's secret hash and
 * the session (or the login request and its session), compares SHA-256 digests in constant time
 * and answers the same JSON as the app. The ratio app/raw is what the whole stack costs over
 * the least work the endpoint can do on the database.
 */
import { createHash, createHmac, hkdfSync, timingSafeEqual } from "node:crypto";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { openRawDb, type Row } from "./lib/raw-db";

const port = Number(process.env.PORT);
const dataDir = resolve(process.env.DATA_DIR ?? ".data");
const pem = process.env.JWT_PRIVATE_KEY ?? readFileSync(join(dataDir, "jwt-ed25519.pem"), "utf8");
// The app's keyring (src/lib/keyring.ts), restated: a session token is a MAC of its session id.
const macKey = Buffer.from(hkdfSync("sha256", pem, "mc-platform", "keyring v1", 32));
const sessionToken = (id: string) =>
  `mcp_sess_${createHmac("sha256", macKey).update("session").update("\0").update(id).digest("base64url")}`;
const sha256 = (v: string) => createHash("sha256").update(v).digest("hex");
const DUMMY = sha256("no such client");
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const { query, close } = await openRawDb(dataDir);

const VALIDATE = `
  select c.secret_hash, s.mc_uuid, s.mc_username, s.expires_at, s.revoked_at
  from client_apps c left join sessions s on s.token_hash = $2 and s.client_id = c.id
  where c.id = $1`;
const POLL = `
  select c.secret_hash, r.status, r.context, r.expires_at, s.id as session_id
  from client_apps c
  left join login_requests r on r.id = $2 and r.client_id = c.id
  left join sessions s on s.login_request_id = r.id
  where c.id = $1`;

const json = (body: unknown, status = 200) =>
  new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", "x-request-id": crypto.randomUUID() },
  });
const bad = (code: string, status: number) => json({ error: { code, message: code, request_id: "" } }, status);

function credentialsOk(row: Row | undefined, secret: string) {
  const a = Buffer.from(sha256(secret));
  const b = Buffer.from((row?.secret_hash as string | undefined) ?? DUMMY);
  return timingSafeEqual(a, b) && row !== undefined;
}

const server = Bun.serve({
  port,
  hostname: "127.0.0.1",
  async fetch(req) {
    const path = new URL(req.url).pathname;
    if (path === "/health") return json({ status: "ok" });
    if (req.method !== "POST") return bad("not_found", 404);
    let body: Record<string, unknown>;
    try {
      body = (await req.json()) as Record<string, unknown>;
    } catch {
      return bad("invalid_json", 400);
    }
    const { client_id: id, client_secret: secret } = body;
    if (typeof id !== "string" || !UUID.test(id) || typeof secret !== "string") return bad("validation_failed", 400);
    if (path === "/client/ms-auth/session/validate") {
      const token = body.svc_session_token;
      if (typeof token !== "string") return bad("validation_failed", 400);
      const [row] = await query(VALIDATE, [id, sha256(token)]);
      if (!credentialsOk(row, secret)) return bad("invalid_client", 401);
      const expires = row!.expires_at ? new Date(row!.expires_at as string) : null;
      if (!expires || row!.revoked_at || expires.getTime() <= Date.now()) return json({ valid: false });
      return json({
        valid: true,
        mc_uuid: row!.mc_uuid,
        mc_username: row!.mc_username,
        expires_at: expires.toISOString(),
      });
    }
    if (path === "/client/ms-auth/poll") {
      const rid = body.auth_request_id;
      if (typeof rid !== "string" || !UUID.test(rid)) return bad("validation_failed", 400);
      const [row] = await query(POLL, [id, rid]);
      if (!credentialsOk(row, secret)) return bad("invalid_client", 401);
      if (!row!.status) return bad("not_found", 404);
      const context = (typeof row!.context === "string" ? JSON.parse(row!.context) : row!.context) as {
        mcUsername?: string;
      };
      const out: Record<string, unknown> = { status: row!.status };
      if (context.mcUsername) out.mc_username = context.mcUsername;
      if (row!.session_id) out.svc_session_token = sessionToken(row!.session_id as string);
      return json(out);
    }
    return bad("not_found", 404);
  },
});

process.once("SIGTERM", async () => {
  server.stop(true);
  await close();
  process.exit(0);
});
