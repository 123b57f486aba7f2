/**
 * A launcher backend signing a player in with the SDK, run under Node against a real service.
 * It prints `AUTH_URL <url>` where a launcher would open the browser, and `SESSION <json>` at
 * the end. Settings come from the environment: BASE_URL, CLIENT_ID, CLIENT_SECRET.
 */
import {
  createLauncherBackend,
  createRestClient,
  createTrpcClient,
  LoginDeniedError,
  type PlayerSession,
} from "@mc-platform/client";

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};

const baseUrl = env("BASE_URL");
const backend = createLauncherBackend({ baseUrl, clientId: env("CLIENT_ID"), clientSecret: env("CLIENT_SECRET") });

// Both doors answer under Node too: the typed tRPC client and the openapi-fetch one.
const health = await createTrpcClient({ baseUrl }).health.check.query();
const rest = await createRestClient({ baseUrl }).GET("/health");
if (health.status !== "ok" || rest.data?.status !== "ok") throw new Error("the service is not healthy");

let session: PlayerSession;
try {
  session = await backend.signIn({
    openUrl: (url) => {
      process.stdout.write(`AUTH_URL ${url}\n`);
    },
    signal: AbortSignal.timeout(60_000),
  });
} catch (err) {
  if (err instanceof LoginDeniedError) {
    process.stdout.write(`DENIED ${err.code}\n`);
    process.exit(2);
  }
  throw err;
}
const checked = await backend.validate(session.sessionToken);
process.stdout.write(`SESSION ${JSON.stringify({ ...session, validated: checked.valid })}\n`);
