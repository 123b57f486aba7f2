import { authRouter, twoFactorRouter } from "../auth/router";
import { healthRouter } from "../health/router";
import { invitationsRouter, teamsRouter } from "../teams/router";
import { clientsRouter } from "../clients/router";
import { msAuthRouter } from "../ms-auth/router";
import { oidcRouter } from "../oidc/router";
import { serversRouter } from "../servers/router";
import { networksRouter } from "../networks/router";
import { incidentsRouter } from "../incidents/router";
import { maintenanceRouter } from "../maintenance/router";
import { agentRouter } from "../agent/router";
import { playerHistoryRouter } from "../player-history/router";
import { playerDirectoryRouter } from "../player-directory/router";
import { webhooksRouter } from "../webhooks/router";
import { auditRouter } from "../audit/router";
import { analyticsRouter } from "../analytics/router";
import { privacyRouter } from "../privacy/router";
import { alertsRouter } from "../alerts/router";
import { statusPagesRouter } from "../status-pages/router";
import { router } from "./init";

export const appRouter = router({
  health: healthRouter,
  auth: authRouter,
  twoFactor: twoFactorRouter,
  teams: teamsRouter,
  invitations: invitationsRouter,
  clients: clientsRouter,
  msAuth: msAuthRouter,
  oidc: oidcRouter,
  servers: serversRouter,
  networks: networksRouter,
  incidents: incidentsRouter,
  maintenance: maintenanceRouter,
  agent: agentRouter,
  playerHistory: playerHistoryRouter,
  playerDirectory: playerDirectoryRouter,
  webhooks: webhooksRouter,
  audit: auditRouter,
  analytics: analyticsRouter,
  privacy: privacyRouter,
  alerts: alertsRouter,
  statusPages: statusPagesRouter,
});

export type AppRouter = typeof appRouter;
