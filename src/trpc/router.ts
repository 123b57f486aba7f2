import { accountsRouter } from "../accounts/router";
import { healthRouter } from "../health/router";
import { teamsRouter } from "../teams/router";
import { clientsRouter } from "../clients/router";
import { loginRouter } from "../login/router";
import { serversRouter } from "../servers/router";
import { agentRouter } from "../agent/router";
import { playerHistoryRouter } from "../player-history/router";
import { router } from "./init";

export const appRouter = router({
  health: healthRouter,
  auth: accountsRouter,
  teams: teamsRouter,
  clients: clientsRouter,
  msAuth: loginRouter,
  servers: serversRouter,
  agent: agentRouter,
  playerHistory: playerHistoryRouter,
});

export type AppRouter = typeof appRouter;
