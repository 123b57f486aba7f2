/**
 * The activity index (docs/analytics.md, "Activity index"): over the three UTC weeks before its
 * end, 5 - 5/3 x the sum of 1 / (π/2 x hours played that week / 1 h + 1), 0 for no play at all and
 * toward 5 for a lot every week. Kept here, without a database handle, so the schema's generated
 * columns and the reads use the one formula.
 */
export const ACTIVITY_THRESHOLD_MS = 3_600_000;

/** The group floors, highest first; an index below the last is inactive. */
export const ACTIVITY_FLOORS = [
  { group: "very_active", min: 3.75 },
  { group: "active", min: 3 },
  { group: "regular", min: 2 },
  { group: "irregular", min: 1 },
] as const;

/** A week's term of the index from its milliseconds (SQL text; 1 for a week without play). */
export const weekTerm = (ms: string) =>
  ms === "0" ? "1" : `1 / (pi() / 2 * (${ms})::float8 / ${ACTIVITY_THRESHOLD_MS} + 1)`;

/**
 * The group of an index taken over three weeks' milliseconds (SQL text, or "0"): the place in
 * ACTIVITY_FLOORS, or ACTIVITY_FLOORS.length (inactive) below the last floor (the floors less
 * 1e-9, as the reads compare). Immutable, so it can be a stored generated column.
 */
export const groupOfWeeks = (a: string, b: string, c: string) => {
  const index = `(5 - 5 * (${weekTerm(a)} + ${weekTerm(b)} + ${weekTerm(c)}) / 3)`;
  const floors = [...ACTIVITY_FLOORS].reverse().map((f) => f.min);
  return `(${ACTIVITY_FLOORS.length} - width_bucket(${index} + 1e-9, array[${floors.join(", ")}]::float8[]))`;
};
