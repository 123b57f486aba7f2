import { Elysia } from "elysia";
import type { Database } from "../../db/client";
import type { Keyring } from "../../lib/keyring";
import { DbGrantStore } from "./db-store";
import { createDevProvider } from "./handlers";

/**
 * The provider inside the service, at `/dev-idp`. Codes and tokens are signed with a key
 * derived from the service's signing key and the marks kept in its database, so behind a load
 * balancer any instance can take any step of a sign-in another instance began.
 */
export function devIdentityProvider(deps: { keyring: Keyring; database: Database }) {
  const provider = createDevProvider({
    basePath: "/dev-idp",
    keyring: deps.keyring,
    store: new DbGrantStore(deps.database.db),
  });
  // parse "none": the provider reads (and bounds) the body itself.
  return new Elysia({ name: "dev-identity-provider", prefix: "/dev-idp" }).all(
    "/*",
    ({ request }) => provider.fetch(request),
    { parse: "none" },
  );
}
