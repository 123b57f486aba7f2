import { z } from "zod";
import { LIMITS } from "../lib/limits";
import { ZOk } from "../lib/schemas";
import { router } from "../trpc/init";
import { authedProcedure, limitedByPrincipal } from "../trpc/procedures";
import {
  ZClientApp,
  ZClientRef,
  ZCreateClient,
  ZCreatedClient,
  ZEnableMsAuth,
  ZListClients,
  ZMsAuthModule,
  ZUpdateClient,
} from "./schemas";

const tags = ["clients"];
const err = [400, 401, 403, 404, 429];

export const clientsRouter = router({
  create: limitedByPrincipal("clientCreate")
    .meta({
      access: "team:admin",
      audit: "client.create",
      scope: "clients:write",
      status: 201,
      openapi: {
        method: "POST",
        path: "/client/apps",
        tags,
        summary: "Create a client application; the client_secret is shown only in this response",
        errorResponses: [400, 401, 403, 409, 429],
      },
    })
    .input(ZCreateClient)
    .output(ZCreatedClient)
    .mutation(({ ctx, input }) => ctx.services.clients.create(ctx.principal, input)),

  list: authedProcedure
    .meta({
      access: "team:viewer",
      scope: "clients:read",
      openapi: {
        method: "GET",
        path: "/client/apps",
        tags,
        summary: "The team's client applications (never a secret)",
        errorResponses: err,
      },
    })
    .input(ZListClients)
    .output(z.object({ apps: z.array(ZClientApp).max(LIMITS.appsPerTeam) }))
    .query(({ ctx, input }) => ctx.services.clients.list(ctx.principal, input.team_id)),

  get: authedProcedure
    .meta({
      access: "team:viewer",
      scope: "clients:read",
      openapi: {
        method: "GET",
        path: "/client/apps/{client_id}",
        tags,
        summary: "One client application (never its secret)",
        errorResponses: err,
      },
    })
    .input(ZClientRef)
    .output(ZClientApp)
    .query(({ ctx, input }) => ctx.services.clients.get(ctx.principal, input.client_id)),

  update: authedProcedure
    .meta({
      access: "team:admin",
      audit: "client.update",
      scope: "clients:write",
      openapi: {
        method: "PATCH",
        path: "/client/apps/{client_id}",
        tags,
        summary: "Change a client's name, title, description or logo",
        errorResponses: err,
      },
    })
    .input(ZUpdateClient)
    .output(ZClientApp)
    .mutation(({ ctx, input }) => ctx.services.clients.update(ctx.principal, input)),

  delete: authedProcedure
    .meta({
      access: "team:admin",
      audit: "client.delete",
      scope: "clients:write",
      openapi: {
        method: "DELETE",
        path: "/client/apps/{client_id}",
        tags,
        summary: "Delete a client, its module, login requests and sessions",
        errorResponses: err,
      },
    })
    .input(ZClientRef)
    .output(ZOk)
    .mutation(({ ctx, input }) => ctx.services.clients.remove(ctx.principal, input.client_id)),

  rotateSecret: authedProcedure
    .meta({
      access: "team:admin",
      audit: "client.secret_rotate",
      scope: "clients:write",
      openapi: {
        method: "POST",
        path: "/client/apps/{client_id}/secret",
        tags,
        summary: "Rotate the client secret: the new one is shown once, the old one stops working",
        errorResponses: err,
      },
    })
    .input(ZClientRef)
    .output(ZCreatedClient)
    .mutation(({ ctx, input }) => ctx.services.clients.rotateSecret(ctx.principal, input.client_id)),

  enableMsAuth: limitedByPrincipal("msAuthModule")
    .meta({
      access: "team:admin",
      audit: "client.ms_auth_enable",
      scope: "clients:write",
      openapi: {
        method: "POST",
        path: "/client/apps/{client_id}/modules/ms-auth",
        tags,
        summary: "Enable the ms_auth login module, or change its post-login redirect URI",
        errorResponses: err,
      },
    })
    .input(ZEnableMsAuth)
    .output(ZMsAuthModule)
    .mutation(({ ctx, input }) =>
      ctx.services.clients.enableMsAuth(ctx.principal, input.client_id, input.post_login_redirect_uri),
    ),

  getMsAuth: authedProcedure
    .meta({
      access: "team:viewer",
      scope: "clients:read",
      openapi: {
        method: "GET",
        path: "/client/apps/{client_id}/modules/ms-auth",
        tags,
        summary: "The ms_auth module's settings (404 when not enabled)",
        errorResponses: err,
      },
    })
    .input(ZClientRef)
    .output(ZMsAuthModule)
    .query(({ ctx, input }) => ctx.services.clients.getMsAuth(ctx.principal, input.client_id)),

  disableMsAuth: authedProcedure
    .meta({
      access: "team:admin",
      audit: "client.ms_auth_disable",
      scope: "clients:write",
      openapi: {
        method: "DELETE",
        path: "/client/apps/{client_id}/modules/ms-auth",
        tags,
        summary: "Disable the ms_auth module: new logins are refused",
        errorResponses: err,
      },
    })
    .input(ZClientRef)
    .output(ZOk)
    .mutation(({ ctx, input }) => ctx.services.clients.disableMsAuth(ctx.principal, input.client_id)),
});
