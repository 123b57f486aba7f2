import type { IncidentsService } from "../incidents/service";
import type { MaintenanceService } from "../maintenance/service";
import type { AnalyticsService } from "../analytics/service";
import type { CohortZones } from "../analytics/zones";
import type { AccessTokens } from "../auth/jwt";
import type { AuditService } from "../audit/service";
import type { TwoFactorService } from "../auth/two-factor";
import type { AuthService } from "../auth/service";
import type { AgentService } from "../agent/service";
import type { ClientsService } from "../clients/service";
import type { Config } from "../config";
import type { Database } from "../db/client";
import type { HealthService } from "../health/service";
import type { IdempotencyStore } from "../idempotency/store";
import type { DevProvider } from "../identity/dev-provider/handlers";
import type { Edge } from "../http/edge";
import type { BackgroundTask } from "../lib/background";
import type { Clock } from "../lib/clock";
import type { PrivacyService } from "../privacy/service";
import type { AlertRulesService } from "../alerts/service";
import type { PerformanceAlerts } from "../alerts/evaluate";
import type { Keyring } from "../lib/keyring";
import type { Logger } from "../lib/log";
import type { Metrics } from "../lib/metrics";
import type { RateLimiter, RateLimitPolicy } from "../lib/rate-limit";
import type { SessionAssertions } from "../ms-auth/assertions";
import type { PlayerAppsService } from "../account/service";
import type { MsAuthDiagnostics } from "../ms-auth/diagnostics";
import type { LoginLinks } from "../ms-auth/links";
import type { DeviceCodes } from "../ms-auth/device";
import type { MsAuthService } from "../ms-auth/service";
import type { OidcService } from "../oidc/service";
import type { SignInFlow } from "../ms-auth/sign-in";
import type { LoginRequestStore } from "../ms-auth/store";
import type { MonitoringService } from "../monitoring/service";
import type { PlayerHistoryService } from "../player-history/service";
import type { PlayerDirectoryService } from "../player-directory/service";
import type { Realtime } from "../realtime/service";
import type { AnnouncementsService } from "../servers/announcements";
import type { PlayersService } from "../servers/players";
import type { RanksService } from "../servers/ranks";
import type { NetworksService } from "../networks/service";
import type { ServersService } from "../servers/service";
import type { TeamsService } from "../teams/service";
import type { InvitationsService } from "../teams/invitations";
import type { WebhooksService } from "../webhooks/service";
import type { DeliveryWorker } from "../webhooks/worker";
import type { PasswordGate } from "../auth/password-gate";
import type { ServerAlerts } from "../webhooks/alerts";
import type { PublishedPages } from "../status-pages/published";
import type { StatusPagesService } from "../status-pages/service";

/**
 * Everything the doors can reach, built once per process by `createServices` (src/services.ts,
 * where the app is composed). The doors declare it; the domain services never see it.
 */
export interface Services {
  config: Config;
  log: Logger;
  database: Database;
  /** The development identity provider when this process serves it at /dev-idp. */
  devIdp?: DevProvider;
  tokens: AccessTokens;
  auth: AuthService;
  /** Second factors: enrolment, removal, and the second step of a sign-in. */
  twoFactor: TwoFactorService;
  /** Password hashing slots shared by sign-ups and sign-ins (a share kept for sign-ins). */
  passwords: PasswordGate;
  teams: TeamsService;
  /** Team invitations: sent by admins, accepted or declined by the invitee. */
  invitations: InvitationsService;
  health: HealthService;
  clock: Clock;
  keyring: Keyring;
  limiter: RateLimiter;
  limits: {
    start: RateLimitPolicy;
    poll: RateLimitPolicy;
    validate: RateLimitPolicy;
    /** Wrong client credentials, per client id and caller address: never the client's own budget. */
    clientAuthFailure: RateLimitPolicy;
    clientCreate: RateLimitPolicy;
    msAuthModule: RateLimitPolicy;
  };
  clients: ClientsService;
  /** The launcher backend's calls (start, poll, validate, revoke). */
  msAuth: MsAuthService;
  msAuthDiagnostics: MsAuthDiagnostics;
  /** The sign-in links and identity chain settings (the player's apps page signs in through them too). */
  loginLinks: LoginLinks;
  playerApps: PlayerAppsService;
  /** The device flow's user codes: issued at start, claimed at /device, guessing limited. */
  deviceCodes: DeviceCodes;
  /** "Sign in with Minecraft" for websites: the OpenID Provider and its client settings. */
  oidc: OidcService;
  /** Signed session assertions and their keys (/.well-known/jwks.json). */
  assertions: SessionAssertions;
  /** The browser's half of a login: callback, consent, decision. */
  signIn: SignInFlow;
  /** Login requests: load, apply a machine event, persist; the expiry sweep. */
  loginRequests: LoginRequestStore;
  servers: ServersService;
  players: PlayersService;
  ranks: RanksService;
  networks: NetworksService;
  incidents: IncidentsService;
  maintenance: MaintenanceService;
  announcements: AnnouncementsService;
  /** The pinger and sample statistics; `pingDue()` / `checkNow(id)` run checks on demand. */
  monitoring: MonitoringService;
  agent: AgentService;
  /** Player sessions (from agent events and ping samples), profiles and per-day figures. */
  playerHistory: PlayerHistoryService;
  /** The team's player directory, player pages, notes, and names resolved to players. */
  playerDirectory: PlayerDirectoryService;
  analytics: AnalyticsService;
  /** Makes retention's kept counts again after a team's zone changed (tests wait on `catchUp`). */
  cohortZones: CohortZones;
  realtime: Realtime;
  /** Team webhook endpoints; also the sink the domains report team events to. */
  webhooks: WebhooksService;
  /** Reads the audit log (entries are written by the changes themselves, src/audit/entry.ts). */
  audit: AuditService;
  privacy: PrivacyService;
  /** Alert rules on performance (docs/alerts.md). */
  alertRules: AlertRulesService;
  /** Holds heartbeats and pings against the alert rules. */
  performanceAlerts: PerformanceAlerts;
  /** The delivery queue's drainer; `drain()` runs every due delivery now. */
  webhookWorker: DeliveryWorker;
  /** Server down/up and agent silence, from pings and heartbeats. */
  alerts: ServerAlerts;
  edge: Edge;
  /** `Idempotency-Key` records: what a credentialed POST answered, replayed for 24 hours. */
  idempotency: IdempotencyStore;
  /** Prometheus metrics when METRICS_TOKEN is set; null (nothing counted) otherwise. */
  metrics: Metrics | null;
  /** Status pages: the team's settings of each. */
  statusPages: StatusPagesService;
  /** Published status pages as the public reads them, cached per page. */
  publishedPages: PublishedPages;
  /** Periodic work started with the listener and stopped before the database closes. */
  background: BackgroundTask[];
}

export interface Context {
  requestId: string;
  headers: Headers;
  ip: string;
  services: Services;
  /** Response headers a procedure wants sent (rate limit state and the like). */
  resHeaders: Record<string, string>;
}
