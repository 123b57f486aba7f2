/**
 * Lints the OpenAPI document with Redocly (recommended rules, redocly.yaml) and Spectral's OWASP
 * API Security ruleset (.spectral.mjs). Exits 1 when either reports an error.
 *
 *   bun scripts/lint-openapi.ts            the document this checkout builds
 *   bun scripts/lint-openapi.ts doc.json   a document already written (e.g. saved from /openapi.json)
 *
 * The generated document is linted as deployed, behind https: the OWASP rules rightly refuse a
 * plain-http server URL. test/doors.test.ts runs the same two checks.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dir, "..");

export interface LintResult {
  ok: boolean;
  /** what the linter printed, for a person */
  report: string;
}

export interface SpectralFinding {
  code: string;
  severity: number;
  path: string[];
  message: string;
}

async function run(cmd: string[]): Promise<{ code: number; out: string; err: string }> {
  const proc = Bun.spawn(cmd, {
    cwd: ROOT,
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" },
  });
  const [out, err, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  return { code, out, err };
}

/** Writes the document this checkout builds to a temporary file and returns its path. */
export async function writeGeneratedDocument(baseUrl = "https://api.mc-platform.example"): Promise<string> {
  const { buildOpenApiDocument } = await import("../src/openapi");
  const { appRouter } = await import("../src/trpc/router");
  const file = join(mkdtempSync(join(tmpdir(), "lint-openapi-")), "openapi.json");
  writeFileSync(file, JSON.stringify(buildOpenApiDocument(appRouter, baseUrl)));
  return file;
}

export async function redocly(file: string): Promise<LintResult> {
  const r = await run([
    join(ROOT, "node_modules/.bin/redocly"),
    "lint",
    file,
    "--config",
    join(ROOT, "redocly.yaml"),
    "--format",
    "stylish",
  ]);
  return { ok: r.code === 0, report: `${r.out}${r.err}`.trim() };
}

/**
 * Spectral exits 0 when nothing reaches error severity; a crash or a ruleset that failed to load
 * exits otherwise, and counts as a failure here, not as an empty (passing) list.
 */
export async function spectral(file: string): Promise<LintResult & { findings: SpectralFinding[] }> {
  const r = await run([
    join(ROOT, "node_modules/.bin/spectral"),
    "lint",
    file,
    "--ruleset",
    join(ROOT, ".spectral.mjs"),
    "-f",
    "json",
    "--quiet",
  ]);
  let findings: SpectralFinding[] = [];
  try {
    findings = JSON.parse(r.out);
  } catch {
    return { ok: false, findings, report: `spectral exited ${r.code}: ${r.err.trim() || r.out.slice(0, 500)}` };
  }
  const errors = findings.filter((f) => f.severity === 0);
  const warnings = findings.length - errors.length;
  const report = [
    ...errors.map((f) => `error   ${f.code} at ${f.path.join(".")}: ${f.message}`),
    `${errors.length} errors, ${warnings} warnings (OWASP API Security ruleset)`,
  ].join("\n");
  return { ok: r.code === 0 && errors.length === 0, findings, report };
}

if (import.meta.main) {
  const file = process.argv[2] ? resolve(process.argv[2]) : await writeGeneratedDocument();
  console.log(`linting ${file}`);
  const [red, spec] = await Promise.all([redocly(file), spectral(file)]);
  console.log(`=== Redocly (redocly.yaml) ===\n${red.report}\n`);
  console.log(`=== Spectral (.spectral.mjs) ===\n${spec.report}`);
  const failed = [!red.ok && "Redocly", !spec.ok && "Spectral"].filter(Boolean);
  if (failed.length) {
    console.error(`\nlint:openapi failed: ${failed.join(", ")}`);
    process.exit(1);
  }
  console.log("\nlint:openapi: no errors");
}
