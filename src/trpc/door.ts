import {
  type AnyTRPCProcedure,
  type AnyTRPCRouter,
  getTRPCErrorFromUnknown,
  TRPCError,
  transformTRPCResponse,
} from "@trpc/server";
import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import { getHTTPStatusCode } from "@trpc/server/http";
import {
  defaultTransformer,
  getErrorShape,
  isAsyncIterable,
  isObject,
  isPromise,
  type TRPCResponse,
} from "@trpc/server/unstable-core-do-not-import";
import { Elysia } from "elysia";
import { adoptRequestInfo, pathOf, requestInfo } from "../http/request";
import { readLimited } from "../lib/body";
import { AppError, toErrorBody } from "../lib/errors";
import type { Services } from "./context";
import { invokeProcedure } from "./invoke";
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

/** What one /trpc request asks for: the procedures (`a.b` or, batched, `a.b,c.d?batch=1`) and the query. */
interface Target {
  calls: string[];
  batch: boolean;
  /** Null when the URL has no query at all, the common case, so nothing is parsed for it. */
  search: URLSearchParams | null;
  /** The path did not decode: tRPC answers that (BAD_REQUEST), so it goes to the adapter. */
  malformed: boolean;
}

function targetOf(request: Request): Target {
  const url = request.url;
  const q = url.indexOf("?");
  const search = q === -1 ? null : new URLSearchParams(url.slice(q + 1));
  const batch = search?.get("batch") === "1";
  const raw = pathOf(url).slice("/trpc/".length);
  let path = raw;
  let malformed = false;
  try {
    path = decodeURIComponent(raw);
  } catch {
    malformed = true;
  }
  return { calls: batch ? path.split(",") : [path], batch, search, malformed };
}

/** tRPC's own test of a JSON content type (media types are case-insensitive). */
function isJson(contentType: string | null): boolean {
  return contentType?.toLowerCase().split(";", 1)[0]?.trim() === "application/json";
}

/** tRPC refuses an output it would have to stream (promises or iterators inside) on a plain call. */
function isDataStream(v: unknown): boolean {
  if (!isObject(v)) return false;
  if (isAsyncIterable(v)) return true;
  const values = Object.values(v);
  return values.some(isPromise) || values.some(isAsyncIterable);
}

/**
 * The procedure of a request the door answers itself, exactly as tRPC would: one call (not a
 * batch) to a known query over GET or mutation over a JSON POST, no stream or subscription
 * parameters. Everything else is the adapter's.
 */
function directProcedure(
  procedures: Record<string, AnyTRPCProcedure>,
  request: Request,
  target: Target,
): AnyTRPCProcedure | undefined {
  if (target.batch || target.malformed) return undefined;
  const path = target.calls[0]!;
  if (!Object.hasOwn(procedures, path)) return undefined;
  const procedure = procedures[path]!;
  const type = procedure._def.type;
  const headers = request.headers;
  const contentType = headers.get("content-type");
  const fits =
    type === "mutation"
      ? request.method === "POST" && isJson(contentType)
      : type === "query" && request.method === "GET" && (contentType === null || isJson(contentType));
  if (!fits) return undefined;
  // A stream request (an error of its own on a single call) and subscription parameters are the adapter's.
  if (headers.has("trpc-accept") || headers.get("accept")?.includes("jsonl")) return undefined;
  if (target.search?.has("connectionParams")) return undefined;
  return procedure;
}

/** Whether the door answers this request itself rather than through tRPC's adapter. */
export function answeredDirectly(router: AnyTRPCRouter, request: Request): boolean {
  const procedures = router._def.procedures as Record<string, AnyTRPCProcedure>;
  return directProcedure(procedures, request, targetOf(request)) !== undefined;
}

/** The headers tRPC's resolver puts on every single-call answer. */
const SUCCESS_HEADERS: [string, string][] = [
  ["vary", "trpc-accept, accept"],
  ["content-type", "application/json"],
];

/** An error's own headers (Retry-After, RateLimit), sent with it; most answers have none. */
function errorHeaders(errors: readonly TRPCError[]): Headers {
  const headers = new Headers();
  for (const e of errors) {
    const h = (e.cause instanceof AppError ? e.cause : undefined)?.headers;
    if (h) for (const [k, v] of Object.entries(h)) headers.set(k, v);
  }
  return headers;
}

/**
 * The typed door: tRPC's protocol at /trpc. Every call of a batch counts against the general
 * limit (the edge counted the request once), a batch holds at most TRPC_MAX_BATCH calls, and
 * password procedures cannot be batched at all.
 *
 * A single query over GET or mutation over a JSON POST (what httpLink sends, and every batch
 * of one that a client unbatches) is answered here, the way the REST door calls a procedure,
 * with tRPC's own error shaping and status mapping; everything else (batches, streams,
 * subscriptions, other content types, a wrong method, an unknown path) goes through tRPC's fetch
 * adapter, which then answers exactly as it always has. `adapterOnly` sends every request
 * through the adapter (the reference the door's answers are compared with in the tests).
 */
export function trpcDoor(router: AppRouter, services: Services, opts: { adapterOnly?: boolean } = {}) {
  const { config, edge, log } = services;
  // At run time the router keeps every procedure under its dotted path.
  const procedures = router._def.procedures as unknown as Record<string, AnyTRPCProcedure>;
  const known = new Set(Object.keys(procedures));
  const rootConfig = router._def._config;
  const deserialize = rootConfig.transformer.input.deserialize;

  const onError = (error: TRPCError, request: Request) => {
    if (toErrorBody(error).internal)
      log.error("unhandled error", { request_id: requestInfo(request).id, err: error.cause ?? error });
  };

  /** tRPC's default transformer passes values through; the wrapper it would copy them into is skipped. */
  const plain = rootConfig.transformer === defaultTransformer;
  const serialize = (res: TRPCResponse) => JSON.stringify(plain ? res : transformTRPCResponse(rootConfig, res));

  /** One call, answered with tRPC's wire format: `{"result":{"data":…}}` or `{"error":<formatted shape>}`. */
  const answer = async (request: Request, target: Target, procedure: AnyTRPCProcedure): Promise<Response> => {
    const path = target.calls[0]!;
    const type = procedure._def.type as "query" | "mutation";
    // An undeclared (chunked) length is read through the bounded reader up front, as on the
    // adapter's path; a query's input is in the URL whatever the body holds.
    const chunked =
      request.headers.get("content-length") === null && request.body
        ? await readLimited(request.body, config.MAX_BODY_BYTES)
        : undefined;
    // tRPC reads the input once, when a middleware first asks, and keeps what it parsed (for
    // the error formatter); a parse failure becomes a BAD_REQUEST carrying the parser's message.
    let input: unknown;
    let reading: Promise<unknown> | undefined;
    const read = async () => {
      try {
        const text =
          type === "query"
            ? (target.search?.get("input") ?? "")
            : chunked
              ? new TextDecoder().decode(chunked)
              : await request.text();
        input = text ? deserialize(JSON.parse(text)) : undefined;
        return input;
      } catch (cause) {
        if (cause instanceof TRPCError) throw cause;
        throw new TRPCError({
          code: "BAD_REQUEST",
          message: cause instanceof Error ? cause.message : "Invalid input",
          cause,
        });
      }
    };
    const getRawInput = () => {
      reading ??= read();
      return reading;
    };
    const ctx = makeContext(services, request);
    let failure: { error: TRPCError; path: string | undefined; input: unknown };
    try {
      const data = await invokeProcedure(procedure, {
        ctx,
        getRawInput,
        path,
        type,
        signal: undefined,
        batchIndex: 0,
      });
      if (!isDataStream(data)) {
        return new Response(serialize({ result: { data } }), { status: 200, headers: SUCCESS_HEADERS });
      }
      // The adapter raises this outside the call: its error names no path and no input.
      failure = {
        error: new TRPCError({
          code: "UNSUPPORTED_MEDIA_TYPE",
          message: "Cannot use stream-like response in non-streaming request - use httpBatchStreamLink",
        }),
        path: undefined,
        input: undefined,
      };
    } catch (cause) {
      failure = { error: getTRPCErrorFromUnknown(cause), path, input };
    }
    const { error } = failure;
    onError(error, request);
    const res = {
      error: getErrorShape({ config: rootConfig, ctx, error, type, path: failure.path, input: failure.input }),
    };
    // As the adapter adds what responseMeta gives: appended after its own two headers.
    const headers = new Headers(SUCCESS_HEADERS);
    for (const [k, v] of errorHeaders([error])) headers.append(k, v);
    return new Response(serialize(res), { status: getHTTPStatusCode(res, [error]), headers });
  };

  return new Elysia({ name: "trpc-door" }).all(
    "/trpc/*",
    async ({ request: original }) => {
      const target = targetOf(original);
      const { calls } = target;
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
      const procedure = opts.adapterOnly ? undefined : directProcedure(procedures, original, target);
      if (procedure) return answer(original, target, procedure);
      if (calls.length > 1) await edge.admit(original, calls.length - 1);
      const request = await boundedRequest(original, config.MAX_BODY_BYTES);
      const ctx = makeContext(services, request);
      return fetchRequestHandler({
        endpoint: "/trpc",
        req: request,
        router,
        createContext: () => ctx,
        onError: ({ error }) => onError(error, request),
        responseMeta: ({ errors }) => {
          if (errors.length === 0) return {};
          return { headers: errorHeaders(errors) };
        },
      });
    },
    { parse: "none" },
  );
}
