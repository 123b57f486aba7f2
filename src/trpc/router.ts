import { accountsRouter } from "../accounts/router";
import { healthRouter } from "../health/router";
import { teamsRouter } from "../teams/router";
import { router } from "./init";

export const appRouter = router({
  health: healthRouter,
  auth: accountsRouter,
  teams: teamsRouter,
});

export type AppRouter = typeof appRouter;
