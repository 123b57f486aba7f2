import { type AnyTRPCProcedure, getTRPCErrorFromUnknown, TRPCError } from "@trpc/server";
import type { Context } from "./context";

/** What both doors hand a procedure: the options tRPC's own resolver passes. */
export interface InvokeOptions {
  ctx: Context;
  getRawInput: () => Promise<unknown>;
  path: string;
  type: "query" | "mutation";
  signal: undefined;
  input?: undefined;
  batchIndex?: number;
}

interface MiddlewareResult {
  ok: boolean;
  data?: unknown;
  error?: unknown;
  marker?: string;
}
type Middleware = (opts: Record<string, unknown>) => Promise<MiddlewareResult>;
interface ProcedureDef {
  middlewares: Middleware[];
  meta: unknown;
  caller?: unknown;
}
interface NextOptions {
  ctx?: object;
  input?: unknown;
  getRawInput?: () => Promise<unknown>;
}

/**
 * tRPC's `callRecursive` (@trpc/server 11.25.2, initTRPC), step for step, with the language's
 * object spread where the published build copies each layer's options through Babel's
 * `_objectSpread2` helper (own keys, symbol filter, property descriptors): in a CPU profile of
 * session/validate those copies were 31% of the app's busy samples. Same options to each
 * middleware, same context merge on `next({ ctx })`, same error capture.
 */
async function callRecursive(
  index: number,
  def: ProcedureDef,
  opts: Record<string, unknown> & { ctx?: object; input?: unknown; getRawInput?: unknown },
): Promise<MiddlewareResult> {
  try {
    const middleware = def.middlewares[index]!;
    return await middleware({
      ...opts,
      meta: def.meta,
      input: opts.input,
      next(nextOpts?: NextOptions) {
        return callRecursive(index + 1, def, {
          ...opts,
          ctx: nextOpts?.ctx ? { ...opts.ctx, ...nextOpts.ctx } : opts.ctx,
          input: nextOpts && "input" in nextOpts ? nextOpts.input : opts.input,
          getRawInput: nextOpts?.getRawInput ?? opts.getRawInput,
        });
      },
    });
  } catch (cause) {
    return { ok: false, error: getTRPCErrorFromUnknown(cause), marker: "middlewareMarker" };
  }
}

/**
 * Calls a procedure as tRPC's procedure caller does (`createProcedureCaller`): its data, or
 * its error thrown. A procedure with a caller override of its own is called as it is.
 */
export async function invokeProcedure(procedure: AnyTRPCProcedure, opts: InvokeOptions): Promise<unknown> {
  const def = procedure._def as unknown as ProcedureDef;
  if (def.caller) return (procedure as unknown as (o: InvokeOptions) => Promise<unknown>)(opts);
  const result = await callRecursive(0, def, opts as unknown as Record<string, unknown>);
  if (!result)
    throw new TRPCError({
      code: "INTERNAL_SERVER_ERROR",
      message: "No result from middlewares - did you forget to `return next()`?",
    });
  if (!result.ok) throw result.error;
  return result.data;
}
