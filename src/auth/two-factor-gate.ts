import { type AnyColumn, type SQL, sql } from "drizzle-orm";
import { passkeys, totpFactors } from "../db/schema";
import { AppError } from "../lib/errors";

/** True when the account has a second factor: a confirmed authenticator app or a passkey. */
export function hasSecondFactor(userId: AnyColumn | SQL): SQL<boolean> {
  return sql<boolean>`(exists (select 1 from ${totpFactors} where ${totpFactors.userId} = ${userId} and ${totpFactors.confirmedAt} is not null) or exists (select 1 from ${passkeys} where ${passkeys.userId} = ${userId}))`;
}

/**
 * True when a team requires a second factor of its members and this member has none. Part of
 * the same statement as the membership check on every team and server gate, so locking costs
 * no extra round trip; the factor lookup runs only for teams that require it.
 */
export function lockedOut(requireTwoFactor: AnyColumn, userId: AnyColumn): SQL<boolean> {
  return sql<boolean>`(${requireTwoFactor} and not ${hasSecondFactor(userId)})`;
}

export function twoFactorRequired(teamId: string): AppError {
  return new AppError(
    "two_factor_required",
    "This team requires two-factor sign-in: add an authenticator app or a passkey on your account page to open it.",
    { details: { team_id: teamId } },
  );
}
