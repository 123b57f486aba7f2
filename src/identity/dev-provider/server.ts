import { randomBytes } from "node:crypto";
import { Keyring } from "../../lib/keyring";
import { createLogger } from "../../lib/log";
import { MemoryGrantStore } from "./grants";
import { createDevProvider } from "./handlers";

/**
 * Runs the provider as its own HTTP server (port 0 picks a free port). One process, so a key
 * made at start and marks kept in memory are all it needs.
 */
export async function startDevProvider(
  opts: { port?: number; hostname?: string; expiredSecrets?: readonly string[] } = {},
): Promise<{ url: string; stop(): Promise<void> }> {
  const hostname = opts.hostname ?? "127.0.0.1";
  const provider = createDevProvider({
    keyring: Keyring.fromSecret(randomBytes(32).toString("base64url")),
    store: new MemoryGrantStore(),
    ...(opts.expiredSecrets && { expiredSecrets: opts.expiredSecrets }),
  });
  const server = Bun.serve({ port: opts.port ?? 0, hostname, fetch: (req) => provider.fetch(req) });
  const host =
    hostname === "0.0.0.0" || hostname === "::" ? "localhost" : hostname.includes(":") ? `[${hostname}]` : hostname;
  return {
    url: `http://${host}:${server.port}`,
    async stop() {
      await server.stop(true);
    },
  };
}

if (import.meta.main) {
  // Standalone on purpose: it runs without the service's configuration, so only PORT and HOST apply.
  const port = Number(process.env.PORT || 4000);
  const running = await startDevProvider({ port, hostname: process.env.HOST || "127.0.0.1" });
  createLogger("info").info("development identity provider listening", {
    url: running.url,
    set_env: `DEV_IDP_URL=${running.url}`,
  });
}
