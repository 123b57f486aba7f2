import { afterAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { openDatabase, type Database } from "../src/db/client";
import { BatchedRateLimitStore, DbRateLimitStore } from "../src/db/rate-limit-store";
import { AppError } from "../src/lib/errors";
import { createLogger } from "../src/lib/log";
import { MemoryRateLimitStore, RateLimiter, type RateLimitPolicy, type RateLimitStore } from "../src/lib/rate-limit";
import { FallbackRateLimitStore, ReconnectingRedis, RedisRateLimitStore } from "../src/lib/redis-rate-limit";
import { devIdp, freePort, startTestServer, usingPostgres } from "./harness";
import { api, expectError } from "./helpers";
import { newClient } from "./ms-auth-helpers";
import { ownRedis, REDIS_SKIP_REASON, redisReachable, redisUrl } from "./redis-helpers";

/**
 * The limiter on both stores: in memory, and in the run's database (PGlite, or on PostgreSQL a
 * connection pool per simulated instance). Time is injected, so minutes pass without sleeping.
 */
const opened: Database[] = [];
const openDb = async () => {
  const db = await openDatabase({ url: process.env.DATABASE_URL, dataDir: "memory://" });
  opened.push(db);
  return db;
};
const redisUp = await redisReachable();
if (!redisUp) console.warn(REDIS_SKIP_REASON);
const connections: ReconnectingRedis[] = [];
/** A connection of its own (as another instance would have), keys under this run's prefix. */
const redisStore = async (prefix = RUN_PREFIX) => {
  const redis = new ReconnectingRedis(redisUrl);
  connections.push(redis);
  await redis.connect();
  return new RedisRateLimitStore(redis, prefix);
};
const RUN_PREFIX = `mcp-test:${process.pid}-${Date.now()}:`;
afterAll(async () => {
  for (const db of opened.splice(0)) await db.close();
  for (const c of connections.splice(0)) c.close();
});

let shared: Promise<Database> | undefined;
const runDb = () => {
  shared ??= openDb();
  return shared;
};

const stores: [string, () => Promise<RateLimitStore>][] = [
  ["memory", async () => new MemoryRateLimitStore()],
  ["database", async () => new DbRateLimitStore((await runDb()).db)],
  // Within one instance the batched store decides exactly as the others do.
  ["database, batched flush", async () => new BatchedRateLimitStore((await runDb()).db)],
  // The same behaviour with the counters in Redis (skipped, saying why, when none is reachable).
  ...(redisUp ? ([["redis", () => redisStore()]] as [string, () => Promise<RateLimitStore>][]) : []),
];

let seq = 0;
const uniqueKey = () => `k${Date.now()}-${seq++}`;
/** A minute boundary of the old fixed windows, some time ago. */
const MINUTE = Math.floor(Date.now() / 60_000) * 60_000 - 3_600_000;

/** The most admitted hits any span of `spanMs` holds (spans are half-open: [t, t + spanMs)). */
function maxInSpan(times: number[], spanMs: number) {
  const sorted = [...times].sort((a, b) => a - b);
  let best = 0;
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while (sorted[i]! - sorted[j]! >= spanMs) j++;
    best = Math.max(best, i - j + 1);
  }
  return best;
}

for (const [kind, makeStore] of stores) {
  describe(`rate limiter (${kind} store)`, () => {
    test("a burst across an old fixed-window boundary: no 60 s span admits more than limit + ceil(limit/60)", async () => {
      const store = await makeStore();
      let now = 0;
      const limiter = new RateLimiter(store, () => now);
      const policy: RateLimitPolicy = { name: "start", limit: 120, windowSeconds: 60 };
      const key = uniqueKey();
      const admitted: number[] = [];
      const attempt = async (at: number, n: number) => {
        now = at;
        for (let i = 0; i < n; i++) if ((await limiter.hit(policy, key)).allowed) admitted.push(at);
      };
      // The reported attack: 240 starts in 3.9 s, 120 just before a minute boundary, 120 after.
      await attempt(MINUTE - 3_000, 125);
      await attempt(MINUTE + 900, 125);
      expect(admitted.length).toBe(120);
      // Then a client that keeps trying at the limit rate, with bursts, for two more minutes.
      // (Sparse while the burst is still counted: every try there is refused.)
      for (let t = MINUTE + 1_000; t < MINUTE + 120_000; t += t < MINUTE + 55_000 ? 3_000 : 500)
        await attempt(t, t % 10_000 === 0 ? 10 : 1);
      expect(maxInSpan(admitted, 60_000)).toBeLessThanOrEqual(120 + 2);
      expect(maxInSpan(admitted, 59_000)).toBeLessThanOrEqual(120);
      // Once the burst has aged out, the client gets the limit's rate again.
      expect(admitted.filter((t) => t >= MINUTE + 57_000).length).toBeGreaterThanOrEqual(120);
    }, 120_000);

    test("steady traffic at exactly the limit rate is never refused", async () => {
      const store = await makeStore();
      let now = 0;
      const limiter = new RateLimiter(store, () => now);
      for (const limit of [120, 20, 7]) {
        const policy: RateLimitPolicy = { name: `steady-${limit}`, limit, windowSeconds: 60 };
        const key = uniqueKey();
        const refused: number[] = [];
        const every = 60_000 / limit;
        // Start part-way into a slot, so hits and slot boundaries do not line up.
        for (let i = 0; i < limit * 3; i++) {
          now = MINUTE + 370 + i * every;
          if (!(await limiter.hit(policy, key)).allowed) refused.push(i);
        }
        expect({ limit, refused }).toEqual({ limit, refused: [] });
      }
    }, 60_000);

    test("headers: remaining counts down, and Retry-After is the wait until a request is admitted", async () => {
      const store = await makeStore();
      let now = MINUTE + 10_500;
      const limiter = new RateLimiter(store, () => now);
      const policy: RateLimitPolicy = { name: "start", limit: 3, windowSeconds: 60 };
      const key = uniqueKey();
      for (const r of [2, 1, 0]) {
        const headers: Record<string, string> = {};
        await limiter.enforce(policy, key, headers);
        expect(headers).toEqual({ "ratelimit-policy": '"start";q=3;w=60', ratelimit: `"start";r=${r};t=60` });
      }
      // The three hits were counted in the second starting at +10 s; they age out at +70 s.
      now = MINUTE + 25_200;
      const refused = await limiter.enforce(policy, key, {}).catch((e) => e);
      expect(refused).toBeInstanceOf(AppError);
      expect(refused.headers).toEqual({
        "ratelimit-policy": '"start";q=3;w=60',
        ratelimit: '"start";r=0;t=45',
        "Retry-After": "45",
      });
      expect(refused.details).toEqual({ limit: 3, window_seconds: 60, retry_after: 45 });
      now = MINUTE + 69_999;
      expect((await limiter.hit(policy, key)).allowed).toBe(false);
      now = MINUTE + 70_000;
      const after = await limiter.hit(policy, key);
      expect(after).toMatchObject({ allowed: true, remaining: 0 });
      // Admitted by the slack (4 hits in the 61 counted seconds): the three leave that count at +71 s.
      expect(after.resetSeconds).toBe(1);
    });

    test("many hits in parallel admit exactly the limit", async () => {
      // Two database stores act as two instances; the batched store's cross-instance bound has its own test.
      const [a, b] = [await makeStore(), kind === "database" ? await makeStore() : undefined];
      const now = MINUTE + 5_000;
      const limiters = [new RateLimiter(a, () => now), new RateLimiter(b ?? a, () => now)];
      const policy: RateLimitPolicy = { name: "poll", limit: 10, windowSeconds: 60 };
      const key = uniqueKey();
      const decisions = await Promise.all(
        Array.from({ length: 40 }, (_, i) => limiters[i % 2]!.hit(policy, key).then((d) => d.allowed)),
      );
      expect(decisions.filter(Boolean).length).toBe(10);
    });
  });
}

describe("rate limiter: the database store shared by instances", () => {
  test("two limiters on one database count a key together (a pool each on PostgreSQL)", async () => {
    const first = await runDb();
    const second = usingPostgres() ? await openDb() : first;
    let now = MINUTE + 30_000;
    const a = new RateLimiter(new DbRateLimitStore(first.db), () => now);
    const b = new RateLimiter(new DbRateLimitStore(second.db), () => now);
    const policy: RateLimitPolicy = { name: "validate", limit: 4, windowSeconds: 60 };
    const key = uniqueKey();
    const seen = [];
    for (const limiter of [a, b, a, b, a, b]) seen.push(await limiter.hit(policy, key));
    expect(seen.map((d) => [d.allowed, d.remaining])).toEqual([
      [true, 3],
      [true, 2],
      [true, 1],
      [true, 0],
      [false, 0],
      [false, 0],
    ]);
    // Concurrent hits from both pools on a fresh key.
    const fresh = uniqueKey();
    const racing = await Promise.all(
      Array.from({ length: 30 }, (_, i) => (i % 2 ? a : b).hit(policy, fresh).then((d) => d.allowed)),
    );
    expect(racing.filter(Boolean).length).toBe(4);
    now += 60_000;
    expect((await b.hit(policy, key)).allowed).toBe(true);
  });

  test("batched stores on two instances: each sees the other's hits after a flush; the overshoot is what the other admitted between flushes", async () => {
    const first = await runDb();
    const second = usingPostgres() ? await openDb() : first;
    let now = MINUTE + 30_000;
    const storeA = new BatchedRateLimitStore(first.db);
    const storeB = new BatchedRateLimitStore(second.db);
    const a = new RateLimiter(storeA, () => now);
    const b = new RateLimiter(storeB, () => now);
    const policy: RateLimitPolicy = { name: "validate", limit: 10, windowSeconds: 60 };
    const key = uniqueKey();
    // A counts 6, flushes; B, new to the key, reads them before judging its first hit.
    for (let i = 0; i < 6; i++) expect((await a.hit(policy, key)).allowed).toBe(true);
    await storeA.flush();
    const fromB = [];
    for (let i = 0; i < 6; i++) fromB.push((await b.hit(policy, key)).allowed);
    expect(fromB).toEqual([true, true, true, true, false, false]);
    await storeB.flush();
    // Both flushed: A knows of B's hits and refuses.
    await storeA.flush();
    expect((await a.hit(policy, key)).allowed).toBe(false);
    // Between flushes each instance judges on what it last heard: with no flush, A and B each
    // admit up to the rest of the limit, and no more than that together.
    const other = uniqueKey();
    await a.hit(policy, other);
    await storeA.flush();
    await b.hit(policy, other);
    let admitted = 2;
    for (let i = 0; i < 20; i++) {
      if ((await a.hit(policy, other)).allowed) admitted++;
      if ((await b.hit(policy, other)).allowed) admitted++;
    }
    // A knew of 1 (its own), B of 2: A admits 9 more, B 8 more. Limit 10, overshoot 9 = what
    // A admitted that B had not heard of, and once both flush, the stored count is the truth.
    expect(admitted).toBe(19);
    await storeA.flush();
    await storeB.flush();
    await storeA.flush();
    const rows = await first.db.execute(sql`select counts from rate_limits where key = ${`validate:${other}`}`);
    const stored = ((Array.isArray(rows) ? rows : (rows as { rows: unknown[] }).rows)[0] as { counts: number[] })
      .counts;
    expect(stored.reduce((x, y) => x + y, 0)).toBe(19);
    expect((await a.hit(policy, other)).allowed).toBe(false);
    expect((await b.hit(policy, other)).allowed).toBe(false);
    // The window still slides: a minute later both admit again.
    now += 61_000;
    expect((await a.hit(policy, other)).allowed).toBe(true);
    expect((await b.hit(policy, other)).allowed).toBe(true);
  });

  test("pruning removes keys idle for two windows, so the table stays bounded", async () => {
    const database = await runDb();
    let now = MINUTE - 600_000;
    const limiter = new RateLimiter(new DbRateLimitStore(database.db), () => now);
    const policy: RateLimitPolicy = { name: "prune", limit: 5, windowSeconds: 60 };
    const idle = uniqueKey();
    const active = uniqueKey();
    await limiter.hit(policy, idle);
    now += 200_000;
    await limiter.hit(policy, active);
    await limiter.prune();
    const rows = await database.db.execute(
      sql`select key from rate_limits where key in (${`prune:${idle}`}, ${`prune:${active}`})`,
    );
    const keys = (Array.isArray(rows) ? rows : (rows as unknown as { rows: { key: string }[] }).rows).map(
      (r: { key: string }) => r.key,
    );
    expect(keys).toEqual([`prune:${active}`]);
  });
});

describe.skipIf(!redisUp)("rate limiter: the Redis store shared by instances", () => {
  test("two limiters on their own Redis connections count a key together, exactly, also when racing", async () => {
    let now = MINUTE + 30_000;
    const a = new RateLimiter(await redisStore(), () => now);
    const b = new RateLimiter(await redisStore(), () => now);
    const policy: RateLimitPolicy = { name: "validate", limit: 4, windowSeconds: 60 };
    const key = uniqueKey();
    const seen = [];
    for (const limiter of [a, b, a, b, a, b]) seen.push(await limiter.hit(policy, key));
    expect(seen.map((d) => [d.allowed, d.remaining])).toEqual([
      [true, 3],
      [true, 2],
      [true, 1],
      [true, 0],
      [false, 0],
      [false, 0],
    ]);
    const fresh = uniqueKey();
    const racing = await Promise.all(
      Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).hit(policy, fresh).then((d) => d.allowed)),
    );
    expect(racing.filter(Boolean).length).toBe(4);
    now += 60_000;
    expect((await b.hit(policy, key)).allowed).toBe(true);
  });

  test("an instance whose clock is behind judges on the newest slot another instance stored", async () => {
    const policy: RateLimitPolicy = { name: "skew", limit: 2, windowSeconds: 60 };
    const ahead = new RateLimiter(await redisStore(), () => MINUTE + 120_000);
    const behind = new RateLimiter(await redisStore(), () => MINUTE);
    const key = uniqueKey();
    expect((await ahead.hit(policy, key)).allowed).toBe(true);
    expect((await ahead.hit(policy, key)).allowed).toBe(true);
    // Two minutes behind, its own window would be empty; the stored, newer one is full.
    expect((await behind.hit(policy, key)).allowed).toBe(false);
  });

  test("keys expire two windows after their last hit, so Redis needs no prune pass", async () => {
    const raw = new ReconnectingRedis(redisUrl);
    connections.push(raw);
    await raw.connect();
    const limiter = new RateLimiter(await redisStore(), () => Date.now());
    const key = uniqueKey();
    await limiter.hit({ name: "ttl", limit: 5, windowSeconds: 60 }, key);
    const ttl = Number(await raw.send("PTTL", [`${RUN_PREFIX}ttl:${key}`]));
    expect(ttl).toBeGreaterThan(110_000);
    expect(ttl).toBeLessThanOrEqual(122_000);
  });

  // Needs a Redis of its own to stop and start: skipped where the redis-server binary is absent.
  test.skipIf(!Bun.which("redis-server"))(
    "Redis down: each instance counts in memory (one log line per interval), and shared counting resumes when it is back",
    async () => {
      const own = (await ownRedis(freePort()))!;
      const lines: string[] = [];
      const log = createLogger("info", {}, { write: (_l, line) => lines.push(line) });
      const redis = new ReconnectingRedis(own.url, 50);
      connections.push(redis);
      expect(await redis.connect()).toBe(true);
      const now = MINUTE + 10_000;
      const store = new FallbackRateLimitStore(new RedisRateLimitStore(redis, RUN_PREFIX), log, 60_000, () => now);
      const limiter = new RateLimiter(store, () => now);
      const policy: RateLimitPolicy = { name: "outage", limit: 3, windowSeconds: 60 };
      const key = uniqueKey();
      try {
        expect((await limiter.hit(policy, key)).allowed).toBe(true);
        await own.stop();
        // Still limited, on this instance's own count (it starts afresh: fail open to per-instance limits).
        const during = [];
        for (let i = 0; i < 5; i++) during.push((await limiter.hit(policy, key)).allowed);
        expect(during).toEqual([true, true, true, false, false]);
        expect(store.degraded).toBe(true);
        expect(lines.filter((l) => l.includes("rate-limit store unreachable"))).toHaveLength(1);
        await own.start();
        // Reconnects in the background after a failed command; hits meanwhile stay local.
        let back = false;
        for (let i = 0; i < 100 && !back; i++) {
          await limiter.hit(policy, uniqueKey());
          back = !store.degraded;
          if (!back) await Bun.sleep(50);
        }
        expect(back).toBe(true);
        expect(lines.some((l) => l.includes("reachable again"))).toBe(true);
        // The restarted Redis holds nothing: the key counts from zero there again.
        expect((await limiter.hit(policy, key)).remaining).toBe(2);
      } finally {
        await own.stop();
      }
    },
  );
});

describe("rate limit over HTTP", () => {
  test("a refused start says when to retry, and is admitted once that time has passed", async () => {
    const idp = await devIdp();
    const srv = await startTestServer({ DEV_IDP_URL: idp.url, RATE_LIMIT_START_PER_MIN: "2" });
    const c = await newClient(srv);
    const body = { client_id: c.clientId, client_secret: c.secret };
    for (const r of [1, 0]) {
      const ok = await api(srv, "POST", "/client/ms-auth/start", { body });
      expect(ok.status).toBe(200);
      expect(ok.headers.get("ratelimit")).toMatch(new RegExp(`"start";r=${r};t=(59|60)$`));
    }
    const limited = await api(srv, "POST", "/client/ms-auth/start", { body });
    expectError(limited, 429, "rate_limited");
    const retryAfter = Number(limited.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThanOrEqual(58);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(limited.headers.get("ratelimit")).toContain(`"start";r=0;t=${retryAfter}`);
    // Half a second short of Retry-After (at least) it is still refused; at Retry-After, admitted.
    srv.services.clock.advance(retryAfter * 1000 - 1_500);
    expectError(await api(srv, "POST", "/client/ms-auth/start", { body }), 429, "rate_limited");
    srv.services.clock.advance(1_500);
    expect((await api(srv, "POST", "/client/ms-auth/start", { body })).status).toBe(200);
  });
});
