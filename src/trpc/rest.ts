import type { AnyTRPCProcedure, AnyTRPCRouter } from "@trpc/server";
import type { Elysia } from "elysia";
import { errorResponse, json, logAccess, requestInfo, type Inflight } from "../http";
import { readJsonBody } from "../lib/body";
import type { Services } from "../services";
import type { Context } from "./context";
import { createCallerFactory, type Meta } from "./init";

export interface RestRoute {
  method: "GET" | "POST" | "PATCH" | "PUT" | "DELETE";
  /** OpenAPI style, `/teams/{team_id}` */
  path: string;
  procedurePath: string;
  access: Meta["access"];
}

/** Every procedure that has an OpenAPI path, in the order the router declares them. */
export function restRoutes(router: AnyTRPCRouter): RestRoute[] {
  const out: RestRoute[] = [];
  for (const [procedurePath, proc] of Object.entries(router._def.procedures as Record<string, AnyTRPCProcedure>)) {
    const meta = proc._def.meta as Meta | undefined;
    if (!meta?.openapi || meta.openapi.enabled === false) continue;
    out.push({ method: meta.openapi.method, path: meta.openapi.path, procedurePath, access: meta.access });
  }
  return out;
}

type BunServer = { requestIP(r: Request): { address: string } | null } | null | undefined;

/** The peer's address, as Bun sees the socket. */
export function clientAddress(server: BunServer, request: Request): string {
  return server?.requestIP(request)?.address ?? "";
}

export function makeContext(services: Services, request: Request, ip: string): Context {
  const info = requestInfo(request);
  // The request's own header set: a route's limit headers join the general ones already there.
  return { requestId: info.id, headers: request.headers, ip, services, resHeaders: info.headers };
}

type Caller = Record<string, unknown>;

/**
 * The REST door: each procedure's method and path become a native Elysia route that calls
 * the procedure through a tRPC caller. Path parameters, query parameters and the JSON body
 * merge into the procedure's input (path parameters win); selector headers stay headers and
 * reach procedures through the context.
 */
export function mountRest(app: Elysia, router: AnyTRPCRouter, services: Services, inflight: Inflight) {
  const createCaller = createCallerFactory(router);
  const maxBytes = services.config.MAX_BODY_BYTES;
  const log = services.log;

  for (const route of restRoutes(router)) {
    const segments = route.procedurePath.split(".");
    const withBody = route.method === "POST" || route.method === "PATCH" || route.method === "PUT";
    const elysiaPath = route.path.replace(/\{(\w+)\}/g, ":$1");

    const handler = async ({
      request,
      params,
      query,
      server,
    }: {
      request: Request;
      params: Record<string, string>;
      query: Record<string, string>;
      server: { requestIP(r: Request): { address: string } | null } | null;
    }) => {
      let response: Response;
      inflight.count++;
      try {
        await services.edge.admit(request, clientAddress(server, request));
        const body = withBody ? await readJsonBody(request, maxBytes) : undefined;
        const input = { ...query, ...body, ...params };
        const ctx = makeContext(services, request, clientAddress(server, request));
        let fn: unknown = createCaller(ctx);
        for (const s of segments) fn = (fn as Caller)[s];
        const out = await (fn as (i: unknown) => Promise<unknown>)(input);
        response = json(request, out ?? null, 200, ctx.resHeaders);
      } catch (err) {
        response = errorResponse(err, request, log);
      } finally {
        inflight.count--;
      }
      logAccess(log, request, response.status);
      return response;
    };

    app.route(route.method, elysiaPath, handler as never, { parse: "none" } as never);
  }
}
