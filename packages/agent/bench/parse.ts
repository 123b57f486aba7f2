/**
 * The log parser's cost per line, on the real lines of test/fixtures/log-lines.json (every family,
 * most of them lines that say nothing, as in a real log). Baseline, in the same run: the parser the
 * agent had before it read other families (vanilla and Paper layouts only), kept here verbatim so the
 * price of reading every family is measured, not guessed.
 *   bun packages/agent/bench/parse.ts [passes over the fixture a round, default 2000]
 */
import { parseLogLine, plain } from "../src/parse";
import fixture from "../test/fixtures/log-lines.json";

const passes = Number(process.argv[2] ?? 2_000);
const lines = fixture.groups.flatMap((g) => g.lines.map((l) => l.line));

// The previous parser (agent before issue 24), unchanged.
const OLD_LINE = /^\[(\d{2}):(\d{2}):(\d{2})(?:\s+INFO)?\](?: \[[^\]]*\/INFO\])?: (.*)$/;
function oldParse(line: string, now = new Date()) {
  const m = line.replace(/\r$/, "").match(OLD_LINE);
  if (!m) return null;
  const msg = plain(m[4]!);
  const id = msg.match(/^UUID of player (\S{1,32}) is ([0-9a-fA-F-]{36})$/);
  const join = msg.match(/^(\S{1,32}) joined the game$/);
  const leave = msg.match(/^(\S{1,32}) left the game$/);
  const version = msg.match(/^Starting minecraft server version (.+)$/);
  const fact = id ?? join ?? leave ?? version;
  if (!fact) return null;
  const at = new Date(now);
  at.setHours(Number(m[1]), Number(m[2]), Number(m[3]), 0);
  return { at, fact };
}

/** Nanoseconds per line, the best of several rounds taken in turn with the other parser's (two cores shared with other work). */
function measure(parse: (line: string, now: Date) => unknown, corpus: string[]) {
  const now = new Date();
  const t = performance.now();
  for (let i = 0; i < passes; i++) for (const l of corpus) parse(l, now);
  return ((performance.now() - t) * 1e6) / (passes * corpus.length);
}

const factCount = (parse: (line: string, now: Date) => unknown, corpus: string[]) =>
  corpus.filter((l) => (parse(l, new Date()) as { fact?: unknown } | null)?.fact).length;
const quiet = lines.filter((l) => !parseLogLine(l)?.fact);
console.log(`log parser bench (Bun ${Bun.version}, ${passes} passes, best of 7 rounds)`);
for (const [name, corpus] of [
  [`all ${lines.length} fixture lines`, lines],
  [`the ${quiet.length} that carry no fact (most of a real log)`, quiet],
] as const) {
  const best = { before: Number.POSITIVE_INFINITY, after: Number.POSITIVE_INFINITY };
  for (let round = 0; round < 7; round++) {
    best.before = Math.min(best.before, measure(oldParse, corpus));
    best.after = Math.min(best.after, measure(parseLogLine, corpus));
  }
  console.log(`  ${name}`);
  console.log(
    `    baseline, previous parser (vanilla/Paper only)  ${best.before.toFixed(0).padStart(5)} ns/line  facts found: ${factCount(oldParse, corpus)}`,
  );
  console.log(
    `    parseLogLine (every family and proxy)           ${best.after.toFixed(0).padStart(5)} ns/line  facts found: ${factCount(parseLogLine, corpus)}`,
  );
  console.log(`    ratio ${(best.after / best.before).toFixed(2)}x`);
}
