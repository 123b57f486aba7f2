/**
 * The agent's footprint: RSS and CPU of the agent process idle, then with 100 players joining and
 * 100 leaving per minute, against the real service and the tests' fake RCON server. Baseline: an
 * idle Bun process started the same way, measured in the same run.
 *   bun packages/agent/bench/agent.ts [seconds per phase, default 20]
 */
import { appendFileSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { startTestServer, stopAll } from "../../../test/harness";
import { newServer } from "../../../test/servers-fixture";
import { startFakeRcon } from "../test/fake-rcon";
import { serverDir, spawnAgent, trackPlayers, until, vanilla } from "../test/support";

const seconds = Number(process.argv[2] ?? 20);
const TICK = 100; // USER_HZ, the unit of utime and stime in /proc/PID/stat on Linux

function sample(pid: number) {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  const cpu = (Number(stat[11]) + Number(stat[12])) / TICK;
  const rss = Number(readFileSync(`/proc/${pid}/status`, "utf8").match(/VmRSS:\s+(\d+)/)![1]) / 1024;
  return { cpu, rss };
}

async function measure(pid: number, during: () => Promise<void>) {
  const a = sample(pid);
  const t = performance.now();
  await during();
  const b = sample(pid);
  const wall = (performance.now() - t) / 1000;
  return { rssMb: b.rss.toFixed(1), cpuPct: ((100 * (b.cpu - a.cpu)) / wall).toFixed(2) };
}

const service = await startTestServer();
const s = await newServer(service);
const rcon = startFakeRcon();
const online = trackPlayers(rcon);
rcon.answers.set("tps", "§6TPS from last 1m, 5m, 15m: §a20.0, §a20.0, §a20.0");
const dir = serverDir();
const agent = spawnAgent({
  MCP_AGENT_URL: service.url,
  MCP_AGENT_TOKEN: s.agentToken,
  MCP_AGENT_RCON_PORT: String(rcon.port),
  MCP_AGENT_RCON_PASSWORD: rcon.password,
  MCP_AGENT_SERVER_DIR: dir,
  MCP_AGENT_LOG_LEVEL: "info",
});
await until("the agent", () => agent.lines.some((l) => l.msg === "agent_ready"));
const baseline = Bun.spawn([process.execPath, "-e", "setInterval(() => {}, 1000)"]);
await Bun.sleep(3000);

const idle = await measure(agent.proc.pid, () => Bun.sleep(seconds * 1000));
const base = await measure(baseline.pid, async () => {});
let n = 0;
const busy = await measure(agent.proc.pid, async () => {
  const end = Date.now() + seconds * 1000;
  const log = join(dir, "logs", "latest.log");
  // 100 joins and 100 leaves a minute: one of each every 0.6 s, each player staying a few seconds.
  while (Date.now() < end) {
    const name = `P${n++}`;
    const uuid = crypto.randomUUID();
    appendFileSync(
      log,
      vanilla(`UUID of player ${name} is ${uuid}`, "User Authenticator #1") + vanilla(`${name} joined the game`),
    );
    online.set(name, uuid);
    const old = `P${n - 5}`;
    if (online.delete(old)) appendFileSync(log, vanilla(`${old} left the game`));
    await Bun.sleep(600);
  }
});
const players = await until("events delivered", async () => {
  const r = await fetch(`${service.url}/server/players?limit=200`, {
    headers: { authorization: `Bearer ${s.owner.token}`, "x-server-id": s.serverId },
  });
  const body = (await r.json()) as { players: unknown[] };
  return body.players.length >= n && body.players.length;
});

console.log(`agent bench (${seconds} s a phase, ${n} joins, ${players} players recorded)`);
console.log(`  baseline idle bun process   RSS ${base.rssMb} MiB`);
console.log(`  agent idle                  RSS ${idle.rssMb} MiB  CPU ${idle.cpuPct} %`);
console.log(`  agent 100 joins+leaves/min  RSS ${busy.rssMb} MiB  CPU ${busy.cpuPct} %`);
agent.proc.kill("SIGTERM");
baseline.kill();
await agent.proc.exited;
rcon.stop();
await stopAll();
process.exit(0);
