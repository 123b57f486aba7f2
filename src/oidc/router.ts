import { ZOk } from "../lib/schemas";
import { ZClientRef } from "../clients/schemas";
import { router } from "../trpc/init";
import { authedProcedure, limitedByPrincipal } from "../trpc/procedures";
import { ZEnableOidc, ZOidcSettings } from "./schemas";

const tags = ["clients"];
const err = [400, 401, 403, 404, 429];

/** A client app's OpenID Connect settings, managed by its team (the endpoints themselves are in browser.ts). */
export const oidcRouter = router({
  enable: limitedByPrincipal("msAuthModule")
    .meta({
      access: "team:admin",
      audit: "client.oidc_enable",
      scope: "clients:write",
      openapi: {
        method: "POST",
        path: "/client/apps/{client_id}/modules/oidc",
        tags,
        summary: "Enable Sign in with Minecraft (OpenID Connect) for a client app, or change its settings",
        description:
          "Registers the redirect URIs, whether the client is public (PKCE, no secret) and how its ID tokens are signed. A confidential client authenticates at the token endpoint with the client app's secret. Discovery: /.well-known/openid-configuration.",
        errorResponses: err,
      },
    })
    .input(ZEnableOidc)
    .output(ZOidcSettings)
    .mutation(({ ctx, input }) => ctx.services.oidc.enable(ctx.principal, input)),

  get: authedProcedure
    .meta({
      access: "team:viewer",
      scope: "clients:read",
      openapi: {
        method: "GET",
        path: "/client/apps/{client_id}/modules/oidc",
        tags,
        summary: "A client app's OpenID Connect settings (404 when not enabled)",
        errorResponses: err,
      },
    })
    .input(ZClientRef)
    .output(ZOidcSettings)
    .query(({ ctx, input }) => ctx.services.oidc.getSettings(ctx.principal, input.client_id)),

  disable: authedProcedure
    .meta({
      access: "team:admin",
      audit: "client.oidc_disable",
      scope: "clients:write",
      openapi: {
        method: "DELETE",
        path: "/client/apps/{client_id}/modules/oidc",
        tags,
        summary: "Disable OpenID Connect for a client app: new authorization requests are refused",
        errorResponses: err,
      },
    })
    .input(ZClientRef)
    .output(ZOk)
    .mutation(({ ctx, input }) => ctx.services.oidc.disable(ctx.principal, input.client_id)),
});
