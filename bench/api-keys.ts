/**
 * API keys on an authenticated read: GET /teams/{id} and GET /server/servers/{id} through the
 * REST door with a person's access token (liveness cached), a role key, a scoped key and a key
 * limited to one server, beside the raw Bun.serve baseline of bench/rest.ts (the access token,
 * one prepared query) in the same run. A key is one prepared read by its hash per request; its
 * last use is written at most once a minute, so a steady load writes nothing after the first.
 *
 *   bun bench/api-keys.ts
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres bun bench/api-keys.ts
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { load, table } from "./lib/load";
import { benchDatabase, post, startTarget } from "./lib/targets";

const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
const dataDir = mkdtempSync(join(tmpdir(), "mcp-bench-"));
const db = await benchDatabase();
const env = {
  DATA_DIR: dataDir,
  HOST: "127.0.0.1",
  LOG_LEVEL: "warn",
  NODE_ENV: "production",
  DEV_IDP_ENABLED: "true",
  PINGER_ENABLED: "false",
  // The bench's server is registered on loopback.
  OUTBOUND_ALLOW_PRIVATE: "true",
  DATABASE_URL: db.url,
};

const app = await startTarget("src/main.ts", env);
await post(app.url, "/auth/signup", { email: "bench@example.test", password: "bench password" });
const { access_token: token } = await post(app.url, "/auth/login", {
  email: "bench@example.test",
  password: "bench password",
});
const { team_id: teamId } = await post(app.url, "/teams", { name: "bench" }, token);
const { server_id: serverId } = await post(
  app.url,
  "/server/servers",
  { team_id: teamId, name: "bench", host: "127.0.0.1", port: 9, kind: "single" },
  token,
);
const key = async (grant: Record<string, unknown>) =>
  (await post(app.url, `/teams/${teamId}/api-keys`, { name: "bench", ...grant }, token)).key as string;
const roleKey = await key({ role: "viewer" });
const scopedKey = await key({ scopes: ["team:read", "servers:read"] });
const limitedKey = await key({ scopes: ["servers:read"], server_ids: [serverId] });
const bearer = (t: string) => ({ authorization: `Bearer ${t}` });
const opts = { seconds, connections };
const team = `${app.url}/teams/${teamId}`;
const srv = `${app.url}/server/servers/${serverId}`;

console.log(
  `database: ${process.env.DATABASE_URL ? "postgres" : "pglite"}; ${connections} connections, ${seconds}s per case`,
);
await load({ url: team, headers: bearer(token), seconds: 1, connections }); // warm-up
const teamUser = await load({ url: team, headers: bearer(token), ...opts });
const teamRole = await load({ url: team, headers: bearer(roleKey), ...opts });
const teamScoped = await load({ url: team, headers: bearer(scopedKey), ...opts });
const srvUser = await load({ url: srv, headers: bearer(token), ...opts });
const srvRole = await load({ url: srv, headers: bearer(roleKey), ...opts });
const srvLimited = await load({ url: srv, headers: bearer(limitedKey), ...opts });
await app.stop();

const raw = await startTarget("bench/raw-baseline.ts", env);
await load({ url: `${raw.url}/teams/${teamId}`, headers: bearer(token), seconds: 1, connections });
const rawRead = await load({ url: `${raw.url}/teams/${teamId}`, headers: bearer(token), ...opts });
await raw.stop();
rmSync(dataDir, { recursive: true, force: true });
await db.drop();

table([
  { name: "raw Bun.serve  GET /teams/{id} (token)", r: rawRead },
  { name: "REST  GET /teams/{id}, access token", r: teamUser, baseline: rawRead },
  { name: "REST  GET /teams/{id}, role key", r: teamRole, baseline: rawRead },
  { name: "REST  GET /teams/{id}, scoped key", r: teamScoped, baseline: rawRead },
  { name: "REST  GET /server/servers/{id}, token", r: srvUser, baseline: rawRead },
  { name: "REST  GET /server/servers/{id}, role key", r: srvRole, baseline: rawRead },
  { name: "REST  GET /server/servers/{id}, limited", r: srvLimited, baseline: rawRead },
]);
