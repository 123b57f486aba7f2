/**
 * A month of history for one server, shared by bench/uptime.ts and bench/history.ts: an account,
 * team and server made through the API, then 30 days of 30 s ping samples written as raw rows
 * (what the old reads scanned, and what the baselines still scan) and added to both metric tiers
 * (what the app reads), with 30 days of 30 s agent heartbeats in the buckets too.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { loadConfig } from "../../src/config";
import { openDatabase } from "../../src/db/client";
import { addRawSamplesToBuckets } from "../../src/monitoring/history";
import { benchDatabase, startTarget } from "./targets";

export const SAMPLES = 30 * 2880;

export { post } from "./targets";
import { post } from "./targets";

export async function monthOfHistory() {
  const dataDir = mkdtempSync(join(tmpdir(), "mcp-bench-history-"));
  const db = await benchDatabase();
  const env: Record<string, string> = {
    DATA_DIR: dataDir,
    HOST: "127.0.0.1",
    LOG_LEVEL: "warn",
    NODE_ENV: "production",
    DEV_IDP_ENABLED: "true",
    DATABASE_URL: db.url,
    PINGER_ENABLED: "false",
    // The month's server is registered on loopback (never pinged: the pinger is off).
    OUTBOUND_ALLOW_PRIVATE: "true",
  };
  // A long-lived token so it outlasts every case.
  const app = await startTarget("src/main.ts", { ...env, ACCESS_TOKEN_TTL_SECONDS: "86400" });
  await post(app.url, "/auth/signup", { email: "bench@example.test", password: "bench password" });
  const { access_token: token } = await post(app.url, "/auth/login", {
    email: "bench@example.test",
    password: "bench password",
  });
  const { team_id: teamId } = await post(app.url, "/teams", { name: "bench" }, token);
  const { server_id: serverId } = await post(
    app.url,
    "/server/servers",
    { team_id: teamId, name: "month", host: "127.0.0.1", port: 9, kind: "single" },
    token,
  );
  await app.stop();

  // Written with the app stopped (PGlite is one process's at a time).
  const config = loadConfig(env);
  const database = await openDatabase({ url: config.DATABASE_URL, dataDir: config.DATA_DIR });
  await database.db.execute(sql`
    insert into server_samples (server_id, ts, online, latency_ms, players_online, players_max)
    select ${serverId}, now() - make_interval(secs => i * 30), i % 97 <> 0,
           case when i % 97 <> 0 then 15 + (i * 7919) % 120 end, case when i % 97 <> 0 then (i / 120) % 60 end, 100
      from generate_series(1, ${SAMPLES}) as i`);
  await addRawSamplesToBuckets(database.db, serverId);
  // Heartbeats every 30 s for the month, summed per bucket as the agent path would have.
  for (const [table, secs] of [
    ["server_metrics_minute", 60],
    ["server_metrics_hour", 3600],
  ] as const) {
    await database.db.execute(sql`
      update ${sql.raw(table)} b set
        tps_n = h.n, tps_sum = h.n * 19.5, tps_min = 17, tps_max = 20,
        mspt_n = h.n, mspt_sum = h.n * 25, mspt_min = 5, mspt_max = 48,
        mem_used_n = h.n, mem_used_sum = h.n * 2048, mem_used_min = 1024, mem_used_max = 3072,
        mem_max_n = h.n, mem_max_sum = h.n * 4096, mem_max_min = 4096, mem_max_max = 4096
      from (select bucket, ${secs}::int / 30 as n from ${sql.raw(table)} where server_id = ${serverId}) h
      where b.server_id = ${serverId} and b.bucket = h.bucket`);
  }
  // The state retention keeps: one-minute buckets for 48 h only.
  await database.db.execute(
    sql`delete from server_metrics_minute where server_id = ${serverId} and bucket < now() - interval '48 hours'`,
  );
  await database.close();
  return { env, token: token as string, teamId: teamId as string, serverId: serverId as string, db, dataDir };
}
