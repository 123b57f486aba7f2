import { afterAll, describe, expect, test } from "bun:test";
import type { RunningServer } from "../src/app";
import { freePort, startTestServer, tempDir, testEnv, usingPostgres } from "./harness";
import { api, newTeam, newUser } from "./helpers";
import { FAST_WEBHOOKS, type Receiver, startReceiver } from "./webhook-receiver";

const FAST = FAST_WEBHOOKS;

const receivers: Receiver[] = [];
const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterAll(async () => {
  for (const c of cleanups) await c();
  for (const r of receivers) r.stop();
});

/** The service as a real process on a data directory (PGlite) or the run's database. */
class ServiceProcess {
  private proc?: ReturnType<typeof Bun.spawn>;
  readonly port = freePort();
  readonly url = `http://127.0.0.1:${this.port}`;
  readonly target = { url: this.url, port: this.port } as RunningServer;
  private readonly dataDir = tempDir();

  async start() {
    const env = {
      ...process.env,
      ...testEnv({
        DATABASE_URL: process.env.DATABASE_URL,
        DATA_DIR: this.dataDir,
        PORT: String(this.port),
        PUBLIC_URL: this.url,
        ...FAST,
      }),
    };
    this.proc = Bun.spawn([process.execPath, "src/main.ts"], { env, stdout: "ignore", stderr: "inherit" });
    // A start after SIGKILL on PGlite took over 20 s once in a loaded CI run: up to 50 s each.
    const deadline = Date.now() + 50_000;
    while (
      !(await fetch(`${this.url}/health`).then(
        (r) => r.ok,
        () => false,
      ))
    ) {
      if (this.proc.exitCode !== null) throw new Error(`the service exited with ${this.proc.exitCode}`);
      if (Date.now() > deadline) throw new Error("the service did not answer /health within 50 s");
      await Bun.sleep(50);
    }
  }

  async kill9() {
    this.proc?.kill("SIGKILL");
    await this.proc?.exited;
    this.proc = undefined;
  }
}

describe("webhook delivery survives crashes", () => {
  test("killed with SIGKILL while a delivery is in flight, the restarted service delivers it with the same webhook-id", async () => {
    const svc = new ServiceProcess();
    cleanups.push(() => svc.kill9());
    await svc.start();
    const r = startReceiver();
    receivers.push(r);
    let release: () => void = () => {};
    // The first request is held open: the service dies waiting for its answer.
    r.plan = [() => new Promise<Response>((resolve) => (release = () => resolve(new Response("late"))))];
    const owner = await newUser(svc.target, "crash");
    const teamId = await newTeam(svc.target, owner);
    const created = await api(svc.target, "POST", `/teams/${teamId}/webhooks`, {
      token: owner.token,
      body: { url: r.url },
    });
    expect(created.status).toBe(201);
    const path = `/teams/${teamId}/webhooks/${created.body.endpoint.endpoint_id}`;
    const queued = await api(svc.target, "POST", `${path}/test`, { token: owner.token });
    expect(queued.status).toBe(200);
    await r.until(1);
    await svc.kill9();
    release();
    await svc.start();
    // The lease of the cut attempt runs out (7 s here), then the new process claims it.
    const got = await r.until(2, 20_000);
    expect(got[1]!.headers["webhook-id"]).toBe(got[0]!.headers["webhook-id"]);
    expect(got[1]!.body).toBe(got[0]!.body);
    const deadline = Date.now() + 5000;
    let d: { status: string; attempts: number } | undefined;
    while (Date.now() < deadline) {
      d = (await api(svc.target, "GET", `${path}/deliveries`, { token: owner.token })).body.deliveries[0];
      if (d?.status === "succeeded") break;
      await Bun.sleep(50);
    }
    expect(d).toMatchObject({ status: "succeeded", attempts: 2 });
  }, 150_000);
});

describe.skipIf(!usingPostgres())("webhook delivery from several instances on one PostgreSQL", () => {
  test("three instances deliver each of 300 events once; duplicates are counted and reported", async () => {
    const dir = tempDir();
    const [a, b, c] = [
      await startTestServer({ ...FAST, DATA_DIR: dir }),
      await startTestServer({ ...FAST, DATA_DIR: dir }),
      await startTestServer({ ...FAST, DATA_DIR: dir }),
    ];
    const r = startReceiver();
    receivers.push(r);
    const owner = await newUser(a!, "multi");
    const teamId = await newTeam(a!, owner);
    const ep = await api(a!, "POST", `/teams/${teamId}/webhooks`, {
      token: owner.token,
      body: { url: r.url, event_types: ["webhook.test"] },
    });
    expect(ep.status).toBe(201);
    const before = [a, b, c].map((s) => s!.services.webhookWorker.attempts);
    const N = 300;
    const ids: (string | null)[] = [];
    // Events are emitted on every instance; each instance's worker sees all of them.
    for (let i = 0; i < N; i++) {
      const srv = [a, b, c][i % 3]!;
      ids.push(await srv.services.webhooks.enqueue({ teamId }, "webhook.test", { i }));
    }
    expect(ids.every((id) => id?.startsWith("msg_"))).toBe(true);
    await r.until(N, 30_000);
    await Bun.sleep(500);
    const seen = new Map<string, number>();
    for (const g of r.got) seen.set(g.headers["webhook-id"]!, (seen.get(g.headers["webhook-id"]!) ?? 0) + 1);
    const duplicates = r.got.length - seen.size;
    const byInstance = [a, b, c].map((s, i) => s!.services.webhookWorker.attempts - before[i]!);
    console.log(
      `webhooks, 3 instances: ${N} events, ${seen.size} distinct delivered, ${duplicates} duplicates, attempts per instance ${byInstance.join("/")}`,
    );
    expect(seen.size).toBe(N);
    expect(new Set(ids)).toEqual(new Set(seen.keys()));
    expect(duplicates).toBe(0);
    // More than one instance took part.
    expect(byInstance.filter((n) => n > 0).length).toBeGreaterThan(1);
    for (const s of [a, b, c]) await s!.stop();
  }, 60_000);
});
