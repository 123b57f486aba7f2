import { authedProcedure } from "../trpc/procedures";
import { selectorHeader } from "./access";

/**
 * Procedures that act on the team named by `x-team-id` / the server named by `x-server-id`.
 * The credential is checked first (no credential is a 401 whatever the headers), then the
 * selector's presence and shape (400 naming the header); membership is checked by the services.
 */
export const teamSelectedProcedure = authedProcedure.use(({ ctx, next }) =>
  next({ ctx: { ...ctx, teamId: selectorHeader(ctx.headers, "x-team-id") } }),
);
export const serverSelectedProcedure = authedProcedure.use(({ ctx, next }) =>
  next({ ctx: { ...ctx, serverId: selectorHeader(ctx.headers, "x-server-id") } }),
);
