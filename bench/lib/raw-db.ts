/**
 * The raw baselines' database: ONE connection pool of postgres.js with prepared statements when
 * DATABASE_URL is set, else the app's PGlite directory opened directly. No drizzle, no app code.
 */
import { join } from "node:path";
import postgres from "postgres";

export type Row = Record<string, unknown>;

export async function openRawDb(dataDir: string): Promise<{
  query: (text: string, params: unknown[]) => Promise<Row[]>;
  close: () => Promise<void>;
}> {
  if (process.env.DATABASE_URL) {
    const sql = postgres(process.env.DATABASE_URL, { max: 10, onnotice: () => {} });
    return {
      query: (text, params) => sql.unsafe(text, params as string[], { prepare: true }) as unknown as Promise<Row[]>,
      close: () => sql.end({ timeout: 2 }),
    };
  }
  const { PGlite } = await import("@electric-sql/pglite");
  const pg = await PGlite.create(join(dataDir, "pglite"));
  return { query: async (text, params) => (await pg.query<Row>(text, params)).rows, close: () => pg.close() };
}
