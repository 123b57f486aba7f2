import { readdirSync, readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import GithubSlugger from "github-slugger";
import type { Code, Html, Nodes, Parent, Root } from "mdast";
import { fromMarkdown } from "mdast-util-from-markdown";
import { gfmFromMarkdown } from "mdast-util-gfm";
import { toString as textOf } from "mdast-util-to-string";
import { gfm } from "micromark-extension-gfm";

export const ROOT = resolve(import.meta.dir, "..");

/** Folders that hold no Markdown of the project's own: installed packages, data, build output. */
const SKIP_DIRS = new Set(["node_modules", "tmp", "dist"]);

/** Every Markdown file of the repository, relative to its root, sorted. */
export function markdownFiles(dir = ""): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
    if (entry.name.startsWith(".") || SKIP_DIRS.has(entry.name)) continue;
    const path = dir ? `${dir}/${entry.name}` : entry.name;
    if (entry.isDirectory()) out.push(...markdownFiles(path));
    else if (entry.name.endsWith(".md")) out.push(path);
  }
  return out.sort();
}

/** GitHub-flavoured Markdown, as GitHub renders it. */
export function parseMarkdownText(text: string): Root {
  return fromMarkdown(text, { extensions: [gfm()], mdastExtensions: [gfmFromMarkdown()] });
}

export const parseMarkdown = (file: string): Root => parseMarkdownText(readFileSync(join(ROOT, file), "utf8"));

/** Calls `visit` for every node with its parent and its place among the parent's children. */
export function walk(node: Nodes, visit: (node: Nodes, parent: Parent | undefined, index: number) => void) {
  const go = (n: Nodes, parent: Parent | undefined, index: number) => {
    visit(n, parent, index);
    if (!("children" in n)) return;
    for (const [i, child] of n.children.entries()) go(child as Nodes, n, i);
  };
  go(node, undefined, -1);
}

export interface Link {
  url: string;
  line: number;
}

/** Links, images and link definitions, with the line they are on. */
export function linksOf(tree: Root): Link[] {
  const out: Link[] = [];
  walk(tree, (n) => {
    if (n.type === "link" || n.type === "image" || n.type === "definition")
      out.push({ url: n.url, line: n.position?.start.line ?? 0 });
  });
  return out;
}

/** The anchors GitHub gives the file's headings, in its slug style (duplicates get -1, -2, ...). */
export function headingSlugs(tree: Root): Set<string> {
  const slugger = new GithubSlugger();
  const out = new Set<string>();
  walk(tree, (n) => {
    if (n.type === "heading") out.add(slugger.slug(textOf(n)));
  });
  return out;
}

/** A link that leaves the repository (a scheme such as https: or mailto:, or //host). */
export const isExternal = (url: string) => /^[a-z][a-z0-9+.-]*:/i.test(url) || url.startsWith("//");

/** Splits a relative link into the repository path it points at and its anchor. */
export function resolveLink(from: string, url: string): { path: string; anchor: string | undefined } {
  const hash = url.indexOf("#");
  const target = decodeURI(hash >= 0 ? url.slice(0, hash) : url);
  const anchor = hash >= 0 ? decodeURIComponent(url.slice(hash + 1)) : undefined;
  const path = target === "" ? from : relative(ROOT, resolve(ROOT, from, "..", target)) || ".";
  return { path, anchor };
}

export interface ShellBlock {
  /** The block's commands, as written. */
  code: string;
  line: number;
  /** Marked `<!-- test: skip: why -->` just above: it cannot run in CI (it starts the service, needs a game server...). */
  skip: string | undefined;
}

const SKIP_MARK = /^<!--\s*test:\s*skip\b:?\s*(.*?)\s*-->$/s;

/** The file's fenced blocks, with their language and, for `sh` ones, whether they are marked to skip. */
export function codeBlocks(tree: Root): { lang: string; block: ShellBlock }[] {
  const out: { lang: string; block: ShellBlock }[] = [];
  walk(tree, (n, parent, index) => {
    if (n.type !== "code") return;
    const before = parent && index > 0 ? (parent.children[index - 1] as Nodes) : undefined;
    const mark = before?.type === "html" ? SKIP_MARK.exec((before as Html).value.trim()) : null;
    out.push({
      lang: (n as Code).lang ?? "",
      block: {
        code: (n as Code).value,
        line: n.position?.start.line ?? 0,
        skip: mark ? mark[1] || "marked" : undefined,
      },
    });
  });
  return out;
}
