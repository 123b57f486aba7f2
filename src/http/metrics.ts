import { createHash, timingSafeEqual } from "node:crypto";
import { Elysia } from "elysia";
import { AppError } from "../lib/errors";
import type { Metrics } from "../lib/metrics";

/**
 * The door a route belongs to, from its registered pattern (never the raw path). Kept here in
 * one table rather than in each module, so a new module shows up under `rest` until named.
 */
export function doorOf(route: string): string {
  if (route.startsWith("/trpc")) return "trpc";
  if (route.startsWith("/ws/")) return "ws";
  if (route === "/metrics") return "metrics";
  if (route === "/docs" || route.startsWith("/docs/") || route === "/openapi.json" || route === "/asyncapi.json")
    return "docs";
  if (route === "/" || route.startsWith("/assets/") || route.startsWith("/dashboard/") || route.startsWith("/favicon."))
    return "dashboard";
  if (route === "/client/ms-auth/callback" || route === "/client/ms-auth/authorize" || route.startsWith("/dev-idp"))
    return "browser";
  if (route.startsWith("(")) return "edge";
  return "rest";
}

const digest = (s: string) => createHash("sha256").update(s).digest();

/**
 * GET /metrics in the Prometheus text format, only when a token is configured (without one the
 * route does not exist: 404 like any unknown path). The bearer token is compared as SHA-256
 * digests in constant time, so neither its content nor its length leaks through timing.
 */
export function metricsRoutes(metrics: Metrics | null, token: string | undefined) {
  const plugin = new Elysia({ name: "metrics" });
  if (!metrics || !token) return plugin;
  const expected = digest(`Bearer ${token}`);
  return plugin.get("/metrics", async ({ request }) => {
    const given = request.headers.get("authorization") ?? "";
    if (!timingSafeEqual(digest(given), expected)) {
      throw new AppError("unauthenticated", "Send the metrics token as `authorization: Bearer <METRICS_TOKEN>`.", {
        headers: { "www-authenticate": 'Bearer realm="metrics"' },
      });
    }
    return new Response(await metrics.text(), {
      headers: { "content-type": metrics.contentType, "cache-control": "no-store" },
    });
  });
}
