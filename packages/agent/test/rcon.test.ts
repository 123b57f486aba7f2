import { afterEach, expect, test } from "bun:test";
import { join } from "node:path";
import { tempDir } from "../../../test/harness";
import { createLogger } from "../src/log";
import { Rcon } from "../src/rcon";
import { type FakeRcon, startFakeRcon } from "./fake-rcon";
import { until } from "./support";

const fakes: FakeRcon[] = [];
const clients: Rcon[] = [];
afterEach(() => {
  for (const c of clients.splice(0)) c.close();
  for (const f of fakes.splice(0)) f.stop();
});

/** Text with two- and three-byte UTF-8 characters, so a packet split never lands on a clean byte count. */
const longText = (n: number) => {
  const alphabet = "§aSteve, Alex, Zoë — 0123456789\n";
  let s = "";
  for (let i = 0; i < n; i++) s += alphabet[i % alphabet.length];
  return s;
};

/** `echo X` answers `said X`; `long N` answers N characters, several packets past 4096. */
function fake() {
  const f = startFakeRcon();
  f.answers.set("echo", (c) => `said ${c.slice(5)}`);
  f.answers.set("long", (c) => longText(Number(c.split(" ")[1])));
  fakes.push(f);
  return f;
}

function client(f: FakeRcon, timeoutMs = 5000, password = f.password) {
  const logs: { msg: string; [k: string]: unknown }[] = [];
  const rcon = new Rcon(
    "127.0.0.1",
    f.port,
    password,
    createLogger("debug", (line) => logs.push(JSON.parse(line))),
    timeoutMs,
  );
  clients.push(rcon);
  return { rcon, logs };
}

const expected = (command: string) =>
  command.startsWith("long ") ? longText(Number(command.split(" ")[1])) : `said ${command.slice(5)}`;

test("400 commands under Node.js, the agent's runtime: every answer whole, one connection, no listener left behind, no MaxListenersExceededWarning", async () => {
  const node = Bun.which("node");
  if (!node) throw new Error("node is not on PATH; this test runs the client under Node.js");
  const out = tempDir("mcp-rcon-driver-");
  const built = await Bun.build({
    entrypoints: [join(import.meta.dir, "rcon-driver.ts")],
    outdir: out,
    target: "node",
    format: "esm",
    naming: "driver.mjs",
  });
  if (!built.success) throw new AggregateError(built.logs, "bundling the driver failed");
  const f = fake();
  const count = 400;
  const proc = Bun.spawn([node, join(out, "driver.mjs")], {
    env: {
      PATH: process.env.PATH ?? "",
      RCON_PORT: String(f.port),
      RCON_PASSWORD: f.password,
      RCON_COUNT: String(count),
    },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  expect(stderr).not.toContain("MaxListenersExceededWarning");
  expect({ code, stderr: code === 0 ? "" : stderr }).toEqual({ code: 0, stderr: "" });
  const lines = stdout
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l));
  const answered = lines.filter((l) => "command" in l);
  expect(answered.length).toBe(count);
  const wrong = answered.filter((l) => l.answer !== expected(l.command)).map((l) => l.command);
  expect(wrong).toEqual([]);
  // Some of them really came in several packets.
  expect(answered.filter((l) => l.answer.length > 4096).length).toBeGreaterThan(50);
  const warm = lines.find((l) => l.checkpoint === "warm");
  const end = lines.find((l) => l.checkpoint === "end");
  expect(warm.listeners).toBeGreaterThan(0);
  expect(end.listeners).toBe(warm.listeners);
  expect(lines.find((l) => "warnings" in l).warnings).toEqual([]);
  expect(f.commands.length).toBe(count);
  expect(f.connections()).toBe(1);
  expect(f.refused()).toBe(0);
}, 60_000);

test("an answer split over several packets comes back whole; an empty answer is an empty string", async () => {
  const f = fake();
  f.answers.set("quiet", "");
  const { rcon, logs } = client(f);
  expect(await rcon.run("long 20000")).toBe(longText(20000));
  expect(await rcon.run("long 4096")).toBe(longText(4096));
  expect(await rcon.run("quiet")).toBe("");
  expect(await rcon.run("echo after")).toBe("said after");
  expect(logs.filter((l) => l.msg === "rcon_connected").length).toBe(1);
  expect(f.refused()).toBe(0);
});

test("a wrong password fails the command with the reason and runs nothing", async () => {
  const f = fake();
  const { rcon, logs } = client(f, 5000, "not-the-password");
  await expect(rcon.run("echo 1")).rejects.toThrow(/password/i);
  expect(f.commands).toEqual([]);
  expect(logs.filter((l) => l.msg === "rcon_connected")).toEqual([]);
});

test("an unanswered command fails at its deadline; the next one runs on a new connection and gets its own answer", async () => {
  const f = fake();
  f.answers.set("hang", () => null);
  const { rcon } = client(f, 300);
  expect(await rcon.run("echo 1")).toBe("said 1");
  const queued = rcon.run("echo 2");
  await expect(rcon.run("hang")).rejects.toThrow(/timed out after 300 ms/);
  expect(await queued).toBe("said 2");
  expect(await rcon.run("echo 3")).toBe("said 3");
  expect(f.connections()).toBe(2);
});

test("a server that closes the connection (a restart) is reconnected to; one that is gone logs rcon_down once", async () => {
  const f = fake();
  const { rcon, logs } = client(f);
  expect(await rcon.run("echo 1")).toBe("said 1");
  f.dropAll();
  const again = await until("the command after the restart", () => rcon.run("echo 2").catch(() => undefined));
  expect(again).toBe("said 2");
  expect(f.connections()).toBe(2);
  f.stop();
  await expect(rcon.run("echo 3")).rejects.toThrow();
  await expect(rcon.run("echo 4")).rejects.toThrow();
  expect(logs.filter((l) => l.msg === "rcon_down").length).toBe(1);
  expect(logs.filter((l) => l.msg === "rcon_connected").length).toBe(1);
});
