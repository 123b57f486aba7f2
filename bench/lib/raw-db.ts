/**
 * The raw baselines' database: ONE connection pool of postgres.js with prepared statements when
 * DATABASE_URL is set, else the app's PGlite directory opened directly, its repeated statements
 * prepared under a name as postgres.js does (src/db/pglite-statements.ts). No drizzle, no services.
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
  const { withNamedStatements } = await import("../../src/db/pglite-statements");
  const pg = await PGlite.create(join(dataDir, "pglite"));
  const query = withNamedStatements(pg, pg.query.bind(pg));
  return { query: async (text, params) => (await query<Row>(text, params)).rows, close: () => pg.close() };
}
