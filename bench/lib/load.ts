/**
 * Load generation for the benchmarks: wrk when installed (Debian package `wrk`), otherwise a
 * Bun fetch loop in a child process. Both report requests/s and p99 latency in ms.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface LoadResult {
  rps: number;
  p99ms: number;
  errors: number;
  tool: string;
}

export interface LoadOptions {
  url: string;
  headers?: Record<string, string>;
  seconds: number;
  connections: number;
  method?: "GET" | "POST";
  /** A JSON body, sent with content-type application/json. */
  body?: unknown;
}

const hasWrk = spawnSync("sh", ["-c", "command -v wrk"]).status === 0;

export async function load(opts: LoadOptions): Promise<LoadResult> {
  return hasWrk ? wrk(opts) : fetchLoop(opts);
}

function toMs(v: string, unit: string) {
  const n = Number(v);
  return unit === "us" ? n / 1000 : unit === "s" ? n * 1000 : n;
}

async function wrk(o: LoadOptions): Promise<LoadResult> {
  const args = ["-t2", `-c${o.connections}`, `-d${o.seconds}s`, "--latency"];
  for (const [k, v] of Object.entries(o.headers ?? {})) args.push("-H", `${k}: ${v}`);
  if (o.body !== undefined) {
    // wrk takes a request body only through a Lua script.
    const script = join(mkdtempSync(join(tmpdir(), "wrk-")), "post.lua");
    writeFileSync(
      script,
      `wrk.method = "${o.method ?? "POST"}"\nwrk.body = ${JSON.stringify(JSON.stringify(o.body))}\nwrk.headers["content-type"] = "application/json"\n`,
    );
    args.push("-s", script);
  }
  const proc = Bun.spawn(["wrk", ...args, o.url], { stdout: "pipe", stderr: "pipe" });
  const out = await new Response(proc.stdout).text();
  await proc.exited;
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? NaN);
  const p99 = /99%\s+([\d.]+)(us|ms|s)/.exec(out);
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? 0);
  const sockErr = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const errors = non2xx + (sockErr ? sockErr.slice(1).reduce((a, b) => a + Number(b), 0) : 0);
  return { rps, p99ms: p99 ? toMs(p99[1]!, p99[2]!) : NaN, errors, tool: "wrk" };
}

async function fetchLoop(o: LoadOptions): Promise<LoadResult> {
  const script = `
    const o = ${JSON.stringify(o)};
    const lat = []; let errors = 0; const end = performance.now() + o.seconds * 1000;
    await Promise.all(Array.from({ length: o.connections }, async () => {
      while (performance.now() < end) {
        const t = performance.now();
        try {
          const init = o.body === undefined ? { headers: o.headers } : { method: o.method ?? "POST", headers: { ...o.headers, "content-type": "application/json" }, body: JSON.stringify(o.body) };
          const r = await fetch(o.url, init); await r.arrayBuffer(); if (r.status >= 300) errors++;
        }
        catch { errors++; }
        lat.push(performance.now() - t);
      }
    }));
    lat.sort((a, b) => a - b);
    console.log(JSON.stringify({ rps: lat.length / o.seconds, p99ms: lat[Math.floor(lat.length * 0.99)] ?? NaN, errors }));`;
  const proc = Bun.spawn([process.execPath, "-e", script], { stdout: "pipe" });
  const out = await new Response(proc.stdout).text();
  await proc.exited;
  return { ...JSON.parse(out), tool: "bun fetch loop" };
}

/** Prints the rows; a run where any request failed is not a measurement, and exits non-zero. */
export function table(rows: { name: string; r: LoadResult; baseline?: LoadResult }[]) {
  const pad = (s: string, n: number) => s.padEnd(n);
  console.log(`\n${pad("case", 44)}${pad("req/s", 12)}${pad("p99 ms", 10)}${pad("errors", 8)}ratio to raw`);
  for (const { name, r, baseline } of rows) {
    const ratio = baseline ? (r.rps / baseline.rps).toFixed(2) : "";
    console.log(
      `${pad(name, 44)}${pad(r.rps.toFixed(0), 12)}${pad(r.p99ms.toFixed(2), 10)}${pad(String(r.errors), 8)}${ratio}`,
    );
  }
  const failed = rows.filter((x) => x.r.errors > 0);
  if (failed.length) {
    console.log(`\nINVALID RUN: ${failed.map((x) => `${x.name.trim()} had ${x.r.errors} errors`).join("; ")}`);
    process.exitCode = 1;
  }
}
