/**
 * What a scoped API key may do, one name a group of operations. Each procedure a key may call
 * names its scope in `meta.scope` (src/trpc/init.ts); a scoped key calls exactly the procedures
 * whose scope it holds, with the role that procedure needs. Nothing here reaches members, API
 * keys, ownership or deleting the team: those stay with people.
 *
 * There is no `login:validate`: the launcher login routes (start, poll, session validate and
 * revoke) are called with a client application's id and secret, never an API key, and the
 * client secret is already a credential narrowed to that one client's logins.
 */
export const SCOPES = {
  "team:read":
    "The team, its members and its pending invitations (GET /teams, /teams/{team_id}, /teams/{team_id}/members, /teams/{team_id}/invitations)",
  "team:write": "Rename the team",
  "clients:read": "Client applications and their ms_auth module, never their secrets",
  "clients:write": "Create, change and delete client applications, rotate their secrets, set the ms_auth module",
  "servers:read":
    "Servers, networks, uptime, metrics, players and their history, bans in force, ranks, announcements, the analytics socket",
  "servers:write": "Register, change and delete servers, rotate agent tokens, manage ranks",
  "moderation:write": "Ban and lift bans, kick players, manage announcements",
  "webhooks:read": "Webhook endpoints (URLs masked) and their deliveries",
  "webhooks:write": "Create, change, delete, test and resume webhook endpoints, rotate their secrets, redeliver",
  "players:export": "Export everything held about one player (GET /players/{uuid}/export)",
  "players:erase": "Erase one player's data (POST /players/{uuid}/erase); bans stay as tombstones",
  "privacy:read": "The opt-out list and the team's retention settings",
  "privacy:write": "Add and remove opted-out players, set the team's retention",
  "audit:read": "The team's audit log (GET /teams/{team_id}/audit)",
  "status_pages:read": "The team's status pages and their settings",
  "status_pages:write": "Create, change, publish, unpublish and delete status pages",
} as const;

export type Scope = keyof typeof SCOPES;
export const SCOPE_NAMES = Object.keys(SCOPES) as [Scope, ...Scope[]];

/** The scopes a key limited to some servers may hold: everything else is team-wide. */
export const SERVER_SCOPES: readonly Scope[] = ["servers:read", "servers:write", "moderation:write"];
