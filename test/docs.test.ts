import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { CONFIG_VARIABLES } from "../src/config";
import { sharedServer } from "./harness";
import {
  codeBlocks,
  headingSlugs,
  isExternal,
  linksOf,
  markdownFiles,
  parseMarkdown,
  parseMarkdownText,
  ROOT,
  resolveLink,
  walk,
} from "./markdown";

/**
 * Pages other branches add (the demo, the production install). Links to them may dangle until
 * those land; once a file exists its links and anchors are checked like any other. Empty this
 * list when both are in.
 */
const PENDING = new Set<string>();

const files = markdownFiles();
const trees = new Map(files.map((f) => [f, parseMarkdown(f)]));
const exists = (path: string) => existsSync(join(ROOT, path));
const isMarkdownFile = (path: string) => path.endsWith(".md") && exists(path) && statSync(join(ROOT, path)).isFile();

/** The Markdown files a file links to, resolved. */
function linkedPages(file: string): string[] {
  return linksOf(trees.get(file)!)
    .filter((l) => !isExternal(l.url))
    .map((l) => resolveLink(file, l.url).path)
    .filter(isMarkdownFile);
}

describe("Markdown links", () => {
  test("the check sees the repository's documents", () => {
    for (const f of ["README.md", "CONTRIBUTING.md", "SECURITY.md", "docs/README.md", "packages/agent/README.md"])
      expect(files).toContain(f);
  });

  test("every relative link and anchor resolves to a file and one of its headings", () => {
    const broken: string[] = [];
    let checked = 0;
    for (const file of files) {
      for (const link of linksOf(trees.get(file)!)) {
        if (isExternal(link.url)) continue;
        checked++;
        const { path, anchor } = resolveLink(file, link.url);
        const where = `${file}:${link.line} -> ${link.url}`;
        if (!exists(path)) {
          if (!PENDING.has(path)) broken.push(`${where}: no such file (${path})`);
          continue;
        }
        if (anchor === undefined || anchor === "") continue;
        if (!path.endsWith(".md")) {
          broken.push(`${where}: an anchor into a file that is not Markdown`);
          continue;
        }
        const slugs = headingSlugs(trees.get(path) ?? parseMarkdown(path));
        if (!slugs.has(anchor)) broken.push(`${where}: no heading "#${anchor}" in ${path}`);
      }
    }
    expect(checked).toBeGreaterThan(100);
    expect(broken).toEqual([]);
  });

  test("slugs follow GitHub's style: lower case, punctuation dropped, spaces to hyphens, repeats numbered", () => {
    const slugs = headingSlugs(
      parseMarkdownText(
        "# Players, ranks & bans\n## `POST /agent/heartbeat`\n## Setup\n## Setup\n### The *demo* [server](x.md)",
      ),
    );
    expect([...slugs]).toEqual(["players-ranks--bans", "post-agentheartbeat", "setup", "setup-1", "the-demo-server"]);
  });

  test("docs/README.md links to every page under docs/", () => {
    const indexed = new Set(linkedPages("docs/README.md"));
    const pages = files.filter((f) => f.startsWith("docs/") && f !== "docs/README.md");
    expect(pages.filter((p) => !indexed.has(p))).toEqual([]);
    for (const p of PENDING) expect(linksOf(trees.get("docs/README.md")!).some((l) => l.url === p.slice(5))).toBe(true);
  });

  test("every Markdown page is reachable by links from the README", () => {
    const seen = new Set(["README.md"]);
    const queue = ["README.md"];
    while (queue.length > 0)
      for (const next of linkedPages(queue.shift()!))
        if (!seen.has(next)) {
          seen.add(next);
          queue.push(next);
        }
    expect(files.filter((f) => !seen.has(f))).toEqual([]);
  });
});

describe("the README", () => {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");

  test("is a landing page: at most 250 lines", () => {
    expect(readme.split("\n").length).toBeLessThanOrEqual(250);
  });

  test("its quickstart is exactly `npm start` and `npm test`", () => {
    const first = codeBlocks(trees.get("README.md")!).find((b) => b.lang === "sh")!;
    const commands = first.block.code
      .split("\n")
      .map((l) => l.replace(/#.*$/, "").trim())
      .filter(Boolean);
    expect(commands).toEqual(["npm start", "npm test"]);
  });

  test("it shows one screenshot that exists", () => {
    const images: string[] = [];
    walk(trees.get("README.md")!, (n) => {
      if (n.type === "image") images.push(n.url);
    });
    expect(images).toHaveLength(1);
    expect(exists(images[0]!)).toBe(true);
  });
});

describe("docs/configuration.md", () => {
  /** The variable names in the first cell of each table row. */
  const documented = new Set<string>();
  walk(trees.get("docs/configuration.md")!, (n) => {
    if (n.type !== "tableRow") return;
    walk(n.children[0]!, (c) => {
      if (c.type === "inlineCode" && /^[A-Z][A-Z0-9_]+$/.test(c.value)) documented.add(c.value);
    });
  });

  test("describes every variable src/config.ts reads", () => {
    expect(CONFIG_VARIABLES.length).toBeGreaterThan(50);
    expect(CONFIG_VARIABLES.filter((v) => !documented.has(v))).toEqual([]);
  });

  test("names no variable src/config.ts does not read", () => {
    expect([...documented].filter((v) => !CONFIG_VARIABLES.includes(v))).toEqual([]);
  });
});

describe("the license", () => {
  test("LICENSE is MIT and the API document says so", async () => {
    expect(readFileSync(join(ROOT, "LICENSE"), "utf8")).toStartWith(
      "MIT License\n\nCopyright (c) 2026 mc-platform contributors",
    );
    const srv = await sharedServer();
    const doc = (await (await fetch(`${srv.url}/openapi.json`)).json()) as { info: { license: unknown } };
    expect(doc.info.license).toEqual({ name: "MIT", identifier: "MIT" });
  });
});
