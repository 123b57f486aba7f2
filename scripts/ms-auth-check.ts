/**
 * The ms_auth self-test from the command line, with the service's own configuration (the same
 * environment the service starts with): the redirect URI the Microsoft app must register, the
 * client secret and its expiry, one probe of the token endpoint, and what the Minecraft API
 * approval means. GET /client/ms-auth/diagnostics runs the same checks for one client app and
 * adds what its recent sign-ins show.
 *
 *   bun scripts/ms-auth-check.ts              human-readable; exit 1 when a check is an error
 *   bun scripts/ms-auth-check.ts --json       the checks as JSON
 *   bun scripts/ms-auth-check.ts --no-probe   without calling the token endpoint
 */
import { ConfigError, loadConfig } from "../src/config";
import { identityConfig } from "../src/identity/chain";
import { callbackUrlOf, microsoftAppChecks, worstStatus } from "../src/ms-auth/diagnostics";

const args = new Set(process.argv.slice(2));
let config: ReturnType<typeof loadConfig>;
try {
  config = loadConfig();
} catch (err) {
  if (!(err instanceof ConfigError)) throw err;
  console.error(err.message);
  process.exit(2);
}

const checks = await microsoftAppChecks(config, identityConfig(config), Date.now(), { probe: !args.has("--no-probe") });
const status = worstStatus(checks);
if (args.has("--json")) {
  console.log(JSON.stringify({ redirect_uri: callbackUrlOf(config), status, checks }, null, 2));
} else {
  const mark = { ok: "ok     ", info: "info   ", warning: "warning", error: "ERROR  " } as const;
  for (const c of checks) {
    console.log(`${mark[c.status]}  ${c.id}: ${c.summary}`);
    if (c.action) console.log(`         -> ${c.action}`);
  }
  console.log(`\n${status === "error" ? "Sign-ins will fail until the errors above are fixed." : "No errors."}`);
}
process.exit(status === "error" ? 1 : 0);
