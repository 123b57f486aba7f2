/** Rows of a raw query on either driver (postgres-js answers an array, PGlite `{ rows }`). */
export function rowsOf<T>(result: unknown): T[] {
  return Array.isArray(result) ? (result as T[]) : (result as { rows: T[] }).rows;
}
