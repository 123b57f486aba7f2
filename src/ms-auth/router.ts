import { ZOk } from "../lib/schemas";
import { router } from "../trpc/init";
import { authedProcedure, clientProcedure, trustedOutput } from "../trpc/procedures";
import {
  ZDiagnosticsInput,
  ZDiagnosticsReport,
  ZPollInput,
  ZPollOutput,
  ZSessionInput,
  ZStartInput,
  ZStartOutput,
  ZValidateInput,
  ZValidateOutput,
} from "./schemas";

const tags = ["ms-auth"];
export const msAuthRouter = router({
  start: clientProcedure("start")
    .meta({
      access: "client",
      audit: { none: "a player's launcher sign-in, recorded as the login request itself" },
      openapi: {
        method: "POST",
        path: "/client/ms-auth/start",
        tags,
        protect: false,
        summary: "Start a player sign-in (or resume one); open auth_url in the player's browser, or show a device code",
        description:
          'Client credentials in the body. With `flow: "device"` (RFC 8628 shape) the answer also carries `user_code`, `verification_uri`, `verification_uri_complete` and `qr_code_svg`: show them, and the player signs in on any other device at verification_uri; poll as usual. With `auth_request_id` (a launcher that restarted), resumes that login: a live request of this client answers the same `auth_request_id` with a fresh `auth_url` and the seconds it has left; 401 `auth_request_expired` when it has expired; 404 when it is unknown or another client\'s; 409 when it already ended (poll it). 401 `invalid_client` for bad credentials; 400 when ms_auth is not enabled. 120 verified requests per minute per client; wrong secrets are limited separately per client and address.',
        errorResponses: [400, 401, 404, 409, 429],
      },
    })
    .input(ZStartInput)
    .output(ZStartOutput)
    .mutation(({ ctx, input }) => ctx.services.msAuth.start(ctx.client, input)),

  poll: trustedOutput(
    clientProcedure("poll")
      .meta({
        access: "client",
        audit: { none: "a player's launcher sign-in, recorded as the login request itself" },
        openapi: {
          method: "POST",
          path: "/client/ms-auth/poll",
          tags,
          protect: false,
          summary: "Read a login request's status; svc_session_token once authorized",
          description:
            "404 for an unknown auth_request_id or one of another client. `error` names why a request was denied or expired. 300 verified requests per minute per client.",
          errorResponses: [400, 401, 404, 429],
        },
      })
      .input(ZPollInput)
      .output(ZPollOutput)
      .mutation(({ ctx, input }) =>
        ctx.services.msAuth.poll(ctx.client, input.auth_request_id, { assertion: input.assertion }),
      ),
  ),

  validate: trustedOutput(
    clientProcedure("validate")
      .meta({
        access: "client",
        audit: { none: "a player's launcher sign-in, recorded as the login request itself" },
        openapi: {
          method: "POST",
          path: "/client/ms-auth/session/validate",
          tags,
          protect: false,
          summary: "Validate a svc_session_token and read the player's Minecraft UUID and name",
          description:
            "Unknown, expired, revoked or another client's token: `{valid: false}` and nothing else. 401 only for bad client credentials. 300 verified requests per minute per client.",
          errorResponses: [400, 401, 429],
        },
      })
      .input(ZValidateInput)
      .output(ZValidateOutput)
      .mutation(({ ctx, input }) =>
        ctx.services.msAuth.validate(ctx.client, input.svc_session_token, {
          assertion: input.assertion,
          textures: input.textures,
        }),
      ),
  ),

  revoke: clientProcedure("validate")
    .meta({
      access: "client",
      audit: { none: "a player's launcher sign-in, recorded as the login request itself" },
      openapi: {
        method: "POST",
        path: "/client/ms-auth/session/revoke",
        tags,
        protect: false,
        summary: "Revoke a svc_session_token (sign the player out)",
        description:
          "Always `{ok: true}` for valid client credentials, whether or not the token existed (RFC 7009). Shares the validate limit.",
        errorResponses: [400, 401, 429],
      },
    })
    .input(ZSessionInput)
    .output(ZOk)
    .mutation(({ ctx, input }) => ctx.services.msAuth.revoke(ctx.client, input.svc_session_token)),

  diagnostics: authedProcedure
    .meta({
      access: "team:owner",
      openapi: {
        method: "GET",
        path: "/client/ms-auth/diagnostics",
        tags,
        summary: "Self-test of the Microsoft app sign-ins depend on, and of this client's sign-ins",
        description:
          "For the owner of the client's team. Checks the redirect URI the Microsoft app must register, that the client secret is set and when it expires (MS_CLIENT_SECRET_EXPIRES_AT), whether Microsoft accepts it (one made-up code redeemed at the token endpoint unless `probe=false`), what the client's recent sign-ins say about the Minecraft API approval, and the client's ms_auth module. Each check has a status (ok, info, warning, error), a summary and, when something is to be done, an action. 404 for a client that is not in one of your teams.",
        errorResponses: [400, 401, 403, 404, 429],
      },
    })
    .input(ZDiagnosticsInput)
    .output(ZDiagnosticsReport)
    .query(({ ctx, input }) =>
      ctx.services.msAuthDiagnostics.report(ctx.principal, input.client_id, { probe: input.probe }),
    ),
});
