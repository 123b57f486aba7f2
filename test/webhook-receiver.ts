/** A webhook receiver on loopback that records what it gets and answers as told. */
export interface Received {
  headers: Record<string, string>;
  body: string;
  at: number;
}

export interface Receiver {
  url: string;
  port: number;
  got: Received[];
  /** Statuses to answer, in order; 200 once they run out. A function may answer anything. */
  plan: (number | ((req: Request) => Response | Promise<Response>))[];
  /** Resolves when `n` requests have arrived (rejects after `ms`). */
  until(n: number, ms?: number): Promise<Received[]>;
  stop(): void;
}

export function startReceiver(path = "/hook"): Receiver {
  const r = { got: [] as Received[], plan: [] as Receiver["plan"] } as Receiver;
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const body = await req.text();
      r.got.push({ headers: Object.fromEntries(req.headers), body, at: Date.now() });
      const next = r.plan.shift();
      if (typeof next === "function") return next(req);
      return new Response(next && next !== 200 ? "nope" : "ok", { status: next ?? 200 });
    },
  });
  r.port = server.port!;
  r.url = `http://127.0.0.1:${server.port}${path}`;
  r.until = async (n, ms = 10_000) => {
    const deadline = Date.now() + ms;
    while (r.got.length < n) {
      if (Date.now() > deadline) throw new Error(`the receiver got ${r.got.length} of ${n} requests within ${ms} ms`);
      await Bun.sleep(10);
    }
    return r.got;
  };
  r.stop = () => server.stop(true);
  return r;
}
