import { AppError } from "./errors";

/**
 * How many of each thing the service keeps. Creation refuses past these (409), and every list
 * in a response is bounded by one of them, which the OpenAPI document states as maxItems.
 */
export const LIMITS = {
  teamsPerUser: 100,
  membersPerTeam: 200,
  /** Invitations a team has out at once (expired ones do not count). */
  pendingInvitationsPerTeam: 100,
  /** A person's pending invitations listed, newest first. */
  invitationsListed: 100,
  activeApiKeysPerTeam: 100,
  /** The servers one API key may be limited to. */
  serversPerApiKey: 50,
  /** Listed: every active key, then the most recently revoked, up to this many. */
  apiKeysListed: 200,
  appsPerTeam: 100,
  serversPerTeam: 500,
  ranksPerServer: 200,
  ranksPerNetwork: 200,
  permissionsPerRank: 1000,
  parentsPerRank: 50,
  announcementsPerServer: 100,
  /** Agent config: the most recent dashboard bans in force, and pardons. */
  bansInAgentConfig: 10_000,
  pardonsInAgentConfig: 1_000,
  /** Kicks waiting for the agent on one server (each lasts KICK_WINDOW_SECONDS). */
  kicksPending: 100,
  /** Players on a team's opt-out list (the agent's config carries them all). */
  optOutsPerTeam: 5_000,
  webhooksPerTeam: 20,
  alertRulesPerTeam: 200,
  /** The most recent deliveries listed for one endpoint. */
  webhookDeliveriesListed: 100,
  /** A page of players or bans. */
  pageSize: 200,
  /** Notes on one player, in one team, and the length of each. */
  notesPerPlayer: 100,
  noteChars: 2000,
  /** A player page: the names, and the moderation history entries, it lists. */
  namesListed: 100,
  moderationListed: 200,
  /** Players a name resolves to, listed when it is ambiguous. */
  resolveCandidates: 20,
  /** Uptime graph buckets in any window. */
  uptimeBuckets: 200,
  /** Incidents listed in an uptime window, the most recent first. */
  uptimeIncidents: 500,
  /** Passkeys (WebAuthn credentials) one account may enrol. */
  passkeysPerUser: 10,
  /** Recovery codes made at once; each works once. */
  recoveryCodes: 10,
} as const;

export function overLimit(what: string, limit: number): AppError {
  return new AppError("conflict", `At most ${limit} ${what}; remove some first.`, { details: { limit } });
}
