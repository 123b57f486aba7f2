import { existsSync, mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { PGlite, type PGliteOptions, types } from "@electric-sql/pglite";
import { drizzle as drizzlePglite } from "drizzle-orm/pglite";
import { withNamedStatements } from "./pglite-statements";
import { migrate as migratePglite } from "drizzle-orm/pglite/migrator";
import { sql } from "drizzle-orm";
import type postgres from "postgres";
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
  /** False once closed; known without a round trip. */
  alive(): boolean;
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
  /** PostgreSQL only: the most connections this instance opens, and how long an idle one is kept. */
  pool?: { max: number; idleTimeoutSeconds: number };
  /**
   * PGlite only: initialise an empty directory in a child process (see `initPglite`). Worth it
   * for a long-running instance; tests, which start hundreds of fresh directories, skip the
   * extra process start.
   */
  initInChild?: boolean;
}

export async function openDatabase(opts: OpenOptions): Promise<Database> {
  if (opts.url) {
    if (opts.connect) await waitForPostgres(opts.url, opts.connect);
    return openPostgres(opts.url, opts.pool);
  }
  return openPglite(opts.dataDir, opts.initInChild ?? false);
}

/**
 * PostgreSQL's default 128 MB of shared buffers is sized for a server of its own; embedded, those
 * pages sit in the WASM heap and only grow it (idle RSS 266 MiB against 142 MiB with 16 MB,
 * measured with a bare PGlite in Bun). The working set of one instance's tables fits.
 */
export const PGLITE_SHARED_BUFFERS = "16MB";

/**
 * drizzle's PGlite driver returns dates, timestamps and intervals as PostgreSQL's text and maps
 * them itself. It asks for that with a `parsers` option on every query, and PGlite merges a
 * per-query option into a copy of its whole parser table (342 entries) each time: 13.5% of CPU
 * under load. Installed once on the instance, the same parsers cost nothing per query.
 */
const asText = (value: string) => value;
const DRIZZLE_PARSERS = {
  [types.TIMESTAMP]: asText,
  [types.TIMESTAMPTZ]: asText,
  [types.INTERVAL]: asText,
  [types.DATE]: asText,
  1231: asText, // numeric[]
  1115: asText, // timestamp[]
  1185: asText, // timestamptz[]
  1187: asText, // interval[]
  1182: asText, // date[]
};

type QueryFn = PGlite["query"];
type QueryOptions = Parameters<QueryFn>[2];

/** Drops the per-query `parsers` drizzle sends: the instance already holds the same ones. */
function withoutParsers(query: QueryFn): QueryFn {
  return ((text: string, params?: unknown[], options?: QueryOptions) => {
    if (!options?.parsers) return query(text, params, options);
    const { parsers: _, ...rest } = options;
    return query(text, params, rest);
  }) as QueryFn;
}

async function createPglite(dataDir: string): Promise<PGlite> {
  const options: PGliteOptions = {
    parsers: DRIZZLE_PARSERS,
    startParams: [...PGlite.defaultStartParams, "-c", `shared_buffers=${PGLITE_SHARED_BUFFERS}`],
  };
  const client = await PGlite.create(dataDir, options);
  // Startup derives array parsers from element parsers; drizzle wants these arrays as text.
  Object.assign(client.parsers, DRIZZLE_PARSERS);
  client.query = withNamedStatements(client, withoutParsers(client.query.bind(client)));
  const transaction = client.transaction.bind(client);
  client.transaction = ((fn) =>
    transaction((tx) => {
      tx.query = withoutParsers(tx.query);
      return fn(tx);
    })) as PGlite["transaction"];
  return client;
}

async function openPglite(dataDir: string, initInChild: boolean): Promise<Database> {
  if (dataDir === "memory://") return pgliteDatabase(await createPglite(dataDir));
  const dir = join(resolve(dataDir), "pglite");
  mkdirSync(dir, { recursive: true });
  // Before PGlite reads a file: a second process must be refused, not diverge from the first.
  const lock = lockDataDir(dataDir);
  try {
    if (initInChild && !existsSync(join(dir, "PG_VERSION"))) await initPglite(dir);
    return await pgliteDatabase(await createPglite(dir), () => lock.release());
  } catch (err) {
    lock.release();
    throw err;
  }
}

/**
 * A first start runs initdb and every migration inside the WASM instance, whose memory only
 * grows: the process kept ~40 MiB more than on a restart, for good (closing that instance and
 * opening another in the same process still left ~25 MiB behind). Done in a short-lived child
 * process, the serving instance starts as small as on a restart.
 */
async function initPglite(dir: string) {
  const child = Bun.spawn([process.execPath, join(import.meta.dir, "pglite-init.ts"), dir], {
    stdout: "ignore",
    stderr: "pipe",
  });
  const stderr = await new Response(child.stderr).text();
  if ((await child.exited) !== 0) throw new Error(`initialising the PGlite directory ${dir} failed: ${stderr.trim()}`);
}

/** Creates the database in an empty directory and applies the migrations; the child's entry. */
export async function initPgliteDir(dir: string) {
  const database = await pgliteDatabase(await createPglite(dir));
  await database.close();
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
    alive: () => !closed && !client.closed,
    async close() {
      if (closed) return;
      closed = true;
      await client.close();
      onClose();
    },
  };
}

/**
 * The PostgreSQL client and drizzle's driver for it, loaded when a DATABASE_URL is used: the
 * embedded default never needs them, and an idle instance keeps every module it loaded.
 */
const postgresDriver = async () => {
  const [{ default: postgres }, { drizzle }, { migrate }] = await Promise.all([
    import("postgres"),
    import("drizzle-orm/postgres-js"),
    import("drizzle-orm/postgres-js/migrator"),
  ]);
  return { postgres, drizzlePg: drizzle, migratePg: migrate };
};

async function openPostgres(url: string, pool = { max: 10, idleTimeoutSeconds: 60 }): Promise<Database> {
  const driver = await postgresDriver();
  const { postgres, drizzlePg } = driver;
  await migratePostgres(url, driver);
  // Idle connections are closed after a while: instances that sit idle hand theirs back to a
  // server whose max_connections every instance shares.
  // No parallel workers for this service's statements: they are index ranges and point writes, for
  // which starting workers costs more than it saves (an analytics read across a month's end took
  // 170 ms under a Gather, 24 ms without; docs/benchmarks.md), and concurrent requests share the cores.
  const pg = postgres(url, {
    max: pool.max,
    idle_timeout: pool.idleTimeoutSeconds,
    onnotice: () => {},
    connect_timeout: 10,
    // Nor JIT compilation: at the planner's estimates for a year's analytics it compiled for 10 ms
    // of a 100 ms read (and for 70 ms of every ingest batch before its row count was given).
    // And UTC whatever the server's default zone: the aggregates add months and days to instants
    // (`month - interval '1 month'`, `week + interval '7 days'`), which PostgreSQL does in the
    // session's zone; under America/New_York a month row's `prev_ms` missed the month before, and
    // the analytics tests failed.
    connection: { max_parallel_workers_per_gather: "0", jit: "off", TimeZone: "UTC" } as Record<string, string>,
  });
  const db = drizzlePg(pg, { schema }) as unknown as Db;
  let closed = false;
  return {
    db,
    kind: "postgres",
    pg,
    async ping() {
      await pg`select 1`;
    },
    alive: () => !closed,
    async close() {
      closed = true;
      await pg.end({ timeout: 5 });
    },
  };
}

/**
 * Migrations on one dedicated connection holding a session advisory lock: instances that
 * start together queue on the lock, and the later ones find nothing left to apply.
 */
async function migratePostgres(
  url: string,
  { postgres, drizzlePg, migratePg }: Awaited<ReturnType<typeof postgresDriver>>,
) {
  // In UTC, as the service's connections: the migrations' backfills add months and days to instants.
  const conn = postgres(url, { max: 1, onnotice: () => {}, connection: { TimeZone: "UTC" } as Record<string, string> });
  try {
    await conn`select pg_advisory_lock(${MIGRATION_LOCK_ID})`;
    await migratePg(drizzlePg(conn), { migrationsFolder: MIGRATIONS_DIR });
    await conn`select pg_advisory_unlock(${MIGRATION_LOCK_ID})`;
  } finally {
    await conn.end({ timeout: 5 });
  }
}
