import { expect, test } from "bun:test";
import { runSoak } from "../bench/lib/soak";

/**
 * The sustained-load benchmark (bench/soak.ts) in a small form: 20 s of the same mixed traffic
 * at a modest rate against the app as a child process on the run's database. A leak check,
 * not a timing one: no latency is asserted.
 */
test("sustained mixed traffic: no errors, every agent push reaches every socket, memory flat after warm-up", async () => {
  const result = await runSoak({
    seconds: 20,
    warmupSeconds: 4,
    rate: 40,
    sockets: 6,
    servers: 2,
    logins: 2,
    databaseUrl: process.env.DATABASE_URL ?? "",
    // The run's database is shared with other files' servers: this instance must not ping them.
    env: { PINGER_ENABLED: "false" },
  });
  expect(result.errorSamples).toEqual([]);
  expect(result.errors).toBe(0);
  for (const e of result.endpoints) expect(e.requests).toBeGreaterThan(0);
  expect(result.requests).toBe(20 * 40);
  expect(result.sockets).toMatchObject({ missing: 0, unexpectedCloses: 0 });
  expect(Math.min(...result.sockets.received)).toBeGreaterThan(0);
  // Generous: the point is that memory does not climb with the request count.
  expect(result.rss.endKiB).toBeLessThan(result.rss.startKiB * 1.5);
}, 60_000);
