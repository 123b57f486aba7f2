import { z } from "zod";
import { ZAgentConfig, ZEventResult, ZHeartbeatResult } from "../agent/schemas";
import {
  ZLoginSession,
  ZMe,
  ZPasskey,
  ZSecondFactorChallenge,
  ZTokenPair,
  ZTwoFactorStatus,
  ZUser,
} from "../auth/schemas";
import { ZClientApp, ZCreatedClient, ZMsAuthModule } from "../clients/schemas";
import { ZOk } from "../lib/schemas";
import { ZMetrics } from "../monitoring/schemas";
import { ZStartOutput } from "../ms-auth/schemas";
import { ZPlayerProfile, ZPlayerSummary, ZSession, ZSessionPage } from "../player-history/schemas";
import { ZAnnouncement, ZBan, ZKick, ZPlayer, ZPlayerList, ZRank, ZUptimeStats } from "../servers/community-schemas";
import { ZAgentStats, ZCreatedServer, ZNetwork, ZPingStatus, ZServer } from "../servers/schemas";
import { ZApiKey, ZInvitation, ZMember, ZTeam } from "../teams/schemas";
import { ZDelivery, ZEndpoint, ZEndpointWithSecret } from "../webhooks/schemas";
import { ZAuditEntry, ZAuditPage } from "../audit/schemas";
import {
  ZDirectoryPage,
  ZDirectoryPlayer,
  ZModerationEvent,
  ZNote,
  ZPlayerPage,
  ZResolved,
  ZTeamSessionPage,
} from "../player-directory/schemas";

/**
 * The resources the reference names: each lands in `components.schemas` under its name and is
 * `$ref`ed wherever it appears. Registered here rather than with `.meta({ id })` at each
 * definition so the schemas stay as their domains wrote them (an id is a document concern).
 */
const COMPONENTS: Record<string, z.ZodType> = {
  User: ZUser,
  Me: ZMe,
  TokenPair: ZTokenPair,
  SecondFactorChallenge: ZSecondFactorChallenge,
  TwoFactorStatus: ZTwoFactorStatus,
  Passkey: ZPasskey,
  LoginSession: ZLoginSession,
  Team: ZTeam,
  Member: ZMember,
  Invitation: ZInvitation,
  ApiKey: ZApiKey,
  ClientApp: ZClientApp,
  CreatedClient: ZCreatedClient,
  MsAuthModule: ZMsAuthModule,
  LoginStarted: ZStartOutput,
  Server: ZServer,
  CreatedServer: ZCreatedServer,
  PingStatus: ZPingStatus,
  AgentStats: ZAgentStats,
  Network: ZNetwork,
  Player: ZPlayer,
  PlayerList: ZPlayerList,
  Ban: ZBan,
  Kick: ZKick,
  Rank: ZRank,
  Announcement: ZAnnouncement,
  UptimeStats: ZUptimeStats,
  Metrics: ZMetrics,
  PlayerSession: ZSession,
  PlayerSessionPage: ZSessionPage,
  PlayerProfile: ZPlayerProfile,
  PlayerSummary: ZPlayerSummary,
  HeartbeatAccepted: ZHeartbeatResult,
  EventsAccepted: ZEventResult,
  AgentConfig: ZAgentConfig,
  WebhookEndpoint: ZEndpoint,
  CreatedWebhookEndpoint: ZEndpointWithSecret,
  WebhookDelivery: ZDelivery,
  DirectoryPlayer: ZDirectoryPlayer,
  PlayerDirectoryPage: ZDirectoryPage,
  PlayerPage: ZPlayerPage,
  TeamPlayerSessionPage: ZTeamSessionPage,
  ModerationEvent: ZModerationEvent,
  PlayerNote: ZNote,
  ResolvedName: ZResolved,
  AuditEntry: ZAuditEntry,
  AuditPage: ZAuditPage,
  Ok: ZOk,
};

/** Gives each component its id in zod's global registry, once (a second id would throw). */
export function registerComponents(): void {
  for (const [id, schema] of Object.entries(COMPONENTS)) {
    const meta = z.globalRegistry.get(schema);
    if (meta?.id === id) continue;
    z.globalRegistry.add(schema, { ...meta, id });
  }
}

export const COMPONENT_NAMES = Object.keys(COMPONENTS);

export interface OperationExample {
  /** The procedure's input (path, query and body fields together), as a caller sends it. */
  request?: Record<string, unknown>;
  /** Selector headers the call carries. */
  headers?: Record<string, string>;
  /** A successful answer. */
  response: unknown;
  /** Other answers worth showing (the variants of a discriminated answer). */
  more?: Record<string, { summary: string; value: unknown }>;
}

const T0 = "2026-03-14T09:26:53.589Z";
const T1 = "2026-03-14T10:02:11.204Z";
const TEAM = "3f1c9a52-8d4e-4b7a-9c21-5e6f7a8b9c0d";
const USER = "b7e2d1c4-5a6f-4e3b-8c9d-0a1b2c3d4e5f";
const USER2 = "c8f3e2d5-6b7a-4f4c-9d0e-1b2c3d4e5f60";
const CLIENT = "9d4b6c1e-2f3a-4b5c-8d7e-6f5a4b3c2d1e";
const SERVER = "5b0e1c1e-3f7d-4a55-9c43-8f0f4f1f2a10";
const ALERT_RULE = "7c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f";
const STATUS_PAGE = "2d4e6f80-9a1b-4c3d-8e5f-6a7b8c9d0e1f";
const KEY = "e1d2c3b4-a596-4786-9a0b-1c2d3e4f5a6b";
const INVITATION = "6e7f8a9b-0c1d-4e2f-8a3b-4c5d6e7f8a9b";
const REQUEST = "7a6b5c4d-3e2f-4a1b-8c9d-0e1f2a3b4c5d";
const ANNOUNCEMENT = "2c3d4e5f-6a7b-4c8d-9e0f-1a2b3c4d5e6f";
const SESSION = "4d5e6f7a-8b9c-4d0e-8f1a-2b3c4d5e6f7a";
const NOTCH = "069a79f4-44e9-4726-a5be-fca90e38aaf5";
const JEB = "853c80ef-3c37-49fd-aa49-938b674adae6";
const CLIENT_SECRET = "mcp_cs_Qm9vdHN0cmFwcGVkIGV4YW1wbGUgc2VjcmV0IDQy";
const SESSION_TOKEN = "mcp_sess_4kR2vX9pLq7sT1wY3zB6nD8fH0jM5cE2aG4iK6oU8";
const ACCESS_TOKEN =
  "eyJhbGciOiJFZERTQSIsImtpZCI6ImsxIn0.eyJzdWIiOiJiN2UyZDFjNC01YTZmLTRlM2ItOGM5ZC0wYTFiMmMzZDRlNWYifQ.c2lnbmF0dXJl";
const REFRESH_TOKEN = "mcp_rt_8xJ3mQ5vN7bL2kP9wR4tY6uZ1aS3dF5gH7jK9lC0eV";
/** A session assertion (EdDSA JWT) as validate and poll return it when asked; the signature is illustrative. */
const ASSERTION =
  "eyJhbGciOiJFZERTQSIsImtpZCI6ImFzLTIwMjYtMDMiLCJ0eXAiOiJKV1QifQ.eyJpc3MiOiJodHRwczovL2FwaS5tYy1wbGF0Zm9ybS5leGFtcGxlIiwiYXVkIjoiOWQ0YjZjMWUtMmYzYS00YjVjLThkN2UtNmY1YTRiM2MyZDFlIiwic3ViIjoiMDY5YTc5ZjQtNDRlOS00NzI2LWE1YmUtZmNhOTBlMzhhYWY1IiwibmFtZSI6Ik5vdGNoIn0.c2lnbmF0dXJl";
const teamSel = { "x-team-id": TEAM };
const serverSel = { "x-server-id": SERVER };

const user = { id: USER, email: "ada@example.com", created_at: T0 };
const tokens = {
  access_token: ACCESS_TOKEN,
  token_type: "Bearer",
  expires_in: 900,
  refresh_token: REFRESH_TOKEN,
};
const team = {
  team_id: TEAM,
  name: "Blockworks",
  role: "owner",
  require_two_factor: false,
  time_zone: "UTC",
  created_at: T0,
  updated_at: T0,
};
const PASSKEY = "6e7f8a9b-0c1d-4e2f-9a3b-4c5d6e7f8a9b";
const CHALLENGE_TOKEN = "mcp_2fa_Xv8bN2kQ7rT4wY1zC5mH9pL3sD6fG0jA2eK4uR8";
const RECOVERY_CODES = [
  "k7m2p-x9q4t",
  "a3c8e-w6r2n",
  "h5j9d-b2v7s",
  "t4y8u-m3k6p",
  "q9w2e-r5t8y",
  "z3x6c-v9b2n",
  "p7s4d-f8g3h",
  "j2k5m-n8q4w",
  "e6r9t-y3u7a",
  "c4v8b-x2z5s",
];
const passkey = { passkey_id: PASSKEY, name: "YubiKey 5C", created_at: T0, last_used_at: T1 };
const twoFactorStatus = {
  enabled: true,
  totp: { enabled: true, confirmed_at: T0 },
  passkeys: [passkey],
  recovery_codes_left: 9,
};
const passkeyAssertion = {
  id: "uX3v9kQ2mT7wR4pL1zN8bC5dF0gH6jA3",
  rawId: "uX3v9kQ2mT7wR4pL1zN8bC5dF0gH6jA3",
  type: "public-key",
  response: {
    clientDataJSON: "eyJ0eXBlIjoid2ViYXV0aG4uZ2V0IiwiY2hhbGxlbmdlIjoiUjd0UTJtWDl2SzRwTDh3TjNiWjZjRjFoSjVnRDBzQTIifQ",
    authenticatorData: "SZYN5YgOjGh0NBcPZHZgW4_krrmihjLHmVzzuoMdl2MFAAAABQ",
    signature: "MEUCIQDx7y3Rk9vQ2mT4wL8pN1bC6dF0gH5jA3sE7uK2yZ9xVwIgY4tR8mW2qP6nL1zB5cD9fG3hJ7kA0sE4uX8vT2yQ1w",
  },
  clientExtensionResults: {},
  authenticatorAttachment: "cross-platform",
};
const member = { user_id: USER2, email: "grace@example.com", role: "admin", joined_at: T1 };
const owner = { user_id: USER, email: "ada@example.com", role: "owner", joined_at: T0 };
const statusPage = {
  page_id: STATUS_PAGE,
  team_id: TEAM,
  slug: "blockworks",
  title: "Blockworks",
  description: "Live status of the Blockworks network",
  host_name: null,
  published: true,
  server_ids: [],
  network_names: ["Blockworks"],
  show: { players: true, version: true, motd: true, latency: false },
  logo_url: null,
  accent_color: "#2f6fde",
  theme: "auto",
  url: "https://mc.blockworks.example/status/blockworks",
  created_at: T0,
  updated_at: T0,
};
const alertRule = {
  id: ALERT_RULE,
  team_id: TEAM,
  server_id: SERVER,
  network_name: null,
  name: "Low TPS",
  metric: "tps",
  op: "below",
  threshold: 18,
  margin: 1,
  duration_seconds: 60,
  enabled: true,
  firing: [],
  created_at: T0,
  updated_at: T0,
};
const invitation = {
  invitation_id: INVITATION,
  team_id: TEAM,
  team_name: "Blockworks",
  email: "grace@example.com",
  role: "admin",
  status: "pending",
  invited_by: "ada@example.com",
  created_at: T1,
  expires_at: "2026-03-21T10:02:11.204Z",
};
const apiKey = {
  key_id: KEY,
  team_id: TEAM,
  name: "Grafana",
  role: "viewer",
  scopes: null,
  server_ids: null,
  expires_at: null,
  last_used_at: T1,
  prefix: "mcp_key_7Hq2",
  created_at: T0,
  revoked_at: null,
};
const scopedKey = {
  ...apiKey,
  name: "Ban bot",
  role: null,
  scopes: ["servers:read", "moderation:write"],
  server_ids: [SERVER],
  expires_at: "2026-06-30T00:00:00.000Z",
  last_used_at: null,
};
const kick = {
  kick_id: "8f9a0b1c-2d3e-4f5a-9b6c-7d8e9f0a1b2c",
  uuid: JEB,
  name: "jeb_",
  reason: "Calm down",
  created: T1,
  until: "2026-03-14T10:04:11.204Z",
};
const LOGIN_SESSION = "6e7f8a9b-0c1d-4e2f-8a3b-4c5d6e7f8a9b";
const loginSession = {
  session_id: SESSION,
  created_at: T0,
  last_used_at: T1,
  address: "203.0.113.7",
  user_agent: "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0",
  current: true,
};
const app = {
  client_id: CLIENT,
  team_id: TEAM,
  name: "launcher-prod",
  title: "Blockworks Launcher",
  description: "Sign in to play on Blockworks servers.",
  logo_url: "https://blockworks.example/logo.png",
  modules: ["ms_auth"],
  created_at: T0,
  updated_at: T0,
  secret_rotated_at: T0,
};
const msAuthModule = {
  module_key: "ms_auth",
  post_login_redirect_uri: "https://launcher.blockworks.example/signed-in",
  created_at: T0,
  updated_at: T0,
};
const oidcSettings = {
  redirect_uris: ["https://blockworks.example/auth/callback/minecraft"],
  public: false,
  id_token_signed_response_alg: "RS256",
  created_at: T0,
  updated_at: T0,
};
const creds = { client_id: CLIENT, client_secret: CLIENT_SECRET };
const status = {
  online: true,
  latency_ms: 23,
  players_online: 41,
  players_max: 200,
  version: "Paper 1.21.4",
  motd: "Blockworks Survival",
  checked_at: T1,
  changed_at: T0,
  down_reason: null,
  down_since: null,
};
const gameServer = {
  server_id: SERVER,
  team_id: TEAM,
  name: "Survival",
  host: "play.blockworks.example",
  port: 25565,
  kind: "network",
  network_name: "blockworks",
  agent_token_prefix: "mcp_agent_Xy7",
  created_at: T0,
  updated_at: T0,
  status,
  agent: { tps: 19.97, mspt: 18.4, players_online: 41, memory_used_mb: 5120, memory_max_mb: 8192, reported_at: T1 },
};
const player = {
  uuid: NOTCH,
  name: "Notch",
  online: true,
  first_seen: T0,
  last_seen: T1,
  time_played_seconds: 86_400,
};
const ban = {
  uuid: JEB,
  name: "jeb_",
  reason: "Griefing spawn",
  source: "dashboard",
  origin: "dashboard",
  created: T0,
  expires: "forever",
};
const rank = {
  name: "vip",
  display_name: "VIP",
  weight: 10,
  prefix: "[VIP] ",
  suffix: null,
  permissions: ["essentials.fly", "essentials.nick"],
  parents: ["default"],
  created_at: T0,
  updated_at: T0,
};
const networkBan = {
  ban_id: SESSION,
  network_name: "blockworks",
  uuid: JEB,
  name: "jeb_",
  reason: "Griefing spawn",
  source: "Dashboard",
  created: T0,
  expires: "forever",
  created_by: { kind: "user", id: USER, name: "owner@blockworks.example" },
  active: true,
  lifted_at: null,
  lifted_by: null,
  end_reason: null,
};
const announcement = {
  announcement_id: ANNOUNCEMENT,
  message: "Vote for us daily at blockworks.example/vote",
  interval_seconds: 600,
  schedule: null,
  active: true,
  starts_at: null,
  ends_at: null,
  created_at: T0,
  updated_at: T0,
};
const session = {
  session_id: SESSION,
  uuid: NOTCH,
  name: "Notch",
  joined_at: T0,
  left_at: T1,
  duration_seconds: 2158,
  online: false,
  source: "agent",
  end_reason: "leave",
};
const ok = { ok: true };
const NOTE = "8b9c0d1e-2f3a-4b4c-9d5e-6f7a8b9c0d1e";
const MODERATION = "9c0d1e2f-3a4b-4c5d-8e6f-7a8b9c0d1e2f";
const directoryPlayer = {
  uuid: JEB,
  name: "jeb_",
  edition: "java",
  first_seen: T0,
  last_seen: T1,
  online: false,
  playtime_seconds: 172_800,
  sessions: 64,
  banned: true,
};
const note = {
  note_id: NOTE,
  text: "Warned about TNT at spawn; second warning.",
  author: { kind: "user", id: USER, name: "ada@example.com" },
  created_at: T1,
};
const teamSession = { ...session, uuid: JEB, name: "jeb_", server_id: SERVER, server_name: "Survival" };
const day = {
  unique_players: 57,
  new_players: 9,
  returning_players: 48,
  peak_concurrent: 41,
  playtime_seconds: 302_400,
};

const WEBHOOK = "6e7f8a9b-0c1d-4e2f-9a3b-4c5d6e7f8a9b";
const DELIVERY = "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d";
const WEBHOOK_SECRET = "whsec_Zm9vYmFyYmF6cXV4Ym9vdHN0cmFwcGVkc2VjcmV0MDE=";
const webhookEndpoint = {
  endpoint_id: WEBHOOK,
  team_id: TEAM,
  url: "https://hooks.blockworks.example/minecraft",
  url_masked: false,
  description: "On-call alerts",
  kind: "standard",
  event_types: ["server.down", "server.up"],
  enabled: true,
  disabled_reason: null,
  disabled_at: null,
  secret_prefix: "whsec_Zm9v",
  previous_secret_expires_at: null,
  failing_since: null,
  consecutive_failures: 0,
  paused_at: null,
  paused_until: null,
  created_at: T0,
  updated_at: T0,
};
const webhookUsage = {
  events_per_minute: 1000,
  deliveries_per_minute: 3000,
  events_available: 996,
  deliveries_available: 2992,
  dropped_events: 0,
  dropped_deliveries: 0,
  last_dropped_at: null,
};
const webhookDelivery = {
  delivery_id: DELIVERY,
  endpoint_id: WEBHOOK,
  message_id: "msg_2pQx7Vn4Lk9Rt3Wz8Yb5Hd1Fs6",
  event_type: "server.down",
  status: "succeeded",
  attempts: 1,
  next_attempt_at: null,
  last_status_code: 200,
  last_error: null,
  last_latency_ms: 84,
  last_response: "ok",
  last_attempt_at: T1,
  created_at: T1,
};

/** One realistic request and answer per procedure; the doors test parses each with the procedure's own schemas. */
const auditEntries = [
  {
    entry_id: "1043",
    team_id: TEAM,
    at: T1,
    actor: { kind: "user", id: USER2, name: "grace@example.com" },
    action: "player.ban",
    target: { type: "player", id: JEB, name: "jeb_" },
    server_id: SERVER,
    changes: {
      reason: { before: null, after: "Griefing spawn" },
      source: { before: null, after: "Dashboard" },
      origin: { before: null, after: "dashboard" },
      expires: { before: null, after: "forever" },
    },
    ip: "203.0.113.7",
    user_agent: "Mozilla/5.0 (X11; Linux x86_64)",
    request_id: REQUEST,
  },
  {
    entry_id: "1042",
    team_id: TEAM,
    at: T0,
    actor: { kind: "api_key", id: KEY, name: "Deploy bot" },
    action: "server.update",
    target: { type: "server", id: SERVER, name: "Survival" },
    server_id: SERVER,
    changes: { port: { before: 25565, after: 25566 } },
    ip: "198.51.100.20",
    user_agent: "curl/8.5.0",
    request_id: "0f1e2d3c-4b5a-4987-8f6e-5d4c3b2a1f0e",
  },
];

const analyticsWindow = {
  from: "2026-03-01T00:00:00.000Z",
  to: "2026-03-08T00:00:00.000Z",
  time_zone: "Europe/Berlin",
};

const INCIDENT = "0f1e2d3c-4b5a-4697-8a8b-9c0d1e2f3a4b";
const WINDOW = "1f2e3d4c-5b6a-4798-9a8b-0c1d2e3f4a5b";
const crashIncident = {
  incident_id: INCIDENT,
  server_id: SERVER,
  server_name: "Survival",
  network_name: null,
  kind: "crash",
  title: "Survival crashed",
  status: "investigating",
  started_at: T0,
  ended_at: null,
  reason: "connection_refused",
  crash: {
    file: "crash-2026-03-14_09.26.50-server.txt",
    description: "Exception in server tick loop",
    lines: [
      "java.lang.IllegalStateException: Lock is no longer valid",
      "    at net.minecraft.world.level.storage.LevelStorageSource$LevelStorageAccess.checkLock(LevelStorageSource.java:440)",
    ],
    reported_at: "2026-03-14T09:26:50.000Z",
  },
  updated_at: T0,
};
const manualIncident = {
  incident_id: INCIDENT,
  server_id: null,
  server_name: null,
  network_name: "blockworks",
  kind: "manual",
  title: "Lobby lag",
  status: "identified",
  started_at: T0,
  ended_at: null,
  reason: null,
  crash: null,
  updated_at: T0,
  updates: [
    {
      at: T0,
      status: "identified",
      message: "A plugin update slows the lobby; rolling it back.",
      author: { kind: "user", name: "ada@example.com" },
    },
  ],
};
const maintenanceWindow = {
  window_id: WINDOW,
  server_id: SERVER,
  network_name: null,
  title: "Weekly restart",
  message: "The server restarts for backups.",
  starts_at: null,
  ends_at: null,
  schedule: "0 4 * * 1",
  duration_minutes: 30,
  time_zone: "Europe/Paris",
  active: null,
  next: { starts_at: "2026-03-16T03:00:00.000Z", ends_at: "2026-03-16T03:30:00.000Z" },
  created_at: T0,
  updated_at: T0,
};

export const OPERATION_EXAMPLES: Record<string, OperationExample> = {
  "incidents.list": {
    headers: teamSel,
    request: { server_id: SERVER, state: "all", limit: 50 },
    response: { incidents: [crashIncident] },
  },
  "incidents.get": {
    headers: teamSel,
    request: { incident_id: INCIDENT },
    response: {
      ...crashIncident,
      updates: [
        {
          at: T0,
          status: "investigating",
          message: "The server went down without announcing a stop: a crash.",
          author: { kind: "system", name: "pinger" },
        },
      ],
    },
  },
  "incidents.create": {
    headers: teamSel,
    request: {
      network_name: "blockworks",
      title: "Lobby lag",
      status: "identified",
      message: "A plugin update slows the lobby; rolling it back.",
    },
    response: manualIncident,
  },
  "incidents.addUpdate": {
    headers: teamSel,
    request: { incident_id: INCIDENT, status: "resolved", message: "Rolled back; the lobby is smooth again." },
    response: {
      ...manualIncident,
      status: "resolved",
      ended_at: T1,
      updated_at: T1,
      updates: [
        ...manualIncident.updates,
        {
          at: T1,
          status: "resolved",
          message: "Rolled back; the lobby is smooth again.",
          author: { kind: "user", name: "ada@example.com" },
        },
      ],
    },
  },
  "maintenance.list": { headers: teamSel, response: { windows: [maintenanceWindow] } },
  "maintenance.upcoming": {
    headers: teamSel,
    request: { days: 14, server_id: SERVER },
    response: {
      from: T0,
      to: "2026-03-28T09:26:53.589Z",
      occurrences: [
        {
          window_id: WINDOW,
          server_id: SERVER,
          network_name: null,
          title: "Weekly restart",
          message: "The server restarts for backups.",
          starts_at: "2026-03-16T03:00:00.000Z",
          ends_at: "2026-03-16T03:30:00.000Z",
          active: false,
        },
        {
          window_id: WINDOW,
          server_id: SERVER,
          network_name: null,
          title: "Weekly restart",
          message: "The server restarts for backups.",
          starts_at: "2026-03-23T03:00:00.000Z",
          ends_at: "2026-03-23T03:30:00.000Z",
          active: false,
        },
      ],
    },
  },
  "maintenance.create": {
    headers: teamSel,
    request: {
      server_id: SERVER,
      title: "Weekly restart",
      message: "The server restarts for backups.",
      schedule: "0 4 * * 1",
      duration_minutes: 30,
    },
    response: maintenanceWindow,
    more: {
      oneOff: {
        summary: "A one-off window",
        value: {
          ...maintenanceWindow,
          title: "Map reset",
          schedule: null,
          duration_minutes: null,
          starts_at: "2026-03-20T18:00:00.000Z",
          ends_at: "2026-03-20T20:00:00.000Z",
          next: { starts_at: "2026-03-20T18:00:00.000Z", ends_at: "2026-03-20T20:00:00.000Z" },
        },
      },
    },
  },
  "maintenance.update": {
    headers: teamSel,
    request: { window_id: WINDOW, duration_minutes: 45 },
    response: {
      ...maintenanceWindow,
      duration_minutes: 45,
      next: { starts_at: "2026-03-16T03:00:00.000Z", ends_at: "2026-03-16T03:45:00.000Z" },
      updated_at: T1,
    },
  },
  "maintenance.delete": { headers: teamSel, request: { window_id: WINDOW }, response: ok },

  "analytics.activity": {
    headers: teamSel,
    request: { server_id: SERVER, from: "2026-03-01T00:00:00Z", to: "2026-03-08T00:00:00Z", tz: "Europe/Berlin" },
    response: {
      ...analyticsWindow,
      players: 212,
      new_players: 63,
      returning_players: 88,
      regular_players: 61,
      activity_groups: [
        { group: "very_active", min_index: 3.75, players: 19 },
        { group: "active", min_index: 3, players: 30 },
        { group: "regular", min_index: 2, players: 41 },
        { group: "irregular", min_index: 1, players: 77 },
        { group: "inactive", min_index: 0, players: 45 },
      ],
      index_at: "2026-03-02T00:00:00.000Z",
    },
  },
  "analytics.retention": {
    headers: teamSel,
    request: { network: "Blockworks", from: "2026-02-02T00:00:00Z", to: "2026-03-02T00:00:00Z" },
    response: {
      ...analyticsWindow,
      cohorts: [
        {
          week_start: "2026-02-02",
          players: 40,
          retained: [
            { week: 1, players: 22, share: 0.55 },
            { week: 2, players: 15, share: 0.375 },
          ],
        },
      ],
    },
  },
  "analytics.heatmap": {
    headers: teamSel,
    request: { server_id: SERVER, tz: "Asia/Kolkata" },
    response: {
      ...analyticsWindow,
      days: ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"].map((weekday) => ({
        weekday,
        hours: Array.from({ length: 24 }, (_, hour) => ({
          hour,
          average_online: hour >= 17 && hour <= 22 ? 12.5 : 2.25,
        })),
      })),
    },
  },
  "analytics.sessionLengths": {
    headers: teamSel,
    request: { server_id: SERVER },
    response: {
      ...analyticsWindow,
      sessions: 100,
      buckets: [
        { bucket: "under 5 min", min_seconds: 0, max_seconds: 300, sessions: 10, share: 0.1 },
        { bucket: "5-15 min", min_seconds: 300, max_seconds: 900, sessions: 15, share: 0.15 },
        { bucket: "15-30 min", min_seconds: 900, max_seconds: 1800, sessions: 20, share: 0.2 },
        { bucket: "30-60 min", min_seconds: 1800, max_seconds: 3600, sessions: 25, share: 0.25 },
        { bucket: "1-2 h", min_seconds: 3600, max_seconds: 7200, sessions: 20, share: 0.2 },
        { bucket: "2-4 h", min_seconds: 7200, max_seconds: 14400, sessions: 8, share: 0.08 },
        { bucket: "4 h or more", min_seconds: 14400, max_seconds: null, sessions: 2, share: 0.02 },
      ],
    },
  },
  "analytics.leaderboard": {
    headers: teamSel,
    request: { network: "Blockworks", limit: 2 },
    response: {
      ...analyticsWindow,
      players: [
        { rank: 1, uuid: NOTCH, name: "Notch", edition: "java", playtime_seconds: 86_400 },
        {
          rank: 2,
          uuid: "00000000-0000-0000-0009-01f64f8a2c3b",
          name: ".Alex",
          edition: "bedrock",
          playtime_seconds: 54_000,
        },
      ],
    },
  },
  "analytics.peaks": {
    headers: teamSel,
    request: { server_id: SERVER },
    response: {
      ...analyticsWindow,
      online_now: 14,
      peak: { players: 31, at: "2026-03-14T19:02:11.000Z" },
      most_online_ever: { players: 57, at: "2025-12-31T23:01:40.000Z" },
    },
  },
  "analytics.editions": {
    headers: teamSel,
    request: { server_id: SERVER },
    response: {
      ...analyticsWindow,
      editions: [
        { edition: "java", players: 160, player_share: 0.7547, playtime_seconds: 1_700_000, playtime_share: 0.8033 },
        { edition: "bedrock", players: 52, player_share: 0.2453, playtime_seconds: 416_400, playtime_share: 0.1967 },
      ],
    },
  },
  "health.check": { response: { status: "ok", database: "ok", version: "0.1.0", uptime_s: 86_400 } },

  "auth.signup": { request: { email: "ada@example.com", password: "correct horse battery" }, response: user },
  "auth.login": {
    request: { email: "ada@example.com", password: "correct horse battery" },
    response: tokens,
    more: {
      second_factor: {
        summary: "The account has a second factor: complete at /auth/login/second-factor",
        value: {
          second_factor_required: true,
          challenge_token: CHALLENGE_TOKEN,
          expires_in: 300,
          methods: ["totp", "recovery_code", "passkey"],
          passkey_options: {
            challenge: "R7tQ2mX9vK4pL8wN3bZ6cF1hJ5gD0sA2",
            timeout: 300000,
            rpId: "mc-platform.example",
            allowCredentials: [{ id: "uX3v9kQ2mT7wR4pL1zN8bC5dF0gH6jA3", type: "public-key", transports: ["usb"] }],
            userVerification: "preferred",
          },
        },
      },
    },
  },
  "auth.secondFactor": {
    request: { challenge_token: CHALLENGE_TOKEN, code: "492039" },
    response: tokens,
  },
  "auth.refresh": { request: { refresh_token: REFRESH_TOKEN }, response: tokens },
  "auth.logout": { request: { refresh_token: REFRESH_TOKEN }, response: ok },
  "auth.me": {
    response: {
      ...user,
      two_factor: true,
      teams: [{ team_id: TEAM, name: "Blockworks", role: "owner", require_two_factor: true, locked: false }],
    },
  },

  "twoFactor.status": { response: twoFactorStatus },
  "twoFactor.startTotp": {
    request: { password: "correct horse battery" },
    response: {
      secret: "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP",
      otpauth_url:
        "otpauth://totp/mc-platform:ada%40example.com?issuer=mc-platform&secret=JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP&algorithm=SHA1&digits=6&period=30",
      qr_svg: '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 222 222">…</svg>',
    },
  },
  "twoFactor.confirmTotp": { request: { code: "492039" }, response: { recovery_codes: RECOVERY_CODES } },
  "twoFactor.removeTotp": {
    request: { password: "correct horse battery" },
    response: { ...twoFactorStatus, totp: { enabled: false, confirmed_at: null } },
  },
  "twoFactor.passkeyOptions": {
    request: { password: "correct horse battery" },
    response: {
      options: {
        challenge: "Q2hhbGxlbmdlRm9yQVBhc3NrZXlTZXR1cA",
        rp: { name: "mc-platform", id: "mc-platform.example" },
        user: { id: "YjdlMmQxYzQ", name: "ada@example.com", displayName: "" },
        pubKeyCredParams: [
          { alg: -8, type: "public-key" },
          { alg: -7, type: "public-key" },
          { alg: -257, type: "public-key" },
        ],
        timeout: 300000,
        attestation: "none",
        excludeCredentials: [],
        authenticatorSelection: { residentKey: "preferred", userVerification: "preferred", requireResidentKey: false },
      },
    },
  },
  "twoFactor.addPasskey": {
    request: {
      name: "YubiKey 5C",
      response: {
        id: passkeyAssertion.id,
        rawId: passkeyAssertion.rawId,
        type: "public-key",
        response: {
          clientDataJSON: "eyJ0eXBlIjoid2ViYXV0aG4uY3JlYXRlIiwiY2hhbGxlbmdlIjoiUTJoaGJHeGxibWRsIn0",
          attestationObject:
            "o2NmbXRkbm9uZWdhdHRTdG10oGhhdXRoRGF0YVjFSZYN5YgOjGh0NBcPZHZgW4_krrmihjLHmVzzuoMdl2NFAAAAAA",
          transports: ["usb"],
        },
        clientExtensionResults: {},
        authenticatorAttachment: "cross-platform",
      },
    },
    response: { passkey: { ...passkey, last_used_at: null }, recovery_codes: [] },
  },
  "twoFactor.removePasskey": {
    request: { passkey_id: PASSKEY, password: "correct horse battery" },
    response: { ...twoFactorStatus, passkeys: [] },
  },
  "twoFactor.regenerateRecoveryCodes": {
    request: { password: "correct horse battery" },
    response: { recovery_codes: RECOVERY_CODES },
  },
  "auth.sessions": {
    response: {
      sessions: [
        loginSession,
        {
          session_id: LOGIN_SESSION,
          created_at: T0,
          last_used_at: T0,
          address: "198.51.100.23",
          user_agent: "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148",
          current: false,
        },
      ],
    },
  },
  "auth.revokeSession": { request: { session_id: LOGIN_SESSION }, response: ok },
  "auth.revokeOtherSessions": { response: { revoked: 2 } },
  "auth.changePassword": {
    request: { current_password: "correct horse battery", new_password: "staple battery horse correct" },
    response: { revoked: 2 },
  },

  "teams.create": { request: { name: "Blockworks" }, response: team },
  "teams.list": { response: { teams: [team] } },
  "teams.get": { request: { team_id: TEAM }, response: team },
  "teams.update": {
    request: { team_id: TEAM, name: "Blockworks Network", time_zone: "Europe/Berlin" },
    response: { ...team, name: "Blockworks Network", time_zone: "Europe/Berlin", updated_at: T1 },
  },
  "teams.delete": { request: { team_id: TEAM }, response: ok },
  "teams.setTwoFactorRequirement": {
    request: { team_id: TEAM, required: true },
    response: { ...team, require_two_factor: true, updated_at: T1 },
  },
  "teams.members": { request: { team_id: TEAM }, response: { members: [owner, member] } },
  "teams.invite": { request: { team_id: TEAM, email: "grace@example.com", role: "admin" }, response: invitation },
  "teams.invitations": {
    request: { team_id: TEAM },
    response: { invitations: [invitation] },
    more: {
      expired: {
        summary: "One not accepted in time",
        value: {
          invitations: [{ ...invitation, status: "expired", created_at: T0, expires_at: "2026-03-21T09:26:53.589Z" }],
        },
      },
    },
  },
  "teams.revokeInvitation": { request: { team_id: TEAM, invitation_id: INVITATION }, response: ok },
  "teams.updateMember": {
    request: { team_id: TEAM, user_id: USER2, role: "viewer" },
    response: { ...member, role: "viewer" },
  },
  "teams.removeMember": { request: { team_id: TEAM, user_id: USER2 }, response: ok },
  "teams.transfer": {
    request: { team_id: TEAM, user_id: USER2 },
    response: {
      members: [
        { ...owner, role: "admin" },
        { ...member, role: "owner" },
      ],
    },
  },
  "teams.createApiKey": {
    request: { team_id: TEAM, name: "Grafana", role: "viewer" },
    response: { api_key: { ...apiKey, last_used_at: null }, key: "mcp_key_7Hq2wE9rT4yU6iO8pA1sD3fG5hJ7kL9zX2cV4bN6" },
    more: {
      scoped: {
        summary: "A key with scopes, limited to one server, that expires",
        value: { api_key: scopedKey, key: "mcp_key_Bn4mK8sQ2wE6rT0yU4iO8pA2sD6fG0hJ4kL8zX2cV6" },
      },
    },
  },
  "teams.listApiKeys": { request: { team_id: TEAM }, response: { api_keys: [apiKey, scopedKey] } },
  "teams.revokeApiKey": { request: { team_id: TEAM, key_id: KEY }, response: { ...apiKey, revoked_at: T1 } },

  "invitations.list": { response: { invitations: [invitation] } },
  "invitations.accept": {
    request: { invitation_id: INVITATION },
    response: { ...team, role: "admin" },
  },
  "invitations.decline": { request: { invitation_id: INVITATION }, response: ok },

  "clients.create": {
    request: {
      team_id: TEAM,
      name: "launcher-prod",
      title: "Blockworks Launcher",
      description: "Sign in to play on Blockworks servers.",
      logo_url: "https://blockworks.example/logo.png",
    },
    response: { app: { ...app, modules: [] }, client_secret: CLIENT_SECRET },
  },
  "clients.list": { request: { team_id: TEAM }, response: { apps: [app] } },
  "clients.get": { request: { client_id: CLIENT }, response: app },
  "clients.update": {
    request: { client_id: CLIENT, title: "Blockworks" },
    response: { ...app, title: "Blockworks", updated_at: T1 },
  },
  "clients.delete": { request: { client_id: CLIENT }, response: ok },
  "clients.rotateSecret": {
    request: { client_id: CLIENT },
    response: {
      app: { ...app, secret_rotated_at: T1 },
      client_secret: "mcp_cs_TmV3IHNlY3JldCBhZnRlciByb3RhdGlvbiAxMjM0",
    },
  },
  "clients.enableMsAuth": {
    request: { client_id: CLIENT, post_login_redirect_uri: "https://launcher.blockworks.example/signed-in" },
    response: msAuthModule,
  },
  "clients.getMsAuth": { request: { client_id: CLIENT }, response: msAuthModule },
  "clients.disableMsAuth": { request: { client_id: CLIENT }, response: ok },
  "oidc.enable": {
    request: {
      client_id: CLIENT,
      redirect_uris: ["https://blockworks.example/auth/callback/minecraft"],
      id_token_signed_response_alg: "RS256",
    },
    response: oidcSettings,
  },
  "oidc.get": { request: { client_id: CLIENT }, response: oidcSettings },
  "oidc.disable": { request: { client_id: CLIENT }, response: ok },

  "msAuth.start": {
    request: { ...creds, client_state: "launcher-7f3a" },
    response: {
      auth_request_id: REQUEST,
      auth_url:
        "https://login.microsoftonline.com/consumers/oauth2/v2.0/authorize?client_id=00000000-402b-9153&response_type=code&scope=XboxLive.signin&state=eyJyIjoiN2E2YjVjNGQifQ&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM&code_challenge_method=S256",
      expires_in: 600,
      interval: 2,
    },
  },
  "msAuth.poll": {
    request: { ...creds, auth_request_id: REQUEST },
    response: { status: "authorized", svc_session_token: SESSION_TOKEN, mc_username: "Notch" },
    more: {
      pending: { summary: "Waiting for the player", value: { status: "pending", expires_in: 540 } },
      authenticated: {
        summary: "Signed in, consent not given yet",
        value: { status: "authenticated", mc_username: "Notch", expires_in: 420 },
      },
      denied: { summary: "Refused: no Java profile", value: { status: "denied", error: "no_minecraft_profile" } },
      expired: { summary: "The deadline passed", value: { status: "expired", error: "expired" } },
    },
  },
  "msAuth.validate": {
    request: { ...creds, svc_session_token: SESSION_TOKEN },
    response: { valid: true, mc_uuid: NOTCH, mc_username: "Notch", expires_at: "2026-04-13T09:26:53.589Z" },
    more: {
      withAssertion: {
        summary: "Asked with assertion: true",
        value: {
          valid: true,
          mc_uuid: NOTCH,
          mc_username: "Notch",
          expires_at: "2026-04-13T09:26:53.589Z",
          assertion: ASSERTION,
        },
      },
      invalid: { summary: "Unknown, expired, revoked or another client's", value: { valid: false } },
    },
  },
  "msAuth.revoke": { request: { ...creds, svc_session_token: SESSION_TOKEN }, response: ok },
  "msAuth.diagnostics": {
    request: { client_id: CLIENT, probe: "true" },
    response: {
      client_id: CLIENT,
      identity_provider: "microsoft",
      redirect_uri: "https://auth.blockworks.example/client/ms-auth/callback",
      checked_at: "2026-04-12T09:26:53.589Z",
      status: "warning",
      checks: [
        {
          id: "client_secret_expiry",
          status: "warning",
          summary: "The client secret expires on 2026-05-01 (19 days).",
          action: "Add a new secret to the Microsoft app, set MS_CLIENT_SECRET to it, then delete the old one.",
        },
        { id: "token_endpoint", status: "ok", summary: "Microsoft accepts the client secret." },
        {
          id: "minecraft_api_access",
          status: "ok",
          summary: "12 sign-ins reached the Minecraft profile in the last 30 days: the app is approved.",
        },
      ],
    },
  },

  "servers.create": {
    request: {
      team_id: TEAM,
      name: "Survival",
      host: "play.blockworks.example",
      port: 25565,
      kind: "network",
      network_name: "blockworks",
    },
    response: {
      ...gameServer,
      status: {
        ...status,
        online: null,
        latency_ms: null,
        players_online: null,
        players_max: null,
        version: null,
        motd: null,
        checked_at: null,
        changed_at: null,
      },
      agent: null,
      agent_token: "mcp_agent_Xy7vB2nM4qW6eR8tY0uI3oP5aS7dF9gH1jK3lZ5",
    },
  },
  "servers.list": { headers: teamSel, response: { servers: [gameServer] } },
  "servers.networks": {
    headers: teamSel,
    response: {
      networks: [
        {
          network_name: "blockworks",
          servers: [gameServer],
          servers_total: 1,
          servers_online: 1,
          players_online: 41,
          players_max: 200,
        },
      ],
    },
  },
  "networks.get": {
    headers: teamSel,
    request: { network_name: "blockworks", window: "7d" },
    response: {
      network_name: "blockworks",
      window: "7d",
      from: T0,
      to: T1,
      servers: [
        {
          server_id: SERVER,
          name: "Survival",
          online: true,
          players_online: 1,
          playtime_seconds: 7200,
          playtime_share: 1,
          sessions: 3,
          sessions_share: 1,
        },
      ],
      players_online: 1,
      online: [{ uuid: NOTCH, name: "Notch", server_id: SERVER, server_name: "Survival", since: T0 }],
      playtime_seconds: 7200,
      network_sessions: 2,
    },
  },
  "networks.sessions": {
    headers: teamSel,
    request: { network_name: "blockworks", limit: 50 },
    response: {
      sessions: [
        {
          network_session_id: SESSION,
          uuid: NOTCH,
          name: "Notch",
          joined_at: T0,
          left_at: T1,
          duration_seconds: 2118,
          online: false,
          hops: [{ server_id: SERVER, server_name: "Survival", joined_at: T0, left_at: T1 }],
        },
      ],
      next_cursor: null,
    },
  },
  "networks.bans": {
    headers: teamSel,
    request: { network_name: "blockworks", state: "active" },
    response: { bans: [networkBan], total: 1, limit: 50, offset: 0 },
  },
  "networks.ban": {
    headers: teamSel,
    request: { network_name: "blockworks", uuid: JEB, name: "jeb_", reason: "Griefing spawn" },
    response: networkBan,
  },
  "networks.unban": { headers: teamSel, request: { network_name: "blockworks", uuid: JEB }, response: ok },
  "networks.ranks": { headers: teamSel, request: { network_name: "blockworks" }, response: { ranks: [rank] } },
  "networks.createRank": {
    headers: teamSel,
    request: { network_name: "blockworks", name: "vip", display_name: "VIP", weight: 10, prefix: "[VIP] " },
    response: rank,
  },
  "networks.updateRank": {
    headers: teamSel,
    request: { network_name: "blockworks", name: "vip", weight: 20 },
    response: { ...rank, weight: 20, updated_at: T1 },
  },
  "networks.deleteRank": { headers: teamSel, request: { network_name: "blockworks", name: "vip" }, response: ok },
  "servers.get": { request: { server_id: SERVER }, response: gameServer },
  "servers.update": {
    request: { server_id: SERVER, name: "Survival EU", port: 25566 },
    response: { ...gameServer, name: "Survival EU", port: 25566, updated_at: T1 },
  },
  "servers.delete": { request: { server_id: SERVER }, response: ok },
  "servers.rotateAgentToken": {
    request: { server_id: SERVER },
    response: {
      server_id: SERVER,
      agent_token: "mcp_agent_Pq8wE2rT4yU6iO8pA1sD3fG5hJ7kL9zX2cV4bN6mQ",
      agent_token_prefix: "mcp_agent_Pq8",
    },
  },
  "servers.uptimeStats": {
    headers: serverSel,
    request: { window: "1h" },
    response: {
      server_id: SERVER,
      window: "1h",
      from: "2026-03-14T09:00:00.000Z",
      to: "2026-03-14T10:00:00.000Z",
      bucket_seconds: 1800,
      samples: 120,
      up: 119,
      down: 1,
      uptime: 0.9917,
      latency_ms: { avg: 23.4, min: 18, max: 61, p95: 39 },
      buckets: [
        {
          start: "2026-03-14T09:00:00.000Z",
          up: 60,
          down: 0,
          uptime: 1,
          latency_avg_ms: 22.1,
          latency_max_ms: 44,
          players_avg: 38.5,
        },
        {
          start: "2026-03-14T09:30:00.000Z",
          up: 59,
          down: 1,
          uptime: 0.9833,
          latency_avg_ms: 24.7,
          latency_max_ms: 61,
          players_avg: 40.2,
        },
      ],
      incidents: [
        {
          started_at: "2026-03-14T09:41:12.000Z",
          ended_at: "2026-03-14T09:42:12.000Z",
          duration_seconds: 60,
          ongoing: false,
          reason: "connection_refused",
        },
      ],
    },
  },
  "servers.metrics": {
    headers: serverSel,
    request: { window: "1h", metrics: "players,tps" },
    response: {
      server_id: SERVER,
      window: "1h",
      from: "2026-03-14T09:00:00.000Z",
      to: "2026-03-14T10:00:00.000Z",
      bucket_seconds: 60,
      tier: "minute",
      metrics: {
        players: [{ ts: "2026-03-14T09:00:00.000Z", min: 37, avg: 38.5, max: 40 }],
        tps: [{ ts: "2026-03-14T09:00:00.000Z", min: 19.2, avg: 19.9, max: 20 }],
      },
    },
  },
  "servers.players": {
    headers: serverSel,
    request: { limit: 50, offset: 0, online: "true" },
    response: { players: [player], players_total: 1, bans: [ban], bans_total: 1, limit: 50, offset: 0 },
  },
  "servers.ban": {
    headers: serverSel,
    request: { uuid: JEB, name: "jeb_", reason: "Griefing spawn" },
    response: ban,
  },
  "servers.unban": { headers: serverSel, request: { uuid: JEB }, response: ok },
  "servers.kick": {
    headers: serverSel,
    request: { uuid: JEB, name: "jeb_", reason: "Calm down" },
    response: kick,
  },
  "servers.ranks": { headers: serverSel, response: { ranks: [rank] } },
  "servers.createRank": {
    headers: serverSel,
    request: {
      name: "vip",
      display_name: "VIP",
      weight: 10,
      prefix: "[VIP] ",
      permissions: ["essentials.fly", "essentials.nick"],
      parents: ["default"],
    },
    response: rank,
  },
  "servers.updateRank": {
    headers: serverSel,
    request: { name: "vip", weight: 20 },
    response: { ...rank, weight: 20, updated_at: T1 },
  },
  "servers.deleteRank": { headers: serverSel, request: { name: "vip" }, response: ok },
  "servers.announcements": { headers: serverSel, response: { announcements: [announcement] } },
  "servers.createAnnouncement": {
    headers: serverSel,
    request: { message: "Vote for us daily at blockworks.example/vote", interval_seconds: 600 },
    response: announcement,
  },
  "servers.updateAnnouncement": {
    headers: serverSel,
    request: { announcement_id: ANNOUNCEMENT, active: false },
    response: { ...announcement, active: false, updated_at: T1 },
  },
  "servers.deleteAnnouncement": { headers: serverSel, request: { announcement_id: ANNOUNCEMENT }, response: ok },

  "agent.heartbeat": {
    request: { tps: 19.97, mspt: 18.4, players_online: 41, memory_used_mb: 5120, memory_max_mb: 8192 },
    response: { server_id: SERVER, received_at: T1 },
  },
  "agent.events": {
    request: {
      events: [
        { event_id: "evt-000183", type: "join", uuid: NOTCH, name: "Notch", at: T0 },
        { event_id: "evt-000184", type: "leave", uuid: NOTCH, at: T1 },
      ],
    },
    response: { accepted: 2, duplicates: 0 },
  },
  "agent.config": {
    response: {
      server_id: SERVER,
      generated_at: T1,
      ranks: [rank],
      announcements: [announcement],
      bans: [ban],
      pardons: [{ uuid: "61699b2e-d327-4a01-9f1e-0ea8c3f06bc6", lifted_at: T0 }],
      kicks: [kick],
    },
  },

  "playerHistory.sessions": {
    headers: serverSel,
    request: { limit: 50, uuid: NOTCH },
    response: { sessions: [session], next_cursor: null },
  },
  "playerHistory.summary": {
    headers: serverSel,
    request: { window: "7d" },
    response: {
      server_id: SERVER,
      window: "7d",
      from: "2026-03-08T00:00:00.000Z",
      to: "2026-03-15T00:00:00.000Z",
      totals: { ...day, unique_players: 212, new_players: 63, returning_players: 149, playtime_seconds: 2_116_800 },
      days: [{ ...day, date: "2026-03-14", from: "2026-03-14T00:00:00.000Z", to: "2026-03-15T00:00:00.000Z" }],
      top_players: [{ uuid: NOTCH, name: "Notch", playtime_seconds: 86_400, sessions: 31 }],
    },
  },
  "playerHistory.profile": {
    headers: serverSel,
    request: { uuid: NOTCH },
    response: { ...player, session_count: 31, recent_sessions: [session], banned: false, ban: null },
  },

  "playerDirectory.list": {
    headers: teamSel,
    request: { q: "jeb", sort: "playtime", order: "desc", limit: 50 },
    response: {
      players: [directoryPlayer],
      next_cursor: "WyJkMSIsInBsYXl0aW1lIiwiZGVzYyIsIjE3MjgwMCIsIjg1M2M4MGVmLTNjMzctNDlmZC1hYTQ5LTkzOGI2NzRhZGFlNiJd",
    },
  },
  "playerDirectory.resolve": {
    headers: teamSel,
    request: { name: "JEB_" },
    response: {
      name: "JEB_",
      match: "current",
      players: [{ uuid: JEB, name: "jeb_", edition: "java", last_seen: T1 }],
    },
  },
  "playerDirectory.get": {
    headers: teamSel,
    request: { uuid: JEB },
    response: {
      ...directoryPlayer,
      names: [
        { name: "jeb_", first_used: T0, last_used: T1, current: true },
        { name: "jeb", first_used: T0, last_used: T0, current: false },
      ],
      servers: [
        {
          server_id: SERVER,
          server_name: "Survival",
          online: false,
          first_seen: T0,
          last_seen: T1,
          playtime_seconds: 172_800,
          sessions: 64,
        },
      ],
      recent_sessions: [teamSession],
      bans_in_force: [{ ...ban, server_id: SERVER, server_name: "Survival" }],
      moderation: [
        {
          event_id: MODERATION,
          action: "ban",
          server_id: SERVER,
          server_name: "Survival",
          name: "jeb_",
          origin: "game",
          actor: { kind: "agent", id: SERVER, name: "game" },
          reason: "Griefing spawn",
          source: "Console",
          expires: "forever",
          at: T1,
        },
      ],
      notes: [note],
    },
  },
  "playerDirectory.sessions": {
    headers: teamSel,
    request: { uuid: JEB, limit: 50 },
    response: { sessions: [teamSession], next_cursor: null },
  },
  "playerDirectory.addNote": {
    headers: teamSel,
    request: { uuid: JEB, text: "Warned about TNT at spawn; second warning." },
    response: note,
  },
  "playerDirectory.deleteNote": { headers: teamSel, request: { uuid: JEB, note_id: NOTE }, response: ok },

  "statusPages.create": {
    request: {
      team_id: TEAM,
      slug: "blockworks",
      title: "Blockworks",
      description: "Live status of the Blockworks network",
      network_names: ["Blockworks"],
      show: { players: true, version: true, motd: true, latency: false },
      published: true,
    },
    response: statusPage,
  },
  "statusPages.list": { request: { team_id: TEAM }, response: { pages: [statusPage] } },
  "statusPages.get": { request: { team_id: TEAM, page_id: STATUS_PAGE }, response: statusPage },
  "statusPages.update": {
    request: { team_id: TEAM, page_id: STATUS_PAGE, host_name: "status.blockworks.example", theme: "dark" },
    response: { ...statusPage, host_name: "status.blockworks.example", theme: "dark", updated_at: T1 },
  },
  "statusPages.publish": { request: { team_id: TEAM, page_id: STATUS_PAGE }, response: statusPage },
  "statusPages.unpublish": {
    request: { team_id: TEAM, page_id: STATUS_PAGE },
    response: { ...statusPage, published: false, updated_at: T1 },
  },
  "statusPages.delete": { request: { team_id: TEAM, page_id: STATUS_PAGE }, response: ok },
  "statusPages.widget": {
    request: { slug: "blockworks" },
    response: {
      slug: "blockworks",
      title: "Blockworks",
      url: "https://mc.blockworks.example/status/blockworks",
      generated_at: T1,
      servers: [
        {
          server_id: SERVER,
          name: "Lobby",
          status: "up",
          players_online: 31,
          players_max: 200,
          version: "1.21.4",
          motd: "§6Blockworks Network §7· §apick a game",
          uptime: { "24h": 1, "7d": 0.9986, "30d": 0.9991 },
          checked_at: T1,
          incident: null,
          badges: {
            status: `https://mc.blockworks.example/status/blockworks/badges/${SERVER}/status.svg`,
            players: `https://mc.blockworks.example/status/blockworks/badges/${SERVER}/players.svg`,
            "uptime-24h": `https://mc.blockworks.example/status/blockworks/badges/${SERVER}/uptime-24h.svg`,
          },
        },
      ],
    },
  },

  "alerts.list": { request: { team_id: TEAM }, response: { rules: [alertRule] } },
  "alerts.get": { request: { team_id: TEAM, rule_id: ALERT_RULE }, response: alertRule },
  "alerts.create": {
    request: {
      team_id: TEAM,
      name: "Low TPS",
      server_id: SERVER,
      metric: "tps",
      op: "below",
      threshold: 18,
      duration_seconds: 60,
    },
    response: alertRule,
  },
  "alerts.update": {
    request: { team_id: TEAM, rule_id: ALERT_RULE, threshold: 17, duration_seconds: 120 },
    response: { ...alertRule, threshold: 17, duration_seconds: 120, updated_at: T1 },
  },
  "alerts.delete": { request: { team_id: TEAM, rule_id: ALERT_RULE }, response: ok },

  "webhooks.create": {
    request: {
      team_id: TEAM,
      url: "https://hooks.blockworks.example/minecraft",
      description: "On-call alerts",
      event_types: ["server.down", "server.up"],
    },
    response: { endpoint: webhookEndpoint, secret: WEBHOOK_SECRET },
  },
  "webhooks.list": {
    request: { team_id: TEAM },
    response: { endpoints: [webhookEndpoint], usage: webhookUsage },
    more: {
      viewer: {
        summary: "As a viewer sees it: the URL masked",
        value: {
          endpoints: [{ ...webhookEndpoint, url: "https://hooks.blockworks.example/…", url_masked: true }],
          usage: webhookUsage,
        },
      },
    },
  },
  "webhooks.get": { request: { team_id: TEAM, endpoint_id: WEBHOOK }, response: webhookEndpoint },
  "webhooks.resume": {
    request: { team_id: TEAM, endpoint_id: WEBHOOK },
    response: { ...webhookEndpoint, updated_at: T1 },
  },
  "webhooks.update": {
    request: { team_id: TEAM, endpoint_id: WEBHOOK, enabled: false },
    response: { ...webhookEndpoint, enabled: false, updated_at: T1 },
  },
  "webhooks.delete": { request: { team_id: TEAM, endpoint_id: WEBHOOK }, response: ok },
  "webhooks.rotateSecret": {
    request: { team_id: TEAM, endpoint_id: WEBHOOK, overlap_seconds: 86_400 },
    response: {
      endpoint: { ...webhookEndpoint, secret_prefix: "whsec_Zm9v", previous_secret_expires_at: T1, updated_at: T0 },
      secret: WEBHOOK_SECRET,
    },
  },
  "webhooks.deliveries": {
    request: { team_id: TEAM, endpoint_id: WEBHOOK, limit: 20 },
    response: { deliveries: [webhookDelivery] },
  },
  "webhooks.redeliver": {
    request: { team_id: TEAM, endpoint_id: WEBHOOK, delivery_id: DELIVERY },
    response: {
      ...webhookDelivery,
      delivery_id: "8f9e0d1c-2b3a-4c5d-9e6f-7a8b9c0d1e2f",
      status: "pending",
      attempts: 0,
      next_attempt_at: T1,
      last_status_code: null,
      last_latency_ms: null,
      last_response: null,
      last_attempt_at: null,
      created_at: T1,
    },
  },
  "privacy.exportPlayer": {
    headers: teamSel,
    request: { uuid: JEB },
    response: {
      uuid: JEB,
      team_id: TEAM,
      player_ref: "pr_4mV0bWk9xQ1vN2c3LrT8aYdE6fGhJkLz",
      generated_at: T1,
      holders: {
        players: [
          {
            server_id: SERVER,
            name: "jeb_",
            online: false,
            first_seen: T0,
            last_seen: T1,
            play_seconds: 3955,
          },
        ],
        player_sessions: [
          {
            session_id: SESSION,
            server_id: SERVER,
            joined_at: T0,
            left_at: T1,
            source: "agent",
            seen_at: T1,
            end_reason: "leave",
          },
        ],
        bans: [],
        kicks: [],
      },
    },
  },
  "privacy.erasePlayer": {
    headers: teamSel,
    request: { uuid: JEB },
    response: {
      player_ref: "pr_4mV0bWk9xQ1vN2c3LrT8aYdE6fGhJkLz",
      erased: { player_sessions: 1204, player_days: 88, server_days: 88, players: 2, bans: 1, audit_log: 3 },
    },
  },
  "privacy.optOuts": {
    request: { team_id: TEAM },
    response: { opt_outs: [{ uuid: NOTCH, name: "Notch", created_at: T0 }] },
  },
  "privacy.addOptOut": {
    request: { team_id: TEAM, uuid: NOTCH, name: "Notch" },
    response: { uuid: NOTCH, name: "Notch", created_at: T1 },
  },
  "privacy.removeOptOut": { request: { team_id: TEAM, uuid: NOTCH }, response: { ok: true } },
  "privacy.settings": {
    request: { team_id: TEAM },
    response: {
      team_id: TEAM,
      session_retention_days: 30,
      player_retention_days: null,
      effective_session_retention_days: 30,
      effective_player_retention_days: 365,
      max_session_retention_days: 90,
      max_player_retention_days: 365,
      updated_at: T1,
    },
  },
  "privacy.updateSettings": {
    request: { team_id: TEAM, session_retention_days: 30, player_retention_days: 180 },
    response: {
      team_id: TEAM,
      session_retention_days: 30,
      player_retention_days: 180,
      effective_session_retention_days: 30,
      effective_player_retention_days: 180,
      max_session_retention_days: 90,
      max_player_retention_days: 365,
      updated_at: T1,
    },
  },
  "audit.list": {
    request: { team_id: TEAM, action: "player.ban", since: "2026-03-01T00:00:00.000Z", limit: 50 },
    response: { entries: [auditEntries[0]], next_cursor: null },
    more: {
      page: {
        summary: "A page of every action, with a cursor for the next one",
        value: { entries: auditEntries, next_cursor: "1042" },
      },
    },
  },
  "webhooks.test": {
    request: { team_id: TEAM, endpoint_id: WEBHOOK },
    response: {
      ...webhookDelivery,
      event_type: "webhook.test",
      status: "pending",
      attempts: 0,
      next_attempt_at: T1,
      last_status_code: null,
      last_latency_ms: null,
      last_response: null,
      last_attempt_at: null,
      created_at: T1,
    },
  },
};

const NETWORK =
  "The team is chosen by the `x-team-id` header; the network by its exact name, URL-encoded (docs/networks.md). 404 when no server of the team is in it.";
const VIEWER = "Any member of the team may read it (viewer or higher, or a team API key of that team).";
const MODERATOR =
  "Needs the moderator role or higher in the team (a person, a team API key with that role, or a key with the `moderation:write` scope).";
const ADMIN = "Needs the admin role or higher in the team (a person or a team API key with that role).";
const SERVER_SELECTOR =
  "The server is chosen by the `x-server-id` header; the caller needs a role in the server's team, otherwise 404 (a server of another team is not disclosed).";
const TEAM_SELECTOR = "The team is chosen by the `x-team-id` header; viewer or higher in that team, otherwise 403.";

/**
 * The prose of operations whose procedure declares no description of its own (a procedure's
 * `meta.openapi.description` wins). Every operation ends up with one; the doors test checks it.
 */
const ANALYTICS =
  "The team is chosen by the `x-team-id` header (viewer or higher, or a key with `servers:read`). Give `server_id` or `network` (its servers together, a player counted once). The window is `from`..`to` (default the last 30 days, at most 400), rounded out to quarter hours; days, weeks (from Monday 00:00) and hours are in `tz`, default the team's `time_zone`. Read from aggregates kept at ingest plus the sessions still open (docs/analytics.md).";

const INCIDENTS =
  "The team is chosen by the `x-team-id` header; reads need viewer (or a key with `servers:read`), writes admin (or `servers:write`). A key limited to some servers sees only their incidents and windows, none of a network (docs/incidents.md).";
export const OPERATION_DESCRIPTIONS: Record<string, string> = {
  "incidents.list": `${INCIDENTS} Newest first. \`kind\`: \`down\` (the pinger), \`crash\` (down with no stop announced while the agent reported, or a crash report; \`crash\` carries its description and first exception lines, for the team only) or \`manual\`. \`state\` open, resolved or all; page back with \`before\`.`,
  "incidents.get": `${INCIDENTS} With its timeline: the automatic opening and resolution, and every update posted.`,
  "incidents.create": `${INCIDENTS} For a server (\`server_id\`) or a network (\`network_name\`), exactly one. Sends \`incident.opened\` (and \`incident.resolved\` when posted resolved).`,
  "incidents.addUpdate": `${INCIDENTS} \`resolved\` ends the incident (\`incident.resolved\`); any other status is \`incident.updated\`. Works on automatic incidents too.`,
  "maintenance.list": `${INCIDENTS} Each window with the occurrence running now (\`active\`) and the next one.`,
  "maintenance.upcoming": `${INCIDENTS} Occurrences running now or starting within \`days\` (default 14), soonest first; filtered to a server (its own and its network's windows) or a network.`,
  "maintenance.create": `${INCIDENTS} One-off (\`starts_at\`, \`ends_at\`) or recurring (\`schedule\`, five-field cron in the team's time zone, and \`duration_minutes\`). While one runs, \`server.down\` and \`incident.opened\` are held for its servers; still down at its end, they are sent then.`,
  "maintenance.update": `${INCIDENTS} Fields left out keep their value; the window is checked again as a whole.`,
  "maintenance.delete": INCIDENTS,
  "analytics.activity": `${ANALYTICS} New: first seen in the window. Regular: seen before, activity index 2 or more at the window's end; returning: below 2.`,
  "analytics.retention": `${ANALYTICS} A cohort is the players first seen in one local week inside the window; week k counts those seen again k weeks later, up to the window's end.`,
  "analytics.heatmap": `${ANALYTICS} Each cell is player-time in that local weekday and hour divided by the time the window has of it (an hour repeated by a DST change counts twice, a skipped one is null).`,
  "analytics.sessionLengths": `${ANALYTICS} Ended sessions that started in the window, in fixed buckets. On a network each server's session counts (a hop is two).`,
  "analytics.leaderboard": `${ANALYTICS} The top \`limit\` (default 10, at most 100) by playtime in the window, open sessions included up to now.`,
  "analytics.peaks": `${ANALYTICS} The most players online at one instant in the window and ever, each with the first instant it was reached; online_now counts open sessions.`,
  "analytics.editions": `${ANALYTICS} Bedrock players are those with a Floodgate UUID (00000000-0000-0000-0009-...); shares of the players seen and of playtime.`,
  "health.check":
    "No credential. 200 when the process is up and its database answers; 503 `unavailable` otherwise, so a load balancer can take the instance out.",
  "auth.signup":
    "Creates a dashboard account (201). The password is stored as an argon2id hash. 409 when the email already has an account. Sign in with /auth/login afterwards.",
  "auth.refresh":
    "Rotates the refresh token: the answer is a new access and refresh token and the one sent stops working. Sending an already used refresh token revokes its whole family (a stolen copy is useless).",
  "auth.sessions":
    "The signed-in person's sign-ins that can still be used (each refresh-token family: a dashboard browser or a /auth/login), most recently used first, at most 100: when each began and was last used, the client address and user agent it signed in from, and which one is making this call. `last_used_at` moves on each refresh and, at most once a minute, on requests.",
  "auth.revokeSession":
    "Ends one of the caller's sign-ins: its refresh token and the access tokens issued under it stop working on every instance, and analytics sockets using them close with 4011. Ending the current one signs out. 404 for a sign-in that is not the caller's or has already ended.",
  "auth.revokeOtherSessions":
    "Ends every sign-in of the caller's but the one making this call (sign out all other devices); answers how many ended.",
  "auth.changePassword":
    "Changes the password after checking the current one. A wrong current password answers 403 and counts against the sign-in limits like a failed sign-in (429 with Retry-After past them). Every other sign-in of the account ends; the one making the call stays. Answers how many ended.",
  "auth.me": "The signed-in person (an access token, not an API key: 403) with each team and the role held there.",
  "teams.create":
    "Creates a team (201); the caller becomes its owner. 409 when the caller already owns the most teams allowed.",
  "teams.list": "A person sees every team they belong to with their role; a team API key sees its own team only.",
  "teams.get": `${VIEWER} 404 for a team that does not exist.`,
  "teams.update": `${ADMIN} Renames the team and/or sets its \`time_zone\` (an IANA name; 400 for an unknown one), the analytics reads' default zone. Only the fields sent change. Retention's kept counts are made again in the new zone after the answer; until then retention in the new zone is read without them (docs/analytics.md).`,
  "teams.delete":
    "Owner only. Deletes the team with its members, API keys, client applications (their logins and sessions end) and servers with all their history.",
  "teams.members": `${VIEWER} Owner first, then by join date. Someone invited shows here once they accept.`,
  "teams.invitations": `${ADMIN} Oldest first: each pending one, and expired ones until the next invitation to the team clears them. Accepted and declined invitations are gone.`,
  "invitations.list":
    "The invitations to the signed-in person's email that can still be accepted, newest first, with the team's name and who sent them (an access token, not an API key: 403). An invitation sent before the account existed shows once the account is made with that email. None of these teams is in GET /teams until accepted.",
  "clients.create":
    "Creates a client application under a team (201). The `client_secret` is in this answer only and stored as a SHA-256 hash: keep it on the launcher's backend, never in the launcher. Owner or admin of the team; 403 otherwise; 409 when the team has the most client applications allowed. 20 per minute per token.",
  "clients.list": `${VIEWER} Secrets are never returned after creation.`,
  "clients.get": `${VIEWER} 404 for an unknown client_id or one of a team the caller is not in.`,
  "clients.update": `${ADMIN} Only the fields sent change; \`logo_url: null\` removes the logo.`,
  "clients.delete": `${ADMIN} Deletes the client with its module, login requests and launcher sessions: their tokens stop validating.`,
  "clients.rotateSecret": `${ADMIN} Answers a new client_secret, shown once; the old secret stops working at once.`,
  "clients.enableMsAuth":
    "Enables the `ms_auth` module, or changes its post_login_redirect_uri (answers the module either way). The redirect URI must be absolute, without credentials or fragment: https, http on a loopback host (127.0.0.1, [::1], localhost) for desktop launchers, or a private-use scheme in reverse-domain form (com.example.launcher:/callback); 400 otherwise. Owner or admin; 20 per minute per token.",
  "clients.getMsAuth": `${VIEWER} 404 when the module is not enabled.`,
  "clients.disableMsAuth": `${ADMIN} /client/ms-auth/start answers 400 for this client until the module is enabled again. 404 when it is not enabled.`,
  "oidc.enable":
    "Enables Sign in with Minecraft (OpenID Connect) for the client app, or replaces its settings (answers them either way). Each redirect URI is compared exactly at the authorization endpoint; the rules are those of post_login_redirect_uri (https, http on loopback, or a private-use scheme). `public: true` for a client without a secret (PKCE S256 required); otherwise the token endpoint takes the client app's secret (client_secret_basic or client_secret_post). Owner or admin; 20 per minute per token.",
  "oidc.get": `${VIEWER} 404 when OpenID Connect is not enabled.`,
  "oidc.disable": `${ADMIN} The authorization endpoint refuses this client until it is enabled again; codes not yet exchanged are refused at the token endpoint; access tokens already issued run out within the hour. 404 when it is not enabled.`,
  "servers.create":
    "Registers a server (201) of kind `single`, or `network` with a network_name (400 without it); 409 when the team has the most servers allowed. The platform starts pinging host:port. The agent token is in this answer only; put it in the server agent's configuration. Admin or higher in the team.",
  "servers.list": "The team is chosen by the `x-team-id` header. Viewer or higher in that team.",
  "servers.networks":
    "The team is chosen by the `x-team-id` header. Servers of kind `network`, grouped by network_name.",
  "networks.get": `${NETWORK} \`window\` is 24h, 7d (default) or 30d. Players online are counted once across the network.`,
  "networks.sessions": `${NETWORK} A network session follows a player across the network's servers (a join within NETWORK_HOP_GAP_SECONDS of the leave, or before it, continues it). Pass next_cursor as \`cursor\` for the next page.`,
  "networks.bans": `${NETWORK} \`state=all\` lists lifted and replaced bans too, with who made and ended each.`,
  "networks.ban": `${NETWORK} ${MODERATOR} Answers 201. Every server of the network carries the ban in its agent's configuration; a ban of a player already banned replaces the earlier one, which is kept. A key limited to some servers gets 403.`,
  "networks.unban": `${NETWORK} ${MODERATOR} Every server's agent pardons the player. 404 when the player is not banned on the network.`,
  "networks.ranks": NETWORK,
  "networks.createRank": `${NETWORK} ${ADMIN} Answers 201. Each server's agent carries the network's ranks; a server rank of the same name wins. 409 when the name exists; 400 when a parent is unknown or would make a cycle.`,
  "networks.updateRank": `${NETWORK} ${ADMIN} Only the fields sent change.`,
  "networks.deleteRank": `${NETWORK} ${ADMIN} 409 while another rank of the network inherits from it.`,
  "servers.get": `${VIEWER} 404 for an unknown server or one of another team.`,
  "servers.update": `${ADMIN} Only the fields sent change. Changing kind to \`network\` needs a network_name.`,
  "servers.delete": `${ADMIN} Deletes the server and its players, bans, ranks, announcements, history and metrics; its agent token stops working and open analytics sockets close.`,
  "servers.rotateAgentToken": `${ADMIN} The new token is shown once; the agent must be reconfigured with it.`,
  "servers.uptimeStats": `${SERVER_SELECTOR} \`window\` is one of 1h, 24h (default), 7d and 30d. \`uptime\` is a fraction (0..1), null when nothing was measured. \`incidents\` lists every down period that overlaps the window, whatever its bucket size.`,
  "servers.players": `${SERVER_SELECTOR} Players are paged with limit and offset; \`online=true\` keeps only those online now. \`q\` (a name prefix in any letter case, or a whole UUID) filters players and bans; \`sort\` (last_seen, first_seen, playtime, name) and \`order\` change the order, which is otherwise online first, then last seen.`,
  "servers.ban": `${SERVER_SELECTOR} ${MODERATOR} Answers 201 with the ban in force, also when it replaces an earlier ban of the same player. The agent applies it in game on its next config read. Without \`uuid\`, \`name\` is resolved among the players the team has seen, as GET /players/resolve does: 404 when none, 409 with \`details.candidates\` when several.`,
  "servers.unban": `${SERVER_SELECTOR} ${MODERATOR} 404 when the player is not banned.`,
  "servers.kick": `${SERVER_SELECTOR} ${MODERATOR} Answers 201 with the kick. Without \`uuid\`, \`name\` is resolved as for a ban (404 unknown, 409 ambiguous). The server's agent runs \`kick <name> <reason>\` over RCON on its next configuration read, once; a kick not picked up by \`until\` (two minutes) is dropped, and a player who is not online is not kicked. 409 when 100 kicks are already waiting for the agent.`,
  "servers.ranks": SERVER_SELECTOR,
  "servers.createRank": `${SERVER_SELECTOR} Admin or higher. Answers 201. 409 when a rank with this name exists; 400 when a parent does not exist or would make a cycle.`,
  "servers.updateRank": `${SERVER_SELECTOR} Admin or higher. Only the fields sent change.`,
  "servers.deleteRank": `${SERVER_SELECTOR} Admin or higher. 409 while another rank inherits from it.`,
  "servers.announcements": SERVER_SELECTOR,
  "servers.createAnnouncement": `${SERVER_SELECTOR} ${MODERATOR} Answers 201. Give either interval_seconds or a five-field cron \`schedule\` (UTC); starts_at and ends_at bound when it runs.`,
  "servers.updateAnnouncement": `${SERVER_SELECTOR} ${MODERATOR} Only the fields sent change.`,
  "servers.deleteAnnouncement": `${SERVER_SELECTOR} ${MODERATOR}`,
  "agent.heartbeat":
    "Called by the server agent (its agent token as the bearer) every few seconds. Feeds the metrics and the analytics stream's `heartbeat` message.",
  "agent.events":
    "Called by the server agent. Events apply in order; an event_id already received is counted as a duplicate and ignored, so a batch may be retried safely.",
  "playerHistory.sessions": `${SERVER_SELECTOR} Pass next_cursor as \`cursor\` for the next page; it is null on the last page.`,
  "playerHistory.summary": `${SERVER_SELECTOR} \`window\` is one of 24h, 7d (default), 30d and 90d; days are UTC.`,
  "playerHistory.profile": `${SERVER_SELECTOR} 404 for a player never seen on this server.`,
  "playerDirectory.list": `${TEAM_SELECTOR} One row a player any of the team's servers has seen, kept as joins and leaves arrive. \`q\` is a name prefix (any letter case; \`_\` is a letter) or a whole UUID; \`sort\` is last_seen (default), playtime, sessions or name; pass \`next_cursor\` as \`cursor\` with the same sort and order for the next page (400 otherwise). Playtime sorts by closed sessions; an online player's row adds the running one. A key limited to some servers is refused (403).`,
  "playerDirectory.resolve": `${TEAM_SELECTOR} Compares without letter case. Players whose current name it is come first; only when there are none, the players who used it before (\`match: past\`). Several players: all are listed (at most 20). 404 when no player the team has seen used the name.`,
  "playerDirectory.get": `${TEAM_SELECTOR} Everything the team holds about one player: names used, playtime and sessions per server, the ten most recent sessions, bans in force, the moderation history (every ban, lift and kick, from the dashboard, the API or the game, with who and why) and notes. 404 for a player the team never saw.`,
  "playerDirectory.sessions": `${TEAM_SELECTOR} Across the team's servers; pass next_cursor as \`cursor\` for the next page.`,
  "playerDirectory.addNote": `${TEAM_SELECTOR} ${MODERATOR} Answers 201. At most 2000 characters a note and 100 notes a player (409). 404 for a player the team never saw.`,
  "playerDirectory.deleteNote": `${TEAM_SELECTOR} The note's author (a moderator or higher) or an admin of the team; 403 for anyone else.`,
  "webhooks.create":
    "Creates a webhook endpoint (201). The signing secret (`whsec_` + base64, Standard Webhooks) is in this answer only; it is stored encrypted, since it must sign. Addresses inside the network are refused (400). 409 when the team has the most endpoints allowed or another of its endpoints has the same URL (compared without case in scheme and host, default port, trailing slash, fragment or query order). Admin or owner.",
  "webhooks.list": `${VIEWER} Secrets are never returned; \`secret_prefix\` identifies the current one. Below admin the URLs are masked (scheme, host and the last 4 characters): for Discord, Slack and many others the URL is itself a credential. \`usage\` is the team's webhook budget: what is left of it and how many events did not fit.`,
  "webhooks.resume": `${ADMIN} Closes a paused endpoint's circuit: its failure count is cleared and the deliveries that waited are due at once (at most WEBHOOK_ENDPOINT_CONCURRENCY in flight). An endpoint that is not paused is answered as it is.`,
  "webhooks.get": `${VIEWER} 404 for an unknown endpoint or one of another team.`,
  "webhooks.update": `${ADMIN} Change the URL, kind, event filter, description or enabled flag; enabling a disabled endpoint clears its failure count and resumes it. 409 when another endpoint of the team has the same URL.`,
  "webhooks.delete": `${ADMIN} Deletes the endpoint with its queued and past deliveries.`,
  "webhooks.deliveries": `${VIEWER} Newest first: status, attempts, the last status code, latency and the first 4 KiB of the last response.`,
  "webhooks.redeliver": `${ADMIN} Queues the delivery's event again for this endpoint: a new delivery with the same \`webhook-id\`, so a receiver that already handled it can tell. 429 when the team's webhook budget is spent.`,
  "audit.list":
    "Admins and owners of the team (people or admin API keys). Every change of state made through the API, the tRPC door or the dashboard is one entry, written in the change's own transaction: who (a user, an API key, a server's agent or the system, by id and by name at the time), the action (one of the list in docs/audit.md), the target, the changed fields before and after (never a secret), the client address, user agent and request id. Filters combine; `since` is inclusive, `until` exclusive. Newest first; pass `next_cursor` as `cursor` for the next page. Entries cannot be changed or deleted; they are removed after AUDIT_RETENTION_DAYS.",
  "webhooks.test": `${ADMIN} Queues a \`webhook.test\` event for this endpoint only, signed like every other event. 409 when the endpoint is disabled or paused; 429 when the team's webhook budget is spent.`,
};
