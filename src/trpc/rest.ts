import type { AnyTRPCProcedure, AnyTRPCRouter } from "@trpc/server";
import { Elysia } from "elysia";
import { requestInfo } from "../http/request";
import { json, notModified } from "../http/responses";
import { readJsonBody } from "../lib/body";
import type { Context, Services } from "./context";
import { invokeProcedure } from "./invoke";
import type { Meta } from "./init";

export interface RestRoute {
  method: "GET" | "POST" | "PATCH" | "PUT" | "DELETE";
  /** OpenAPI style, `/teams/{team_id}` */
  path: string;
  procedurePath: string;
  access: Meta["access"];
  /** The API key scope that lets a scoped key call it, if any. */
  scope: Meta["scope"];
  /** The status of a successful answer. */
  status: 200 | 201;
}

/** Every procedure that has an OpenAPI path, in the order the router declares them. */
export function restRoutes(router: AnyTRPCRouter): RestRoute[] {
  const out: RestRoute[] = [];
  for (const [procedurePath, proc] of Object.entries(router._def.procedures as Record<string, AnyTRPCProcedure>)) {
    const meta = proc._def.meta as Meta | undefined;
    if (!meta?.openapi || meta.openapi.enabled === false) continue;
    out.push({
      method: meta.openapi.method,
      path: meta.openapi.path,
      procedurePath,
      access: meta.access,
      scope: meta.scope,
      status: meta.status ?? 200,
    });
  }
  return out;
}

/** The procedure context for a request that passed the edge. */
export function makeContext(services: Services, request: Request): Context {
  const info = requestInfo(request);
  // The request's own header set: a route's limit headers join the general ones already there.
  return { requestId: info.id, headers: request.headers, ip: info.ip, services, resHeaders: info.headers };
}

/**
 * The REST door: each procedure's method and path become a native Elysia route that calls
 * the procedure as tRPC's caller does (`invokeProcedure`). Path parameters, query parameters and the JSON body
 * merge into the procedure's input (path parameters win); selector headers stay headers and
 * reach procedures through the context. Errors, logging and limits are the edge's.
 */
export function restDoor(router: AnyTRPCRouter, services: Services) {
  const maxBytes = services.config.MAX_BODY_BYTES;
  const door = new Elysia({ name: "rest-door" });

  for (const route of restRoutes(router)) {
    const procedure = router._def.procedures[route.procedurePath] as AnyTRPCProcedure;
    const { procedurePath: path } = route;
    const type = procedure._def.type as "query" | "mutation";
    const withBody = route.method === "POST" || route.method === "PATCH" || route.method === "PUT";
    const elysiaPath = route.path.replace(/\{(\w+)\}/g, ":$1");

    const handler = async ({
      request,
      params,
      query,
    }: {
      request: Request;
      params: Record<string, string>;
      query: Record<string, string>;
    }) => {
      const body = withBody ? await readJsonBody(request, maxBytes) : undefined;
      const input = { ...query, ...body, ...params };
      const ctx = makeContext(services, request);
      const out = await invokeProcedure(procedure, {
        ctx,
        getRawInput: async () => input,
        input: undefined,
        path,
        type,
        signal: undefined,
      });
      // A read that set an ETag answers 304 to a client that already holds that version.
      const etag = ctx.resHeaders.etag;
      if (route.method === "GET" && etag && notModified(request, etag)) return new Response(null, { status: 304 });
      return json(out ?? null, route.status);
    };

    door.route(route.method, elysiaPath, handler as never, { parse: "none" } as never);
  }
  return door;
}
