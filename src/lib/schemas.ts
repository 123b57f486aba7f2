import { z } from "zod";

/** Shared field schemas with the length limits every public string carries. */
export const ZUuid = z.uuid();
export const ZName = z.string().trim().min(1).max(100);
export const ZEmail = z.email().max(254).transform((e) => e.toLowerCase());
export const ZTimestamp = z.iso.datetime({ offset: true });
export const ZOk = z.object({ ok: z.literal(true) });

export const iso = (d: Date) => d.toISOString();
