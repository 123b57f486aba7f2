/**
 * Runs the agent's RCON client under Node.js for test/rcon.test.ts (bundled for Node first, as the
 * shipped agent is): RCON_COUNT commands against the server at 127.0.0.1:RCON_PORT, one JSON line
 * a command with its answer, the listeners on every event emitter at two checkpoints, and the
 * process warnings Node emitted (a leaking client trips MaxListenersExceededWarning).
 */
import { EventEmitter } from "node:events";
import { createLogger } from "../src/log";
import { Rcon } from "../src/rcon";

// Every emitter that ever got a listener, to sum what is still attached at each checkpoint: the
// count is the client's, whatever emitters it uses inside.
const emitters = new Set<EventEmitter>();
const proto = EventEmitter.prototype as unknown as Record<string, (...args: unknown[]) => unknown>;
for (const name of ["on", "addListener", "prependListener", "once", "prependOnceListener"]) {
  const original = proto[name]!;
  proto[name] = function (this: EventEmitter, ...args: unknown[]) {
    emitters.add(this);
    return original.apply(this, args);
  };
}
const listeners = () => {
  let n = 0;
  for (const e of emitters) for (const name of e.eventNames()) n += e.listenerCount(name);
  return n;
};

const warnings: string[] = [];
process.on("warning", (w) => warnings.push(`${w.name}: ${w.message}`));

const out = (o: unknown) => process.stdout.write(`${JSON.stringify(o)}\n`);
const count = Number(process.env.RCON_COUNT);
const rcon = new Rcon(
  "127.0.0.1",
  Number(process.env.RCON_PORT),
  process.env.RCON_PASSWORD ?? "",
  createLogger("silent"),
);

const command = (i: number) => (i % 4 === 0 ? `long ${500 + ((i * 997) % 15000)}` : `echo ${i}`);
const warmup = 20;
for (let i = 0; i < warmup; i++) out({ command: command(i), answer: await rcon.run(command(i)) });
out({ checkpoint: "warm", listeners: listeners() });
// The rest in bursts of ten at once, the way a heartbeat and a config poll overlap.
for (let i = warmup; i < count; i += 10) {
  const batch = Array.from({ length: Math.min(10, count - i) }, (_, k) => command(i + k));
  const answers = await Promise.all(batch.map((c) => rcon.run(c)));
  for (const [k, c] of batch.entries()) out({ command: c, answer: answers[k] });
}
out({ checkpoint: "end", listeners: listeners() });
// Warnings are emitted on the next tick.
await new Promise((r) => setTimeout(r, 50));
out({ warnings });
rcon.close();
