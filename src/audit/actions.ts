/**
 * Every audit action, with what it records. This is the one list: the procedures name their
 * action from it (`meta.audit`), the API's `action` filter accepts these, and docs/audit.md lists
 * them (a test compares the two).
 */
export const AUDIT_ACTIONS = {
  "team.create": "A team was created (its creator is its owner)",
  "team.update": "A team was renamed or its time zone set",
  "team.delete": "A team was deleted with everything it owns",
  "team.transfer": "Ownership passed to another member (the old owner became admin)",
  "team.two_factor_requirement": "The team's two-factor requirement was turned on or off",
  "member.invite": "An email was invited to join the team, with a role",
  "member.invite_revoke": "A pending invitation was revoked by the team",
  "member.invite_decline": "A pending invitation was declined by the invitee",
  "member.add": "An invitation was accepted: its invitee joined the team",
  "member.update": "A member's role changed",
  "member.remove": "A member was removed, or left",
  "api_key.create": "A team API key was created (never the key itself)",
  "api_key.revoke": "A team API key was revoked",
  "client.create": "A client application was created (never its secret)",
  "client.update": "A client application's name, title, description or logo changed",
  "client.delete": "A client application was deleted",
  "client.secret_rotate": "A client's secret was rotated",
  "client.ms_auth_enable": "The ms_auth module was enabled, or its redirect URI changed",
  "client.ms_auth_disable": "The ms_auth module was disabled",
  "client.oidc_enable": "OpenID Connect was enabled for a client, or its redirect URIs or settings changed",
  "client.oidc_disable": "OpenID Connect was disabled for a client",
  "server.create": "A server was registered (never its agent token)",
  "server.update": "A server's name, address or kind changed",
  "server.delete": "A server was deleted with its data",
  "server.agent_token_rotate": "A server's agent token was replaced",
  "server.down": "The pinger found a server down (WEBHOOK_DOWN_AFTER_FAILURES failed pings in a row)",
  "server.up": "The pinger found a server up again after server.down",
  "player.ban": "A player was banned (from the dashboard or the API, or in game as the agent reported)",
  "player.unban": "A ban was lifted (likewise)",
  "player.kick": "A player was asked to be kicked (the agent runs it in game)",
  "incident.create": "An incident was posted by hand, for a server or a network",
  "incident.update": "An update was added to an incident's timeline (resolved ends it)",
  "maintenance.create": "A maintenance window was planned",
  "maintenance.update": "A maintenance window changed",
  "maintenance.delete": "A maintenance window was deleted",
  "network.ban": "A player was banned on a whole network (every server of it applies the ban)",
  "network.unban": "A network ban was lifted",
  "network.rank_create": "A network's rank was created",
  "network.rank_update": "A network's rank changed",
  "network.rank_delete": "A network's rank was deleted",
  "player.note_add": "A moderator left a note on a player",
  "player.note_delete": "A note on a player was deleted (by its author or an admin)",
  "player.export": "Everything held about a player was exported (the player named by their reference, never the UUID)",
  "player.erase": "A player's data was erased (named by their reference; the rows removed per table)",
  "player.opt_out": "A player was added to the opt-out list (their joins and leaves are no longer collected)",
  "player.opt_in": "A player was taken off the opt-out list",
  "team.privacy": "The team's retention of sessions or per-player data changed",
  "rank.create": "A rank was created",
  "rank.update": "A rank changed",
  "rank.delete": "A rank was deleted",
  "announcement.create": "An announcement was created",
  "announcement.update": "An announcement changed",
  "announcement.delete": "An announcement was deleted",
  "webhook.create": "A webhook endpoint was created (its URL masked, never its secret)",
  "webhook.update": "A webhook endpoint changed",
  "webhook.delete": "A webhook endpoint was deleted",
  "webhook.secret_rotate": "A webhook endpoint's signing secret was rotated",
  "webhook.resume": "A paused webhook endpoint was resumed",
  "webhook.redeliver": "A webhook delivery was queued again",
  "webhook.send_test": "A test event was queued for a webhook endpoint",
  "alert_rule.create": "An alert rule on performance was created",
  "alert_rule.update": "An alert rule changed (a change of what it decides on starts it afresh)",
  "alert_rule.delete": "An alert rule was deleted",
  "status_page.create": "A status page was created",
  "status_page.update": "A status page's settings changed (slug, host name, servers, networks, what it shows, theme)",
  "status_page.publish": "A status page was published",
  "status_page.unpublish": "A status page was unpublished",
  "status_page.delete": "A status page was deleted",
} as const;

export type AuditAction = keyof typeof AUDIT_ACTIONS;
export const AUDIT_ACTION_NAMES = Object.keys(AUDIT_ACTIONS) as [AuditAction, ...AuditAction[]];

/**
 * What a mutation procedure declares in `meta.audit`:
 * - an action: every successful call writes exactly one entry with it;
 * - `{ perEvent }`: the agent's event batch, one entry per event of those kinds (a ban made in game);
 * - `{ none }`: no team's state changes (the reason is listed in docs/audit.md).
 */
export type AuditMeta = AuditAction | { perEvent: readonly AuditAction[] } | { none: string };
