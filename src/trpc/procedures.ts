import { type AnyTRPCProcedure, TRPCError } from "@trpc/server";
import { AppError, ERROR_CODES } from "../lib/errors";
import { type Principal, principalKey, type Role } from "../auth/principal";
import { SERVER_SCOPES } from "../auth/scopes";
import type { VerifiedClient } from "../clients/service";
import { isValidIdempotencyKey } from "../idempotency/store";
import { ZClientCreds } from "../ms-auth/schemas";
import { type AuditActor, type AuditScope, auditScopes } from "../audit/scope";
import type { Context } from "./context";
import { type Meta, t } from "./init";

/** Where the first U+0000 sits in an input (a key or a string), walked without recursion so depth cannot overflow the stack. */
function nulAt(input: unknown): string | null {
  const stack: [unknown, string][] = [[input, ""]];
  while (stack.length) {
    const [v, path] = stack.pop()!;
    if (typeof v === "string") {
      if (v.includes("\0")) return path;
    } else if (v && typeof v === "object") {
      for (const [k, child] of Object.entries(v)) {
        const p = path ? `${path}.${k}` : k;
        if (k.includes("\0")) return p;
        stack.push([child, p]);
      }
    }
  }
  return null;
}

/** The tRPC error of an application error's row in the one error table (the formatter adds the rest). */
const asTrpcError = (cause: AppError) =>
  new TRPCError({ code: ERROR_CODES[cause.appCode].trpc, message: cause.message, cause });

/** The raw input, refused when it holds U+0000 (PostgreSQL text cannot), before any work. */
async function checkedRawInput(getRawInput: () => Promise<unknown>): Promise<unknown> {
  const raw = await getRawInput();
  const at = nulAt(raw);
  if (at !== null) {
    throw new AppError("validation_failed", "The request did not match the expected shape.", {
      details: { issues: [{ path: at, message: "must not contain the NUL character (U+0000)" }] },
    });
  }
  return raw;
}

/**
 * The boundary where application errors become tRPC errors: tRPC answers each with the status
 * and JSON-RPC code of its row in the one error table. Every root middleware ends here.
 */
function settled<R extends { ok: boolean; error?: unknown }>(result: R): R {
  if (!result.ok) {
    const r = result as unknown as { error: { cause?: unknown } };
    if (r.error.cause instanceof AppError) r.error = asTrpcError(r.error.cause);
  }
  return result;
}

const asTrpcFailure = (err: unknown) => (err instanceof AppError ? asTrpcError(err) : err);

/**
 * Every procedure starts with exactly one root middleware (this one, or the authenticated and
 * client ones below, which do the same first): each layer of tRPC's chain copies its options
 * and context, so checks that every call needs share one layer. PostgreSQL text cannot hold
 * U+0000 and answers such a value with an error, so it is refused as a validation failure on
 * both doors before any work.
 */
export const publicProcedure = t.procedure.use(async ({ getRawInput, next }) => {
  try {
    await checkedRawInput(getRawInput);
  } catch (err) {
    throw asTrpcFailure(err);
  }
  return settled(await next());
});

interface CallOptions {
  ctx: Context;
  meta: Meta | undefined;
  type: string;
  path: string;
  getRawInput: () => Promise<unknown>;
}

/**
 * A POST with a credential runs at most once per `Idempotency-Key` the caller sends: the same
 * key with the same input (and selector headers) within 24 hours answers the first success
 * again, marked `Idempotent-Replayed: true`, on either door. The key belongs to the credential
 * (`scope`) and the operation, so two callers' keys never meet. Without the header, or on
 * another method, the call runs as it always did.
 */
async function once<R extends { ok: boolean; data?: unknown }>(
  opts: CallOptions,
  scope: string,
  run: () => Promise<R>,
): Promise<R> {
  const key = opts.ctx.headers.get("idempotency-key");
  if (key === null || opts.type !== "mutation" || opts.meta?.openapi?.method !== "POST") return run();
  const { ctx } = opts;
  const store = ctx.services.idempotency;
  let begun: Awaited<ReturnType<typeof store.begin>>;
  try {
    if (!isValidIdempotencyKey(key))
      throw new AppError("bad_request", "The Idempotency-Key header must be 1 to 255 printable ASCII characters.");
    const request = {
      input: await opts.getRawInput(),
      team: ctx.headers.get("x-team-id"),
      server: ctx.headers.get("x-server-id"),
    };
    begun = await store.begin(scope, opts.path, key, request);
  } catch (err) {
    throw asTrpcFailure(err);
  }
  if ("replay" in begun) {
    ctx.resHeaders["idempotent-replayed"] = "true";
    return { ok: true, data: begun.replay, marker: "middlewareMarker" } as unknown as R;
  }
  const { claim } = begun;
  let result: R;
  try {
    result = await run();
  } catch (err) {
    await store.release(claim).catch((e) => ctx.services.log.error("idempotency release failed", { err: e }));
    throw err;
  }
  // The operation's outcome stands either way: a record that could not be written only means a
  // retry waits for the key to be taken as abandoned.
  await (result.ok ? store.complete(claim, result.data) : store.release(claim)).catch((err) =>
    ctx.services.log.error("idempotency record failed", { request_id: ctx.requestId, err }),
  );
  return result;
}

function bearer(headers: Headers): string | null {
  const value = headers.get("authorization");
  if (!value) return null;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(value);
  if (!m) throw new AppError("unauthenticated", "The authorization header must be `Bearer <token>`.");
  return m[1]!;
}

/**
 * Runs a mutation inside its audit scope (src/audit/scope.ts): the services' audit writes take the
 * actor and the request's address, user agent and id from it. Once the mutation has succeeded
 * (its transaction committed), each entry it wrote goes out as an `audit.entry` webhook; a
 * mutation that declares one action and wrote another count is logged (test/audit.test.ts fails
 * on it before it ships).
 */
async function audited<R>(
  opts: { ctx: Context; type: string; meta: Meta | undefined; path: string },
  actor: AuditActor,
  run: () => Promise<R>,
): Promise<R> {
  const { ctx, type, meta, path } = opts;
  // A read records itself only where it declares an action (an export of a player's data).
  const recorded = type === "mutation" || typeof meta?.audit === "string";
  if (!recorded || !meta?.audit || (typeof meta.audit === "object" && "none" in meta.audit)) return run();
  const scope: AuditScope = {
    actor,
    action: typeof meta.audit === "string" ? meta.audit : null,
    ip: ctx.ip || null,
    userAgent: ctx.headers.get("user-agent")?.slice(0, 500) ?? null,
    requestId: ctx.requestId || null,
    written: [],
  };
  const result = await auditScopes.run(scope, run);
  if ((result as { ok?: boolean }).ok === false) return result;
  for (const entry of scope.written) ctx.services.webhooks.emit({ teamId: entry.team_id }, "audit.entry", { ...entry });
  if (scope.action && scope.written.length !== 1)
    ctx.services.log.error("a mutation wrote other than one audit entry", {
      path,
      action: scope.action,
      entries: scope.written.length,
    });
  return result;
}

const actorOf = (p: Principal): AuditActor =>
  p.kind === "user" ? { kind: "user", id: p.userId } : { kind: "api_key", id: p.keyId };

/**
 * What an API key may do in this procedure. A key limited to some servers calls only server
 * procedures; a scoped key calls only the procedures whose scope it holds, and there acts with
 * the role the procedure needs (a role the services then check as for any key).
 */
function keyFor(principal: Principal, meta: Meta | undefined): Principal {
  if (principal.kind !== "api_key") return principal;
  const scope = meta?.scope;
  if (principal.serverIds && !(scope && SERVER_SCOPES.includes(scope)))
    throw new AppError("forbidden", "This API key is limited to some servers: it can call server routes only.");
  if (!principal.scopes) return principal;
  if (!scope || !principal.scopes.includes(scope))
    throw new AppError(
      "forbidden",
      scope
        ? `This API key's scopes do not include ${scope}.`
        : "This operation is not open to scoped API keys; it needs a key with a role.",
    );
  const access = meta?.access ?? "";
  const role: Role = access.startsWith("team:") ? (access.slice(5) as Role) : "viewer";
  return { ...principal, role };
}

/** A user access token or a team API key. Team membership is checked by the services. */
export const authedProcedure = t.procedure.use(async (opts) => {
  const { ctx, getRawInput, next, type, meta, path } = opts;
  let principal: Principal | null;
  try {
    await checkedRawInput(getRawInput);
    const token = bearer(ctx.headers);
    if (!token) throw new AppError("unauthenticated", "This endpoint needs `authorization: Bearer <token>`.");
    principal = await ctx.services.auth.authenticate(token);
    if (!principal) throw new AppError("unauthenticated", "The bearer credential is invalid, expired or revoked.");
    principal = keyFor(principal, meta);
  } catch (err) {
    throw asTrpcFailure(err);
  }
  return settled(
    await once(opts, principalKey(principal), () =>
      audited({ ctx, type, meta, path }, actorOf(principal), () => next({ ctx: { principal } })),
    ),
  );
});

/** Only a signed-in person: team API keys cannot manage accounts or create teams. */
export const userProcedure = authedProcedure.use(({ ctx, next }) => {
  if (ctx.principal.kind !== "user")
    throw new AppError("forbidden", "This endpoint needs a user access token, not an API key.");
  return next({ ctx: { principal: ctx.principal } });
});

/**
 * A server agent (`authorization: Bearer mcp_agent_...`), resolved by the token's hash to the
 * one server it speaks for. User tokens and API keys are not agent tokens: 401 here, as an
 * agent token is on every dashboard route.
 */
export const agentProcedure = publicProcedure.use(async (opts) => {
  const { ctx, next, type, meta, path } = opts;
  const token = bearer(ctx.headers);
  if (!token) throw new AppError("unauthenticated", "This endpoint needs `authorization: Bearer <agent token>`.");
  const agent = await ctx.services.agent.authenticate(token);
  if (!agent) throw new AppError("unauthenticated", "The agent token is invalid or has been replaced.");
  return once(opts, `agent:${agent.serverId}`, () =>
    audited({ ctx, type, meta, path }, { kind: "agent", id: agent.serverId }, () => next({ ctx: { agent } })),
  );
});

type LimitName = keyof Context["services"]["limits"];

type ClientLimit = "start" | "poll" | "validate";

/**
 * A launcher backend: client_id + client_secret from the input, verified once here; the
 * verified client (with its ms_auth module) is `ctx.client`. Only verified calls count
 * against the client's own limit, so someone who knows a public client_id cannot spend it;
 * wrong secrets count in a bucket of their own per client id and caller address, and past
 * it that caller gets 429 while the real backend carries on.
 */
export const clientProcedure = (limit: ClientLimit) =>
  t.procedure.use(async (opts) => {
    const { ctx, getRawInput, next } = opts;
    let client: VerifiedClient;
    try {
      // The procedure's own input parser checks the whole input after this; the credentials
      // are read here first so an unverified caller costs no more than the check of two fields.
      const creds = ZClientCreds.safeParse(await checkedRawInput(getRawInput));
      if (!creds.success) throw new TRPCError({ code: "BAD_REQUEST", cause: creds.error });
      const { services } = ctx;
      const input = creds.data;
      try {
        client = await services.clients.verify(input.client_id, input.client_secret);
      } catch (err) {
        if (err instanceof AppError && err.appCode === "invalid_client")
          await services.limiter.enforce(
            services.limits.clientAuthFailure,
            `${input.client_id}|${ctx.ip}`,
            ctx.resHeaders,
          );
        throw err;
      }
      await services.limiter.enforce(services.limits[limit], client.app.id, ctx.resHeaders);
    } catch (err) {
      throw asTrpcFailure(err);
    }
    return settled(await once(opts, `client:${client.app.id}`, () => next({ ctx: { client } })));
  });

/** Counted per person or API key ("per token" in the seed's limits). */
export const limitedByPrincipal = (limit: LimitName) =>
  authedProcedure.use(async ({ ctx, next }) => {
    const p = ctx.principal;
    await ctx.services.limiter.enforce(
      ctx.services.limits[limit],
      p.kind === "user" ? `user:${p.userId}` : `key:${p.keyId}`,
      ctx.resHeaders,
    );
    return next();
  });

/**
 * Drops a procedure's output re-validation and keeps its output schema, which the OpenAPI
 * document still declares. Only for procedures whose service builds every field of the
 * declared shape itself (never a database row passed through), so nothing extra can leak.
 */
export function trustedOutput<P extends AnyTRPCProcedure>(procedure: P): P {
  const middlewares = (procedure._def as unknown as { middlewares: { _type?: string }[] }).middlewares;
  const at = middlewares.findIndex((m) => m._type === "output");
  if (at !== -1) middlewares.splice(at, 1);
  return procedure;
}
