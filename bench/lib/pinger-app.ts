import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServer } from "../../src/app";
import { loadConfig } from "../../src/config";
import { teams } from "../../src/db/schema";
import { createLogger } from "../../src/lib/log";

/**
 * The app in this process, for the pinger benches: its own loop off (the bench drives it),
 * loopback allowed (the responders listen there), every row due again a second after its check,
 * and one team to own the bench's servers. `stop()` also removes its data dir.
 */
export async function pingerApp(databaseUrl: string, env: Record<string, string> = {}) {
  const dataDir = mkdtempSync(join(tmpdir(), "mcp-bench-pinger-"));
  const config = loadConfig({
    DATA_DIR: dataDir,
    DATABASE_URL: databaseUrl,
    PORT: "0",
    HOST: "127.0.0.1",
    LOG_LEVEL: "silent",
    PINGER_ENABLED: "false",
    OUTBOUND_ALLOW_PRIVATE: "true",
    PING_INTERVAL_SECONDS: "1",
    ...env,
  });
  const app = await startServer(config, createLogger("silent"));
  const [team] = await app.services.database.db.insert(teams).values({ name: "bench" }).returning();
  return {
    app,
    teamId: team!.id,
    async stop() {
      await app.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
