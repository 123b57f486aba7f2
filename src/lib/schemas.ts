import { z } from "zod";

/** Shared field schemas with the length limits every public string carries. */
/** Lower-cased, so a letter-case variant is the same id everywhere: limits, lookups, comparisons. */
export const ZUuid = z.uuid().toLowerCase();
export const ZName = z.string().trim().min(1).max(100);
export const ZEmail = z
  .email()
  .max(254)
  .transform((e) => e.toLowerCase());
/** ISO 8601 with an offset; 40 characters leave room for any sane fractional precision. */
export const ZTimestamp = z.iso.datetime({ offset: true }).max(40);
export const ZOk = z.object({ ok: z.literal(true) });

export const iso = (d: Date) => d.toISOString();
