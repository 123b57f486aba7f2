/**
 * The raw baseline for bench/rest.ts, doing the work directly rather than through the app's
 * services: plain Bun.serve, the bearer token verified with jose (EdDSA, issuer and audience,
 * verified tokens kept by their text until they expire, as the app does), ONE prepared
 * postgres.js (or PGlite) query reading the team with the caller's role, the same JSON answer.
 * No framework, no tRPC, no rate limiter, no login-liveness check. Because it does not share the
 * app's code, the same baseline can be run beside any version of the app: the ratio measures the
 * whole stack.
 */
import { createPrivateKey, createPublicKey } from "node:crypto";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { importSPKI, jwtVerify } from "jose";
import { openRawDb } from "./lib/raw-db";

const port = Number(process.env.PORT ?? 3000);
const dataDir = resolve(process.env.DATA_DIR ?? ".data");
const pem = process.env.JWT_PRIVATE_KEY ?? readFileSync(join(dataDir, "jwt-ed25519.pem"), "utf8");
const spki = createPublicKey(createPrivateKey(pem)).export({ type: "spki", format: "pem" }).toString();
const publicKey = await importSPKI(spki, "EdDSA");
const verified = new Map<string, { sub: string; exp: number }>();

const { query, close } = await openRawDb(dataDir);

const TEAM_WITH_ROLE = `
  select t.id, t.name, t.created_at, t.updated_at, m.role
  from team_members m join teams t on t.id = m.team_id
  where m.team_id = $1 and m.user_id = $2 limit 1`;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const iso = (v: unknown) => (v instanceof Date ? v : new Date(v as string)).toISOString();

const json = (body: unknown, status = 200) =>
  new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", "x-request-id": crypto.randomUUID() },
  });
const bad = (code: string, status: number) => json({ error: { code, message: code, request_id: "" } }, status);

async function subject(req: Request): Promise<string | null> {
  const m = /^Bearer\s+(\S+)$/i.exec(req.headers.get("authorization") ?? "");
  if (!m) return null;
  const token = m[1]!;
  const now = Math.floor(Date.now() / 1000);
  const known = verified.get(token);
  if (known && known.exp > now) return known.sub;
  try {
    const { payload } = await jwtVerify(token, publicKey, { issuer: "mc-platform", audience: "mc-platform:dashboard" });
    verified.set(token, { sub: payload.sub!, exp: payload.exp! });
    return payload.sub!;
  } catch {
    return null;
  }
}

const server = Bun.serve({
  port,
  hostname: "127.0.0.1",
  async fetch(req) {
    const path = new URL(req.url).pathname;
    if (path === "/health") return json({ status: "ok" });
    const m = /^\/teams\/([^/]+)$/.exec(path);
    if (req.method !== "GET" || !m) return bad("not_found", 404);
    const user = await subject(req);
    if (!user) return bad("unauthenticated", 401);
    if (!UUID.test(m[1]!)) return bad("validation_failed", 400);
    const [row] = await query(TEAM_WITH_ROLE, [m[1]!, user]);
    if (!row) return bad("forbidden", 403);
    return json({
      team_id: row.id,
      name: row.name,
      role: row.role,
      created_at: iso(row.created_at),
      updated_at: iso(row.updated_at),
    });
  },
});

process.once("SIGTERM", async () => {
  server.stop(true);
  await close();
  process.exit(0);
});
