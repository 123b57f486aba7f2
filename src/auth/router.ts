import { ZOk } from "../lib/schemas";
import { router } from "../trpc/init";
import { publicProcedure, userProcedure } from "../trpc/procedures";
import {
  ZChangePassword,
  ZLoginInput,
  ZLoginSessions,
  ZMe,
  ZRefreshInput,
  ZRevoked,
  ZSessionRef,
  ZSignupInput,
  ZTokenPair,
  ZUser,
} from "./schemas";

const tags = ["auth"];

export const authRouter = router({
  signup: publicProcedure
    .meta({
      access: "public",
      status: 201,
      openapi: {
        method: "POST",
        path: "/auth/signup",
        tags,
        protect: false,
        summary: "Create an account",
        description:
          "Sign-up attempts are limited per client address and for the whole service (SIGNUPS_PER_ADDRESS_PER_HOUR, SIGNUPS_PER_HOUR), and password hashing runs in a few slots of which sign-ups hold only a share: over a limit, or with the sign-up queue full, the answer is 429 with Retry-After and no account is made.",
        errorResponses: [400, 409, 429],
      },
    })
    .input(ZSignupInput)
    .output(ZUser)
    .mutation(({ ctx, input }) => ctx.services.auth.signup(input.email, input.password, ctx.ip)),

  login: publicProcedure
    .meta({
      access: "public",
      openapi: {
        method: "POST",
        path: "/auth/login",
        tags,
        protect: false,
        summary: "Sign in; returns an access token and a refresh token",
        description:
          "Failed sign-ins are limited per email (whether or not an account has it) and per client address: over either limit every sign-in for it answers 429 with Retry-After until the window ends. Password checks run in a few hashing slots, some kept from sign-ups: with every slot busy and the sign-in queue full, 429 with Retry-After.",
        errorResponses: [400, 401, 429],
      },
    })
    .input(ZLoginInput)
    .output(ZTokenPair)
    .mutation(({ ctx, input }) =>
      ctx.services.auth.login(input.email, input.password, {
        address: ctx.ip,
        userAgent: ctx.headers.get("user-agent"),
      }),
    ),

  refresh: publicProcedure
    .meta({
      access: "public",
      openapi: {
        method: "POST",
        path: "/auth/refresh",
        tags,
        protect: false,
        summary: "Exchange a refresh token for a new pair (the old one stops working)",
        errorResponses: [400, 401, 429],
      },
    })
    .input(ZRefreshInput)
    .output(ZTokenPair)
    .mutation(({ ctx, input }) => ctx.services.auth.refresh(input.refresh_token)),

  logout: publicProcedure
    .meta({
      access: "public",
      openapi: {
        method: "POST",
        path: "/auth/logout",
        tags,
        protect: false,
        summary: "Revoke a refresh token and its whole family",
        description:
          "Ends the login: its refresh tokens and the access tokens issued under it stop working on every instance, and analytics sockets using them close with 4011.",
        errorResponses: [400, 429],
      },
    })
    .input(ZRefreshInput)
    .output(ZOk)
    .mutation(({ ctx, input }) => ctx.services.auth.logout(input.refresh_token)),

  me: userProcedure
    .meta({
      access: "user",
      openapi: {
        method: "GET",
        path: "/auth/me",
        tags,
        summary: "The signed-in account and its teams",
        errorResponses: [401, 403, 429],
      },
    })
    .output(ZMe)
    .query(({ ctx }) => ctx.services.auth.me(ctx.principal.userId)),

  sessions: userProcedure
    .meta({
      access: "user",
      openapi: {
        method: "GET",
        path: "/auth/sessions",
        tags,
        summary: "Your sign-ins: created, last used, address and user agent",
        errorResponses: [401, 403, 429],
      },
    })
    .output(ZLoginSessions)
    .query(({ ctx }) => ctx.services.auth.listSessions(ctx.principal.userId, ctx.principal.sessionId)),

  revokeSession: userProcedure
    .meta({
      access: "user",
      openapi: {
        method: "DELETE",
        path: "/auth/sessions/{session_id}",
        tags,
        summary: "End one of your sign-ins",
        errorResponses: [400, 401, 403, 404, 429],
      },
    })
    .input(ZSessionRef)
    .output(ZOk)
    .mutation(({ ctx, input }) => ctx.services.auth.revokeSession(ctx.principal.userId, input.session_id)),

  revokeOtherSessions: userProcedure
    .meta({
      access: "user",
      openapi: {
        method: "POST",
        path: "/auth/sessions/revoke-others",
        tags,
        summary: "End every sign-in but this one",
        errorResponses: [401, 403, 429],
      },
    })
    .output(ZRevoked)
    .mutation(({ ctx }) => ctx.services.auth.revokeOtherSessions(ctx.principal.userId, ctx.principal.sessionId)),

  changePassword: userProcedure
    .meta({
      access: "user",
      openapi: {
        method: "POST",
        path: "/auth/password",
        tags,
        summary: "Change your password; every other sign-in ends",
        errorResponses: [400, 401, 403, 429],
      },
    })
    .input(ZChangePassword)
    .output(ZRevoked)
    .mutation(({ ctx, input }) =>
      ctx.services.auth.changePassword(
        ctx.principal.userId,
        ctx.principal.sessionId,
        input.current_password,
        input.new_password,
        ctx.ip,
      ),
    ),
});
