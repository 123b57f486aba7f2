import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { spawn } from "node:child_process";
import { readdirSync, rmSync } from "node:fs";
import type { RunningServer } from "../src/app";
import { freePort, startTestServer, stopTestServer, tempDir } from "./harness";
import { codeBlocks, parseMarkdown, ROOT, type ShellBlock } from "./markdown";

/**
 * Every `sh` block of the README and the guides, run in order in one bash session per page, as a
 * newcomer pastes them into a shell beside `npm start`: against a service started with the
 * quickstart's settings (the development identity provider, the pinger, webhook delivery), on
 * `http://localhost:<port>`. A block that cannot run here is marked `<!-- test: skip: why -->`.
 */
const PAGES = ["README.md", ...readdirSync(`${ROOT}/docs/guides`).map((f) => `docs/guides/${f}`)].filter((f) =>
  f.endsWith(".md"),
);

/** What each page's walkthrough must have shown, beyond every command succeeding. */
const SHOWS: Record<string, RegExp[]> = {
  "README.md": [/"status":"ok"/],
  "docs/guides/api.md": [
    /^steve@example\.com$/m,
    /^error: unauthenticated: The email or password is wrong\.$/m,
    /^Blocky Builders$/m,
    /^one key, answered twice$/m,
    /^403$/m,
    /^pending$/m,
    /^\["Blocky Builders"\]$/m,
    /^viewer$/m,
    /^401$/m,
  ],
  "docs/guides/servers.md": [
    /"online":true/,
    /"motd":"mc-platform demo server"/,
    /\["jeb_ \(online\)"\]/,
    /^\["jeb_: griefing"\]$/m,
    /"type":"snapshot"/,
    /"type":"heartbeat"/,
    // uptime over the hour: every ping answered
    /^1$/m,
    /^\[\{"min":\d/m,
  ],
  "docs/guides/launchers.md": [
    /status=authorized&state=xyz/,
    /^authorized$/m,
    /"valid":true/,
    /^false$/m,
    /^Go to http:\/\/\S+\/device and enter [B-Z]{4}-[B-Z]{4}$/m,
    /^You are signed in$/m,
    /^Alex$/m,
  ],
  // The language guides' setup: the module enabled with the credentials their programs read.
  ...Object.fromEntries(
    ["java", "python", "csharp", "go", "rust"].map((lang) => [`docs/guides/launcher-${lang}.md`, [/^ms_auth$/m]]),
  ),
  "docs/guides/webhooks.md": [/^webhook\.test$/m, /webhook\.test .* signature verified$/m, /"status":"succeeded"/],
};

const PAGE_TIMEOUT_MS = 150_000;
const MARK = "@@guide-block";

interface Run {
  code: number | null;
  output: string;
  timedOut: boolean;
}

/** Runs the blocks in one bash process group; every process the blocks leave behind is stopped after. */
function runBlocks(blocks: ShellBlock[], env: Record<string, string>): Promise<Run> {
  const script = [
    "set -euo pipefail",
    "exec 2>&1",
    ...blocks.flatMap((b, i) => [`printf '\\n${MARK} %d\\n' ${i}`, b.code]),
  ].join("\n");
  return new Promise((resolve) => {
    const child = spawn("bash", ["-c", script], { cwd: ROOT, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (d) => (output += d));
    child.stderr.on("data", (d) => (output += d));
    const killGroup = () => {
      try {
        process.kill(-child.pid!, "SIGTERM");
      } catch {}
    };
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, PAGE_TIMEOUT_MS);
    child.on("exit", (code) => {
      clearTimeout(timer);
      // Whatever the blocks started in the background (a demo server, a watcher) goes too.
      killGroup();
      setTimeout(() => resolve({ code, output, timedOut }), 50);
    });
  });
}

/** The failing block and what it printed, for a person reading the test's failure. */
function report(page: string, blocks: ShellBlock[], run: Run): string {
  const marks = [...run.output.matchAll(new RegExp(`^${MARK} (\\d+)$`, "gm"))];
  const last = marks.at(-1);
  const i = last ? Number(last[1]) : 0;
  const printed = last ? run.output.slice(last.index! + last[0].length) : run.output;
  const why = run.timedOut ? `did not finish in ${PAGE_TIMEOUT_MS / 1000} s` : `failed (exit ${run.code})`;
  return [
    `${page}:${blocks[i]?.line}: block ${i + 1} of ${blocks.length} ${why}`,
    "--- block ---",
    blocks[i]?.code,
    "--- its output ---",
    printed.trim(),
  ].join("\n");
}

let srv: RunningServer;
let scratch: string;

beforeAll(async () => {
  const port = String(freePort());
  srv = await startTestServer({
    PORT: port,
    // As `npm start` has it: the address every URL the service builds (the sign-in page's) is on.
    PUBLIC_URL: `http://localhost:${port}`,
    // On by default: the servers guide waits for the pinger's first check, the webhooks guide for a delivery.
    PINGER_ENABLED: undefined,
    WEBHOOK_CONCURRENCY: undefined,
  });
  scratch = tempDir("mcp-guides-");
});

afterAll(async () => {
  // Stopped here: on PostgreSQL its pinger and webhook workers would go on claiming other files' rows.
  await stopTestServer(srv);
  rmSync(scratch, { recursive: true, force: true });
});

describe("the walkthroughs run as written", () => {
  test("every page has blocks to run, and every shell block is `sh` (so none is silently left out)", () => {
    for (const page of PAGES) {
      const blocks = codeBlocks(parseMarkdown(page));
      expect(
        blocks.filter((b) => ["bash", "shell", "zsh", "console"].includes(b.lang)).map((b) => b.block.line),
      ).toEqual([]);
      expect(blocks.filter((b) => b.lang === "sh" && !b.block.skip).length).toBeGreaterThan(0);
    }
    expect(PAGES).toContain("docs/guides/servers.md");
    expect(PAGES).toContain("docs/guides/launchers.md");
  });

  for (const page of PAGES) {
    test(
      page,
      async () => {
        const blocks = codeBlocks(parseMarkdown(page))
          .filter((b) => b.lang === "sh" && !b.block.skip)
          .map((b) => b.block);
        const run = await runBlocks(blocks, {
          PATH: process.env.PATH ?? "/usr/bin:/bin",
          HOME: process.env.HOME ?? scratch,
          LANG: "C.UTF-8",
          TMPDIR: scratch,
          PORT: String(srv.port),
          // The guides' stand-in Minecraft server and webhook receiver, on ports free on this machine.
          MC_PORT: String(freePort()),
          HOOK_PORT: String(freePort()),
        });
        if (run.code !== 0 || run.timedOut) throw new Error(report(page, blocks, run));
        // A failed call prints the error envelope's code and message, never a Node stack trace.
        expect(run.output).not.toMatch(/^\s+at .+:\d+:\d+\)?$/m);
        for (const shown of SHOWS[page] ?? []) expect(run.output).toMatch(shown);
      },
      PAGE_TIMEOUT_MS + 10_000,
    );
  }
});
