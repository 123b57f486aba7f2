import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

/**
 * The layers of the service, lowest first (docs/architecture.md draws them):
 *   lib (nothing else in src) <- config <- db <- domains (auth, teams, clients, login, servers,
 *   monitoring, agent, realtime, identity, health) <- doors (trpc/, http/, each domain's
 *   router.ts / procedures.ts / browser.ts / socket.ts / plugin.ts, openapi.ts)
 *   <- composition (services.ts, app.ts, main.ts).
 * machines/ holds pure state machines and imports nothing from src.
 *
 * The graph counts every import, type-only ones included: a type import that points up ties
 * the layers together as surely as a value import does.
 */
const ROOT = resolve(import.meta.dir, "..");
const DOOR =
  /^src\/realtime\/asyncapi\.ts$|^src\/(trpc|http)\/|^src\/[^/]+\/(router|procedures|browser|socket|plugin)\.ts$|^src\/[^/]+\/[^/]+\/plugin\.ts$|^src\/openapi\.ts$/;
const COMPOSITION = /^src\/(app|main|services)\.ts$/;

type Layer = "machines" | "lib" | "config" | "db" | "domain" | "door" | "composition";
const RANK: Record<Layer, number> = { machines: 0, lib: 0, config: 1, db: 2, domain: 3, door: 4, composition: 5 };

function layerOf(file: string): Layer {
  if (file.startsWith("machines/")) return "machines";
  if (file.startsWith("src/lib/")) return "lib";
  if (file === "src/config.ts") return "config";
  if (file.startsWith("src/db/")) return "db";
  if (COMPOSITION.test(file)) return "composition";
  if (DOOR.test(file)) return "door";
  return "domain";
}

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(ROOT, dir))) {
    const path = join(dir, name);
    if (statSync(join(ROOT, path)).isDirectory()) out.push(...sourceFiles(path));
    else if (/\.tsx?$/.test(name)) out.push(path);
  }
  return out;
}

const IMPORT =
  /(?:^|\n)\s*(?:import|export)\s[^;]*?from\s*"([^"]+)"|import\(\s*"([^"]+)"\s*\)|(?:^|\n)\s*import\s*"([^"]+)"/g;

function resolveImport(from: string, spec: string): string | null {
  if (!spec.startsWith(".")) return null; // a package
  const base = join(dirname(from), spec);
  for (const candidate of [base, `${base}.ts`, `${base}.tsx`, join(base, "index.ts")]) {
    if (existsSync(join(ROOT, candidate)) && statSync(join(ROOT, candidate)).isFile())
      return relative(ROOT, join(ROOT, candidate));
  }
  return null;
}

function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of [...sourceFiles("src"), ...sourceFiles("machines")]) {
    const text = readFileSync(join(ROOT, file), "utf8");
    const targets = new Set<string>();
    for (const m of text.matchAll(IMPORT)) {
      const target = resolveImport(file, m[1] ?? m[2] ?? m[3]!);
      if (target && /\.tsx?$/.test(target)) targets.add(target);
    }
    graph.set(file, [...targets]);
  }
  return graph;
}

/** Strongly connected components with more than one file, or a file importing itself (Tarjan). */
function cycles(graph: Map<string, string[]>): string[][] {
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string) => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        on.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1 || (graph.get(v) ?? []).includes(v)) out.push(scc.sort());
    }
  };
  for (const v of graph.keys()) if (!idx.has(v)) visit(v);
  return out;
}

describe("architecture: imports point one way", () => {
  const graph = importGraph();

  test("the graph is read from the real sources", () => {
    expect(graph.size).toBeGreaterThan(50);
    expect(graph.get("src/app.ts")).toContain("src/http/edge.ts");
  });

  test("no import cycles", () => {
    expect(cycles(graph)).toEqual([]);
  });

  test("no upward imports: lib <- config <- db <- domains <- doors <- composition", () => {
    const upward: string[] = [];
    for (const [from, targets] of graph) {
      const fromLayer = layerOf(from);
      for (const to of targets) {
        const toLayer = layerOf(to);
        const bad =
          (fromLayer === "machines" && to.startsWith("src/")) ||
          (fromLayer === "lib" && toLayer !== "lib") ||
          RANK[toLayer] > RANK[fromLayer] ||
          to === "src/main.ts";
        if (bad) upward.push(`${from} (${fromLayer}) -> ${to} (${toLayer})`);
      }
    }
    expect(upward).toEqual([]);
  });

  test("the rule catches what it should: an upward import and a cycle are reported", () => {
    const bad = new Map<string, string[]>([
      ["src/lib/a.ts", ["src/db/b.ts"]],
      ["src/db/b.ts", ["src/lib/a.ts"]],
    ]);
    expect(cycles(bad)).toEqual([["src/db/b.ts", "src/lib/a.ts"]]);
    expect(layerOf("src/teams/service.ts")).toBe("domain");
    expect(layerOf("src/teams/router.ts")).toBe("door");
    expect(RANK[layerOf("src/trpc/context.ts")]).toBeGreaterThan(RANK[layerOf("src/teams/service.ts")]);
  });
});
