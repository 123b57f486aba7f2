import { describe, expect, test } from "bun:test";
import type { RunningServer } from "../src/app";
import { api, expectError, newTeam, newUser, type TestUser } from "./helpers";
import { receiversForFile, withWebhookServer } from "./webhook-receiver";

/**
 * One team's endpoint that never answers must not hold back anyone else's deliveries, and an
 * endpoint that keeps failing is paused (its circuit opens) until it recovers or is resumed.
 * Each test runs a delivering server of its own, with the settings it measures.
 */
const receiver = receiversForFile();

async function team(srv: RunningServer) {
  const owner = await newUser(srv, "fair");
  return { owner, teamId: await newTeam(srv, owner) };
}

async function endpoint(srv: RunningServer, owner: TestUser, teamId: string, body: Record<string, unknown>) {
  const res = await api(srv, "POST", `/teams/${teamId}/webhooks`, { token: owner.token, body });
  expect(`${res.status} ${res.text}`).toStartWith("201");
  return res.body.endpoint.endpoint_id as string;
}

const sendTest = async (srv: RunningServer, owner: TestUser, teamId: string, endpointId: string) => {
  const res = await api(srv, "POST", `/teams/${teamId}/webhooks/${endpointId}/test`, { token: owner.token });
  expect(`${res.status} ${res.text}`).toStartWith("200");
};

type Delivery = { status: string; attempts: number; last_error: string | null };
const deliveries = async (srv: RunningServer, owner: TestUser, teamId: string, endpointId: string) =>
  (await api(srv, "GET", `/teams/${teamId}/webhooks/${endpointId}/deliveries?limit=100`, { token: owner.token })).body
    .deliveries as Delivery[];

/** Polls `read` until `done` holds of its answer (or fails after 10 s with the last answer). */
async function eventually<T>(read: () => Promise<T>, done: (v: T) => boolean): Promise<T> {
  for (const deadline = Date.now() + 10_000; ; await Bun.sleep(20)) {
    const v = await read();
    if (done(v)) return v;
    if (Date.now() > deadline) throw new Error(`still not so after 10 s: ${JSON.stringify(v)}`);
  }
}

/** A receiver whose every request is held open until `release` (the sender times out first). */
function blackHole() {
  const r = receiver();
  const held: (() => void)[] = [];
  r.plan = Array.from(
    { length: 200 },
    () => () => new Promise<Response>((resolve) => held.push(() => resolve(new Response("late")))),
  );
  return {
    r,
    release: () => {
      for (const f of held.splice(0)) f();
    },
  };
}

/** No retry and no circuit within a test: only the sharing of workers is measured. */
const NO_RETRY_NO_CIRCUIT = {
  WEBHOOK_RETRY_SCHEDULE_SECONDS: "3600",
  WEBHOOK_CIRCUIT_FAILURES: "1000",
  WEBHOOK_DISABLE_AFTER_FAILURES: "1000",
};

describe("webhook fairness", () => {
  test("an endpoint that never answers holds at most its share of the workers: another team's and the same team's other endpoint are delivered while its queue is still full", async () => {
    const K = 2;
    await withWebhookServer(
      // A long timeout: the black hole's first requests stay open for the whole test.
      {
        WEBHOOK_CONCURRENCY: "4",
        WEBHOOK_ENDPOINT_CONCURRENCY: String(K),
        WEBHOOK_TIMEOUT_MS: "5000",
        ...NO_RETRY_NO_CIRCUIT,
      },
      async (srv) => {
        const slow = blackHole();
        const fast = receiver();
        const sibling = receiver();
        const a = await team(srv);
        const b = await team(srv);
        const slowId = await endpoint(srv, a.owner, a.teamId, { url: slow.r.url });
        const siblingId = await endpoint(srv, a.owner, a.teamId, { url: sibling.url });
        const fastId = await endpoint(srv, b.owner, b.teamId, { url: fast.url });
        const QUEUED = 24;
        for (let i = 0; i < QUEUED; i++) await sendTest(srv, a.owner, a.teamId, slowId);
        await slow.r.until(1);

        await sendTest(srv, b.owner, b.teamId, fastId);
        await sendTest(srv, a.owner, a.teamId, siblingId);

        await fast.until(1, 60_000);
        const slowArrivedBeforeFast = slow.r.got.length;
        await sibling.until(1, 60_000);
        const slowArrivedBeforeSibling = slow.r.got.length;
        const slowState = await deliveries(srv, a.owner, a.teamId, slowId);
        const inFlight = slowState.filter((d) => d.status === "delivering").length;
        const untried = slowState.filter((d) => d.status === "pending" && d.attempts === 0).length;
        slow.release();

        // Before either arrived the black hole had been sent at most K requests; the rest of its
        // queue was still waiting, untried.
        expect(slowArrivedBeforeFast).toBeLessThanOrEqual(K);
        expect(slowArrivedBeforeSibling).toBeLessThanOrEqual(K);
        expect(inFlight).toBeLessThanOrEqual(K);
        expect(untried).toBeGreaterThanOrEqual(QUEUED - K);
      },
    );
  }, 120_000);

  test("however long the backlog, an endpoint never has more than its share in flight", async () => {
    const K = 2;
    await withWebhookServer(
      {
        WEBHOOK_CONCURRENCY: "8",
        WEBHOOK_ENDPOINT_CONCURRENCY: String(K),
        WEBHOOK_TIMEOUT_MS: "300",
        ...NO_RETRY_NO_CIRCUIT,
      },
      async (srv) => {
        const slow = blackHole();
        const a = await team(srv);
        const slowId = await endpoint(srv, a.owner, a.teamId, { url: slow.r.url });
        for (let i = 0; i < 12; i++) await sendTest(srv, a.owner, a.teamId, slowId);
        // Sampled while the queue drains, a timeout at a time.
        let most = 0;
        for (;;) {
          const now = await deliveries(srv, a.owner, a.teamId, slowId);
          most = Math.max(most, now.filter((d) => d.status === "delivering").length);
          if (now.every((d) => d.status === "pending" && d.attempts === 1)) break;
          await Bun.sleep(25);
        }
        slow.release();
        expect(slow.r.got.length).toBe(12);
        expect(most).toBeGreaterThan(0);
        expect(most).toBeLessThanOrEqual(K);
      },
    );
  }, 120_000);
});

describe("webhook circuit breaker", () => {
  test("after the threshold of failures in a row the endpoint is paused, the team's other endpoint is told, nothing more is sent, and resuming delivers what waited", async () => {
    await withWebhookServer(
      {
        WEBHOOK_ENDPOINT_CONCURRENCY: "1",
        WEBHOOK_CIRCUIT_FAILURES: "3",
        WEBHOOK_CIRCUIT_PAUSE_SECONDS: "0",
        WEBHOOK_RETRY_SCHEDULE_SECONDS: "0.05,0.05,0.05,0.05,0.05,0.05",
        WEBHOOK_DISABLE_AFTER_FAILURES: "1000",
      },
      async (srv) => {
        const bad = receiver();
        bad.plan = Array(3).fill(503);
        const told = receiver();
        const { owner, teamId } = await team(srv);
        const badId = await endpoint(srv, owner, teamId, { url: bad.url });
        await endpoint(srv, owner, teamId, { url: told.url, event_types: ["endpoint.paused"] });
        // Queued as events (a test request is refused once the endpoint is paused, which may
        // come before the last is sent).
        for (let i = 0; i < 4; i++) await srv.services.webhooks.enqueue({ teamId }, "webhook.test", { i });

        const [notice] = await told.until(1);
        const event = JSON.parse(notice!.body);
        expect(event.type).toBe("endpoint.paused");
        expect(event.data).toMatchObject({ endpoint_id: badId, consecutive_failures: 3, paused_until: null });
        expect(event.data.url).toStartWith("http://127.0.0.1:");

        const path = `/teams/${teamId}/webhooks/${badId}`;
        const paused = await api(srv, "GET", path, { token: owner.token });
        expect(paused.body).toMatchObject({ enabled: true, consecutive_failures: 3, paused_until: null });
        expect(paused.body.paused_at).toBeString();
        // Held, not failed: the waiting deliveries are kept for when it is resumed.
        await srv.services.webhookWorker.drain();
        await Bun.sleep(300);
        expect(bad.got).toHaveLength(3);
        const held = await deliveries(srv, owner, teamId, badId);
        expect(held.filter((d) => d.status === "failed")).toEqual([]);
        expect(held).toHaveLength(4);
        // A test to a paused endpoint is refused, as for a disabled one.
        expectError(await api(srv, "POST", `${path}/test`, { token: owner.token }), 409, "conflict");

        const resumed = await api(srv, "POST", `${path}/resume`, { token: owner.token });
        expect(resumed.status).toBe(200);
        expect(resumed.body).toMatchObject({ paused_at: null, paused_until: null, consecutive_failures: 0 });
        await bad.until(3 + 4);
        await srv.services.webhookWorker.drain();
        expect((await deliveries(srv, owner, teamId, badId)).map((d) => d.status)).toEqual(Array(4).fill("succeeded"));
        expect(told.got).toHaveLength(1);
      },
    );
  }, 120_000);

  test("a paused endpoint is probed by one delivery when the pause ends: a success closes the circuit and the rest follow", async () => {
    await withWebhookServer(
      {
        WEBHOOK_ENDPOINT_CONCURRENCY: "1",
        WEBHOOK_CIRCUIT_FAILURES: "2",
        WEBHOOK_CIRCUIT_PAUSE_SECONDS: "1",
        WEBHOOK_RETRY_SCHEDULE_SECONDS: "0.05,0.05,0.05,0.05,0.05,0.05",
        WEBHOOK_DISABLE_AFTER_FAILURES: "1000",
      },
      async (srv) => {
        const flaky = receiver();
        flaky.plan = [503, 503];
        const { owner, teamId } = await team(srv);
        const id = await endpoint(srv, owner, teamId, { url: flaky.url });
        for (let i = 0; i < 3; i++) await srv.services.webhooks.enqueue({ teamId }, "webhook.test", { i });
        await flaky.until(2);
        // The second failure reaches the database just after the receiver answered it.
        const paused = await eventually(
          () => api(srv, "GET", `/teams/${teamId}/webhooks/${id}`, { token: owner.token }),
          (r) => r.body.paused_at !== null,
        );
        expect(paused.body.paused_until).toBeString();
        // The receiver answers again; after the pause the probe and then the others arrive.
        await flaky.until(2 + 3, 20_000);
        await srv.services.webhookWorker.drain();
        const after = await api(srv, "GET", `/teams/${teamId}/webhooks/${id}`, { token: owner.token });
        expect(after.body).toMatchObject({ paused_at: null, paused_until: null, consecutive_failures: 0 });
        expect(flaky.got[2]!.at - flaky.got[1]!.at).toBeGreaterThanOrEqual(900);
      },
    );
  }, 120_000);
});
