import { type AnyColumn, getTableName, type SQL, sql } from "drizzle-orm";
import { passkeys, totpFactors } from "../db/schema";
import { AppError } from "../lib/errors";

/**
 * A column named with its table, always: drizzle leaves the table out in a query of one table,
 * and inside these subqueries a bare "user_id" or "id" would name the subquery's own column.
 */
const qualified = (column: AnyColumn) =>
  sql`${sql.identifier(getTableName(column.table))}.${sql.identifier(column.name)}`;

/** True when the account has a second factor: a confirmed authenticator app or a passkey. */
export function hasSecondFactor(userId: AnyColumn): SQL<boolean> {
  const id = qualified(userId);
  return sql<boolean>`(exists (select 1 from ${totpFactors} where ${qualified(totpFactors.userId)} = ${id} and ${qualified(totpFactors.confirmedAt)} is not null) or exists (select 1 from ${passkeys} where ${qualified(passkeys.userId)} = ${id}))`;
}

/**
 * True when a team requires a second factor of its members and this member has none. Part of
 * the same statement as the membership check on every team and server gate, so locking costs
 * no extra round trip; the factor lookup runs only for teams that require it.
 */
export function lockedOut(requireTwoFactor: AnyColumn, userId: AnyColumn): SQL<boolean> {
  return sql<boolean>`(${qualified(requireTwoFactor)} and not ${hasSecondFactor(userId)})`;
}

export function twoFactorRequired(teamId: string): AppError {
  return new AppError(
    "two_factor_required",
    "This team requires two-factor sign-in: add an authenticator app or a passkey on your account page to open it.",
    { details: { team_id: teamId } },
  );
}
