import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { drizzle as drizzlePglite } from "drizzle-orm/pglite";
import { drizzle as drizzlePg } from "drizzle-orm/postgres-js";
import { migrate as migratePglite } from "drizzle-orm/pglite/migrator";
import { migrate as migratePg } from "drizzle-orm/postgres-js/migrator";
import { sql } from "drizzle-orm";
import postgres from "postgres";
import type { Logger } from "../lib/log";
import { waitForPostgres } from "./connect";
import { lockDataDir } from "./lock";
import * as schema from "./schema";

export type Schema = typeof schema;
/** Both drivers expose the same query builder; the PGlite type stands for either. */
export type Db = ReturnType<typeof drizzlePglite<Schema>>;

export interface Database {
  db: Db;
  kind: "pglite" | "postgres";
  /** Raw postgres-js client (Postgres only): LISTEN/NOTIFY and the like. */
  pg?: postgres.Sql;
  ping(): Promise<void>;
  close(): Promise<void>;
}

export const MIGRATIONS_DIR = resolve(import.meta.dir, "../../drizzle");
/** Any fixed 64-bit number; all instances agree on it so only one migrates at a time. */
const MIGRATION_LOCK_ID = 727_465_001;

export interface OpenOptions {
  url?: string;
  dataDir: string;
  /** PostgreSQL only: keep trying to connect for this long, logging each attempt, before giving up. */
  connect?: { timeoutSeconds: number; log: Logger };
}

export async function openDatabase(opts: OpenOptions): Promise<Database> {
  if (opts.url) {
    if (opts.connect) await waitForPostgres(opts.url, opts.connect);
    return openPostgres(opts.url);
  }
  return openPglite(opts.dataDir);
}

async function openPglite(dataDir: string): Promise<Database> {
  if (dataDir === "memory://") return pgliteDatabase(await PGlite.create(dataDir));
  const dir = join(resolve(dataDir), "pglite");
  mkdirSync(dir, { recursive: true });
  // Before PGlite reads a file: a second process must be refused, not diverge from the first.
  const lock = lockDataDir(dataDir);
  try {
    return await pgliteDatabase(await PGlite.create(dir), () => lock.release());
  } catch (err) {
    lock.release();
    throw err;
  }
}

async function pgliteDatabase(client: PGlite, onClose = () => {}): Promise<Database> {
  const db = drizzlePglite(client, { schema });
  try {
    await migratePglite(db, { migrationsFolder: MIGRATIONS_DIR });
  } catch (err) {
    await client.close();
    throw err;
  }
  let closed = false;
  return {
    db,
    kind: "pglite",
    async ping() {
      if (closed) throw new Error("database closed");
      await db.execute(sql`select 1`);
    },
    async close() {
      if (closed) return;
      closed = true;
      await client.close();
      onClose();
    },
  };
}

async function openPostgres(url: string): Promise<Database> {
  await migratePostgres(url);
  const pg = postgres(url, { max: 10, onnotice: () => {}, connect_timeout: 10 });
  const db = drizzlePg(pg, { schema }) as unknown as Db;
  return {
    db,
    kind: "postgres",
    pg,
    async ping() {
      await pg`select 1`;
    },
    async close() {
      await pg.end({ timeout: 5 });
    },
  };
}

/**
 * Migrations on one dedicated connection holding a session advisory lock: instances that
 * start together queue on the lock, and the later ones find nothing left to apply.
 */
async function migratePostgres(url: string) {
  const conn = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await conn`select pg_advisory_lock(${MIGRATION_LOCK_ID})`;
    await migratePg(drizzlePg(conn), { migrationsFolder: MIGRATIONS_DIR });
    await conn`select pg_advisory_unlock(${MIGRATION_LOCK_ID})`;
  } finally {
    await conn.end({ timeout: 5 });
  }
}
