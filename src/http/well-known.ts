import { Elysia } from "elysia";
import type { Services } from "../trpc/context";
import { JWKS_MAX_AGE_SECONDS } from "../ms-auth/assertions";

/**
 * The public keys for session assertions. Every instance on one database serves the same set
 * (src/ms-auth/assertions.ts); the next key is in it before it signs, so a verifier may cache
 * the document for max-age and refetch only on an unknown kid.
 */
export function wellKnownRoutes(services: Pick<Services, "assertions">) {
  return new Elysia({ name: "well-known" }).get("/.well-known/jwks.json", async () => {
    const jwks = await services.assertions.jwks();
    return new Response(JSON.stringify(jwks), {
      headers: {
        "content-type": "application/jwk-set+json",
        "cache-control": `public, max-age=${JWKS_MAX_AGE_SECONDS}`,
        "x-content-type-options": "nosniff",
      },
    });
  });
}
