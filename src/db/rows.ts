import { type SQL, sql } from "drizzle-orm";

/**
 * UUIDs as one `uuid[]` parameter: a statement's text stays the same however many there are
 * (`= any(...)`, `unnest(...)`). For UUIDs already checked as such (the text is an array literal).
 */
export const uuidArray = (uuids: string[]): SQL => sql`${`{${uuids.join(",")}}`}::uuid[]`;

/** Rows of a raw query on either driver (postgres-js answers an array, PGlite `{ rows }`). */
export function rowsOf<T>(result: unknown): T[] {
  return Array.isArray(result) ? (result as T[]) : (result as { rows: T[] }).rows;
}
