/**
 * A webhook receiver for trying webhooks out: prints every delivery (event type, id, data) and
 * whether its Standard Webhooks signature verifies with the endpoint's secret. Answers 200 to a
 * delivery that verifies (or to every delivery when no secret is given), 400 to one that does
 * not, so the service's retries and its delivery log show what a real receiver would see.
 *
 *   bun scripts/webhook-receiver.ts                         # 127.0.0.1:9000, signatures not checked
 *   bun scripts/webhook-receiver.ts whsec_...               # the secret the endpoint was created with
 *   WEBHOOK_SECRET=whsec_... bun scripts/webhook-receiver.ts --port 9100
 *
 * Register `http://127.0.0.1:9000/` as the endpoint's URL (loopback targets are allowed outside
 * production; see docs/webhooks.md).
 */
import { Webhook } from "standardwebhooks";

export interface ReceiverOptions {
  port?: number;
  hostname?: string;
  /** The endpoint's `whsec_...` secret; without it signatures are reported as not checked. */
  secret?: string;
  print?: (line: string) => void;
}

export interface Delivery {
  id: string | null;
  type: string | null;
  /** True or false when a secret was given; null when it was not. */
  verified: boolean | null;
  /** Why verification failed. */
  problem: string | null;
  data: unknown;
}

export function startWebhookReceiver(opts: ReceiverOptions = {}) {
  const print = opts.print ?? ((line: string) => console.log(line));
  let verifier = opts.secret ? new Webhook(opts.secret) : null;
  const deliveries: Delivery[] = [];
  const server = Bun.serve({
    port: opts.port ?? 9000,
    hostname: opts.hostname ?? "127.0.0.1",
    async fetch(req) {
      if (req.method !== "POST") return new Response("POST webhook deliveries here\n", { status: 405 });
      // The raw body: the signature covers these bytes, and re-serialised JSON would not match.
      const body = await req.text();
      const headers = Object.fromEntries(req.headers);
      let verified: boolean | null = null;
      let problem: string | null = null;
      if (verifier) {
        try {
          verifier.verify(body, headers);
          verified = true;
        } catch (err) {
          verified = false;
          problem = err instanceof Error ? err.message : String(err);
        }
      }
      let parsed: { type?: unknown; data?: unknown } = {};
      try {
        parsed = JSON.parse(body);
      } catch {
        problem ??= "the body is not JSON";
      }
      const d: Delivery = {
        id: headers["webhook-id"] ?? null,
        type: typeof parsed.type === "string" ? parsed.type : null,
        verified,
        problem,
        data: parsed.data ?? null,
      };
      deliveries.push(d);
      const signature =
        verified === null
          ? "signature not checked (no secret given)"
          : verified
            ? "signature verified"
            : `signature INVALID: ${problem}`;
      print(`${new Date().toISOString()}  ${d.type ?? "(no type)"}  ${d.id ?? "(no webhook-id)"}  ${signature}`);
      print(`  ${JSON.stringify(d.data)}`);
      return verified === false ? new Response("bad signature\n", { status: 400 }) : new Response("ok\n");
    },
  });
  return {
    url: `http://${server.hostname}:${server.port}/`,
    port: server.port!,
    deliveries,
    /** Checks signatures from now on with this secret (known once the endpoint is created with this receiver's URL). */
    verifyWith(secret: string) {
      verifier = new Webhook(secret);
    },
    stop: () => server.stop(true),
  };
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  const portAt = args.indexOf("--port");
  const port = portAt >= 0 ? Number(args[portAt + 1]) : Number(process.env.WEBHOOK_RECEIVER_PORT ?? 9000);
  const secret = args.find((a, i) => a.startsWith("whsec_") && i !== portAt + 1) ?? process.env.WEBHOOK_SECRET;
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    console.error("--port must be a port number (0-65535)");
    process.exit(2);
  }
  if (secret !== undefined && !/^whsec_[A-Za-z0-9+/=]+$/.test(secret)) {
    console.error("The secret must be the endpoint's whsec_... value, as shown when it was created.");
    process.exit(2);
  }
  let r: ReturnType<typeof startWebhookReceiver>;
  try {
    r = startWebhookReceiver({ port, secret });
  } catch (err) {
    console.error(`Cannot listen on 127.0.0.1:${port}: ${err instanceof Error ? err.message : err}`);
    process.exit(1);
  }
  console.log(
    `Webhook receiver on ${r.url} (signatures ${secret ? "checked" : "not checked: pass the endpoint's whsec_ secret"})`,
  );
  console.log("Register that URL as a webhook endpoint, then send a test event. Ctrl-C to stop.");
  process.once("SIGINT", () => {
    r.stop();
    process.exit(0);
  });
}
