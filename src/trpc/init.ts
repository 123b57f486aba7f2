import { initTRPC } from "@trpc/server";
import type { OpenApiMeta } from "trpc-to-openapi";
import type { AuditMeta } from "../audit/actions";
import type { Scope } from "../auth/scopes";
import { toErrorBody } from "../lib/errors";
import type { Context } from "./context";

/**
 * Who may call a procedure. Every procedure declares one; the authorization matrix test
 * reads it, and a procedure without it fails that test.
 * - public: anyone
 * - user: a signed-in dashboard user (not an API key)
 * - member: a signed-in user, or a team API key acting within its own team only
 * - team:<role>: a user or team API key with at least that role in the target team
 * - person:<role>: a signed-in user (never an API key) with at least that role in the target team
 * - invitee: a signed-in user (never an API key) acting on an invitation to their own email;
 *   anyone else's answer is 404, as if it did not exist
 * - client: holder of a client's id and secret (launcher backends)
 * - agent: a server agent token
 */
export type Access =
  | "public"
  | "user"
  | "member"
  | "team:viewer"
  | "team:moderator"
  | "team:admin"
  | "team:owner"
  | "person:admin"
  | "person:owner"
  | "invitee"
  | "client"
  | "agent";

/**
 * `status` is the REST door's success status when it is not 200: 201 for an operation that
 * creates a resource. The REST door answers it and the document declares it.
 * `audit` is what a mutation writes to the audit log (src/audit/actions.ts); every mutation
 * declares it, and test/audit.test.ts walks the router to prove each writes what it declares.
 * `scope` is the API key scope that lets a scoped key call the procedure (src/auth/scopes.ts);
 * every `member` and `team:*` procedure but the owner's names one, and nothing else may.
 */
export type Meta = OpenApiMeta<{ access?: Access; status?: 201; audit?: AuditMeta; scope?: Scope }>;

export const t = initTRPC
  .context<Context>()
  .meta<Meta>()
  .create({
    // tRPC's wire protocol needs a numeric `code` (JSON-RPC) so typed clients can read the
    // error; our string code, details and request id ride beside it, the same as on REST.
    errorFormatter({ shape, error, ctx }) {
      const { body, status } = toErrorBody(error);
      return {
        code: shape.code,
        message: body.message,
        ...(body.details !== undefined && { details: body.details }),
        request_id: ctx?.requestId ?? "",
        data: { code: body.code, httpStatus: status, path: shape.data.path },
      };
    },
  });

export const router = t.router;
export const createCallerFactory = t.createCallerFactory;
