import { startServer } from "./app";
import { type Config, ConfigError, loadConfig } from "./config";
import { createLogger } from "./lib/log";

let config: Config;
try {
  config = loadConfig();
} catch (err) {
  if (err instanceof ConfigError) {
    console.error(err.message);
    process.exit(1);
  }
  throw err;
}

const log = createLogger(config.LOG_LEVEL);
const server = await startServer(config, log);
log.info("listening", {
  url: config.PUBLIC_URL,
  port: server.port,
  database: server.services.database.kind,
  data_dir: server.services.database.kind === "pglite" ? config.DATA_DIR : undefined,
  docs: `${config.PUBLIC_URL}/docs`,
});

for (const signal of ["SIGTERM", "SIGINT"] as const) {
  process.once(signal, async () => {
    log.info("shutting down", { signal });
    await server.stop();
    log.info("stopped");
    process.exit(0);
  });
}
