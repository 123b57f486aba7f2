import { AppError } from "../lib/errors";
import type { Scope } from "./scopes";

/** A role in a team: owner > admin > moderator > viewer. */
export type Role = "owner" | "admin" | "moderator" | "viewer";

/** Who is calling: a signed-in person, or a team API key acting within its team and role. */
export type Principal =
  | {
      kind: "user";
      userId: string;
      /** The sign-in (refresh-token family) the access token belongs to. */
      sessionId: string;
      /** When the access token it came from expires (epoch seconds): a long-lived socket needs it. */
      exp: number;
    }
  | {
      kind: "api_key";
      keyId: string;
      teamId: string;
      /**
       * The key's role; for a key with scopes, null until a procedure whose scope the key holds
       * gives it the role that procedure needs (src/trpc/procedures.ts), so a path that skipped
       * that check finds no role and refuses.
       */
      role: Role | null;
      /** The scopes of a scoped key; null for a key with a role. */
      scopes: readonly Scope[] | null;
      /** The only servers the key reaches; null for every server of its team. */
      serverIds: readonly string[] | null;
      /** When the key stops working (epoch seconds), or null: a long-lived socket needs it. */
      exp: number | null;
    };

const RANK: Record<Role, number> = { viewer: 1, moderator: 2, admin: 3, owner: 4 };

export function roleAtLeast(role: Role, min: Role): boolean {
  return RANK[role] >= RANK[min];
}

export function requireAtLeast(role: Role | null, min: Role): Role {
  if (role === null) throw new AppError("forbidden", "This API key's scopes do not include this operation.");
  if (!roleAtLeast(role, min))
    throw new AppError("forbidden", `This needs the ${min} role or higher in the team; you have ${role}.`);
  return role;
}

/** The key a per-principal rate limit counts under ("per token" in the specification's limits). */
export function principalKey(p: Principal): string {
  return p.kind === "user" ? `user:${p.userId}` : `key:${p.keyId}`;
}

/** False when the principal is an API key limited to servers that do not include this one. */
export function reachesServer(p: Principal, serverId: string): boolean {
  return p.kind === "user" || !p.serverIds || p.serverIds.includes(serverId);
}
