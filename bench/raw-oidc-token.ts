/**
 * The raw baseline for the token endpoint (bench/oidc.ts): plain Bun.serve doing /oidc/token's
 * work directly, with none of the app's framework, services, rate limiter or caches. It parses
 * the form and HTTP Basic, runs ONE prepared statement (postgres.js, or PGlite on the app's data
 * directory) that marks the grant's code used by its SHA-256, for this client and only if the
 * client's secret hash matches, checks expiry, redirect URI and the PKCE verifier, and signs
 * the same RS256 ID token with jose (a 2048-bit key of its own: the same signing cost).
 */
import { createHash, createHmac, generateKeyPairSync, randomBytes } from "node:crypto";
import { resolve } from "node:path";
import { SignJWT } from "jose";
import { openRawDb } from "./lib/raw-db";

const port = Number(process.env.PORT);
const issuer = process.env.PUBLIC_URL ?? `http://127.0.0.1:${port}`;
const dataDir = resolve(process.env.DATA_DIR ?? ".data");
const sha256 = (v: string) => createHash("sha256").update(v).digest("hex");
const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
const macKey = randomBytes(32);
const { query, close } = await openRawDb(dataDir);

const REDEEM = `
  update oidc_grants g
     set code_used_at = $3::timestamptz, access_expires_at = $4::timestamptz
    from client_apps c
   where g.code_hash = $1 and g.client_id = $2 and c.id = g.client_id and c.secret_hash = $5
     and g.code_used_at is null and g.revoked_at is null
  returning g.id, g.mc_uuid, g.mc_username, g.code_expires_at, g.redirect_uri, g.code_challenge, g.nonce,
            g.scope, g.created_at`;

const json = (body: unknown, status = 200) =>
  new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", "cache-control": "no-store" },
  });
const oauth = (error: string, status = 400) => json({ error, error_description: error }, status);
const date = (v: unknown) => (v instanceof Date ? v : new Date(String(v)));

const timing = { query: 0, sign: 0, n: 0 };
const server = Bun.serve({
  port,
  hostname: "127.0.0.1",
  async fetch(req) {
    const path = new URL(req.url).pathname;
    if (path === "/health") return json({ status: "ok" });
    if (path !== "/oidc/token" || req.method !== "POST") return json({ error: "not_found" }, 404);
    const form = new URLSearchParams(await req.text());
    const m = /^Basic ([A-Za-z0-9+/=]+)$/i.exec(req.headers.get("authorization") ?? "");
    if (!m) return oauth("invalid_client", 401);
    const decoded = Buffer.from(m[1]!, "base64").toString("utf8");
    const colon = decoded.indexOf(":");
    const clientId = decodeURIComponent(decoded.slice(0, colon));
    const secret = decodeURIComponent(decoded.slice(colon + 1));
    if (form.get("grant_type") !== "authorization_code") return oauth("unsupported_grant_type");
    const now = Date.now();
    const q0 = performance.now();
    const [g] = await query(REDEEM, [
      sha256(form.get("code") ?? ""),
      clientId,
      new Date(now).toISOString(),
      new Date(now + 3600_000).toISOString(),
      sha256(secret),
    ]);
    timing.query += performance.now() - q0;
    timing.n++;
    if (!g) return oauth("invalid_grant");
    if (date(g.code_expires_at).getTime() <= now) return oauth("invalid_grant");
    if (form.get("redirect_uri") !== g.redirect_uri) return oauth("invalid_grant");
    const verifier = form.get("code_verifier") ?? "";
    if (g.code_challenge && createHash("sha256").update(verifier).digest("base64url") !== g.code_challenge)
      return oauth("invalid_grant");
    const s0 = performance.now();
    const iat = Math.floor(now / 1000);
    const idToken = await new SignJWT({
      auth_time: Math.floor(date(g.created_at).getTime() / 1000),
      ...(g.nonce !== null && { nonce: g.nonce as string }),
      preferred_username: g.mc_username as string,
    })
      .setProtectedHeader({ alg: "RS256", kid: "raw", typ: "JWT" })
      .setIssuer(issuer)
      .setSubject(g.mc_uuid as string)
      .setAudience(clientId)
      .setIssuedAt(iat)
      .setExpirationTime(iat + 600)
      .sign(privateKey);
    timing.sign += performance.now() - s0;
    return json({
      access_token: `mcp_oat_${createHmac("sha256", macKey)
        .update(g.id as string)
        .digest("base64url")}`,
      token_type: "Bearer",
      expires_in: 3600,
      id_token: idToken,
      scope: g.scope,
    });
  },
});

process.once("SIGTERM", async () => {
  server.stop(true);
  if (process.env.BENCH_RAW_TIMING)
    console.error(
      `raw token: ${timing.n} requests, query ${(timing.query / timing.n).toFixed(2)} ms, sign ${(timing.sign / timing.n).toFixed(2)} ms (wall, each)`,
    );
  await close();
  process.exit(0);
});
