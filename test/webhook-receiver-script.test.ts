import { afterAll, describe, expect, test } from "bun:test";
import type { RunningServer } from "../src/app";
import { devIdp, freePort, startTestServer, stopTestServer } from "./harness";
import { api, newTeam, newUser } from "./helpers";
import { FAST_WEBHOOKS } from "./webhook-receiver";

/** `bun scripts/webhook-receiver.ts ...` as a user runs it, with its output kept. */
function receiverProcess(args: string[], env: Record<string, string> = {}) {
  const proc = Bun.spawn([process.execPath, "scripts/webhook-receiver.ts", ...args], {
    env: { ...process.env, ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  let output = "";
  void (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of proc.stdout) output += decoder.decode(chunk, { stream: true });
  })();
  return {
    proc,
    output: () => output,
    async printed(pattern: RegExp, ms = 15_000) {
      const deadline = Date.now() + ms;
      while (!pattern.test(output)) {
        if (Date.now() > deadline) throw new Error(`${pattern} not printed within ${ms} ms:\n${output}`);
        await Bun.sleep(20);
      }
    },
  };
}

const procs: ReturnType<typeof receiverProcess>[] = [];
let srv: RunningServer | undefined;
afterAll(async () => {
  for (const p of procs) p.proc.kill();
  // On PostgreSQL, later files' delivery tests must not have this one draining the shared queue.
  if (srv) await stopTestServer(srv);
});

describe("scripts/webhook-receiver.ts", () => {
  test("prints each delivery with its type and id, and whether its signature verifies with the given secret", async () => {
    srv = await startTestServer({ ...FAST_WEBHOOKS, DEV_IDP_URL: (await devIdp()).url });
    const owner = await newUser(srv, "receiver");
    const teamId = await newTeam(srv, owner);
    const hook = async (port: number) => {
      const res = await api(srv!, "POST", `/teams/${teamId}/webhooks`, {
        token: owner.token,
        body: { url: `http://127.0.0.1:${port}/` },
      });
      expect(res.status).toBe(201);
      return res.body as { endpoint: { endpoint_id: string }; secret: string };
    };
    const sendTest = async (endpointId: string) => {
      const res = await api(srv!, "POST", `/teams/${teamId}/webhooks/${endpointId}/test`, { token: owner.token });
      expect(res.status).toBe(200);
      return res.body.message_id as string;
    };

    // The secret as an argument: the delivery verifies and is answered 200.
    const goodPort = freePort();
    const good = await hook(goodPort);
    const right = receiverProcess([good.secret, "--port", String(goodPort)]);
    procs.push(right);
    await right.printed(/Webhook receiver on http:\/\/127\.0\.0\.1:\d+\/ \(signatures checked\)/);
    const id = await sendTest(good.endpoint.endpoint_id);
    await right.printed(new RegExp(`webhook\\.test  ${id}  signature verified`));
    expect(right.output()).toContain(`"endpoint_id":"${good.endpoint.endpoint_id}"`);
    // The service records the answer once it has it, a moment after the receiver printed.
    const deadline = Date.now() + 10_000;
    let last: Record<string, unknown> | undefined;
    do {
      const res = await api(srv, "GET", `/teams/${teamId}/webhooks/${good.endpoint.endpoint_id}/deliveries`, {
        token: owner.token,
      });
      last = res.body.deliveries[0];
      if (last?.status !== "pending" && last?.status !== "delivering") break;
      await Bun.sleep(20);
    } while (Date.now() < deadline);
    expect(last).toMatchObject({ status: "succeeded", last_status_code: 200 });

    // Another endpoint's secret, from the environment: the signature does not verify, answered 400.
    const otherPort = freePort();
    const other = await hook(otherPort);
    const wrong = receiverProcess(["--port", String(otherPort)], { WEBHOOK_SECRET: good.secret });
    procs.push(wrong);
    await wrong.printed(/signatures checked/);
    const otherId = await sendTest(other.endpoint.endpoint_id);
    await wrong.printed(new RegExp(`webhook\\.test  ${otherId}  signature INVALID: `));
  }, 60_000);

  test("a secret that is not a whsec_ value is refused with a message, not a stack trace", async () => {
    const p = receiverProcess(["--port", "0"], { WEBHOOK_SECRET: "not-a-secret" });
    procs.push(p);
    expect(await p.proc.exited).toBe(2);
    const stderr = await new Response(p.proc.stderr).text();
    expect(stderr).toContain("whsec_");
    expect(stderr).not.toMatch(/\bat .+:\d+:\d+/);
  });
});
