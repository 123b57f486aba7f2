#!/usr/bin/env node
import { Agent } from "./agent";
import { ConfigError, loadConfig } from "./config";
import { createLogger } from "./log";

const HELP = `mc-platform-agent: feeds mc-platform from a Minecraft server through RCON and its logs.

Usage: mc-platform-agent [--config FILE] [--check]

  --config FILE  JSON settings (keys as in the README); environment variables win over it
  --check        verify the settings, the service, the token, RCON and the log file, then exit
  --help         this text
`;

const args = process.argv.slice(2);
if (args.includes("--help") || args.includes("-h")) {
  process.stdout.write(HELP);
  process.exit(0);
}
const configAt = args.indexOf("--config");
const configPath = configAt >= 0 ? args[configAt + 1] : undefined;
if (configAt >= 0 && !configPath) {
  process.stderr.write("--config needs a file name\n");
  process.exit(2);
}
const unknown = args.filter((a, i) => a.startsWith("-") && !["--check", "--config"].includes(a) && i !== configAt + 1);
if (unknown.length) {
  process.stderr.write(`unknown option ${unknown.join(", ")}\n\n${HELP}`);
  process.exit(2);
}

let config: ReturnType<typeof loadConfig>;
try {
  config = loadConfig(process.env, configPath);
} catch (e) {
  if (e instanceof ConfigError) {
    process.stderr.write(`${e.message}\n`);
    process.exit(2);
  }
  throw e;
}

const log = createLogger(config.logLevel);
const agent = new Agent(config, log);

if (args.includes("--check")) {
  const results = await agent.check();
  for (const r of results) process.stdout.write(`${r.ok ? "ok  " : "FAIL"} ${r.name}: ${r.detail}\n`);
  process.exit(results.every((r) => r.ok) ? 0 : 1);
}

let stopping = false;
const stop = async (signal: string) => {
  if (stopping) return;
  stopping = true;
  log.info("stopping", { signal });
  await agent.stop();
  process.exit(0);
};
process.on("SIGTERM", () => void stop("SIGTERM"));
process.on("SIGINT", () => void stop("SIGINT"));
await agent.start();
