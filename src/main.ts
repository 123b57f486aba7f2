import { type RunningServer, startServer } from "./app";
import { type Config, ConfigError, loadConfig } from "./config";
import { createLogger } from "./lib/log";
import { StartupError } from "./lib/startup";

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
let server: RunningServer;
try {
  server = await startServer(config, log);
} catch (err) {
  if (err instanceof StartupError) {
    // Printed whatever LOG_LEVEL says, like a configuration error: a process that exits
    // must say why.
    createLogger("error").error(err.message, err.fields);
    process.exit(1);
  }
  throw err;
}
// Startup's garbage (initdb and migration files, the documents' construction) is freed now,
// not whenever the heap next grows: an idle instance would otherwise keep it.
Bun.gc(true);
// What to open next, on the line a first run reads.
log.info("listening", {
  url: config.PUBLIC_URL,
  port: server.port,
  database: server.services.database.kind,
  data_dir: server.services.database.kind === "pglite" ? config.DATA_DIR : undefined,
  dashboard: `${config.PUBLIC_URL}/`,
  docs: `${config.PUBLIC_URL}/docs`,
  health: `${config.PUBLIC_URL}/health`,
});

for (const signal of ["SIGTERM", "SIGINT"] as const) {
  process.once(signal, async () => {
    log.info("shutting down", { signal });
    await server.stop();
    log.info("stopped");
    process.exit(0);
  });
}
