import { AccessTokens } from "./accounts/jwt";
import { AccountsService } from "./accounts/service";
import type { Config } from "./config";
import type { Database } from "./db/client";
import { HealthService } from "./health/service";
import type { Logger } from "./lib/log";
import { TeamsService } from "./teams/service";

/** Everything a procedure can reach, built once per process. */
export interface Services {
  config: Config;
  log: Logger;
  database: Database;
  tokens: AccessTokens;
  accounts: AccountsService;
  teams: TeamsService;
  health: HealthService;
}

export async function createServices(config: Config, database: Database, log: Logger): Promise<Services> {
  const tokens = await AccessTokens.load({ pem: config.JWT_PRIVATE_KEY, dataDir: config.DATA_DIR, ttlSeconds: config.ACCESS_TOKEN_TTL_SECONDS });
  const db = database.db;
  return {
    config,
    log,
    database,
    tokens,
    accounts: new AccountsService(db, tokens, config),
    teams: new TeamsService(db),
    health: new HealthService(() => database.ping()),
  };
}
