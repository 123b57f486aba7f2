import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, rmSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import type { RunningServer } from "../src/app";
import { offlineUuid } from "../src/identity/protocol";
import { ZStartInput } from "../src/ms-auth/schemas";
import { sharedServer, tempDir } from "./harness";
import { api } from "./helpers";
import { codeBlocks, parseMarkdown, ROOT } from "./markdown";
import { decide, fullLogin, newClient, signIn, type TestClient } from "./ms-auth-helpers";
import { runCommand } from "./shared";

/**
 * The launcher-backend programs of docs/guides/launcher-*.md, run as a reader runs them: against
 * a live service with a client application, the browser's part (the development sign-in page and
 * the consent page) done over HTTP when the program prints the address it opens. Java and Python
 * run in CI (.ci/run installs a JDK and python3 when missing and sets REQUIRE_GUIDE_RUNTIMES, so a
 * missing runtime there fails instead of skipping). Go runs where `go` is installed; C# and Rust,
 * whose programs need packages from NuGet and crates.io, are parsed where a parser is installed.
 */
const GUIDES = join(ROOT, "docs/guides");
const REQUIRED = Boolean(process.env.REQUIRE_GUIDE_RUNTIMES);
const has = (cmd: string) => Bun.which(cmd) !== null;
const RUN_TIMEOUT_MS = 120_000;
/** Said in a skipped test's name, so a run's output tells why it did not run. */
const unless = (missing: boolean, why: string) => (missing ? ` (skipped: ${why})` : "");

for (const cmd of ["java", "javac", "python3"])
  if (REQUIRED && !has(cmd)) throw new Error(`REQUIRE_GUIDE_RUNTIMES is set but \`${cmd}\` is not on PATH`);

let server: RunningServer;
let client: TestClient;
let home: string;

beforeAll(async () => {
  server = await sharedServer();
  client = await newClient(server, { redirectUri: "http://127.0.0.1:8765/callback" });
  home = tempDir("mcp-language-guides-");
});

afterAll(() => rmSync(home, { recursive: true, force: true }));

/** What a program's environment holds: the service, the client's credentials, no real browser. */
function programEnv(c: TestClient): Record<string, string> {
  return {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: home,
    LANG: "C.UTF-8",
    TMPDIR: home,
    // Go's build cache where it is without the changed HOME (the standard library is built once).
    GOCACHE: process.env.GOCACHE ?? join(homedir(), ".cache/go-build"),
    GOPATH: join(home, "go"),
    GOTOOLCHAIN: "local",
    // No __pycache__ left in docs/guides/python.
    PYTHONDONTWRITEBYTECODE: "1",
    // The programs open auth_url with $BROWSER when it is set (Python's webbrowser does too):
    // `true` opens nothing; the test does the browser's part.
    BROWSER: "true",
    MCP_BASE_URL: server.url,
    MCP_CLIENT_ID: c.clientId,
    MCP_CLIENT_SECRET: c.secret,
  };
}

interface Run {
  code: number | null;
  out: string;
  err: string;
}

const URL_LINE = /^Open this address in the player's browser: (\S+)$/m;

/**
 * Runs a launcher program to its end; when it prints the address to open, signs in as `username`
 * on the development sign-in page and presses `decision` on the consent page, as the player would.
 */
async function runLauncher(
  cmd: string[],
  cwd: string,
  username: string,
  decision: "approve" | "deny" = "approve",
): Promise<Run> {
  const proc = Bun.spawn(cmd, { cwd, env: programEnv(client), stdout: "pipe", stderr: "pipe" });
  const timer = setTimeout(() => proc.kill(), RUN_TIMEOUT_MS);
  const errText = new Response(proc.stderr).text();
  let out = "";
  let browser: Promise<void> | undefined;
  const decoder = new TextDecoder();
  for await (const chunk of proc.stdout) {
    out += decoder.decode(chunk, { stream: true });
    const m = URL_LINE.exec(out);
    if (m && !browser) {
      browser = (async () => {
        const s = await signIn(server, m[1]!, { username });
        expect(s.callback.status).toBe(200);
        expect((await decide(server, s, decision)).status).toBe(303);
      })();
      // A failed browser step would leave the program polling until the request expires.
      browser.catch(() => proc.kill());
    }
  }
  const code = await proc.exited;
  clearTimeout(timer);
  const err = await errText;
  if (!browser) throw new Error(`${cmd.join(" ")} printed no address to open (exit ${code}):\n${out}\n${err}`);
  await browser;
  return { code, out, err };
}

/**
 * Runs a program until it prints a line matching `line`, then stops it: the device-code mode,
 * whose sign-in happens on another device, is checked only for what it shows the player.
 */
async function firstMatch(cmd: string[], cwd: string, line: RegExp): Promise<RegExpExecArray> {
  const proc = Bun.spawn(cmd, { cwd, env: programEnv(client), stdout: "pipe", stderr: "pipe" });
  const timer = setTimeout(() => proc.kill(), RUN_TIMEOUT_MS);
  const errText = new Response(proc.stderr).text();
  let out = "";
  const decoder = new TextDecoder();
  try {
    for await (const chunk of proc.stdout) {
      out += decoder.decode(chunk, { stream: true });
      const m = line.exec(out);
      if (m) return m;
    }
    throw new Error(`${cmd.join(" ")} ended (exit ${await proc.exited}) without ${line}:\n${out}\n${await errText}`);
  } finally {
    clearTimeout(timer);
    proc.kill();
    await proc.exited;
  }
}

/** The output of a whole sign-in: the player's name and UUID from validate, and the status lines. */
function expectSignedIn(run: Run, username: string) {
  const why = `exit ${run.code}\n--- stdout ---\n${run.out}\n--- stderr ---\n${run.err}`;
  expect(run.code, why).toBe(0);
  expect(run.out).toMatch(/^Status: authorized$/m);
  const signed = /^Signed in: (\S+) \(([0-9a-f-]{36})\), session valid until (\S+)$/m.exec(run.out);
  expect(signed, why).not.toBeNull();
  expect(signed![1]).toBe(username);
  expect(signed![2]).toBe(offlineUuid(username));
  expect(Date.parse(signed![3]!)).toBeGreaterThan(Date.now());
}

function expectVerified(run: Run, username: string) {
  const verified = /^Assertion verified: sub=(\S+) name=(\S+) exp=(\d+)$/m.exec(run.out);
  expect(verified, run.out).not.toBeNull();
  expect(verified![1]).toBe(offlineUuid(username));
  expect(verified![2]).toBe(username);
  expect(Number(verified![3]) * 1000).toBeGreaterThan(Date.now());
}

/** A genuine assertion for this client's player, as validate hands it out. */
async function assertionFor(c: TestClient, username: string): Promise<string> {
  const { token } = await fullLogin(server, c, username);
  const res = await api(server, "POST", "/client/ms-auth/session/validate", {
    body: { client_id: c.clientId, client_secret: c.secret, svc_session_token: token, assertion: true },
  });
  expect(res.body.valid).toBe(true);
  return res.body.assertion as string;
}

const b64url = (s: string) => Buffer.from(s).toString("base64url");

/** Assertions a verifier must refuse: each is the genuine one with one thing wrong. */
async function forgeries(genuine: string): Promise<Record<string, string>> {
  const [h, p, sig] = genuine.split(".") as [string, string, string];
  const header = JSON.parse(Buffer.from(h, "base64url").toString());
  const payload = JSON.parse(Buffer.from(p, "base64url").toString());
  const other = await newClient(server);
  return {
    // The name changed after signing: the signature no longer matches.
    "a changed claim": `${h}.${b64url(JSON.stringify({ ...payload, name: "Herobrine" }))}.${sig}`,
    // Genuine, but made for another client application.
    "another client's assertion": await assertionFor(other, "Other_Player"),
    // A shared-secret algorithm named in the header.
    "alg HS256": `${b64url(JSON.stringify({ ...header, alg: "HS256" }))}.${p}.${sig}`,
    // A key the service never published.
    "an unknown kid": `${b64url(JSON.stringify({ ...header, kid: "no-such-key" }))}.${p}.${sig}`,
  };
}

/** Runs a verifier on the genuine assertion (accepted) and on each forgery (refused, exit 1). */
async function expectVerifier(cmd: (assertion: string) => string[], cwd: string) {
  const username = "Verify_Vic";
  const genuine = await assertionFor(client, username);
  const ok = await runCommand(cmd(genuine), { cwd, env: programEnv(client) });
  expect(ok.code, ok.out + ok.err).toBe(0);
  expectVerified({ code: ok.code, out: ok.out, err: ok.err }, username);
  for (const [what, forged] of Object.entries(await forgeries(genuine))) {
    const bad = await runCommand(cmd(forged), { cwd, env: programEnv(client) });
    expect(`${what}: exit ${bad.code}`, bad.out + bad.err).toBe(`${what}: exit 1`);
    expect(bad.err, what).toMatch(/^Assertion rejected: /m);
    expect(bad.out, what).not.toMatch(/Assertion verified/);
  }
}

describe("Python (standard library; PyJWT[crypto] for the assertion)", () => {
  const dir = join(GUIDES, "python");
  const pyjwt =
    has("python3") &&
    Bun.spawnSync(["python3", "-c", "import verify_assertion"], {
      cwd: dir,
      env: { PATH: process.env.PATH!, MCP_CLIENT_ID: "x", PYTHONDONTWRITEBYTECODE: "1" },
    }).exitCode === 0;

  const noPython = !has("python3");
  test.skipIf(noPython)(
    `launcher_backend.py signs a player in: start, browser, poll, validate${unless(noPython, "`python3` is not installed")}`,
    async () => {
      const run = await runLauncher(["python3", "launcher_backend.py"], dir, "Py_Player");
      expectSignedIn(run, "Py_Player");
      if (pyjwt) expectVerified(run, "Py_Player");
      else expect(run.out).toMatch(/^Assertion not verified: install PyJWT\[crypto\]/m);
    },
    RUN_TIMEOUT_MS + 10_000,
  );

  test.skipIf(noPython)(
    "a refused sign-in ends with the denial code",
    async () => {
      const run = await runLauncher(["python3", "launcher_backend.py"], dir, "Py_Denied", "deny");
      expect(run.code).toBe(1);
      expect(run.err).toMatch(/^Sign-in refused: consent_denied$/m);
    },
    RUN_TIMEOUT_MS + 10_000,
  );

  // PyJWT is not in the standard library: CI does not install it; where it is installed, the check runs.
  test.skipIf(!pyjwt)(
    `verify_assertion.py accepts a genuine assertion and refuses forged ones${unless(!pyjwt, "PyJWT[crypto] is not installed")}`,
    () => expectVerifier((a) => ["python3", "verify_assertion.py", a], dir),
    RUN_TIMEOUT_MS,
  );
});

describe("Java (the JDK only: java.net.http, java.security)", () => {
  const dir = join(GUIDES, "java");
  /**
   * `java File.java` compiles the source on every start (seconds on a busy machine): the sign-in
   * runs it as the guide does, the other runs use classes compiled once with javac.
   */
  let classes: Promise<string> | undefined;
  const compiled = () =>
    (classes ??= (async () => {
      const out = join(home, "java-classes");
      const javac = await runCommand(["javac", "-d", out, "LauncherBackend.java"], { cwd: dir });
      if (javac.code !== 0) throw new Error(`javac failed:\n${javac.out}${javac.err}`);
      return out;
    })());

  const noJava = !has("java") || !has("javac");
  test.skipIf(noJava)(
    `LauncherBackend.java signs a player in and verifies the assertion with the JWKS${unless(noJava, "no JDK installed")}`,
    async () => {
      const run = await runLauncher(["java", "LauncherBackend.java"], dir, "Java_Player");
      expectSignedIn(run, "Java_Player");
      expectVerified(run, "Java_Player");
    },
    RUN_TIMEOUT_MS + 10_000,
  );

  test.skipIf(noJava)(
    "a refused sign-in ends with the denial code",
    async () => {
      const run = await runLauncher(["java", "-cp", await compiled(), "LauncherBackend"], dir, "Java_Denied", "deny");
      expect(run.code).toBe(1);
      expect(run.err).toMatch(/^Sign-in refused: consent_denied$/m);
    },
    RUN_TIMEOUT_MS + 10_000,
  );

  test.skipIf(noJava)(
    "`verify` accepts a genuine assertion and refuses forged ones",
    async () => {
      const cp = await compiled();
      await expectVerifier((a) => ["java", "-cp", cp, "LauncherBackend", "verify", a], dir);
    },
    RUN_TIMEOUT_MS,
  );
});

// Go's standard library does it all; Go is not installed by CI (a large toolchain): run where present.
describe("Go (standard library: net/http, crypto/ed25519)", () => {
  const dir = join(GUIDES, "go");
  const noGo = !has("go");
  let binary: Promise<string> | undefined;
  const built = () =>
    (binary ??= (async () => {
      const out = join(home, "go-launcher-backend");
      const build = await runCommand(["go", "build", "-o", out, "."], { cwd: dir, env: programEnv(client) });
      if (build.code !== 0) throw new Error(`go build failed:\n${build.out}${build.err}`);
      return out;
    })());

  test.skipIf(noGo)(
    `\`go vet\` finds nothing; the program signs a player in and verifies the assertion with the JWKS${unless(noGo, "`go` is not installed")}`,
    async () => {
      const vet = await runCommand(["go", "vet", "."], { cwd: dir, env: programEnv(client) });
      expect(vet.code, vet.out + vet.err).toBe(0);
      const run = await runLauncher([await built()], dir, "Go_Player");
      expectSignedIn(run, "Go_Player");
      expectVerified(run, "Go_Player");
    },
    RUN_TIMEOUT_MS + 10_000,
  );

  test.skipIf(noGo)(
    "a refused sign-in ends with the denial code",
    async () => {
      const run = await runLauncher([await built()], dir, "Go_Denied", "deny");
      expect(run.code).toBe(1);
      expect(run.err).toMatch(/^Sign-in refused: consent_denied$/m);
    },
    RUN_TIMEOUT_MS + 10_000,
  );

  test.skipIf(noGo)(
    "`verify` accepts a genuine assertion and refuses forged ones",
    async () => {
      const bin = await built();
      await expectVerifier((a) => [bin, "verify", a], dir);
    },
    RUN_TIMEOUT_MS,
  );
});

/**
 * C# and Rust need packages (BouncyCastle from NuGet; ureq, serde_json, ed25519-dalek from
 * crates.io) that this machine's registries do not serve, so their programs are not built or run
 * here: their syntax is checked where a parser is installed (Mono's `mcs --parse`; `rustfmt`, which
 * parses the whole file and fails on a syntax error).
 */
describe("C# and Rust: syntax", () => {
  const noMcs = !has("mcs");
  test.skipIf(noMcs)(
    `docs/guides/csharp/LauncherBackend.cs parses${unless(noMcs, "Mono's `mcs` is not installed: apt-get install mono-mcs")}`,
    async () => {
      const parsed = await runCommand(["mcs", "--parse", "LauncherBackend.cs"], { cwd: join(GUIDES, "csharp") });
      expect(parsed.code, parsed.out + parsed.err).toBe(0);
    },
  );

  const noRustfmt = !has("rustfmt");
  test.skipIf(noRustfmt)(
    `docs/guides/rust/src/main.rs parses${unless(noRustfmt, "`rustfmt` is not installed")}`,
    async () => {
      const parsed = await runCommand(["rustfmt", "--edition", "2021", "--emit", "stdout", "src/main.rs"], {
        cwd: join(GUIDES, "rust"),
      });
      expect(parsed.code, parsed.out + parsed.err).toBe(0);
    },
  );
});

/** Each page's quoted code, by the fence's language: the files it is quoted from. */
const QUOTED: Record<string, Record<string, string[]>> = {
  "launcher-java.md": { java: ["java/LauncherBackend.java"] },
  "launcher-python.md": { python: ["python/launcher_backend.py", "python/verify_assertion.py"] },
  "launcher-go.md": { go: ["go/main.go"] },
  "launcher-csharp.md": { csharp: ["csharp/LauncherBackend.cs"], xml: ["csharp/LauncherBackend.csproj"] },
  "launcher-rust.md": { rust: ["rust/src/main.rs"], toml: ["rust/Cargo.toml"] },
};

/**
 * Whether `excerpt` is quoted from `source`: its lines, leading whitespace aside, are a run of the
 * source's lines; a line `// ...` or `# ...` stands for lines left out.
 */
function isQuotedFrom(excerpt: string, source: string): boolean {
  const lines = (text: string) => text.split("\n").map((l) => l.trim());
  const file = lines(source);
  const segments: string[][] = [[]];
  for (const line of lines(excerpt))
    if (line === "// ..." || line === "# ...") segments.push([]);
    else segments.at(-1)!.push(line);
  let from = 0;
  for (const segment of segments.filter((s) => s.length > 0)) {
    let at = -1;
    for (let i = from; i + segment.length <= file.length && at < 0; i++)
      if (segment.every((l, j) => file[i + j] === l)) at = i;
    if (at < 0) return false;
    from = at + segment.length;
  }
  return true;
}

describe("the guides quote the programs the tests run", () => {
  test("the excerpt check finds quotes and refuses changed lines", () => {
    const source = "a\n  b\n  c\nd\ne\n";
    expect(isQuotedFrom("b\nc", source)).toBe(true);
    expect(isQuotedFrom("a\n// ...\ne", source)).toBe(true);
    expect(isQuotedFrom("b\nd", source)).toBe(false);
    expect(isQuotedFrom("e\n// ...\na", source)).toBe(false);
  });

  for (const [page, byLang] of Object.entries(QUOTED))
    test(`docs/guides/${page}: every code block in the program's language is quoted from it`, () => {
      const blocks = codeBlocks(parseMarkdown(`docs/guides/${page}`)).filter((b) => b.lang in byLang);
      expect(blocks.length).toBeGreaterThan(3);
      const notQuoted = blocks
        .filter(
          ({ lang, block }) =>
            !byLang[lang]!.some((f) => isQuotedFrom(block.code, readFileSync(join(GUIDES, f), "utf8"))),
        )
        .map(({ block }) => `docs/guides/${page}:${block.line}`);
      expect(notQuoted).toEqual([]);
    });
});

/**
 * The device-code alternative (`"flow": "device"` on start), where the service has it: each
 * program run with `device` shows the code and the short address instead of opening a browser.
 */
const deviceFlow = "flow" in ZStartInput.shape;
const DEVICE_LINE = /^On another device, open (\S+) and enter (\S+)$/m;
describe("the device-code mode shows the code to type", () => {
  const skipped = unless(!deviceFlow, "the service has no device flow yet");
  const expectCode = (m: RegExpExecArray) => {
    expect(m[1]).toBe(`${server.url}/device`);
    expect(m[2]).toMatch(/^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/);
  };
  test.skipIf(!deviceFlow || !has("python3"))(`Python${skipped}`, async () => {
    expectCode(await firstMatch(["python3", "launcher_backend.py", "device"], join(GUIDES, "python"), DEVICE_LINE));
  });
  test.skipIf(!deviceFlow || !has("javac"))(
    `Java${skipped}`,
    async () => {
      const out = join(home, "java-device");
      const javac = await runCommand(["javac", "-d", out, "LauncherBackend.java"], { cwd: join(GUIDES, "java") });
      expect(javac.code, javac.err).toBe(0);
      expectCode(
        await firstMatch(["java", "-cp", out, "LauncherBackend", "device"], join(GUIDES, "java"), DEVICE_LINE),
      );
    },
    RUN_TIMEOUT_MS,
  );
  test.skipIf(!deviceFlow || !has("go"))(
    `Go${skipped}`,
    async () => {
      expectCode(await firstMatch(["go", "run", ".", "device"], join(GUIDES, "go"), DEVICE_LINE));
    },
    RUN_TIMEOUT_MS,
  );
});
