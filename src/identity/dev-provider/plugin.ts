import { Elysia } from "elysia";
import type { DevProvider } from "./handlers";

/**
 * The provider inside the service, at `/dev-idp` (built in src/services.ts). Codes and tokens
 * are signed with a key derived from the service's signing key and the marks kept in its
 * database, so behind a load balancer any instance can take any step of a sign-in another
 * instance began. The browser reaches it here; this process's own identity chain calls the
 * same provider directly (src/identity/dev-provider/in-process.ts).
 */
export function devIdentityProvider(provider: DevProvider) {
  // parse "none": the provider reads (and bounds) the body itself.
  return new Elysia({ name: "dev-identity-provider", prefix: "/dev-idp" }).all(
    "/*",
    ({ request }) => provider.fetch(request),
    { parse: "none" },
  );
}
