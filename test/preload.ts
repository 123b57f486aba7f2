import { afterAll } from "bun:test";
import postgres from "postgres";
import { pgliteTemplate, stopAll } from "./harness";

/**
 * On PostgreSQL, each run gets a database of its own, created here and dropped at the end,
 * so runs never see each other's rows. The variable the tests read points at it.
 */
const adminUrl = process.env.DATABASE_URL;
let runDb: string | undefined;
if (adminUrl) {
  runDb = `mcp_test_${Date.now()}_${process.pid}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database "${runDb}"`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${runDb}`;
  process.env.DATABASE_URL = url.toString();
  process.env.MCP_ADMIN_DATABASE_URL = adminUrl;
}

// On PGlite, the migrated data directory test servers start from (test/harness.ts) is made here,
// before the first test: on a busy machine it can take longer than a test's timeout.
if (!adminUrl) await pgliteTemplate();

afterAll(async () => {
  await stopAll();
  if (adminUrl && runDb && !process.env.KEEP_TEST_DB) {
    const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
    await admin.unsafe(`drop database if exists "${runDb}" with (force)`);
    await admin.end();
  }
});
