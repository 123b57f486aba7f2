import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { like, sql } from "drizzle-orm";
import type { RunningServer } from "../src/app";
import { users } from "../src/db/schema";
import { startTestServer, stopTestServer, usingPostgres } from "./harness";
import { type ApiResult, api, expectError, uniqueEmail } from "./helpers";

const PASSWORD = "correct horse battery";
const DASH = { "x-mcp-dashboard": "1" };

/** A client address of its own, so counters other test files left on a shared database do not count. */
const address = () => `198.51.100.${1 + Math.floor(Math.random() * 250)}`;

async function accountsLike(server: RunningServer, prefix: string) {
  const rows = await server.services.database.db
    .select({ n: sql<number>`count(*)::int` })
    .from(users)
    .where(like(users.email, `${prefix}%`));
  return Number(rows[0]!.n);
}

function expectRetryAfter(res: ApiResult) {
  const err = expectError(res, 429, "rate_limited");
  const retry = Number(res.headers.get("retry-after"));
  expect(retry).toBeGreaterThanOrEqual(1);
  return err;
}

/** Holds password slots with work that ends only when released: a sign-up's hash still running. */
function hold(server: RunningServer, kind: "signin" | "signup") {
  let release!: () => void;
  const done = server.services.passwords.run(kind, () => new Promise<void>((r) => (release = r)));
  return { release: () => release(), done };
}

describe("sign-up limits", () => {
  test("a burst from one address: at most the per-address limit is created, the rest get 429 with Retry-After", async () => {
    const server = await startTestServer({ TRUST_PROXY: "1", SIGNUPS_PER_ADDRESS_PER_HOUR: "3" });
    try {
      const from = address();
      const tag = `burst-${crypto.randomUUID().slice(0, 8)}`;
      const burst = await Promise.all(
        Array.from({ length: 12 }, () =>
          api(server, "POST", "/auth/signup", {
            body: { email: uniqueEmail(tag), password: PASSWORD },
            headers: { "x-forwarded-for": from },
          }),
        ),
      );
      const statuses = burst.map((r) => r.status).sort();
      expect(statuses).toEqual([201, 201, 201, ...Array(9).fill(429)]);
      for (const r of burst.filter((r) => r.status === 429)) {
        const err = expectRetryAfter(r);
        expect(err.details).toMatchObject({ limit: 3, window_seconds: 3600 });
      }
      expect(await accountsLike(server, tag)).toBe(3);
      // Another address still signs up: the limit is per address.
      const other = await api(server, "POST", "/auth/signup", {
        body: { email: uniqueEmail(tag), password: PASSWORD },
        headers: { "x-forwarded-for": address().replace("198.51.100", "203.0.113") },
      });
      expect(other.status).toBe(201);
    } finally {
      await stopTestServer(server);
    }
  }, 60_000);

  test("the overall limit holds across addresses", async () => {
    const server = await startTestServer({ TRUST_PROXY: "1", SIGNUPS_PER_HOUR: "4" });
    try {
      // On PostgreSQL the overall counter is shared by every server of the run: start it afresh.
      if (usingPostgres())
        await server.services.database.db.execute(sql`delete from rate_limits where key = 'signup:all'`);
      const tag = `overall-${crypto.randomUUID().slice(0, 8)}`;
      const burst = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          api(server, "POST", "/auth/signup", {
            body: { email: uniqueEmail(tag), password: PASSWORD },
            headers: { "x-forwarded-for": `192.0.2.${i + 1}` },
          }),
        ),
      );
      expect(burst.map((r) => r.status).sort()).toEqual([201, 201, 201, 201, ...Array(6).fill(429)]);
      for (const r of burst.filter((r) => r.status === 429)) expectRetryAfter(r);
      expect(await accountsLike(server, tag)).toBe(4);
    } finally {
      await stopTestServer(server);
    }
  }, 60_000);
});

describe("password hashing slots", () => {
  let server: RunningServer;
  let email: string;
  beforeAll(async () => {
    server = await startTestServer({
      PASSWORD_HASH_CONCURRENCY: "2",
      PASSWORD_HASH_SIGNUP_SLOTS: "1",
      PASSWORD_HASH_SIGNUP_QUEUE: "1",
      PASSWORD_HASH_QUEUE: "0",
    });
    email = uniqueEmail("slots");
    expect((await api(server, "POST", "/auth/signup", { body: { email, password: PASSWORD } })).status).toBe(201);
  });
  afterAll(() => stopTestServer(server));

  test("with the sign-up share saturated, sign-ins (API and dashboard) complete and sign-ups past the queue get 429", async () => {
    const running = hold(server, "signup");
    const tag = `queued-${crypto.randomUUID().slice(0, 8)}`;
    const signups = Array.from({ length: 6 }, () =>
      api(server, "POST", "/auth/signup", { body: { email: uniqueEmail(tag), password: PASSWORD } }),
    );
    // One waits in the sign-up queue; the other five are refused at once, before any hashing.
    const refused: ApiResult[] = [];
    for (const p of signups) void p.then((r) => refused.push(r));
    for (let i = 0; i < 500 && refused.length < 5; i++) await Bun.sleep(10);
    expect(refused.length).toBe(5);
    for (const r of refused) {
      const err = expectRetryAfter(r);
      expect(err.message).toContain("sign-ups");
    }
    expect(server.services.passwords.load).toMatchObject({ runningSignups: 1, waitingSignups: 1 });

    const login = await api(server, "POST", "/auth/login", { body: { email, password: PASSWORD } });
    expect(login.status).toBe(200);
    expect(login.body.access_token).toBeString();
    const dashboard = await api(server, "POST", "/dashboard/session", {
      body: { email, password: PASSWORD },
      headers: DASH,
    });
    expect(dashboard.status).toBe(200);
    expect(dashboard.body.access_token).toBeString();
    // Sign-ins went past the sign-ups, which are still held.
    expect(server.services.passwords.load).toMatchObject({ runningSignups: 1, waitingSignups: 1 });

    running.release();
    await running.done;
    const queued = (await Promise.all(signups)).filter((r) => r.status !== 429);
    expect(queued.map((r) => r.status)).toEqual([201]);
    expect(await accountsLike(server, tag)).toBe(1);
  }, 60_000);

  test("API and dashboard sign-ins wait for the same slots: with them full and no queue, both get 429", async () => {
    const held = [hold(server, "signin"), hold(server, "signin")];
    try {
      const login = await api(server, "POST", "/auth/login", { body: { email, password: PASSWORD } });
      const err = expectRetryAfter(login);
      expect(err.message).toContain("sign-ins");
      expectRetryAfter(
        await api(server, "POST", "/dashboard/session", { body: { email, password: PASSWORD }, headers: DASH }),
      );
      expect(server.services.passwords.load).toMatchObject({ running: 2, waiting: 0 });
    } finally {
      for (const h of held) h.release();
      await Promise.all(held.map((h) => h.done));
    }
    expect((await api(server, "POST", "/auth/login", { body: { email, password: PASSWORD } })).status).toBe(200);
    expect(
      (await api(server, "POST", "/dashboard/session", { body: { email, password: PASSWORD }, headers: DASH })).status,
    ).toBe(200);
  }, 60_000);
});
