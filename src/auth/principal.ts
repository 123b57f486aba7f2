import { AppError } from "../lib/errors";

/** A role in a team: owner > admin > viewer. */
export type Role = "owner" | "admin" | "viewer";

/** Who is calling: a signed-in person, or a team API key acting within its team and role. */
export type Principal =
  | {
      kind: "user";
      userId: string;
      /** When the access token it came from expires (epoch seconds): a long-lived socket needs it. */
      exp: number;
    }
  | { kind: "api_key"; keyId: string; teamId: string; role: Role };

const RANK: Record<Role, number> = { viewer: 1, admin: 2, owner: 3 };

export function roleAtLeast(role: Role, min: Role): boolean {
  return RANK[role] >= RANK[min];
}

export function requireAtLeast(role: Role, min: Role): Role {
  if (!roleAtLeast(role, min))
    throw new AppError("forbidden", `This needs the ${min} role or higher in the team; you have ${role}.`);
  return role;
}

/** The key a per-principal rate limit counts under ("per token" in the specification's limits). */
export function principalKey(p: Principal): string {
  return p.kind === "user" ? `user:${p.userId}` : `key:${p.keyId}`;
}
