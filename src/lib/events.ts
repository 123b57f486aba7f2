/**
 * The events a team can subscribe to with a webhook, and the small interface the domains
 * report them through. The domains get a sink passed in (never the webhooks service itself),
 * so they stay unaware of endpoints, queues and HTTP. docs/webhooks.md describes each payload.
 */
export const TEAM_EVENT_TYPES = [
  "server.down",
  "server.up",
  "player.banned",
  "player.unbanned",
  "agent.offline",
  "agent.online",
  "incident.opened",
  "incident.updated",
  "incident.resolved",
  "alert.firing",
  "alert.resolved",
  "login.authorized",
  "login.denied",
  "session.revoked",
  "client.secret_rotated",
  "endpoint.disabled",
  "endpoint.paused",
  "webhook.test",
  "audit.entry",
] as const;
export type TeamEventType = (typeof TEAM_EVENT_TYPES)[number];

/**
 * Types an endpoint gets only when it names them: an endpoint that takes "every type" (an empty
 * filter) was set up before they existed, and one entry per change would drown what it was for.
 */
export const OPT_IN_EVENT_TYPES: readonly TeamEventType[] = ["audit.entry"];

/**
 * Whose event it is. A server or client id is enough: the team is looked up in the statement
 * that queues the event, so the caller needs no extra read.
 */
export type EventScope = { teamId: string } | { serverId: string } | { clientId: string };

export interface TeamEventSink {
  /**
   * Queues an event for the team's endpoints. Never throws: a failure to queue is logged and
   * must not undo the change it reports (which has already committed).
   */
  emit(scope: EventScope, type: TeamEventType, data: Record<string, unknown>): void;
}

/** For code paths (and tests) with no webhooks. */
export const NO_TEAM_EVENTS: TeamEventSink = { emit() {} };
