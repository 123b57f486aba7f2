import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import { Elysia } from "elysia";
import { adoptRequestInfo, requestInfo } from "../http/request";
import { readLimited } from "../lib/body";
import { AppError, toErrorBody } from "../lib/errors";
import type { Services } from "./context";
import { makeContext } from "./rest";
import type { AppRouter } from "./router";

/**
 * Procedures that hash a password: one call costs tens of milliseconds of CPU and tens of
 * MiB, so a batch of them is a cheap way to multiply that work; they are refused in batches.
 */
const UNBATCHABLE = new Set(["auth.signup", "auth.login"]);

/**
 * tRPC's fetch adapter reads whole bodies without a limit: a declared length over ours was
 * refused at the edge, and an undeclared (chunked) one is buffered through the bounded reader.
 */
async function boundedRequest(request: Request, maxBytes: number): Promise<Request> {
  if (request.headers.get("content-length") !== null || !request.body) return request;
  const body = await readLimited(request.body, maxBytes);
  const bounded = new Request(request.url, { method: request.method, headers: request.headers, body });
  adoptRequestInfo(request, bounded);
  return bounded;
}

/** The procedures one /trpc request calls: `a.b` or, batched, `a.b,c.d?batch=1`. */
function callsOf(request: Request): string[] {
  const url = new URL(request.url);
  const path = decodeURIComponent(url.pathname.slice("/trpc/".length));
  return url.searchParams.get("batch") === "1" ? path.split(",") : [path];
}

/**
 * The typed door: tRPC's fetch adapter at /trpc. Every call of a batch counts against the
 * general limit (the edge counted the request once), a batch holds at most TRPC_MAX_BATCH
 * calls, and password procedures cannot be batched at all.
 */
export function trpcDoor(router: AppRouter, services: Services) {
  const { config, edge, log } = services;
  const known = new Set(Object.keys(router._def.procedures));
  return new Elysia({ name: "trpc-door" }).all(
    "/trpc/*",
    async ({ request: original }) => {
      const calls = callsOf(original);
      // Metrics name the procedure (from the router's own set, so a made-up path adds no series).
      if (services.metrics)
        requestInfo(original).route =
          calls.length > 1 ? "/trpc/(batch)" : known.has(calls[0] ?? "") ? `/trpc/${calls[0]}` : "/trpc/(unknown)";
      if (calls.length > config.TRPC_MAX_BATCH) {
        throw new AppError("bad_request", `A batch may hold at most ${config.TRPC_MAX_BATCH} calls.`);
      }
      if (calls.length > 1 && calls.some((c) => UNBATCHABLE.has(c))) {
        throw new AppError(
          "bad_request",
          `Call ${calls.filter((c) => UNBATCHABLE.has(c)).join(", ")} on its own, not in a batch.`,
        );
      }
      if (calls.length > 1) await edge.admit(original, calls.length - 1);
      const request = await boundedRequest(original, config.MAX_BODY_BYTES);
      const ctx = makeContext(services, request);
      return fetchRequestHandler({
        endpoint: "/trpc",
        req: request,
        router,
        createContext: () => ctx,
        onError: ({ error }) => {
          if (toErrorBody(error).internal)
            log.error("unhandled error", { request_id: requestInfo(request).id, err: error.cause ?? error });
        },
        responseMeta: ({ errors }) => {
          // An error's own headers (Retry-After, RateLimit) are sent with it; most answers have none.
          if (errors.length === 0) return {};
          const headers = new Headers();
          for (const e of errors) {
            const h = (e.cause instanceof AppError ? e.cause : undefined)?.headers;
            if (h) for (const [k, v] of Object.entries(h)) headers.set(k, v);
          }
          return { headers };
        },
      });
    },
    { parse: "none" },
  );
}
